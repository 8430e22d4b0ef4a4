package responder

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseDefinesAndCMakeVars(t *testing.T) {
	require.Equal(t, map[string]int{"Z_FRAG_MAX_SIZE": 4096, "Z_BATCH_UNICAST_SIZE": 2048},
		parseDefines([]byte("#define Z_FRAG_MAX_SIZE 4096\n#define Z_BATCH_UNICAST_SIZE 2048\n#define Z_FEATURE_X\n#define NAME \"s\"\n// #define NOT 1\n")))
	require.Equal(t, map[string]int{"BATCH_UNICAST_SIZE": 65535, "FRAG_MAX_SIZE": 300000},
		parseCMakeVars([]byte("# comment\nBATCH_UNICAST_SIZE:STRING=65535\nFRAG_MAX_SIZE:STRING= 300000\nCMAKE_BUILD_TYPE:STRING=Release\nNOTYPE=3\n")))
}

// FuzzParseConfigFiles: the config.h and CMakeCache.txt readers never
// panic, and every entry they return is in the input, name and number.
func FuzzParseConfigFiles(f *testing.F) {
	f.Add([]byte("#define Z_FRAG_MAX_SIZE 4096\n"))
	f.Add([]byte("BATCH_UNICAST_SIZE:STRING=65535\n"))
	f.Add([]byte("=\n:=\n#define\n#define A B C\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, m := range []map[string]int{parseDefines(data), parseCMakeVars(data)} {
			for k, v := range m {
				if !bytes.Contains(data, []byte(k)) || !bytes.Contains(data, []byte(strconv.Itoa(v))) {
					t.Fatalf("entry %s=%d is not in the input %q", k, v, data)
				}
			}
		}
	})
}

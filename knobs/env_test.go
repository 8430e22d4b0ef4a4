package knobs

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseEnvFile(t *testing.T) {
	src := `# prj.conf
CONFIG_NROS_ZENOH_TX_BATCH=y
# CONFIG_NROS_ZENOH_TX_SPLIT_LOCK is not set
export ZPICO_TX_BATCH_FLUSH_MS=20
NROS_ZENOH_SOCKET_TIMEOUT_MS = "5"
CONFIG_NET_BUF_DATA_SIZE='128'
# a comment is not a Kconfig no
   
CONFIG_X=
`
	e, err := ParseEnvFile("prj.conf", []byte(src))
	require.NoError(t, err)
	require.Equal(t, []EnvVar{
		{Name: "CONFIG_NROS_ZENOH_TX_BATCH", Value: "y", File: "prj.conf", Line: 2},
		{Name: "CONFIG_NROS_ZENOH_TX_SPLIT_LOCK", Value: "n", File: "prj.conf", Line: 3},
		{Name: "ZPICO_TX_BATCH_FLUSH_MS", Value: "20", File: "prj.conf", Line: 4},
		{Name: "NROS_ZENOH_SOCKET_TIMEOUT_MS", Value: "5", File: "prj.conf", Line: 5},
		{Name: "CONFIG_NET_BUF_DATA_SIZE", Value: "128", File: "prj.conf", Line: 6},
		{Name: "CONFIG_X", Value: "", File: "prj.conf", Line: 9},
	}, e.Vars)
}

func TestParseEnvFileErrors(t *testing.T) {
	_, err := ParseEnvFile("build.env", []byte("ZPICO_TX_BATCH\n1X=2\nA=\"open\nB=ok\n"))
	require.EqualError(t, err, `build.env:1: want KEY=VALUE, got "ZPICO_TX_BATCH"
build.env:2: "1X" is not a variable name
build.env:3: A: unterminated quote in "\"open"`)
	require.ErrorIs(t, err, ErrSyntax)
}

func TestProcessEnv(t *testing.T) {
	e := ProcessEnv([]string{"PATH=/bin", "ZPICO_TX_BATCH=0", "NROS_PLATFORM_PATH=/x", "CONFIG_NROS_FRAG_MAX_SIZE=4096", "HOME=/root", "broken"})
	require.Equal(t, []EnvVar{
		{Name: "ZPICO_TX_BATCH", Value: "0", File: ProcessEnvFile},
		{Name: "NROS_PLATFORM_PATH", Value: "/x", File: ProcessEnvFile},
		{Name: "CONFIG_NROS_FRAG_MAX_SIZE", Value: "4096", File: ProcessEnvFile},
	}, e.Vars)
}

func TestParseEnvValue(t *testing.T) {
	b, _ := Lookup(TxBatch)
	for in, want := range map[string]int64{"1": 1, "y": 1, "Y": 1, "yes": 1, "true": 1, "on": 1, "2": 1, "0": 0, "n": 0, "no": 0, "false": 0, "off": 0, " 0 ": 0} {
		v, msg := parseEnvValue(b, in)
		require.Empty(t, msg, in)
		require.Equal(t, want, v, in)
	}
	_, msg := parseEnvValue(b, "maybe")
	require.Equal(t, `cannot parse "maybe" as a bool (want y/n, 1/0, true/false)`, msg)
	_, msg = parseEnvValue(b, "")
	require.Equal(t, `cannot parse "" as a bool (want y/n, 1/0, true/false)`, msg)
	n, _ := Lookup(BatchUnicastSize)
	v, msg := parseEnvValue(n, "0x800")
	require.Empty(t, msg)
	require.Equal(t, int64(2048), v)
	_, msg = parseEnvValue(n, "2k")
	require.Equal(t, `cannot parse "2k" as an integer (bytes)`, msg)
	_, msg = parseEnvValue(n, "65536")
	require.Equal(t, `must be ≤ 65535 (got 65536)`, msg)
}

func FuzzParseEnvFile(f *testing.F) {
	f.Add([]byte("CONFIG_NROS_ZENOH_TX_BATCH=y\n# CONFIG_NROS_ZENOH_TX_SPLIT_LOCK is not set\nexport ZPICO_TX_BATCH_FLUSH_MS=\"20\"\n"))
	f.Add([]byte("A='b'\r\n\n#\nX\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := ParseEnvFile("fuzz.env", data)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) || len(ce.Problems) == 0 {
				t.Fatalf("error is not a ConfigError with problems: %v", err)
			}
			return
		}
		for _, v := range e.Vars {
			if !validEnvName(v.Name) || v.Line < 1 {
				t.Fatalf("bad var %+v", v)
			}
			if k, _, ok := LookupEnv(v.Name); ok {
				parseEnvValue(k, v.Value) // must not panic
			}
		}
	})
}

package transport

import (
	"bufio"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/wire/zvec"
)

// zvecLine is one data line of a zenoh-pico transcript
// (shared/testdata/zenoh-pico/README.md).
type zvecLine struct {
	ms    int
	dir   string // "D>G" or "G>D"
	batch []byte
}

func loadZvec(t testing.TB, name string) []zvecLine {
	t.Helper()
	dir, err := zvec.FindTestdata()
	if err != nil {
		t.Skipf("SKIP: zenoh-pico transcripts not found: %v", err)
	}
	f, err := os.Open(filepath.Join(dir, name))
	require.NoError(t, err)
	defer f.Close()
	var out []zvecLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.SplitN(line, " ", 3)
		require.Len(t, parts, 3, "line %q", line)
		ms, err := strconv.Atoi(parts[0])
		require.NoError(t, err)
		b, err := hex.DecodeString(parts[2])
		require.NoError(t, err)
		out = append(out, zvecLine{ms: ms, dir: parts[1], batch: b})
	}
	require.NoError(t, sc.Err())
	return out
}

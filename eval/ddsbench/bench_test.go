package ddsbench

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/internal/fastddspeer"
	"github.com/stretchr/testify/require"
)

func TestParsePairs(t *testing.T) {
	p, err := ParsePairs("")
	require.NoError(t, err)
	require.Equal(t, AllPairs, p)
	p, err = ParsePairs("1, 5")
	require.NoError(t, err)
	require.Equal(t, []Pair{CycloneInProcess, FastToCyclone}, p)
	_, err = ParsePairs("6")
	require.Error(t, err)
}

func TestMarkdown(t *testing.T) {
	md := Markdown([]Result{
		{Pair: CycloneTwoProc, Size: 1536, Rate: 1000, Sent: 10, Received: 10, MsgPerS: 1000, MBPerS: 1.5,
			P50: 120 * time.Microsecond, P99: 15 * time.Millisecond, Max: 20 * time.Millisecond},
		{Pair: FastToFast, Size: 65536, Rate: 0, Sent: 10, Received: 9, Err: errors.New("lost 1 samples")},
	})
	require.Contains(t, md, "| ddspath → ddspath (2 processes) | 1.5 KiB | 1 kHz | 10 | 10 | 1000 | 1.5 | 120 µs | 15.0 ms | 20.0 ms |")
	require.Contains(t, md, "| Fast DDS peer → Fast DDS peer | 64 KiB | full | 10 | 9 | error: lost 1 samples |")
	require.Equal(t, 4, strings.Count(md, "\n"))
}

// TestRunSmall runs the in-process pair and, when Fast DDS is installed,
// Fast DDS → ddspath with a few samples.
func TestRunSmall(t *testing.T) {
	if !ddspath.Available {
		t.Skip("built without -tags cyclonedds")
	}
	pairs := []Pair{CycloneInProcess}
	if fastddspeer.Check() == nil {
		pairs = append(pairs, FastToCyclone)
	}
	res, err := Run(context.Background(), Config{DomainID: 230, Sizes: []int{1536}, Rates: []float64{1000},
		CountRate: 50, Pairs: pairs, PeerBinary: ""})
	require.NoError(t, err)
	require.Len(t, res, len(pairs))
	for _, r := range res {
		require.NoError(t, r.Err, "%s", r.Pair)
		require.Equal(t, 50, r.Received)
		require.Positive(t, r.MsgPerS)
	}
}

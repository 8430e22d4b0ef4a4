package devsim

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTuningTable reproduces nano-ros tx-tuning.md's table on the TX model
// in synthetic time (20 s per case, the page's harness window) and holds
// the asserted rows' ratios to the defaults row within 20 % of the page's
// (3.97×, 5.02×, 21×).
func TestTuningTable(t *testing.T) {
	var rs []TuningResult
	for _, c := range TuningCases {
		synctest.Test(t, func(t *testing.T) {
			r, err := RunTuning(t.Context(), c, 20*time.Second)
			require.NoError(t, err)
			rs = append(rs, r)
		})
	}
	var b strings.Builder
	WriteTuningTable(&b, rs)
	t.Logf("\n%s", b.String())
	for _, r := range rs[1:] {
		if !r.Case.Asserted {
			continue
		}
		got, want := r.MsgPerSec/rs[0].MsgPerSec, r.Case.Page/rs[0].Case.Page
		require.InEpsilon(t, want, got, 0.2, "%s: ratio %.2f, page %.2f", r.Case.Name, got, want)
	}
}

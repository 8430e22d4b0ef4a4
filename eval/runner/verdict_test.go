package runner

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// hopRun is an exp6 run: the direct DDS reader at 0.5 ms, the device at 0.5 ms + hop.
func hopRun(seed uint64, hop time.Duration) *Result {
	r := &Result{Run: "exp6-hop-clean", Exp: "exp6", System: "picobridge", Level: "clean", Seed: seed, EndNs: int64(10 * time.Second)}
	rec := NewRecorder(r.Run)
	for i := range 300 {
		st := int64(i) * int64(time.Second) / 30
		seq := rec.Sent(st)
		rec.Written(seq, st, time.Microsecond, false)
		rec.Received(Direct, st, st+int64(500*time.Microsecond))
		rec.Received(Critical, st, st+int64(500*time.Microsecond+hop))
	}
	rec.fill(r)
	return r
}

func TestClaims(t *testing.T) {
	ms := time.Millisecond
	rowsOf := func(rs ...*Result) []Row {
		var rows []Row
		for _, r := range rs {
			rows = append(rows, Summarize(r))
		}
		return rows
	}
	// Claim 1 holds at mild and moderate over all seeds, strong fails in one seed: partly.
	rows := rowsOf(
		seeded("picobridge", "mild", 1, ms, 0), seeded("picobridge", "mild", 2, ms, 0),
		seeded("picobridge", "moderate", 1, ms, 0), seeded("picobridge", "moderate", 2, ms, 0),
		seeded("picobridge", "strong", 1, ms, 0), seeded("picobridge", "strong", 2, 2*ms, 0),
		seeded("picobridge", "clean", 1, 5*ms, 0), // clean is not part of the claim
		hopRun(1, 300*time.Microsecond), hopRun(2, 350*time.Microsecond))
	for i := range rows {
		rows[i].Res.Exp = "exp3"
		if rows[i].Res.Run == "exp6-hop-clean" {
			rows[i].Res.Exp = "exp6"
		}
	}
	cl := Claims(rows, nil)
	require.Len(t, cl, 5)
	require.Equal(t, Partly, cl[0].Verdict)
	require.Contains(t, cl[0].Numbers, "strong: p95 1.50 ms [1.00 ms–2.00 ms], publisher ≥ 30.0 Hz, delivered 600/600")
	require.Equal(t, Reproduced, cl[1].Verdict)
	require.Equal(t, "hop overhead at p50 +0.33 ms [+0.30 – +0.35] over 2 runs (exp6)", cl[1].Numbers)
	require.Equal(t, NotJudged, cl[2].Verdict)
	require.Equal(t, "mw not run on ethernet", cl[2].Numbers)
	require.Equal(t, NotJudged, cl[4].Verdict)

	// Every level beyond the bar in every seed: not reproduced; a hop above 0.4 ms too.
	rows = rowsOf(seeded("picobridge", "mild", 1, 2*ms, 0), seeded("picobridge", "strong", 1, 3*ms, 0), hopRun(1, 600*time.Microsecond))
	for i := range rows {
		rows[i].Res.Exp = "exp3"
		if rows[i].Res.Run == "exp6-hop-clean" {
			rows[i].Res.Exp = "exp6"
		}
	}
	cl = Claims(rows, nil)
	require.Equal(t, NotReproduced, cl[0].Verdict)
	require.Equal(t, NotReproduced, cl[1].Verdict)

	// Nothing run: not judged, and the reason.
	cl = Claims(nil, nil)
	require.Equal(t, NotJudged, cl[0].Verdict)
	require.Equal(t, "exp3 picobridge at mild/moderate/strong not run", cl[0].Numbers)
	require.Equal(t, "exp6 not run", cl[1].Numbers)
}

// TestClaimsMiddleware: the mw fixture's verdicts (TestMWSummarizeAndParagraph): Cyclone
// fastest on Ethernet; Wi-Fi won by the Rust router at p95 only, 4G by picobridge's router.
func TestClaimsMiddleware(t *testing.T) {
	const n = 100
	flat := func(ms float64) func(int) float64 { return func(int) float64 { return ms } }
	var mw []MWRow
	add := func(system, profile string, tls bool, lat func(int) float64) {
		for _, size := range []int{64, 16 << 10} {
			mw = append(mw, SummarizeMW(mwSynthetic(system, profile, size, tls, n, lat)))
		}
	}
	add(MWCyclone, "ethernet", false, flat(0.2))
	add(MWZenoh, "ethernet", false, flat(0.3))
	add(MWZenoh, "ethernet", true, flat(0.45))
	add(MWCyclone, "wifi", false, flat(5))
	add(MWZenoh, "wifi", false, flat(4))
	add(MWMosquitto, "wifi", false, func(i int) float64 {
		if i%10 == 0 {
			return -1
		}
		return 3
	})
	add(MWCyclone, "4g", false, flat(80))
	add(MWPicobridge, "4g", false, flat(70))
	cl := Claims(nil, mw)
	require.Equal(t, Reproduced, cl[2].Verdict, cl[2].Numbers)
	require.Equal(t, Partly, cl[3].Verdict, cl[3].Numbers)
	require.Contains(t, cl[3].Numbers, "wifi: lowest p50 mosquitto (2 of 2 sizes), lowest p95 zenoh-rust (2 of 2)")
	require.Contains(t, cl[3].Numbers, "4g: lowest p50 picobridge")
	require.Equal(t, NotJudged, cl[4].Verdict)
	require.Equal(t, "zenoh-rust: p50 with TLS / without ×1.50 [×1.50–×1.50] over 2 link×size cells", cl[4].Numbers)

	out := t.TempDir()
	var results []*Result
	for _, r := range mw {
		results = append(results, r.Res)
	}
	require.NoError(t, WriteReport(Config{Out: out}, results))
	sum, err := os.ReadFile(filepath.Join(out, "summary.md"))
	require.NoError(t, err)
	require.Contains(t, string(sum), "## Verdicts on the seed papers' claims")
	require.Contains(t, string(sum), "| Zhang et al.: Cyclone DDS has the lowest latency on Ethernet | **reproduced** |")
}

// TestBusyVariantKeptApart: the same cell quiet and busy is two cells; the verdict judges
// the quiet one.
func TestBusyVariantKeptApart(t *testing.T) {
	ms := time.Millisecond
	var rows []Row
	for _, lv := range []string{"mild", "moderate", "strong"} {
		for seed := uint64(1); seed <= 3; seed++ {
			q := seeded("picobridge", lv, seed, ms, 0)
			b := seeded("picobridge", lv, seed, 9*ms, 0)
			b.Run += "-busy"
			b.Cotenant = 2
			rows = append(rows, Summarize(q), Summarize(b))
		}
	}
	cells := SeedCells(rows)
	require.Len(t, cells, 6)
	require.Equal(t, 0, cells[0].Cotenant)
	require.Equal(t, 2, cells[1].Cotenant)
	require.InDelta(t, 9, cells[1].P95.Median, 1e-9)
	require.Equal(t, Reproduced, Claims(rows, nil)[0].Verdict)
}

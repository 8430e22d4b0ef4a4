package runner

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/internal/testpki"
	"github.com/picobridge/picobridge/sim/linkemu"
)

func TestMWNamesAndRates(t *testing.T) {
	for n, want := range map[int]string{64: "64B", 1024: "1KiB", 16 << 10: "16KiB", 256 << 10: "256KiB", 1 << 20: "1MiB", 1500: "1500B", 3 << 20: "3MiB"} {
		require.Equal(t, want, SizeLabel(n))
	}
	require.Equal(t, "mw-mosquitto-4g-1MiB-tls", mwRunName(MWMosquitto, "4g", 1<<20, true))
	require.Equal(t, "mw-cyclone-ethernet-64B", mwRunName(MWCyclone, "ethernet", 64, false))

	// At most 50 Hz, at most half the link: 1 MiB on 4G (5.64 Mbit/s) is 0.336 Hz.
	require.Equal(t, 50.0, mwRate(64, 5640*linkemu.Kbit))
	require.Equal(t, 50.0, mwRate(1<<20, 0))
	require.InDelta(t, 0.5*5640e3/(8*1<<20), mwRate(1<<20, 5640*linkemu.Kbit), 1e-12)
	require.Equal(t, 150, mwMessages(50, 3*time.Second))
	require.Equal(t, mwMinMessages, mwMessages(0.336, 3*time.Second))

	b := make([]byte, 64)
	mwPayload(b, 1234567890123)
	require.Equal(t, []byte{0, 1, 0, 0}, b[:4])
	st, ok := mwStamp(b)
	require.True(t, ok)
	require.EqualValues(t, 1234567890123, st)
	_, ok = mwStamp(b[:11])
	require.False(t, ok)
}

// TestMWRecorderJoinsOutOfOrder: receptions reported before their send (a child
// publisher's line arrives after the subscriber's) still join by stamp; unknown stamps
// and failed sends are counted, sequence numbers follow send order.
func TestMWRecorderJoinsOutOfOrder(t *testing.T) {
	sink := &mwSink{}
	rec := &mwRecorder{}
	sink.cur.Store(rec)
	require.True(t, sink.handleLine("r 300 310"))
	require.True(t, sink.handleLine("s 300 5000 0"))
	require.True(t, sink.handleLine("s 100 7000 0"))
	require.True(t, sink.handleLine("s 200 9000 1"))
	require.True(t, sink.handleLine("r 100 150"))
	require.True(t, sink.handleLine("r 999 1000")) // never sent
	require.False(t, sink.handleLine("matched"))
	sent, recv := rec.counts()
	require.Equal(t, 2, sent)
	require.Equal(t, 3, recv)

	res := &Result{Run: "mw-x", MW: &MWInfo{Size: 64}}
	rec.fill(res)
	require.Equal(t, []uint64{0, 2}, res.Published)
	require.Len(t, res.Attempts, 3)
	require.True(t, res.Attempts[1].Err)
	require.Equal(t, 7*time.Microsecond, res.Attempts[0].Dur)
	require.Len(t, res.Samples, 2)
	require.Equal(t, 1, res.Unknown[mwConsumer])
	require.EqualValues(t, 310, res.MW.LastRecv)
	for _, s := range res.Samples {
		require.Equal(t, map[int64]uint64{100: 0, 300: 2}[s.SendNs], s.Seq)
	}
	// Between phases a reception has no recorder: it is counted as late, not lost silently.
	sink.cur.Store(nil)
	require.True(t, sink.handleLine("r 400 410"))
	sink.payload(make([]byte, 64))
	require.EqualValues(t, 2, sink.late.Load())
}

// mwSynthetic is a run of n messages 20 ms apart, each delivered lat(i) ms later
// (negative: lost).
func mwSynthetic(system, profile string, size int, tls bool, n int, lat func(i int) float64) *Result {
	r := &Result{Run: mwRunName(system, profile, size, tls), Exp: MWExp, System: system, Level: profile,
		MW: &MWInfo{Size: size, TLS: tls, OfferedHz: 50}, ProducedLoss: 0.001, ExpectedLoss: 0.001}
	rec := &mwRecorder{}
	for i := range n {
		st := int64(i) * int64(20*time.Millisecond)
		rec.sent(st, time.Microsecond, false)
		if l := lat(i); l >= 0 {
			rec.received(st, st+int64(l*float64(time.Millisecond)))
		}
	}
	r.StartNs, r.EndNs = 0, int64(n)*int64(20*time.Millisecond)
	rec.fill(r)
	r.MW.Sent = len(r.Published)
	return r
}

func TestMWSummarizeAndParagraph(t *testing.T) {
	const n = 100
	flat := func(ms float64) func(int) float64 { return func(int) float64 { return ms } }
	var results []*Result
	add := func(system, profile string, tls bool, lat func(int) float64) {
		for _, size := range []int{64, 16 << 10} {
			results = append(results, mwSynthetic(system, profile, size, tls, n, lat))
		}
	}
	// ethernet: Cyclone fastest at both quantiles → reproduces.
	add(MWCyclone, "ethernet", false, flat(0.2))
	add(MWZenoh, "ethernet", false, flat(0.3))
	add(MWMosquitto, "ethernet", false, flat(0.4))
	// ethernet with TLS faster still: TLS runs do not compete.
	add(MWMosquitto, "ethernet", true, flat(0.1))
	// wifi: Mosquitto fastest at p50, but it loses 10 % of the messages: its p95 counts
	// them as infinitely late, so the Rust router wins p95 → reproduces in part.
	add(MWCyclone, "wifi", false, flat(5))
	add(MWZenoh, "wifi", false, flat(4))
	add(MWMosquitto, "wifi", false, func(i int) float64 {
		if i%10 == 0 {
			return -1
		}
		return 3
	})
	// 4g: picobridge fastest → the Zenoh protocol, not the Rust router.
	add(MWCyclone, "4g", false, flat(80))
	add(MWZenoh, "4g", false, flat(75))
	add(MWPicobridge, "4g", false, flat(70))

	row := SummarizeMW(results[0])
	require.Equal(t, n, row.Sent)
	require.Equal(t, n, row.Delivered)
	require.InDelta(t, 0.2, row.Lat.P50, 1e-9)
	// Delivered per second from first send (0) to last reception (99·20 ms + 0.2 ms).
	require.InDelta(t, float64(n)/(1.98+0.0002), row.MsgsPerS, 1e-9)
	require.InDelta(t, row.MsgsPerS*64/1e6, row.MBPerS, 1e-12)
	lossy := SummarizeMW(results[len(results)-8])
	require.Equal(t, "mw-mosquitto-wifi-64B", lossy.Res.Run)
	require.Equal(t, 90, lossy.Delivered)
	require.InDelta(t, 3, lossy.rankLatency(0.5), 1e-9)
	require.True(t, math.IsInf(lossy.rankLatency(0.95), 1))

	var rows []MWRow
	for _, r := range results {
		rows = append(rows, SummarizeMW(r))
	}
	p := mwParagraph(rows)
	t.Log(p)
	lines := strings.Split(strings.TrimSpace(p), "\n")
	require.Len(t, lines, 3)
	require.Contains(t, lines[0], "**ethernet**: lowest p50 cyclone (at 2 of 2 payload sizes: 64B cyclone, 16KiB cyclone); lowest p95 cyclone")
	require.Contains(t, lines[0], "(Cyclone DDS best on ethernet) **reproduces**.")
	require.Contains(t, lines[1], "**wifi**: lowest p50 mosquitto")
	require.Contains(t, lines[1], "lowest p95 zenoh-rust")
	require.Contains(t, lines[1], "**reproduces in part** (only at p95)")
	require.Contains(t, lines[2], "lowest p50 picobridge")
	require.Contains(t, lines[2], "reproduces for the Zenoh protocol through picobridge's router, **not** for the Rust router")

	// A profile where Mosquitto wins outright does not reproduce.
	noRep := mwParagraph([]MWRow{
		SummarizeMW(mwSynthetic(MWMosquitto, "4g", 64, false, n, flat(1))),
		SummarizeMW(mwSynthetic(MWZenoh, "4g", 64, false, n, flat(2))),
	})
	require.Contains(t, noRep, "(Zenoh best on 4g) **does not reproduce**")
	// Within 5 % is a tie: nobody wins the size.
	tie := mwParagraph([]MWRow{
		SummarizeMW(mwSynthetic(MWMosquitto, "4g", 64, false, n, flat(1.00))),
		SummarizeMW(mwSynthetic(MWZenoh, "4g", 64, false, n, flat(1.04))),
	})
	require.Contains(t, tie, "no lowest p50 (ties within 5 % at all 1 sizes: 64B mosquitto≈zenoh-rust)")
	require.Contains(t, tie, "(Zenoh best on 4g) is **not borne out**: no system was clearly fastest.")

	// The section and the plots.
	out := t.TempDir()
	results = append(results, &Result{Run: mwRunName(MWCyclone, "wifi", 64, true), Exp: MWExp, System: MWCyclone, Level: "wifi",
		MW: &MWInfo{Size: 64, TLS: true}, Missing: "DDS Security"})
	require.NoError(t, WriteReport(Config{Out: out, Cotenant: 2}, results))
	sum, err := os.ReadFile(filepath.Join(out, "summary.md"))
	require.NoError(t, err)
	s := string(sum)
	require.Contains(t, s, "## Middleware comparison")
	require.Contains(t, s, "**Busy host**: 2 CPU busy loops")
	require.NotContains(t, s, "## Reference (Adaptive Bridge paper") // no exp1–6 runs
	require.Contains(t, s, "| mw-mosquitto-wifi-64B | mosquitto | wifi | 64B | off | 50.00 | **90/100** | 3.00 ms |")
	require.Contains(t, s, "| mw-mosquitto-ethernet-16KiB-tls | mosquitto | ethernet | 16KiB | on |")
	require.Contains(t, s, "cyclone+tls (all its runs, e.g. mw-cyclone-wifi-64B-tls): not run (missing DDS Security)")
	for _, prof := range []string{"ethernet", "wifi", "4g"} {
		for _, name := range []string{"mw-latency-p50-" + prof + ".png", "mw-latency-p95-" + prof + ".png", "mw-throughput-" + prof + ".png"} {
			b, err := os.ReadFile(filepath.Join(out, name))
			require.NoError(t, err, name)
			require.True(t, strings.HasPrefix(string(b), "\x89PNG"), name)
			require.Contains(t, s, "("+name+")")
		}
	}
	// One table row per run that ran.
	rowsInTable := 0
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "| mw-") {
			rowsInTable++
		}
	}
	require.Equal(t, len(results)-1, rowsInTable)
}

func TestMWCycloneXML(t *testing.T) {
	pub := mwCycloneXML(7577, "")
	require.Contains(t, pub, "<Transport>tcp</Transport>")
	require.Contains(t, pub, "<Port>7577</Port>")
	require.NotContains(t, pub, "<Peers>")
	sub := mwCycloneXML(0, "127.0.0.1:7578")
	require.Contains(t, sub, `<Peers><Peer address="127.0.0.1:7578"/></Peers>`)
	require.Contains(t, sub, "<Port>-1</Port>")
	for _, x := range []string{pub, sub} {
		require.Contains(t, x, "<AlwaysUsePeeraddrForUnicast>true</AlwaysUsePeeraddrForUnicast>")
		require.Contains(t, x, "<AllowMulticast>false</AllowMulticast>")
	}
}

func TestMosquittoConfig(t *testing.T) {
	require.Equal(t, "user root\npersistence false\nlog_dest stderr\nlog_type error\nlog_type warning\nallow_anonymous true\nlistener 1884 127.0.0.1\n",
		mosquittoConfig(1884, nil))
	c := mosquittoConfig(1884, &mwPKI{leaf: leafFiles("/x/c.pem", "/x/k.pem")})
	require.True(t, strings.HasSuffix(c, "listener 1884 127.0.0.1\ncertfile /x/c.pem\nkeyfile /x/k.pem\n"), c)
}

func leafFiles(cert, key string) (l testpki.Leaf) {
	l.CertFile, l.KeyFile = cert, key
	return l
}

// TestMWPlannedTimeFitsBudget: the default comparison (3 link classes × 5 sizes × 4
// systems, TLS on and off, Cyclone without) is planned within the 12-minute budget of a
// full run on 2 cores, the quick profile within a minute per link class.
func TestMWPlannedTimeFitsBudget(t *testing.T) {
	full := mwPlannedTime(Config{})
	t.Logf("full mw plan: %v", full)
	require.Less(t, full, 10*time.Minute) // 2 minutes left for loss stalls and host load
	require.Greater(t, full, 5*time.Minute)
	// --duration sets the experiments' runs; --mw-duration keeps the phases at 3 s.
	require.Equal(t, full, mwPlannedTime(Config{Duration: time.Minute, MWDuration: 3 * time.Second}))
	require.Greater(t, mwPlannedTime(Config{Duration: time.Minute}), 10*full)
	quick := mwPlannedTime(Config{Quick: true, MWProfiles: []string{"wifi"}, MWSizes: []int{64, 16 << 10}})
	t.Logf("smoke mw plan: %v", quick)
	require.Less(t, quick, 40*time.Second)
}

// FuzzMWChildLine: any stdout line of a DDS child is either consumed as one reception or
// send, or left alone; a consumed "r"/"s" line adds at most one record; nothing panics.
func FuzzMWChildLine(f *testing.F) {
	for _, s := range []string{"r 1 2", "s 1 2 0", "s 1 2 1", "ready", "matched", "done", "r x y", "s 1", "r 9223372036854775807 -1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		sink := &mwSink{}
		rec := &mwRecorder{}
		sink.cur.Store(rec)
		consumed := sink.handleLine(line)
		require.Equal(t, strings.HasPrefix(line, "r ") || strings.HasPrefix(line, "s "), consumed)
		sent, recv := rec.counts()
		require.LessOrEqual(t, sent+recv, 1)
		res := &Result{Run: "f", MW: &MWInfo{Size: 64}}
		rec.fill(res)
		require.LessOrEqual(t, len(res.Samples)+len(res.Attempts), 1)
	})
}

// With several seeds per cell a size is won only where the fastest system's range over
// its seeds lies below the next one's: overlapping ranges are a tie even when the medians
// differ by more than the one-run 5 % rule, and disjoint ranges win even when the medians
// are within 5 %.
func TestMWWinnerAcrossSeeds(t *testing.T) {
	const n = 40
	flat := func(ms float64) func(int) float64 { return func(int) float64 { return ms } }
	var rows []MWRow
	add := func(system string, size int, lats ...float64) {
		for i, l := range lats {
			r := mwSynthetic(system, "wifi", size, false, n, flat(l))
			r.Seed = uint64(i + 1)
			r.Run += fmt.Sprintf("-s%d", r.Seed)
			rows = append(rows, SummarizeMW(r))
		}
	}
	// 64 B: medians 3.0 vs 4.0 (33 % apart) but zenoh's 3.0–4.5 overlaps cyclone's 3.5–5: tie.
	add(MWZenoh, 64, 3.0, 4.5, 2.9)
	add(MWCyclone, 64, 4.0, 3.5, 5.0)
	// 16 KiB: medians 10.0 vs 10.3 (3 % apart) but the ranges 9.9–10.1 and 10.2–10.4 are disjoint: zenoh wins.
	add(MWZenoh, 16<<10, 10.0, 9.9, 10.1)
	add(MWCyclone, 16<<10, 10.3, 10.2, 10.4)
	w, wins, compared, by := mwWinner(rows, "wifi", []int{64, 16 << 10}, 0.5)
	require.Equal(t, MWZenoh, w)
	require.Equal(t, 1, wins)
	require.Equal(t, 2, compared)
	require.Equal(t, []string{"64B zenoh-rust≈cyclone", "16KiB zenoh-rust"}, by)
	require.Equal(t, 3, mwSeeds(rows))
	require.Contains(t, mwTieRule(rows), "With 3 seeds per cell")
	cl := Claims(nil, rows)
	require.Contains(t, cl[3].Numbers, "3 seeds per cell")

	// Every size tied: the paragraph names the seeds' rule, not the one-run 5 % rule.
	var tied []MWRow
	for _, r := range rows {
		if r.Res.MW.Size == 64 {
			tied = append(tied, r)
		}
	}
	p := mwParagraph(tied)
	require.Contains(t, p, "no lowest p50 (ties: ranges over 3 seeds overlap at all 1 sizes: 64B zenoh-rust≈cyclone)")
	require.NotContains(t, p, "within 5 %")
}

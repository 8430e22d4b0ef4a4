package runner

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
)

// ResultsFile is the machine-readable summary picoeval writes beside summary.md
// (results.json): one record per run and one per across-seed cell. Latencies in ms; a
// statistic without samples is null.
type ResultsFile struct {
	Generated string       `json:"generated"` // RFC 3339, UTC
	Profile   string       `json:"profile"`   // "full" or "quick"
	Seeds     []uint64     `json:"seeds"`
	Host      string       `json:"host_start"`
	Runs      []RunRecord  `json:"runs"`
	Cells     []CellRecord `json:"cells"`
}

// RunRecord is one run of experiments 1–6, zenohd, ros2dds or mw.
type RunRecord struct {
	Run      string   `json:"run"`
	Exp      string   `json:"exp"`
	System   string   `json:"system"`
	Level    string   `json:"level"` // impairment level, or the mw link profile
	Seed     uint64   `json:"seed"`
	Status   string   `json:"status"` // "ok", "missing: …", "failed: …"
	Seconds  float64  `json:"seconds"`
	Attempts int      `json:"attempts"`   // publication attempts
	Errors   int      `json:"pub_errors"` // attempts that failed
	Rate     *float64 `json:"pub_rate_hz"`
	// Critical consumer (mw: the subscriber).
	Delivered int      `json:"critical_delivered"`
	P50       *float64 `json:"critical_p50_ms"`
	P95       *float64 `json:"critical_p95_ms"`
	P99       *float64 `json:"critical_p99_ms"`
	// Impaired consumer (experiments 1–6), distinct samples received.
	ImpairedDelivered int `json:"impaired_delivered,omitempty"`
	// mw only.
	SizeBytes int      `json:"size_bytes,omitempty"`
	TLS       bool     `json:"tls,omitempty"`
	LoadStart *float64 `json:"load_start"`
	LoadEnd   *float64 `json:"load_end"`
	Cotenant  int      `json:"cotenant"`
}

// CellRecord is one across-seed cell (SeedCells).
type CellRecord struct {
	Exp       string     `json:"exp"`
	System    string     `json:"system"`
	Level     string     `json:"level"`
	Cotenant  int        `json:"cotenant"`
	Seeds     []uint64   `json:"seeds"`
	P50       []*float64 `json:"critical_p50_ms"` // median, min, max
	P95       []*float64 `json:"critical_p95_ms"`
	P99       []*float64 `json:"critical_p99_ms"`
	Delivered int        `json:"critical_delivered"`
	Attempted int        `json:"critical_attempted"`
}

func num(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func spreadRec(s Spread) []*float64 { return []*float64{num(s.Median), num(s.Min), num(s.Max)} }

func status(r *Result) string {
	switch {
	case r.Missing != "":
		return "missing: " + r.Missing
	case r.Err != nil:
		return "failed: " + r.Err.Error()
	}
	return "ok"
}

// writeResultsJSON writes results.json into cfg.Out.
func writeResultsJSON(cfg Config, generated string, rows []Row, mwRows []MWRow) error {
	profile := "full"
	if cfg.Quick {
		profile = "quick"
	}
	f := ResultsFile{Generated: generated, Profile: profile, Seeds: cfg.Seeds, Host: cfg.hostStart, Runs: []RunRecord{}, Cells: []CellRecord{}}
	for _, r := range rows {
		res := r.Res
		rec := RunRecord{Run: res.Run, Exp: res.Exp, System: res.System, Level: res.Level, Seed: res.Seed, Status: status(res),
			Seconds: float64(res.EndNs-res.StartNs) / 1e9, Attempts: r.Pub.Attempts, Errors: r.Pub.Errors, Rate: num(r.Pub.Rate),
			Delivered: r.CritDelivery.Unique, P50: num(r.Crit.P50), P95: num(r.Crit.P95), P99: num(r.Crit.P99),
			ImpairedDelivered: r.ImpDelivery.Unique, LoadStart: num(res.Load[0]), LoadEnd: num(res.Load[1]), Cotenant: res.Cotenant}
		if res.Missing != "" || res.Err != nil {
			rec.Seconds, rec.Rate, rec.P50, rec.P95, rec.P99 = 0, nil, nil, nil, nil
		}
		f.Runs = append(f.Runs, rec)
	}
	for _, m := range mwRows {
		res := m.Res
		rec := RunRecord{Run: res.Run, Exp: res.Exp, System: res.System, Level: res.Level, Seed: res.Seed, Status: status(res),
			Attempts: max(len(res.Attempts), m.Sent), Errors: max(len(res.Attempts), m.Sent) - m.Sent, Delivered: m.Delivered,
			P50: num(m.Lat.P50), P95: num(m.Lat.P95), P99: num(m.Lat.P99), LoadStart: num(res.Load[0]), LoadEnd: num(res.Load[1]), Cotenant: res.Cotenant}
		if res.MW != nil {
			rec.SizeBytes, rec.TLS = res.MW.Size, res.MW.TLS
			rec.Rate = num(res.MW.OfferedHz)
		}
		f.Runs = append(f.Runs, rec)
	}
	for _, c := range SeedCells(rows) {
		f.Cells = append(f.Cells, CellRecord{Exp: c.Exp, System: c.System, Level: c.Level, Cotenant: c.Cotenant, Seeds: c.Seeds,
			P50: spreadRec(c.P50), P95: spreadRec(c.P95), P99: spreadRec(c.P99), Delivered: c.Delivered, Attempted: c.Attempted})
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(cfg.Out, "results.json"), append(b, '\n'), 0o644)
}

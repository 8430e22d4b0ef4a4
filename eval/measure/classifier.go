package measure

import "time"

// Transition is one change of a device's class reported by the classifier.
type Transition struct {
	AtNs   int64
	Device string
	From   string // "UNKNOWN", "CRITICAL", "NONCRITICAL"
	To     string
}

// Toggle is one switch of the impairment in a toggle run: from AtNs on the link is
// impaired (On) or clean.
type Toggle struct {
	AtNs int64
	On   bool
}

// ToggleResponse is the classifier's reaction to one toggle.
type ToggleResponse struct {
	Toggle   Toggle
	Detected bool          // a matching transition happened before the next toggle
	After    time.Duration // toggle → first transition to the expected class
}

// Degraded is the class a device should get on an impaired link, Healthy on a clean one.
const (
	Degraded = "NONCRITICAL"
	Healthy  = "CRITICAL"
)

// Responses finds, for each toggle of device, the first transition to the class the toggle
// calls for (Degraded when On, Healthy otherwise) before the next toggle. Detection times are
// the responses of On toggles, recovery times those of Off toggles.
func Responses(toggles []Toggle, transitions []Transition, device string) []ToggleResponse {
	var out []ToggleResponse
	for i, tg := range toggles {
		end := int64(1<<63 - 1)
		if i+1 < len(toggles) {
			end = toggles[i+1].AtNs
		}
		want := Healthy
		if tg.On {
			want = Degraded
		}
		r := ToggleResponse{Toggle: tg}
		for _, tr := range transitions {
			if tr.Device != device || tr.AtNs < tg.AtNs || tr.AtNs >= end || tr.To != want {
				continue
			}
			r.Detected, r.After = true, time.Duration(tr.AtNs-tg.AtNs)
			break
		}
		out = append(out, r)
	}
	return out
}

// DetectRecover averages the detection (On) and recovery (Off) times of the detected
// responses; ok* report whether there was any.
func DetectRecover(rs []ToggleResponse) (detect, recover time.Duration, okD, okR bool) {
	var sd, sr time.Duration
	var nd, nr int
	for _, r := range rs {
		if !r.Detected {
			continue
		}
		if r.Toggle.On {
			sd += r.After
			nd++
		} else {
			sr += r.After
			nr++
		}
	}
	if nd > 0 {
		detect, okD = sd/time.Duration(nd), true
	}
	if nr > 0 {
		recover, okR = sr/time.Duration(nr), true
	}
	return
}

// StateSeries turns transitions of one device into a step series (times in seconds since
// startNs, state as a level: UNKNOWN 0, NONCRITICAL 1, CRITICAL 2) for plots, ending at endNs.
func StateSeries(transitions []Transition, device string, startNs, endNs int64, initial string) (ts, levels []float64) {
	cur := Level(initial)
	ts = append(ts, 0)
	levels = append(levels, cur)
	for _, tr := range transitions {
		if tr.Device != device {
			continue
		}
		t := float64(tr.AtNs-startNs) / 1e9
		ts = append(ts, t, t)
		levels = append(levels, cur, Level(tr.To))
		cur = Level(tr.To)
	}
	ts = append(ts, float64(endNs-startNs)/1e9)
	levels = append(levels, cur)
	return ts, levels
}

// Level maps a class name to its plot level.
func Level(class string) float64 {
	switch class {
	case Healthy:
		return 2
	case Degraded:
		return 1
	}
	return 0
}

package testlane

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/picobridge/picobridge/knobs"
	"github.com/picobridge/picobridge/probe"
)

// Status is a check's verdict.
type Status int

// Verdicts.
const (
	Pass Status = iota
	Fail
	Skip
)

func (s Status) String() string {
	switch s {
	case Fail:
		return "FAIL"
	case Skip:
		return "SKIP"
	}
	return "PASS"
}

// Check names (the JUnit test case names).
const (
	CheckSession       = "session"
	CheckLease         = "lease"
	CheckKeepAlive     = "keepalive"
	CheckDeclarations  = "declarations"
	CheckSends         = "sends"
	CheckBatchSize     = "batch_size"
	CheckFragmentation = "fragmentation"
	CheckProbes        = "probes"
	CheckAnnouncement  = "announcement"
	CheckDeviceExit    = "device_exit"
)

// Result is one check's outcome. Summary states the rule and, for a
// failure, what broke it, in words that depend only on the knobs and the
// expectations; Observed gives the measured values.
type Result struct {
	Name     string
	Status   Status
	Summary  string
	Observed string
}

// facts is what the checks judge.
type facts struct {
	exp      *Expectations
	r        *knobs.Resolved
	capa     knobs.Capacity
	sessions []SessionObs
	start    time.Time // first session opened
	end      time.Time // observation end
	endpoint string
	probes   probeOutcome
	faults   []faultOutcome
	exit     *exitOutcome
}

// knob renders "id V (set by S)".
func (f *facts) knob(id string) string {
	v := f.r.Get(id)
	return fmt.Sprintf("%s %s (set by %s)", id, v, v.Source)
}

func (f *facts) capability(name string) string {
	for _, c := range f.r.Capabilities {
		if c.Name == name {
			return fmt.Sprintf("capability %s %t (set by %s)", name, c.Value, c.Source)
		}
	}
	return "capability " + name
}

// rel renders an instant relative to the first session's OPEN.
func (f *facts) rel(t time.Time) string {
	return "+" + t.Sub(f.start).Round(time.Millisecond).String()
}

// opened are the sessions that completed OPEN.
func (f *facts) opened() []SessionObs {
	var out []SessionObs
	for _, s := range f.sessions {
		if !s.Opened.IsZero() {
			out = append(out, s)
		}
	}
	return out
}

func evaluate(f *facts) []Result {
	var out []Result
	if len(f.opened()) == 0 {
		msg := fmt.Sprintf("no device opened a session on tcp/%s within %s", f.endpoint, f.exp.Wait)
		obs := fmt.Sprintf("%d connections", len(f.sessions))
		out = append(out, Result{Name: CheckSession, Status: Fail, Summary: msg, Observed: obs})
		for _, n := range []string{CheckLease, CheckKeepAlive, CheckDeclarations, CheckSends, CheckBatchSize, CheckFragmentation, CheckProbes, CheckAnnouncement} {
			out = append(out, Result{Name: n, Status: Skip, Summary: "no session"})
		}
	} else {
		out = append(out, f.checkSession(), f.checkLease(), f.checkKeepAlive(), f.checkDeclarations(),
			f.checkSends(), f.checkBatchSize(), f.checkFragmentation(), f.checkProbes(), f.checkAnnouncement())
		for i := range f.faults {
			out = append(out, f.checkFault(i))
		}
	}
	if f.exit != nil {
		out = append(out, f.checkExit())
	}
	return out
}

func (f *facts) checkSession() Result {
	want := int(f.r.Int(knobs.BatchUnicastSize))
	res := Result{Name: CheckSession}
	for _, s := range f.opened() {
		if s.Proposed != want {
			res.Status = Fail
			res.Summary = fmt.Sprintf("the device proposed batch size %d B in INIT, its knobs give %d: %s; the device was built with other knobs, or the lane names the wrong ones",
				s.Proposed, want, f.knob(knobs.BatchUnicastSize))
			res.Observed = fmt.Sprintf("session %d (zid %s, %s): INIT batch %d B, router %d B, negotiated %d B", s.Conn, s.ZID, s.WhatAmI, s.Proposed, s.RouterBatch, s.Negotiated)
			return res
		}
	}
	s := f.opened()[0]
	res.Summary = fmt.Sprintf("the device proposed batch size %d B in INIT, as %s", want, f.knob(knobs.BatchUnicastSize))
	res.Observed = fmt.Sprintf("%d session(s); first zid %s (%s), negotiated %d B", len(f.opened()), s.ZID, s.WhatAmI, s.Negotiated)
	return res
}

func (f *facts) checkLease() Result {
	want := f.capa.Lease
	res := Result{Name: CheckLease}
	for _, s := range f.opened() {
		if s.Lease != want {
			res.Status = Fail
			res.Summary = fmt.Sprintf("the device announced lease %s in OPEN, its knobs give %s: %s", s.Lease, want, f.knob(knobs.LeaseMs))
			res.Observed = fmt.Sprintf("session %d: OPEN lease %s", s.Conn, s.Lease)
			return res
		}
	}
	res.Summary = fmt.Sprintf("the device announced lease %s in OPEN, as %s", want, f.knob(knobs.LeaseMs))
	res.Observed = fmt.Sprintf("%d session(s)", len(f.opened()))
	return res
}

func (f *facts) checkKeepAlive() Result {
	interval := f.capa.KeepAlive
	limit := interval + f.exp.KeepAliveTolerance
	rule := fmt.Sprintf("zenoh.link.lease_ms %d / zenoh.link.lease_expire_factor %d = %s, + %s tolerance",
		f.r.Int(knobs.LeaseMs), f.r.Int(knobs.LeaseExpireFactor), interval.Round(time.Millisecond), f.exp.KeepAliveTolerance)
	res := Result{Name: CheckKeepAlive}
	var worst time.Duration
	var worstAt time.Time
	var worstConn, kas int
	for _, s := range f.opened() {
		kas += s.KeepAlives
		gap, at := s.MaxSilence, s.SilenceAt
		// The silence up to the end of the session or of the observation counts too.
		last := s.Ended
		if last.IsZero() || last.After(f.end) {
			last = f.end
		}
		if tail := last.Sub(s.LastDev); s.Ended.IsZero() && tail > gap {
			gap, at = tail, last
		}
		if gap > worst {
			worst, worstAt, worstConn = gap, at, s.Conn
		}
	}
	res.Observed = fmt.Sprintf("longest silence %s, ended at %s (session %d); %d keep-alives", worst.Round(time.Millisecond), f.rel(worstAt), worstConn, kas)
	if worst > limit {
		res.Status = Fail
		res.Summary = "the device was silent longer than its keep-alive period: " + rule
		return res
	}
	res.Summary = "the device was never silent longer than its keep-alive period: " + rule
	return res
}

func (f *facts) checkDeclarations() Result {
	res := Result{Name: CheckDeclarations}
	want := []struct {
		kind string
		keys []string
	}{
		{KindSubscriber, f.exp.Declares.Subscribers},
		{KindPublisher, f.exp.Declares.Publishers},
		{KindQueryable, f.exp.Declares.Queryables},
		{KindToken, f.exp.Declares.Tokens},
	}
	first := f.opened()[0]
	var declared []string
	for _, k := range []string{KindSubscriber, KindPublisher, KindQueryable, KindToken} {
		if keys := first.DeclaredKeys(k); len(keys) > 0 {
			declared = append(declared, k+"s "+strings.Join(keys, " "))
		}
	}
	res.Observed = "declared: " + orNone(strings.Join(declared, "; "))
	missing, n := missingKeys(first, want)
	switch {
	case n == 0:
		res.Status = Skip
		res.Summary = "no keys expected (declares is empty)"
	case len(missing) > 0:
		res.Status = Fail
		res.Summary = "not declared: " + strings.Join(missing, ", ")
	default:
		res.Summary = fmt.Sprintf("the device declared all %d expected keys", n)
	}
	return res
}

func missingKeys(s SessionObs, want []struct {
	kind string
	keys []string
}) ([]string, int) {
	var missing []string
	n := 0
	for _, w := range want {
		for _, k := range w.keys {
			n++
			if !s.Declared[w.kind][k] {
				missing = append(missing, w.kind+" "+k)
			}
		}
	}
	return missing, n
}

func orNone(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}

// checkSends: publications within the knob-derived ceiling. Sends are the
// device's batches carrying a PUSH or a FRAGMENT.
func (f *facts) checkSends() Result {
	res := Result{Name: CheckSends}
	var n, partial, maxPer, arrivals int
	var span time.Duration
	var maxAt time.Time
	for _, s := range f.opened() {
		n += s.DataBatches
		partial += s.PartialData
		if len(s.DataTimes) > 1 {
			first, last := s.DataTimes[0], s.DataTimes[len(s.DataTimes)-1]
			span += last.Sub(first)
			for _, t := range s.ToDevTimes {
				if t.After(first) && !t.After(last) {
					arrivals++
				}
			}
		}
		if s.MaxPerBatch > maxPer {
			maxPer, maxAt = s.MaxPerBatch, s.MaxPerAt
		}
	}
	if n == 0 {
		res.Status = Skip
		res.Summary = "the device published nothing"
		res.Observed = "0 data batches"
		return res
	}
	tol := 1 + f.exp.SendsTolerance
	res.Observed = fmt.Sprintf("%d data batches (%d partial) over %s; at most %d PUSH per batch", n, partial, span.Round(time.Millisecond), maxPer)
	var held []string
	if !f.r.Bool(knobs.TxBatch) {
		if maxPer > 1 {
			res.Status = Fail
			res.Summary = fmt.Sprintf("%d publications in one batch at %s, but %s: each put leaves in its own send", maxPer, f.rel(maxAt), f.knob(knobs.TxBatch))
			return res
		}
		held = append(held, "one PUSH per batch ("+knobs.TxBatch+" false)")
	}
	if f.capa.PerFdTxCeiling {
		// One send per window, plus one per batch the router sent the
		// device meanwhile: an arrival ends the read task's recv at once.
		w := f.capa.SocketWindow
		allowed := int(math.Floor(span.Seconds()/w.Seconds()*tol)) + 1 + arrivals
		res.Observed += fmt.Sprintf("; the socket window allows %d (%d of them released by batches to the device)", allowed, arrivals)
		if n > allowed {
			res.Status = Fail
			res.Summary = fmt.Sprintf("more sends than the socket window allows: %s gives one send per %s on a platform with %s, + %.0f%%",
				f.knob(knobs.SocketTimeoutMs), w, f.capability(knobs.CapPerFdTxCeiling), f.exp.SendsTolerance*100)
			return res
		}
		held = append(held, "one send per "+w.String()+" socket window")
	}
	if f.r.Bool(knobs.TxBatch) && f.r.Cap(knobs.CapFlushThread) && f.r.Cap(knobs.CapThreads) {
		fl := time.Duration(f.r.Int(knobs.TxFlushMs)) * time.Millisecond
		allowed := int(math.Floor(span.Seconds()/fl.Seconds()*tol)) + 1
		res.Observed += fmt.Sprintf("; the flush cadence allows %d partial", allowed)
		if partial > allowed {
			res.Status = Fail
			res.Summary = fmt.Sprintf("more partial batches than the flush cadence allows: %s flushes every %s, + %.0f%%",
				f.knob(knobs.TxFlushMs), fl, f.exp.SendsTolerance*100)
			return res
		}
		held = append(held, "one partial batch per "+fl.String()+" flush")
	}
	if len(held) == 0 {
		res.Summary = "no send ceiling applies (no per-fd socket lock, TX batching without a flush thread)"
		return res
	}
	res.Summary = "within the knob-derived ceiling: " + strings.Join(held, "; ")
	return res
}

func (f *facts) checkBatchSize() Result {
	res := Result{Name: CheckBatchSize}
	var maxB [2]int
	for _, s := range f.opened() {
		for d := range 2 {
			maxB[d] = max(maxB[d], s.MaxBatch[d])
			if s.OverBatch[d] > 0 {
				res.Status = Fail
				res.Summary = fmt.Sprintf("a %s batch of %d B exceeds the negotiated %d B (zenoh-wire.md §3.1)", Dir(d), s.OverBatch[d], s.Negotiated)
				res.Observed = fmt.Sprintf("session %d at %s", s.Conn, f.rel(s.OverBatchAt[d]))
				return res
			}
		}
	}
	res.Summary = "no batch above the negotiated size"
	res.Observed = fmt.Sprintf("largest %s %d B, %s %d B; negotiated %d B", FromDevice, maxB[FromDevice], ToDevice, maxB[ToDevice], f.opened()[0].Negotiated)
	return res
}

func (f *facts) checkFragmentation() Result {
	res := Result{Name: CheckFragmentation}
	var frags, trains, largest, largestFrags int
	for _, s := range f.opened() {
		frags += s.Fragments[FromDevice]
		trains += s.Trains[FromDevice]
		if s.LargestTrain[FromDevice] > largest {
			largest, largestFrags = s.LargestTrain[FromDevice], s.TrainFrags[FromDevice]
		}
	}
	res.Observed = fmt.Sprintf("%d fragments from the device, %d messages reassembled, largest %d B in %d fragments", frags, trains, largest, largestFrags)
	if frags > 0 && !f.r.Bool(knobs.Fragmentation) {
		res.Status = Fail
		res.Summary = "the device fragmented a message, but " + f.knob(knobs.Fragmentation)
		return res
	}
	fm := int(f.r.Int(knobs.FragMaxSize))
	if f.r.Bool(knobs.Fragmentation) && largest > fm {
		res.Status = Fail
		res.Summary = fmt.Sprintf("the device sent a %d B message in %d fragments, over %s: a device built with these knobs drops it", largest, largestFrags, f.knob(knobs.FragMaxSize))
		return res
	}
	if frags == 0 {
		res.Summary = "no fragmented messages; " + f.knob(knobs.Fragmentation)
		return res
	}
	res.Summary = "fragmented messages within " + f.knob(knobs.FragMaxSize)
	return res
}

func (f *facts) checkProbes() Result {
	res := Result{Name: CheckProbes}
	p := f.probes
	if !f.exp.Responder {
		res.Status = Skip
		res.Summary = "the expectations do not say the device runs the probe responder (responder: false)"
		return res
	}
	key := probe.PingKey(f.exp.Device)
	res.Observed = fmt.Sprintf("%d of %d pings answered after %d warm-up pings", p.answered, p.sent, p.warmup)
	switch {
	case !p.declared:
		res.Status = Fail
		res.Summary = fmt.Sprintf("the device never declared a subscriber on %s: it does not run the probe responder under the name %s", key, f.exp.Device)
	case p.answered < f.exp.Probes:
		res.Status = Fail
		res.Summary = fmt.Sprintf("fewer than %d of %d pings on %s were answered, each within %s", f.exp.Probes, f.exp.Probes, key, probeTimeout)
	default:
		res.Summary = fmt.Sprintf("%d of %d pings on %s answered, each within %s", f.exp.Probes, f.exp.Probes, key, probeTimeout)
	}
	return res
}

func (f *facts) checkFault(i int) Result {
	fo := f.faults[i]
	fl := f.exp.Faults[i]
	res := Result{Name: fmt.Sprintf("fault[%d] %s", i, fl.Kind)}
	what := string(fl.Kind)
	if fl.Kind == FaultStallReads {
		what = "a " + fl.For.String() + " read stall"
	}
	if fo.injected.IsZero() {
		res.Status = Fail
		res.Summary = fmt.Sprintf("%s was not injected: %s", what, orNone(fo.notInjected))
		return res
	}
	res.Observed = "injected at " + f.rel(fo.injected)
	deadline := fo.injected.Add(fl.For + fl.Within)
	switch fl.Expect {
	case RecoverSurvive:
		var cur *SessionObs
		var next time.Time
		for i := range f.sessions {
			s := &f.sessions[i]
			if !s.Opened.IsZero() && s.Opened.Before(fo.injected) && (s.Ended.IsZero() || s.Ended.After(fo.injected)) {
				cur = s
			}
		}
		if cur != nil {
			next = cur.FirstAfter(fo.injected)
		}
		switch {
		case cur == nil:
			res.Status = Fail
			res.Summary = fmt.Sprintf("no session was open when %s began", what)
		case !cur.Ended.IsZero() && !cur.Ended.After(fo.injected.Add(fl.For)):
			res.Status = Fail
			res.Summary = fmt.Sprintf("the session did not survive %s", what)
			res.Observed += fmt.Sprintf("; ended at %s: %s", f.rel(cur.Ended), cur.EndReason)
		case next.IsZero() || next.After(deadline):
			res.Status = Fail
			res.Summary = fmt.Sprintf("the device sent nothing within %s after %s", fl.Within, what)
		default:
			res.Summary = fmt.Sprintf("the session survived %s and the device sent again within %s", what, fl.Within)
			res.Observed += "; first device batch since it began at " + f.rel(next)
		}
	case RecoverReconnect:
		var next *SessionObs
		for i := range f.sessions {
			s := &f.sessions[i]
			if !s.Opened.IsZero() && s.Opened.After(fo.injected) {
				next = s
				break
			}
		}
		if next == nil || next.Opened.After(deadline) {
			res.Status = Fail
			res.Summary = fmt.Sprintf("the device did not open a new session within %s of %s", fl.Within, what)
			return res
		}
		res.Observed += fmt.Sprintf("; session %d opened at %s", next.Conn, f.rel(next.Opened))
		want := []struct {
			kind string
			keys []string
		}{
			{KindSubscriber, f.exp.Declares.Subscribers},
			{KindPublisher, f.exp.Declares.Publishers},
			{KindQueryable, f.exp.Declares.Queryables},
			{KindToken, f.exp.Declares.Tokens},
		}
		if missing, _ := missingKeys(*next, want); len(missing) > 0 {
			res.Status = Fail
			res.Summary = fmt.Sprintf("the device reconnected after %s but did not declare again: %s", what, strings.Join(missing, ", "))
			return res
		}
		res.Summary = fmt.Sprintf("the device opened a new session within %s of %s and declared its keys again", fl.Within, what)
	}
	return res
}

func (f *facts) checkExit() Result {
	e := f.exit
	res := Result{Name: CheckDeviceExit, Observed: e.detail}
	switch {
	case e.startErr != "":
		res.Status = Fail
		res.Summary = "the device command did not start: " + e.startErr
	case e.running:
		res.Summary = "the device ran until the end of the observation (stopped by the lane)"
	case e.code != 0:
		res.Status = Fail
		res.Summary = fmt.Sprintf("the device exited with status %d", e.code)
	default:
		res.Summary = "the device exited with status 0"
	}
	return res
}

// checkAnnouncement compares the knobs the device announced (docs/probe.md,
// "Knob announcement") with the lane's resolution.
func (f *facts) checkAnnouncement() Result {
	res := Result{Name: CheckAnnouncement}
	var s *SessionObs
	for i := range f.sessions {
		if f.sessions[i].AnnounceKey != "" {
			s = &f.sessions[i]
			break
		}
	}
	switch {
	case s == nil:
		res.Status = Skip
		res.Summary = "the device announced no knobs (no picobridge probe responder, or an older one)"
		return res
	case s.Announced == nil:
		res.Status = Fail
		res.Summary = "the device's knob announcement on " + s.AnnounceKey + " does not decode: " + s.AnnounceErr
		return res
	}
	_, ds := f.r.WithAnnouncement(*s.Announced, f.exp.Device)
	res.Observed = "announced on " + s.AnnounceKey
	if len(ds) > 0 {
		lines := make([]string, len(ds))
		for i, d := range ds {
			lines[i] = d.String()
		}
		res.Status = Fail
		res.Summary = "the device announced other knobs than the lane resolved: " + strings.Join(lines, "; ")
		return res
	}
	res.Summary = "the device announced the knobs the lane resolved"
	return res
}

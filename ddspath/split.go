package ddspath

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// SplitConfig configures Split: the Adaptive Bridge DDS→DDS mode.
type SplitConfig struct {
	Input             string // input DDS topic, e.g. "rt/scan"
	CriticalOutput    string // e.g. "rt/scan/critical"
	NoncriticalOutput string // e.g. "rt/scan/noncritical"
	Type              string // DDS type name of all three topics
	// InputQoS is the input reader's QoS; zero value: ROSDefaultQoS with
	// IgnoreLocal so the split never reads its own outputs.
	InputQoS *QoS
	// CriticalQoS and NoncriticalQoS override the defaults below.
	CriticalQoS    *QoS
	NoncriticalQoS *QoS
}

// CriticalQoS is the critical output: RELIABLE, KEEP_LAST 10, VOLATILE. A
// KEEP_LAST writer never blocks on slow readers (Cyclone and Fast DDS, see
// dds-cyclone.md §4), so a slow critical reader cannot stall the input.
func CriticalQoS() QoS {
	return QoS{Reliability: Reliable, History: KeepLast, Depth: 10, Durability: Volatile}
}

// NoncriticalQoS is the noncritical output: BEST_EFFORT, KEEP_LAST 5, VOLATILE.
func NoncriticalQoS() QoS {
	return QoS{Reliability: BestEffort, History: KeepLast, Depth: 5, Durability: Volatile}
}

// SplitStats are a split's counters.
type SplitStats struct {
	In                uint64 // samples taken from the input
	Critical          uint64 // samples written on the critical output
	Noncritical       uint64 // samples written on the noncritical output
	CriticalErrors    uint64 // failed critical writes (sample lost on that output)
	NoncriticalErrors uint64 // failed noncritical writes
	InputLost         uint64 // input samples lost before the split saw them: Reader.Stats Lost + Gaps
	InputRejected     uint64 // input samples refused by the input reader's cache (Reader.Stats Rejected)
}

// SplitHandle is a running Split.
type SplitHandle struct {
	in             *Reader
	crit, noncrit  *Writer
	closeOnce      sync.Once
	closeErr       error
	nIn            atomic.Uint64
	nCrit, nNon    atomic.Uint64
	errCrit, errNC atomic.Uint64
}

// Split republishes every sample of cfg.Input, bytes and source timestamp
// unchanged, through two independent writers: critical (CriticalQoS) and
// noncritical (NoncriticalQoS). Both writes happen on the input reader's
// reception goroutine; both writers are KEEP_LAST, so neither ever blocks
// and one output's readers cannot push back on the other or on the input.
func Split(p *Participant, cfg SplitConfig) (*SplitHandle, error) {
	if cfg.Input == "" || cfg.CriticalOutput == "" || cfg.NoncriticalOutput == "" || cfg.Type == "" {
		return nil, fmt.Errorf("ddspath: split needs Input, CriticalOutput, NoncriticalOutput and Type")
	}
	if cfg.CriticalOutput == cfg.Input || cfg.NoncriticalOutput == cfg.Input || cfg.CriticalOutput == cfg.NoncriticalOutput {
		return nil, fmt.Errorf("ddspath: split topics must differ (input %q, critical %q, noncritical %q)",
			cfg.Input, cfg.CriticalOutput, cfg.NoncriticalOutput)
	}
	inQ := ROSDefaultQoS()
	inQ.IgnoreLocal = true
	if cfg.InputQoS != nil {
		inQ = *cfg.InputQoS
	}
	cq, nq := CriticalQoS(), NoncriticalQoS()
	if cfg.CriticalQoS != nil {
		cq = *cfg.CriticalQoS
	}
	if cfg.NoncriticalQoS != nil {
		nq = *cfg.NoncriticalQoS
	}
	h := &SplitHandle{}
	var err error
	if h.crit, err = p.NewWriter(cfg.CriticalOutput, cfg.Type, cq); err != nil {
		return nil, err
	}
	if h.noncrit, err = p.NewWriter(cfg.NoncriticalOutput, cfg.Type, nq); err != nil {
		return nil, errors.Join(err, h.crit.Close())
	}
	if h.in, err = p.NewReader(cfg.Input, cfg.Type, inQ, WithHandler(h.forward)); err != nil {
		return nil, errors.Join(err, h.crit.Close(), h.noncrit.Close())
	}
	return h, nil
}

func (h *SplitHandle) forward(s *Sample) {
	h.nIn.Add(1)
	if err := h.crit.Write(s.CDR, s.SourceTimestamp); err != nil {
		h.errCrit.Add(1)
	} else {
		h.nCrit.Add(1)
	}
	if err := h.noncrit.Write(s.CDR, s.SourceTimestamp); err != nil {
		h.errNC.Add(1)
	} else {
		h.nNon.Add(1)
	}
}

// Stats returns the split's counters.
func (h *SplitHandle) Stats() SplitStats {
	in := h.in.Stats()
	return SplitStats{In: h.nIn.Load(), Critical: h.nCrit.Load(), Noncritical: h.nNon.Load(),
		CriticalErrors: h.errCrit.Load(), NoncriticalErrors: h.errNC.Load(), InputLost: in.Lost + in.Gaps, InputRejected: in.Rejected}
}

// Input, Critical and Noncritical expose the split's endpoints (for matched
// counts and stats).
func (h *SplitHandle) Input() *Reader       { return h.in }
func (h *SplitHandle) Critical() *Writer    { return h.crit }
func (h *SplitHandle) Noncritical() *Writer { return h.noncrit }

// Close stops the input first (so no write races the writers' deletion),
// then deletes both writers. Idempotent.
func (h *SplitHandle) Close() error {
	h.closeOnce.Do(func() {
		h.closeErr = errors.Join(h.in.Close(), h.crit.Close(), h.noncrit.Close())
	})
	return h.closeErr
}

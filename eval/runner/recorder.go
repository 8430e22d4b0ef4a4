package runner

import (
	"sync"
	"time"

	"github.com/picobridge/picobridge/eval/measure"
)

// Recorder collects one run's raw records; safe for concurrent use. The publisher registers
// each message's header stamp before the write (Sent), so that a reception racing the write
// call already finds its sequence number.
type Recorder struct {
	run string

	mu        sync.Mutex
	next      uint64
	seqOf     map[int64]uint64 // header stamp (ns) → sequence number
	attempts  []measure.Attempt
	published []uint64
	samples   []measure.Sample
	unknown   map[string]int // receptions whose stamp no publication has
	trans     []measure.Transition
	toggles   []measure.Toggle
}

// NewRecorder returns an empty recorder for run.
func NewRecorder(run string) *Recorder {
	return &Recorder{run: run, seqOf: map[int64]uint64{}, unknown: map[string]int{}}
}

// Sent registers a message about to be written with header stamp stampNs and returns its
// sequence number.
func (r *Recorder) Sent(stampNs int64) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	seq := r.next
	r.next++
	r.seqOf[stampNs] = seq
	return seq
}

// Written records the outcome of the write of seq.
func (r *Recorder) Written(seq uint64, stampNs int64, dur time.Duration, failed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.attempts = append(r.attempts, measure.Attempt{Seq: seq, StartNs: stampNs, Dur: dur, Err: failed})
	if !failed {
		r.published = append(r.published, seq)
	}
}

// Received records that consumer got the message with header stamp stampNs at recvNs.
func (r *Recorder) Received(consumer string, stampNs, recvNs int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seq, ok := r.seqOf[stampNs]
	if !ok {
		r.unknown[consumer]++
		return
	}
	r.samples = append(r.samples, measure.Sample{Run: r.run, Consumer: consumer, Seq: seq, SendNs: stampNs, RecvNs: recvNs})
}

// Transition records a classifier transition.
func (r *Recorder) Transition(t measure.Transition) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.trans = append(r.trans, t)
}

// Toggle records a switch of the impairment.
func (r *Recorder) Toggle(atNs int64, on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.toggles = append(r.toggles, measure.Toggle{AtNs: atNs, On: on})
}

// fill copies the records into res.
func (r *Recorder) fill(res *Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	res.Samples = append([]measure.Sample(nil), r.samples...)
	res.Attempts = append([]measure.Attempt(nil), r.attempts...)
	res.Published = append([]uint64(nil), r.published...)
	res.Transitions = append([]measure.Transition(nil), r.trans...)
	res.Toggles = append([]measure.Toggle(nil), r.toggles...)
	res.Unknown = map[string]int{}
	for k, v := range r.unknown {
		res.Unknown[k] = v
	}
}

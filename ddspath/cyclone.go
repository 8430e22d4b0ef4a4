//go:build cgo && cyclonedds

package ddspath

/*
#cgo LDFLAGS: -lddsc
#include <stdlib.h>
#include "rawcdr.h"

*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/cgo"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	ddsInfinity = int64(^uint64(0) >> 1) // DDS_INFINITY
	takeBatch   = 64                     // samples per cgo crossing (C arrays are sized 64)
)

// Available reports whether this binary has the Cyclone DDS implementation.
const Available = true

func ddsErr(op string, rc C.dds_return_t) error {
	if rc >= 0 {
		return nil
	}
	return &Error{Op: op, Code: int(rc), Msg: C.GoString(C.dds_strretcode(rc))}
}

// domains counts the participants per domain id in this process: Cyclone
// allows one dds_create_domain per id, and the domain entity must be deleted
// explicitly after its last participant.
var domains = struct {
	sync.Mutex
	m map[uint32]*domain
}{m: map[uint32]*domain{}}

type domain struct {
	handle C.dds_entity_t
	xml    string
	refs   int
}

// Participant is a DDS domain participant with its own Cyclone
// configuration. It owns every writer, reader, split and endpoint watcher
// made from it.
type Participant struct {
	cfg    Config
	pp     C.dds_entity_t
	ih     C.dds_instance_handle_t
	mu     sync.Mutex // guards closed, topics, owned
	closed bool
	topics map[[2]string]C.dds_entity_t
	owned  map[closer]struct{}
	node   *NodeAnnouncer // AnnounceNode's (nodeinfo.go), told when endpoints come and go
}

type closer interface{ close() error }

// Open creates the domain (once per domain id in this process) from
// cfg.XML() and a participant on it. Participants of one process that use the
// same domain id must use the same configuration (ErrDomainConfig otherwise).
func Open(cfg Config) (*Participant, error) {
	xml := cfg.XML()
	domains.Lock()
	defer domains.Unlock()
	d := domains.m[cfg.DomainID]
	if d != nil && d.xml != xml {
		return nil, fmt.Errorf("%w: domain %d", ErrDomainConfig, cfg.DomainID)
	}
	if d == nil {
		cxml := C.CString(xml)
		h := C.dds_create_domain(C.dds_domainid_t(cfg.DomainID), cxml)
		C.free(unsafe.Pointer(cxml))
		if h < 0 {
			return nil, ddsErr("dds_create_domain", h)
		}
		d = &domain{handle: h, xml: xml}
		domains.m[cfg.DomainID] = d
	}
	pp := C.dds_create_participant(C.dds_domainid_t(cfg.DomainID), nil, nil)
	if pp < 0 {
		if d.refs == 0 {
			C.dds_delete(d.handle)
			delete(domains.m, cfg.DomainID)
		}
		return nil, ddsErr("dds_create_participant", pp)
	}
	p := &Participant{cfg: cfg, pp: pp, topics: map[[2]string]C.dds_entity_t{}, owned: map[closer]struct{}{}}
	if rc := C.dds_get_instance_handle(pp, &p.ih); rc < 0 {
		C.dds_delete(pp)
		if d.refs == 0 {
			C.dds_delete(d.handle)
			delete(domains.m, cfg.DomainID)
		}
		return nil, ddsErr("dds_get_instance_handle", rc)
	}
	d.refs++
	return p, nil
}

// DomainID returns the participant's domain id.
func (p *Participant) DomainID() uint32 { return p.cfg.DomainID }

// GUID returns the participant's GUID.
func (p *Participant) GUID() GUID {
	var g C.dds_guid_t
	C.dds_get_guid(p.pp, &g)
	return GUID(C.GoBytes(unsafe.Pointer(&g.v[0]), 16))
}

// ParticipantDeleteTimeout bounds how long Participant.Close waits for
// Cyclone to delete the participant.
var ParticipantDeleteTimeout = 10 * time.Second

// Close closes everything made from p, deletes the participant and, after the
// last participant of the domain id, the domain. It is idempotent. When
// Cyclone does not delete the participant within ParticipantDeleteTimeout,
// Close returns an error saying so and leaves it (and its domain) behind.
func (p *Participant) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	owned := make([]closer, 0, len(p.owned))
	for c := range p.owned {
		owned = append(owned, c)
	}
	p.mu.Unlock()
	var errs []error
	for _, c := range owned {
		errs = append(errs, c.close())
	}
	// Cyclone 0.10.2's dds_delete of a participant waits until no thread holds
	// a pin on it; once in about 35 runs of the gateway's action test it never
	// returned (dds_delete_impl_pinned on its condition variable, no other
	// thread inside Cyclone for that entity). Wait a bounded time: a
	// participant that cannot be deleted is left behind with an error rather
	// than hanging the caller (a gateway's shutdown, a test's cleanup) for good.
	pp := p.pp
	rc := make(chan C.dds_return_t, 1)
	go func() { rc <- C.dds_delete(pp) }()
	select {
	case r := <-rc:
		errs = append(errs, ddsErr("dds_delete(participant)", r))
	case <-time.After(ParticipantDeleteTimeout):
		errs = append(errs, fmt.Errorf("ddspath: dds_delete(participant) did not return within %v (Cyclone still holds it); the participant is left behind", ParticipantDeleteTimeout))
		return errors.Join(errs...) // the domain stays: the participant still uses it
	}
	domains.Lock()
	if d := domains.m[p.cfg.DomainID]; d != nil {
		d.refs--
		if d.refs == 0 {
			errs = append(errs, ddsErr("dds_delete(domain)", C.dds_delete(d.handle)))
			delete(domains.m, p.cfg.DomainID)
		}
	}
	domains.Unlock()
	return errors.Join(errs...)
}

// adopt registers c to be closed by Participant.Close.
func (p *Participant) adopt(c closer) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrClosed
	}
	p.owned[c] = struct{}{}
	return nil
}

func (p *Participant) disown(c closer) {
	p.mu.Lock()
	delete(p.owned, c)
	p.endpointsChangedLocked()
	p.mu.Unlock()
}

// topic returns the (cached) topic entity for name and type. Caller holds p.mu.
func (p *Participant) topicLocked(name, typeName string) (C.dds_entity_t, error) {
	if p.closed {
		return 0, ErrClosed
	}
	k := [2]string{name, typeName}
	if tp, ok := p.topics[k]; ok {
		return tp, nil
	}
	cn, ct := C.CString(name), C.CString(typeName)
	defer C.free(unsafe.Pointer(cn))
	defer C.free(unsafe.Pointer(ct))
	tp := C.pb_create_topic(p.pp, cn, ct)
	if tp < 0 {
		return 0, ddsErr("dds_create_topic_sertype", C.dds_return_t(tp))
	}
	p.topics[k] = tp
	return tp, nil
}

func makeQoS(q QoS, forWriter bool) *C.dds_qos_t {
	q = q.Normalize()
	in := C.pb_qos_in{
		reliability: C.int32_t(q.Reliability),
		history:     C.int32_t(q.History),
		depth:       C.int32_t(q.Depth),
		max_samples: C.int32_t(q.MaxSamples),
	}
	if q.Durability == TransientLocal {
		in.durability = 1
	}
	if q.MaxBlocking < 0 {
		in.max_blocking = C.int64_t(ddsInfinity)
	} else {
		in.max_blocking = C.int64_t(q.MaxBlocking)
	}
	if q.IgnoreLocal {
		in.ignore_local = 1
	}
	fw := C.int(0)
	if forWriter {
		fw = 1
	}
	if len(q.UserData) > 0 {
		ud := C.CBytes(q.UserData)
		defer C.free(ud)
		in.userdata, in.userdata_len = ud, C.size_t(len(q.UserData))
	}
	return C.pb_make_qos(&in, fw)
}

// Writer publishes raw CDR samples on one topic.
type Writer struct {
	p        *Participant
	topic    string
	typeName string
	qos      QoS
	wr       C.dds_entity_t
	closed   atomic.Bool
	written  atomic.Uint64
	timeouts atomic.Uint64
	errs     atomic.Uint64
}

// NewWriter creates a writer for topic (DDS name, e.g. "rt/scan") and type
// name (e.g. "sensor_msgs::msg::dds_::LaserScan_") with QoS q.
func (p *Participant) NewWriter(topic, typeName string, q QoS) (*Writer, error) {
	p.mu.Lock()
	tp, err := p.topicLocked(topic, typeName)
	if err != nil {
		p.mu.Unlock()
		return nil, err
	}
	cq := makeQoS(q, true)
	wr := C.dds_create_writer(p.pp, tp, cq, nil)
	C.dds_delete_qos(cq)
	if wr < 0 {
		p.mu.Unlock()
		return nil, ddsErr("dds_create_writer", C.dds_return_t(wr))
	}
	w := &Writer{p: p, topic: topic, typeName: typeName, qos: q.Normalize(), wr: wr}
	p.owned[w] = struct{}{}
	p.endpointsChangedLocked()
	p.mu.Unlock()
	return w, nil
}

// Topic returns the writer's DDS topic name.
func (w *Writer) Topic() string { return w.topic }

// QoS returns the writer's normalized QoS.
func (w *Writer) QoS() QoS { return w.qos }

// Write publishes one sample. cdr is the serialized sample including its
// 4-byte encapsulation header; it is copied before Write returns. ts is the
// source timestamp carried to readers (zero: now). A RELIABLE KEEP_ALL writer
// whose history stays full longer than QoS.MaxBlocking returns an error
// matching ErrTimeout; the sample is then dropped.
func (w *Writer) Write(cdr []byte, ts time.Time) error {
	if w.closed.Load() {
		return ErrClosed
	}
	if len(cdr) < 4 {
		return fmt.Errorf("ddspath: sample of %d bytes has no encapsulation header", len(cdr))
	}
	if uint64(len(cdr)) > 0xffffffff {
		return fmt.Errorf("ddspath: sample of %d bytes exceeds 4 GiB", len(cdr))
	}
	var t int64
	if ts.IsZero() {
		t = time.Now().UnixNano()
	} else {
		t = ts.UnixNano()
	}
	rc := C.pb_write(w.wr, unsafe.Pointer(&cdr[0]), C.uint32_t(len(cdr)), C.int64_t(t))
	if rc < 0 {
		err := ddsErr("dds_write_ts", rc)
		if rc == retTimeout {
			w.timeouts.Add(1)
		} else {
			w.errs.Add(1)
		}
		if w.closed.Load() {
			return ErrClosed
		}
		return err
	}
	w.written.Add(1)
	return nil
}

// Matched returns the number of readers currently matched.
func (w *Writer) Matched() int {
	n := C.pb_matched_subscriptions(w.wr)
	if n < 0 {
		return 0
	}
	return int(n)
}

// WaitForAcks waits until all matched reliable readers acknowledged every
// sample written so far, or ctx is done.
func (w *Writer) WaitForAcks(ctx context.Context) error {
	for {
		if w.closed.Load() {
			return ErrClosed
		}
		rc := C.dds_wait_for_acks(w.wr, C.dds_duration_t(50*time.Millisecond))
		if rc == 0 {
			return nil
		}
		if rc != retTimeout {
			return ddsErr("dds_wait_for_acks", rc)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// Stats returns the writer's counters.
func (w *Writer) Stats() WriterStats {
	return WriterStats{Written: w.written.Load(), Timeouts: w.timeouts.Load(), Errors: w.errs.Load()}
}

// Close deletes the writer. Unacknowledged data is kept for Cyclone's
// WriterLingerDuration (1 s); call WaitForAcks first to be sure.
func (w *Writer) Close() error {
	err := w.close()
	w.p.disown(w)
	return err
}

func (w *Writer) close() error {
	if w.closed.Swap(true) {
		return nil
	}
	rc := C.dds_delete(w.wr)
	if rc == retAlreadyDeleted {
		return nil
	}
	return ddsErr("dds_delete(writer)", rc)
}

// Reader receives raw CDR samples of one topic into a bounded queue.
type Reader struct {
	p        *Participant
	topic    string
	typeName string
	qos      QoS
	opts     readerOptions
	rd       C.dds_entity_t
	wake     *os.File   // notify mode: the eventfd the listener counts samples on
	h        cgo.Handle // listener mode
	items    *C.pb_item // C array of takeBatch items
	q        *sampleQueue
	done     chan struct{}
	closed   atomic.Bool
	drainMu  sync.Mutex // serializes take+deliver (listener threads may differ)
	wg       sync.WaitGroup
	closeMu  sync.Mutex
	isClosed bool
	// statusMu guards reading Cyclone's statuses against dds_delete(rd):
	// close takes a last reading and sets rdGone under it. It is never held
	// while calling into a listener-waiting dds_delete, so a handler may
	// call Stats.
	// lastSeq is the last writer sequence number taken per publication
	// handle; only deliver (serialized by waitLoop / drainMu) uses it.
	lastSeq  map[uint64]uint64
	gaps     atomic.Uint64
	statusMu sync.Mutex
	rdGone   bool
	lost     uint64
	rejected uint64
}

// NewReader creates a reader for topic and type name with QoS q. By default a
// goroutine waits for the reader's data-available listener in the netpoller
// (waitLoop) and moves samples into a queue of DefaultQueueLen with
// DropOldest; see WithQueue, WithListener, WithHandler.
func (p *Participant) NewReader(topic, typeName string, q QoS, opts ...ReaderOption) (*Reader, error) {
	o, err := buildReaderOptions(opts)
	if err != nil {
		return nil, err
	}
	r := &Reader{p: p, topic: topic, typeName: typeName, qos: q.Normalize(), opts: o, done: make(chan struct{}), lastSeq: map[uint64]uint64{}}
	r.q = newSampleQueue(o.queueLen, o.overflow, r.done)
	if o.handler != nil {
		r.q.close() // C() is a closed channel in handler mode
	}
	r.items = (*C.pb_item)(C.calloc(takeBatch, C.size_t(unsafe.Sizeof(C.pb_item{}))))

	p.mu.Lock()
	defer p.mu.Unlock()
	tp, err := p.topicLocked(topic, typeName)
	if err != nil {
		C.free(unsafe.Pointer(r.items))
		return nil, err
	}
	cq := makeQoS(q, false)
	defer C.dds_delete_qos(cq)
	if o.listener {
		r.h = cgo.NewHandle(r)
		r.rd = C.pb_create_reader_listener(p.pp, tp, cq, C.uintptr_t(r.h))
	} else {
		efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
		if err != nil {
			C.free(unsafe.Pointer(r.items))
			return nil, fmt.Errorf("ddspath: reader eventfd: %w", err)
		}
		r.wake = os.NewFile(uintptr(efd), "ddspath-reader") // non-blocking: read in the netpoller
		r.rd = C.pb_create_reader_notify(p.pp, tp, cq, C.int(efd))
	}
	if r.rd < 0 {
		if r.h != 0 {
			r.h.Delete()
		}
		if r.wake != nil {
			_ = r.wake.Close()
		}
		C.free(unsafe.Pointer(r.items))
		return nil, ddsErr("dds_create_reader", C.dds_return_t(r.rd))
	}
	if !o.listener {
		r.wg.Add(1)
		go r.waitLoop()
	}
	p.owned[r] = struct{}{}
	p.endpointsChangedLocked()
	return r, nil
}

// Topic returns the reader's DDS topic name.
func (r *Reader) Topic() string { return r.topic }

// QoS returns the reader's normalized QoS.
func (r *Reader) QoS() QoS { return r.qos }

// C returns the queue of received samples; it is closed by Close (and is
// closed from the start when WithHandler is used).
func (r *Reader) C() <-chan *Sample { return r.q.ch }

// Stats returns the reader's counters.
func (r *Reader) Stats() ReaderStats {
	st := ReaderStats{Received: r.q.recv.Load(), Dropped: r.q.dropped.Load(), Queued: len(r.q.ch), Gaps: r.gaps.Load()}
	st.Lost, st.Rejected = r.pollLoss()
	return st
}

// pollLoss reads the reader's SAMPLE_LOST and SAMPLE_REJECTED totals (the
// last values read before the reader was deleted once it is closed).
func (r *Reader) pollLoss() (lost, rejected uint64) {
	r.statusMu.Lock()
	defer r.statusMu.Unlock()
	if !r.rdGone {
		var l, rj C.uint64_t
		if C.pb_reader_loss(r.rd, &l, &rj) == 0 {
			r.lost, r.rejected = uint64(l), uint64(rj)
		}
	}
	return r.lost, r.rejected
}

// Matched returns the number of writers currently matched.
func (r *Reader) Matched() int {
	n := C.pb_matched_publications(r.rd)
	if n < 0 {
		return 0
	}
	return int(n)
}

// WriterGUID returns the GUID of the matched writer with the given
// publication handle (Sample.PublicationHandle).
func (r *Reader) WriterGUID(handle uint64) (GUID, error) {
	var g GUID
	rc := C.pb_matched_writer_guid(r.rd, C.dds_instance_handle_t(handle), (*C.uint8_t)(unsafe.Pointer(&g[0])))
	return g, ddsErr("dds_get_matched_publication_data", C.dds_return_t(rc))
}

// waitLoop takes and delivers samples until the reader closes. It waits for
// data on the reader's eventfd, which Cyclone's data-available listener
// counts up (pb_create_reader_notify), in Go's netpoller, and never blocks
// in C. A goroutine blocked in a cgo call keeps its P: Go does not hand it
// to another thread until sysmon retakes it, two sysmon passes 20 µs to
// 10 ms apart, 10 to 20 ms in a mostly idle process (runtime/proc.go sysmon,
// retake). The route goroutine that deliver just woke sits in that P's
// run-next slot meanwhile, and with two readers blocked in dds_waitset_wait
// (GOMAXPROCS 2, the demo's /scan and /imu_data written 0.3 ms apart) no P
// was left for anything else either: the demo's critical samples of both
// routes waited 4 to 20 ms and were released together.
func (r *Reader) waitLoop() {
	defer r.wg.Done()
	var cnt [8]byte
	for !r.closed.Load() {
		n := C.pb_take(r.rd, r.items, takeBatch)
		if n < 0 {
			if r.closed.Load() {
				return
			}
			time.Sleep(10 * time.Millisecond) // not expected; avoid a hot loop
			continue
		}
		if n > 0 {
			r.deliver(int(n))
			continue
		}
		// Parks in the netpoller: the P runs what deliver woke.
		if _, err := r.wake.Read(cnt[:]); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			return
		}
	}
}

// drain takes everything available (listener mode).
func (r *Reader) drain(rd C.dds_entity_t) {
	r.drainMu.Lock()
	defer r.drainMu.Unlock()
	for !r.closed.Load() {
		n := C.pb_take(rd, r.items, takeBatch)
		if n <= 0 {
			return
		}
		r.deliver(int(n))
	}
}

// deliver copies n taken items into Go samples, releases the C references,
// then hands the samples to the handler or the queue.
func (r *Reader) deliver(n int) {
	items := unsafe.Slice(r.items, takeBatch)[:n]
	var buf [takeBatch]*Sample
	out := buf[:0]
	for i := range items {
		it := &items[i]
		if it.valid == 0 {
			continue
		}
		if it.seq != 0 {
			r.trackSeq(uint64(it.pub_handle), uint64(it.seq))
		}
		out = append(out, &Sample{
			Topic:             r.topic,
			TypeName:          r.typeName,
			CDR:               C.GoBytes(unsafe.Pointer(it.data), C.int(it.size)),
			SourceTimestamp:   time.Unix(0, int64(it.source_ts)),
			ReceivedAt:        time.Unix(0, int64(it.recv_ts)),
			PublicationHandle: uint64(it.pub_handle),
		})
	}
	C.pb_release_items(r.items, C.int(n))
	for _, s := range out {
		if r.opts.handler != nil {
			r.q.recv.Add(1)
			r.opts.handler(s)
		} else if !r.q.push(s) {
			return
		}
	}
}

// maxTrackedWriters bounds lastSeq; past it the map starts over (a gap
// spanning the reset is then missed, nothing is counted twice).
const maxTrackedWriters = 4096

// trackSeq counts the sequence numbers a writer skipped between two samples
// this reader took: samples the writer's KEEP_LAST history overwrote before
// we acknowledged them (announced by a GAP), the reader cache's KEEP_LAST
// overwrote before we took them, or a best-effort network lost.
func (r *Reader) trackSeq(pub, seq uint64) {
	last, ok := r.lastSeq[pub]
	if ok && seq > last+1 {
		r.gaps.Add(seq - last - 1)
	}
	if !ok || seq > last {
		if !ok && len(r.lastSeq) >= maxTrackedWriters {
			clear(r.lastSeq)
		}
		r.lastSeq[pub] = seq
	}
}

// Close stops reception, deletes the reader and closes C(). Samples still
// queued stay readable from C() until drained.
func (r *Reader) Close() error {
	err := r.close()
	r.p.disown(r)
	return err
}

func (r *Reader) close() error {
	r.closeMu.Lock()
	defer r.closeMu.Unlock()
	if r.isClosed {
		return nil
	}
	r.isClosed = true
	r.closed.Store(true)
	close(r.done)
	var errs []error
	if r.wake != nil {
		_ = r.wake.SetReadDeadline(time.Unix(1, 0)) // ends a Read in progress; waitLoop sees closed
		r.wg.Wait()
	}
	r.pollLoss() // last reading, then no status call may touch r.rd
	r.statusMu.Lock()
	r.rdGone = true
	r.statusMu.Unlock()
	// Waits for a running listener callback to return.
	errs = append(errs, ddsErr("dds_delete(reader)", C.dds_delete(r.rd)))
	if r.wake != nil {
		_ = r.wake.Close() // after dds_delete: no listener writes to it any more
	}
	if r.h != 0 {
		r.h.Delete()
	}
	C.free(unsafe.Pointer(r.items))
	r.items = nil
	if r.opts.handler == nil {
		r.q.close()
	}
	return errors.Join(errs...)
}

// liveSerdata is the number of raw-CDR serdata alive in C (leak checks).
func liveSerdata() int64 { return int64(C.pb_live_serdata()) }

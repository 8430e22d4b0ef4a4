package bridge

import (
	"bytes"
	"fmt"
	"math"
	"math/bits"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/picobridge/picobridge/knobs"
)

// Traffic meter: what the gateway offers each device, per subscription (the
// key expression the device declared), for `picobridge knobs advise
// --gateway` and /devicez. It counts every sample handed to a device's
// lanes (Device.Offer, Publish), before any drop, because advice is about
// the traffic the device is asked to take, not what the lanes let through.

// MaxTrafficKeys is the most subscriptions metered apart per device label;
// samples of further subscriptions (and of keys no subscription includes)
// are metered under OtherKey. It bounds the key label of the traffic
// metrics with metrics.max_devices.
const MaxTrafficKeys = 16

// OtherKey is the key label of the traffic beyond MaxTrafficKeys.
const OtherKey = "_other"

// TrafficTau is the time constant of the traffic meter's exponentially
// weighted rates: a rate change shows 63 % after TrafficTau, 99 % after
// five. The estimate is bias-corrected for the time since the key's first
// sample (at least TrafficMinWindow), so a steady stream reads right from
// its first seconds.
const TrafficTau = 5 * time.Second

// TrafficMinWindow is the least time the bias correction assumes a key has
// been metered: n samples within it read as at most about n per
// TrafficMinWindow.
const TrafficMinWindow = time.Second

// sizeBuckets: power-of-two size classes for the p95 estimate; class i
// holds sizes in (2^(i-1), 2^i] (class 0: 0 and 1 byte).
const sizeBuckets = 32

// keyMeter is one subscription's traffic.
type keyMeter struct {
	key            string
	first, last    time.Time
	samples, bytes uint64
	rate, byteRate float64 // EWMA, unnormalised: decayed sums / TrafficTau
	maxBytes       int
	sizes          [sizeBuckets]uint64
}

// trafficMeter is a device label's meter; it lives in deviceStats, so its
// counters outlive a connection like the lanes'.
type trafficMeter struct {
	mu      sync.Mutex
	started time.Time   // the first sample
	keys    []*keyMeter // first-offer order; at most MaxTrafficKeys + 1 (OtherKey)
	// Batched-lane flush occupancy: the most samples one subscription got in
	// a flush over the ring depth (1: the ring budget was full).
	flushes, fullFlushes uint64
	occupancy            float64 // EWMA over flushes (weight flushWeight)
	occupancyMax         float64
}

// flushWeight is the weight of the newest flush in the occupancy average.
const flushWeight = 0.1

func sizeClass(n int) int {
	if n <= 1 {
		return 0
	}
	return min(bits.Len(uint(n-1)), sizeBuckets-1)
}

// observe records one sample of size bytes under subscription key at now.
func (m *trafficMeter) observe(key string, size int, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started.IsZero() {
		m.started = now
	}
	k := m.find(key)
	if k == nil && len(m.keys) >= MaxTrafficKeys {
		key = OtherKey
		k = m.find(key)
	}
	if k == nil {
		k = &keyMeter{key: key, first: now, last: now}
		m.keys = append(m.keys, k)
	}
	decay := math.Exp(-max(now.Sub(k.last), 0).Seconds() / TrafficTau.Seconds())
	k.rate = k.rate*decay + 1/TrafficTau.Seconds()
	k.byteRate = k.byteRate*decay + float64(size)/TrafficTau.Seconds()
	if now.After(k.last) {
		k.last = now
	}
	k.samples++
	k.bytes += uint64(size)
	k.maxBytes = max(k.maxBytes, size)
	k.sizes[sizeClass(size)]++
}

func (m *trafficMeter) find(key string) *keyMeter {
	for _, k := range m.keys {
		if k.key == key {
			return k
		}
	}
	return nil
}

// flushed records one batched flush whose fullest subscription got n
// samples of a ring depth of ring.
func (m *trafficMeter) flushed(n, ring int) {
	occ := float64(n) / float64(max(ring, 1))
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.flushes == 0 {
		m.occupancy = occ
	} else {
		m.occupancy += flushWeight * (occ - m.occupancy)
	}
	m.flushes++
	if n >= ring {
		m.fullFlushes++
	}
	m.occupancyMax = max(m.occupancyMax, occ)
}

// KeyTraffic is one subscription's metered traffic (/devicez).
type KeyTraffic struct {
	// Key is the subscription's key expression, or OtherKey.
	Key string `json:"key"`
	// Samples and Bytes count what was offered since the meter started
	// (payload bytes).
	Samples uint64 `json:"samples"`
	Bytes   uint64 `json:"bytes"`
	// SamplesPerS and BytesPerS are the TrafficTau-weighted rates now.
	SamplesPerS float64 `json:"samples_per_s"`
	BytesPerS   float64 `json:"bytes_per_s"`
	// MaxBytes is the largest payload; P95Bytes the upper bound of the
	// power-of-two size class holding the 95th percentile, at most MaxBytes.
	MaxBytes int `json:"max_bytes"`
	P95Bytes int `json:"p95_bytes"`
}

// TrafficStatus is a device's metered traffic (/devicez).
type TrafficStatus struct {
	// Since is when the meter saw its first sample (zero: none yet); it
	// keeps counting across the device's reconnections.
	Since time.Time    `json:"since"`
	Keys  []KeyTraffic `json:"keys"`
	// Flushes counts batched flushes that sent something; FullFlushes those
	// where one subscription got its whole ring depth.
	Flushes     uint64 `json:"flushes"`
	FullFlushes uint64 `json:"full_flushes"`
	// FlushOccupancy is the recent mean (weight 0.1 per flush) of the
	// fullest subscription's samples per flush over the ring depth (0..1);
	// FlushOccupancyMax its largest value.
	FlushOccupancy    float64 `json:"flush_occupancy"`
	FlushOccupancyMax float64 `json:"flush_occupancy_max"`
}

// status reads the meter at now.
func (m *trafficMeter) status(now time.Time) TrafficStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := TrafficStatus{Since: m.started, Keys: []KeyTraffic{}, Flushes: m.flushes, FullFlushes: m.fullFlushes,
		FlushOccupancy: m.occupancy, FlushOccupancyMax: m.occupancyMax}
	for _, k := range m.keys {
		decay := math.Exp(-max(now.Sub(k.last), 0).Seconds() / TrafficTau.Seconds())
		// Bias correction: a meter that has run for t has seen at most the
		// weight 1 − e^(−t/τ) of a stream that always ran; t counts as at
		// least TrafficMinWindow, so a first burst does not read as a flood.
		norm := 1 - math.Exp(-max(now.Sub(k.first), TrafficMinWindow).Seconds()/TrafficTau.Seconds())
		kt := KeyTraffic{Key: k.key, Samples: k.samples, Bytes: k.bytes,
			SamplesPerS: k.rate * decay / norm, BytesPerS: k.byteRate * decay / norm, MaxBytes: k.maxBytes}
		var seen uint64
		for i, n := range k.sizes {
			seen += n
			if float64(seen) >= 0.95*float64(k.samples) {
				kt.P95Bytes = min(1<<i, k.maxBytes)
				break
			}
		}
		s.Keys = append(s.Keys, kt)
	}
	return s
}

// trafficKey is the meter key of a sample: the first of the device's
// subscriptions that includes it, else OtherKey. Answers are cached per
// concrete key for the current subscription list (at most keyCacheMax
// keys; a full cache starts over), so the meter does not scan the
// subscriptions a second time for every sample.
func (d *Device) trafficKey(key string) string {
	snap := d.subsSnap.Load()
	c := &d.tkeys
	c.mu.Lock()
	if c.m == nil || c.gen != snap.gen {
		c.m, c.gen = map[string]string{}, snap.gen
	}
	sub, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return sub
	}
	sub = OtherKey
	for _, s := range snap.subs {
		if d.g.incl(s, key) {
			sub = s
			break
		}
	}
	c.mu.Lock()
	if c.gen == snap.gen {
		if len(c.m) >= keyCacheMax {
			clear(c.m)
		}
		c.m[key] = sub
	}
	c.mu.Unlock()
	return sub
}

// keyCacheMax bounds a device's trafficKey cache (concrete keys).
const keyCacheMax = 1024

// keyCache maps concrete keys to the subscription that meters them, for
// one generation of the device's subscriptions.
type keyCache struct {
	mu  sync.Mutex
	gen uint64
	m   map[string]string
}

// ObservedTraffic is the device's metered traffic as a knobs.Traffic (the
// same description a traffic file gives, `knobs advise --traffic`): one
// subscribed topic per metered subscription, named by its key expression,
// at its weighted rate (three significant digits) and with its largest payload (the size checks are
// about the largest sample); a key metered under OtherKey is left out.
// Observed carries the drops by reason and the flush occupancy.
//
// When the sink reports the device's own publications (PublishedSource),
// they are one published topic, PublishedTopic, at their mean rate and mean
// size since the device attached (at least TrafficMinWindow metered): what
// the device managed to send, which its TX knobs cap, so advice can tell a
// TX-bound image (knobs.Advise's TX note).
func (d *Device) ObservedTraffic(source string) *knobs.Traffic {
	now := d.g.clock.Now()
	eg := d.egress()
	t := observedTraffic(source, eg.stats, eg.shape.RingDepth, now)
	t.FlushInterval = eg.shape.FlushInterval
	if d.published != nil {
		if tp, ok := publishedTopic(d.published, now.Sub(d.attachedAt), len(t.Topics)+1); ok {
			t.Topics = append(t.Topics, tp)
		}
	}
	return t
}

// PublishedTopic names the device's own publications, all keys together,
// in observed traffic.
const PublishedTopic = "(published by the device)"

// publishedTopic is the device's publications over span as a published
// topic: mean rate (three significant digits) and mean payload size; false
// before TrafficMinWindow or without a sample. Its latency budget is 1 s:
// the gateway does not know the application's.
func publishedTopic(src PublishedSource, span time.Duration, line int) (knobs.Topic, bool) {
	n, b := src.Published()
	if n <= 0 || span < TrafficMinWindow {
		return knobs.Topic{}, false
	}
	rate, _ := strconv.ParseFloat(strconv.FormatFloat(float64(n)/span.Seconds(), 'g', 3, 64), 64)
	return knobs.Topic{Name: PublishedTopic, Direction: knobs.Pub, RateHz: rate, SizeBytes: int(b / n),
		LatencyBudget: time.Second, Line: line}, true
}

func observedTraffic(source string, st *deviceStats, ring int, now time.Time) *knobs.Traffic {
	ts := st.traffic.status(now)
	var window time.Duration
	if !ts.Since.IsZero() {
		window = now.Sub(ts.Since)
	}
	t := &knobs.Traffic{File: source, Observed: &knobs.Observed{
		Window: window, RateTau: TrafficTau, Dropped: map[string]uint64{},
		Flushes: ts.Flushes, FullFlushes: ts.FullFlushes, FlushOccupancy: ts.FlushOccupancy, RingDepth: ring}}
	for _, k := range ts.Keys {
		if k.Key == OtherKey {
			t.Observed.Unmetered += k.Samples
			continue
		}
		// Three significant digits, as a traffic file would give it.
		rate, _ := strconv.ParseFloat(strconv.FormatFloat(k.SamplesPerS, 'g', 3, 64), 64)
		t.Topics = append(t.Topics, knobs.Topic{Name: k.Key, Direction: knobs.Sub, RateHz: rate,
			SizeBytes: k.MaxBytes, Line: len(t.Topics) + 1})
	}
	for l := range numLanes {
		for r := range numReasons {
			if n := st.lanes[l].dropped[r].Load(); n > 0 {
				t.Observed.Dropped[r.String()] += n
			}
		}
	}
	slices.SortStableFunc(t.Topics, func(a, b knobs.Topic) int { return a.Line - b.Line })
	return t
}

// Advise is the knob advice for the device's observed traffic: knobs.Advise
// on its resolution (device rung included) and ObservedTraffic(source).
// It is nil when the device has no resolution.
func (d *Device) Advise(source string) *knobs.Advice {
	r := d.Resolved()
	if r == nil {
		return nil
	}
	return knobs.Advise(r, d.ObservedTraffic(source))
}

// AdviceSource is the traffic source Devicez and Advicez name in the advice
// of a device (knobs.Traffic.File).
func AdviceSource(device string) string { return "observed by the gateway, device " + device }

// PathAdvicez is the HTTP path of one device's knob advice.
const PathAdvicez = "/advicez"

// HandleAdvicez serves PathAdvicez?device=NAME: the device's advice as
// knobs.WriteAdvice prints it (text/plain), or with format=json as
// knobs.AdviceJSON. Without device it answers for the only attached device;
// 404 for an unknown device, 400 when device is missing and several (or no)
// devices are attached.
func (g *Gateway) HandleAdvicez(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("device")
	var d *Device
	if name == "" {
		ds := g.Devices()
		if len(ds) != 1 {
			names := make([]string, len(ds))
			for i, x := range ds {
				names[i] = x.Name()
			}
			msg := fmt.Sprintf("want device=NAME: %d devices attached (%s)", len(ds), strings.Join(names, ", "))
			if len(ds) == 0 {
				msg = "no device attached (a device is a session whose zid is in devices.list or whose probe responder announced a name)"
			}
			http.Error(w, msg, http.StatusBadRequest)
			return
		}
		d = ds[0]
	} else if d = g.Device(name); d == nil {
		http.Error(w, fmt.Sprintf("%v: %s", ErrNoSuchDevice, name), http.StatusNotFound)
		return
	}
	a := d.Advise(AdviceSource(d.Name()))
	if a == nil {
		http.Error(w, "device "+d.Name()+" has no knob resolution", http.StatusNotFound)
		return
	}
	if r.URL.Query().Get("format") == "json" {
		writeJSON(w, http.StatusOK, knobs.AdviceToJSON(a))
		return
	}
	var b bytes.Buffer
	if err := knobs.WriteAdvice(&b, a); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write(b.Bytes())
}

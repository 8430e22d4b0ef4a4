package transport

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics holds the transport's Prometheus collectors (style.md §19).
// Create it once per process (or per test) with NewMetrics and share it
// through Config.Metrics; a nil *Metrics records nothing. Labels are
// bounded: reason takes the values of the drop and close reasons only.
type Metrics struct {
	rxBytes   prometheus.Counter
	txBytes   prometheus.Counter
	rxBatches prometheus.Counter
	txBatches prometheus.Counter
	dropped   *prometheus.CounterVec
	sessions  prometheus.Gauge
	closed    *prometheus.CounterVec
	hsFailed  *prometheus.CounterVec
	deferred  *prometheus.CounterVec
	deferWait prometheus.Counter

	droppedBy [numDropReasons]prometheus.Counter
}

// NewMetrics creates the collectors and registers them on reg:
//
//	picobridge_transport_rx_bytes_total      batch bytes received (prefix excluded)
//	picobridge_transport_tx_bytes_total      batch bytes sent (prefix excluded)
//	picobridge_transport_rx_batches_total    batches received
//	picobridge_transport_tx_batches_total    batches sent
//	picobridge_transport_dropped_total{reason}  messages dropped, by reason
//	picobridge_transport_sessions            open sessions
//	picobridge_transport_closed_total{reason}   sessions closed, by CloseReason
//	picobridge_transport_handshake_failures_total{reason}  accepted links whose INIT/OPEN failed, by reason
//	    (timeout, eof, too_large, refused, tls, auth, invalid, decode_error, remote_close, connection_to_self, link_error, handshake)
//	picobridge_transport_admission_deferred_total{reason}  TCP connections that waited before their handshake:
//	    rate (for an admission token, Config.AdmitRate), handshakes (for one of the MaxHandshakes slots, Config.HandshakeWait)
//	picobridge_transport_admission_wait_seconds_total  the sum of those waits, seconds
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	const ns, sub = "picobridge", "transport"
	m := &Metrics{
		rxBytes: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "rx_bytes_total", Help: "Batch bytes received on all links (stream length prefix excluded)."}),
		txBytes: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "tx_bytes_total", Help: "Batch bytes sent on all links (stream length prefix excluded)."}),
		rxBatches: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "rx_batches_total", Help: "Batches received."}),
		txBatches: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "tx_batches_total", Help: "Batches sent."}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "dropped_total", Help: "Messages or fragment trains dropped by the transport, by reason."}, []string{"reason"}),
		sessions: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub,
			Name: "sessions", Help: "Open transport sessions."}),
		closed: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "closed_total", Help: "Transport sessions closed, by close reason."}, []string{"reason"}),
		hsFailed: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "handshake_failures_total", Help: "Accepted links whose INIT/OPEN handshake failed or was refused, by reason."}, []string{"reason"}),
		deferred: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "admission_deferred_total", Help: "Accepted TCP connections that waited before their handshake, by reason: rate (an admission token), handshakes (a handshake slot)."}, []string{"reason"}),
		deferWait: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "admission_wait_seconds_total", Help: "Time accepted TCP connections waited before their handshake (admission token or handshake slot), seconds."}),
	}
	m.deferred.WithLabelValues(deferRate)
	m.deferred.WithLabelValues(deferHandshakes)
	for i := range m.droppedBy {
		m.droppedBy[i] = m.dropped.WithLabelValues(dropReason(i).String())
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.rxBytes, m.txBytes, m.rxBatches, m.txBatches, m.dropped, m.sessions, m.closed, m.hsFailed, m.deferred, m.deferWait} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

func (m *Metrics) rx(n int) {
	if m != nil {
		m.rxBytes.Add(float64(n))
		m.rxBatches.Inc()
	}
}

func (m *Metrics) tx(n int) {
	if m != nil {
		m.txBytes.Add(float64(n))
		m.txBatches.Inc()
	}
}

func (m *Metrics) drop(r dropReason) {
	if m != nil {
		m.droppedBy[r].Inc()
	}
}

func (m *Metrics) opened() {
	if m != nil {
		m.sessions.Inc()
	}
}

func (m *Metrics) closedWith(r CloseReason) {
	if m != nil {
		m.sessions.Dec()
		m.closed.WithLabelValues(r.String()).Inc()
	}
}

func (m *Metrics) closedHandshake() {
	if m != nil {
		m.closed.WithLabelValues(ReasonHandshake.String()).Inc()
	}
}

func (m *Metrics) handshakeFailed(reason string) {
	if m != nil {
		m.hsFailed.WithLabelValues(reason).Inc()
	}
}

// Reasons of admission_deferred_total.
const (
	deferRate       = "rate"
	deferHandshakes = "handshakes"
)

func (m *Metrics) admissionDeferred(reason string, wait time.Duration) {
	if m != nil {
		m.deferred.WithLabelValues(reason).Inc()
		m.deferWait.Add(wait.Seconds())
	}
}

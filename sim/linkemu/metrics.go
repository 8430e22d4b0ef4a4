package linkemu

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics holds the link emulator's Prometheus collectors (style.md §19),
// labelled by direction (to_device, to_gateway) and, for drops, reason.
// A nil *Metrics records nothing. Create one per process or test with
// NewMetrics and pass it in Config.Metrics.
type Metrics struct {
	packets  *prometheus.CounterVec
	rxBytes  *prometheus.CounterVec
	txBytes  *prometheus.CounterVec
	lost     *prometheus.CounterVec
	dropped  *prometheus.CounterVec
	deliv    *prometheus.CounterVec
	delay    *prometheus.HistogramVec
	impaired prometheus.Gauge
}

// DelayBuckets are the buckets of the added-delay histogram, in seconds:
// 1 ms to about 33 s by doubling, wide enough for backed-off RTO stalls.
var DelayBuckets = prometheus.ExponentialBuckets(0.001, 2, 16)

// NewMetrics creates the collectors and registers them on reg (if not nil):
//
//	picobridge_linkemu_packets_total{direction}           packets offered to the link
//	picobridge_linkemu_rx_bytes_total{direction}          bytes read from the sender
//	picobridge_linkemu_tx_bytes_total{direction}          bytes written to the receiver
//	picobridge_linkemu_lost_total{direction}              transmissions lost by the GE chain
//	picobridge_linkemu_dropped_total{direction,reason}    UDP datagrams dropped (ge_loss, queue_full)
//	picobridge_linkemu_delivered_total{direction}         packets delivered
//	picobridge_linkemu_added_delay_seconds{direction}     scheduled delay of delivered packets
//	picobridge_linkemu_impaired                           1 while a non-clean profile is applied
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	const ns, sub = "picobridge", "linkemu"
	dir := []string{"direction"}
	m := &Metrics{
		packets: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "packets_total", Help: "Packets (datagrams, or TCP batches/chunks) offered to the emulated link."}, dir),
		rxBytes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "rx_bytes_total", Help: "Bytes read from the sender."}, dir),
		txBytes: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "tx_bytes_total", Help: "Bytes written to the receiver."}, dir),
		lost: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "lost_total", Help: "Transmissions lost by the Gilbert-Elliott chain (UDP drops them, TCP retransmits)."}, dir),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "dropped_total", Help: "UDP datagrams dropped, by reason."}, []string{"direction", "reason"}),
		deliv: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "delivered_total", Help: "Packets delivered to the receiver."}, dir),
		delay: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub,
			Name: "added_delay_seconds", Help: "Scheduled delay added to delivered packets.", Buckets: DelayBuckets}, dir),
		impaired: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub,
			Name: "impaired", Help: "1 while a non-clean profile is applied, else 0."}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.packets, m.rxBytes, m.txBytes, m.lost, m.dropped, m.deliv, m.delay, m.impaired} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

func (m *Metrics) packet(d Direction, n int) {
	if m != nil {
		m.packets.WithLabelValues(d.String()).Inc()
		m.rxBytes.WithLabelValues(d.String()).Add(float64(n))
	}
}

func (m *Metrics) loss(d Direction) {
	if m != nil {
		m.lost.WithLabelValues(d.String()).Inc()
	}
}

// queueDrop counts a UDP queue_full drop; a UDP GE loss is counted by loss
// and, as a drop, by geDrop.
func (m *Metrics) queueDrop(d Direction) {
	if m != nil {
		m.dropped.WithLabelValues(d.String(), "queue_full").Inc()
	}
}

func (m *Metrics) geDrop(d Direction) {
	if m != nil {
		m.dropped.WithLabelValues(d.String(), "ge_loss").Inc()
	}
}

func (m *Metrics) delivered(d Direction, n int, added time.Duration) {
	if m != nil {
		m.deliv.WithLabelValues(d.String()).Inc()
		m.txBytes.WithLabelValues(d.String()).Add(float64(n))
		m.delay.WithLabelValues(d.String()).Observe(added.Seconds())
	}
}

func (m *Metrics) profile(impaired bool) {
	if m != nil {
		v := 0.0
		if impaired {
			v = 1
		}
		m.impaired.Set(v)
	}
}

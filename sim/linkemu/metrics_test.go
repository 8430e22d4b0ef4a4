package linkemu

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/stretchr/testify/require"
)

func TestMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := NewMetrics(reg)
	require.NoError(t, err)
	echo := startUDPEcho(t)
	p := startUDPProxy(t, echo.addr(), Config{Profile: lossy, Seed: 1, Metrics: m})
	udpRun(t, p, echo, 500, 20, 32)
	st := p.Stats()
	for _, d := range []Direction{ToDevice, ToGateway} {
		ds := st.Dir(d)
		require.EqualValues(t, ds.Packets, testutil.ToFloat64(m.packets.WithLabelValues(d.String())))
		require.EqualValues(t, ds.Lost, testutil.ToFloat64(m.lost.WithLabelValues(d.String())))
		require.EqualValues(t, ds.Lost, testutil.ToFloat64(m.dropped.WithLabelValues(d.String(), "ge_loss")))
		require.EqualValues(t, ds.Delivered, testutil.ToFloat64(m.deliv.WithLabelValues(d.String())))
		require.EqualValues(t, ds.BytesOut, testutil.ToFloat64(m.txBytes.WithLabelValues(d.String())))
	}
	require.EqualValues(t, 1, testutil.ToFloat64(m.impaired))
	require.NoError(t, p.SetProfile(Clean))
	require.EqualValues(t, 0, testutil.ToFloat64(m.impaired))

	mfs, err := reg.Gather()
	require.NoError(t, err)
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	require.NoError(t, err)
	require.Empty(t, problems)
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	for _, n := range []string{"packets_total", "rx_bytes_total", "tx_bytes_total", "lost_total", "dropped_total", "delivered_total", "added_delay_seconds", "impaired"} {
		require.True(t, names["picobridge_linkemu_"+n], n)
	}
	var nilM *Metrics
	nilM.packet(ToDevice, 1) // a nil *Metrics records nothing
	nilM.delivered(ToDevice, 1, time.Millisecond)
}

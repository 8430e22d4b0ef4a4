package transport

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

func TestMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := NewMetrics(reg)
	require.NoError(t, err)
	lcfg, dcfg := testConfig(), testConfig()
	lcfg.Metrics = m
	lcfg.MaxReassembly = 1000
	client, server, _, srec := pair(t, "tcp", lcfg, dcfg)
	require.EqualValues(t, 1, testutil.ToFloat64(m.sessions))
	require.NoError(t, client.Send(push("k", []byte("hello")), SendOptions{Reliable: true}))
	srec.next(t, 5*time.Second)
	require.NoError(t, client.Send(push("k", bytes.Repeat([]byte("x"), 70000)), SendOptions{Reliable: true}))
	require.Eventually(t, func() bool { return server.Stats().Dropped["fragment_oversize"] == 1 }, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, client.Close(ReasonShutdown))
	srec.waitClose(t, 5*time.Second)
	<-server.Done()

	require.EqualValues(t, 0, testutil.ToFloat64(m.sessions))
	require.Positive(t, testutil.ToFloat64(m.rxBytes))
	require.GreaterOrEqual(t, testutil.ToFloat64(m.rxBatches), 3.0)
	require.EqualValues(t, 1, testutil.ToFloat64(m.dropped.WithLabelValues("fragment_oversize")))
	require.EqualValues(t, 1, testutil.ToFloat64(m.closed.WithLabelValues("remote_close")))

	// Names and help follow the Prometheus conventions.
	problems, err := promlint.NewWithMetricFamilies(gather(t, reg)).Lint()
	require.NoError(t, err)
	require.Empty(t, problems)
	names := map[string]bool{}
	for _, mf := range gather(t, reg) {
		names[mf.GetName()] = true
	}
	for _, n := range []string{"rx_bytes_total", "tx_bytes_total", "rx_batches_total", "tx_batches_total", "dropped_total", "sessions", "closed_total"} {
		require.True(t, names["picobridge_transport_"+n], n)
	}
	_ = strings.ToLower
	_ = wire.ProtoVersion
}

func gather(t *testing.T, g prometheus.Gatherer) []*dto.MetricFamily {
	mfs, err := g.Gather()
	require.NoError(t, err)
	return mfs
}

func TestNilMetrics(t *testing.T) {
	var m *Metrics
	m.rx(1)
	m.tx(1)
	m.drop(dropQueueFull)
	m.opened()
	m.closedWith(ReasonEOF)
	m.closedHandshake()
}

func TestCloseReasonNames(t *testing.T) {
	for r := CloseReason(0); r < 300; r++ {
		s := r.String()
		require.NotEmpty(t, s)
		if r > ReasonConnectionToSelf && r < ReasonEOF {
			require.Equal(t, "other", s)
		}
	}
	require.Equal(t, wire.CloseInvalid, ReasonDecodeError.Wire())
	require.Equal(t, wire.CloseGeneric, ReasonShutdown.Wire())
	require.Equal(t, wire.CloseExpired, ReasonExpired.Wire())
}

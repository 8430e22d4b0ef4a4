package bridge

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/firmware"
)

// supLag reads picobridge_bridge_supervisor_lag_seconds{counted_as=who} from reg.
func supLag(t *testing.T, reg *prometheus.Registry, who string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != MetricSupervisorLag {
			continue
		}
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == who {
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("%s{counted_as=%q} not exported", MetricSupervisorLag, who)
	return 0
}

// A lag measured while the gateway's process used less than half of its
// CPUs is the host's (a loaded or starved host did not run it): it is
// reported as HostLag and puts the gateway in no mode, so a gateway that
// keeps up does not suspend every critical route because other processes
// took the CPU (issue 29: EMERGENCY on "lag 1.25 s ≥ 1s" at load 11 with
// the gateway at 1-2 % CPU, 21 387 critical samples suspended at 50
// devices). The same lag while the process was busy is the gateway's
// overload and enters EMERGENCY at once; when the CPU time cannot be read
// every lag counts, as before.
func TestSupervisorLagOfIdleGatewayIsHosts(t *testing.T) {
	cat, err := firmware.Catalog()
	require.NoError(t, err)
	var cpu time.Duration
	reg := prometheus.NewPedanticRegistry()
	g, err := New(DefaultConfig(), Options{Catalog: cat, Registerer: reg, ProcessCPU: func() (time.Duration, error) { return cpu, nil }})
	require.NoError(t, err)
	defer g.Close()
	procs := time.Duration(runtime.GOMAXPROCS(0))
	t0 := time.Unix(1000, 0)
	_, changed := g.superviseWithTickLag(t0, 0) // the first reading: CPU baseline
	require.False(t, changed)

	cpu += 20 * time.Millisecond * procs // 2 % of its CPUs over the second
	_, changed = g.superviseWithTickLag(t0.Add(time.Second), 1250*time.Millisecond)
	require.False(t, changed, "the host's lag")
	st := g.sup.Status()
	require.Equal(t, Normal, st.Mode)
	require.Equal(t, Health{HostLag: 1250 * time.Millisecond}, st.Health)
	require.Equal(t, 1.25, supLag(t, reg, "host"), "reported")
	require.Zero(t, supLag(t, reg, "gateway"))

	cpu += 499 * time.Millisecond * procs // just under half: still the host's
	_, changed = g.superviseWithTickLag(t0.Add(2*time.Second), 150*time.Millisecond)
	require.False(t, changed)

	cpu += 900 * time.Millisecond * procs // busy: the gateway's own lag
	c, changed := g.superviseWithTickLag(t0.Add(3*time.Second), 1250*time.Millisecond)
	require.True(t, changed)
	require.Equal(t, Emergency, c.To)
	require.Equal(t, Health{Lag: 1250 * time.Millisecond}, c.Health)
	require.Equal(t, 1.25, supLag(t, reg, "gateway"))
	require.Zero(t, supLag(t, reg, "host"))

	g2, err := New(DefaultConfig(), Options{Catalog: cat, ProcessCPU: func() (time.Duration, error) { return 0, errors.New("no getrusage") }})
	require.NoError(t, err)
	defer g2.Close()
	g2.superviseWithTickLag(t0, 0)
	c, changed = g2.superviseWithTickLag(t0.Add(time.Second), 150*time.Millisecond)
	require.True(t, changed, "CPU time unknown: every lag counts")
	require.Equal(t, Degraded, c.To)
}

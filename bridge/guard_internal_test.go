package bridge

import (
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/firmware"
	"github.com/picobridge/picobridge/probe"
)

// pongSink answers every ping after a delay, as a device would whose pongs
// wait in the gateway's own backlog.
type pongSink struct {
	g     *Gateway
	delay time.Duration
	mu    sync.Mutex
	pings int
}

func (s *pongSink) SendExpress(Sample) error { return nil }
func (s *pongSink) SendBatch([]Sample) error { return nil }
func (s *pongSink) SendProbe(key string, ping []byte) error {
	s.mu.Lock()
	s.pings++
	s.mu.Unlock()
	name, _, _ := probe.ParseKey(key)
	// A goroutine that sleeps, not time.AfterFunc: under the race detector
	// an AfterFunc fired by a synctest bubble's timers starts its goroutine
	// from g0's race context, and Go 1.26.8's race runtime crashed there
	// (SIGSEGV in its StackDepot) in about half of the runs of this test.
	go func() {
		time.Sleep(s.delay)
		if pong, err := probe.Respond(ping, 0, 0); err == nil {
			_ = s.g.HandlePong(probe.PongKey(name), pong)
		}
	}()
	return nil
}

// A saturated gateway (issue 11: 3 000 probe-answering devices, probe RTT
// ~400 ms from its own backlog, all demoted): while its own timers wake
// ~350 ms late, the 380 ms probe RTTs of its devices are the gateway's, and
// no device is demoted; the same RTTs without the gateway's lag demote
// every device (the control run), so the guard is what keeps them.
func TestSaturatedGatewayDemotesNoDevice(t *testing.T) {
	cat, err := firmware.Catalog()
	require.NoError(t, err)
	run := func(t *testing.T, lagging bool) (demoted, suspended int) {
		synctest.Test(t, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Classifier.Dwell = 0
			g, err := New(cfg, Options{Catalog: cat})
			require.NoError(t, err)
			defer func() {
				g.Close()
				time.Sleep(time.Second) // the pongs still in flight (380 ms) end before the bubble does
			}()
			const n = 200
			ds := make([]*Device, n)
			for i := range ds {
				ds[i], err = g.Attach(DeviceIdentity{ZID: fmt.Sprintf("%04x", i+1)}, &pongSink{g: g, delay: 380 * ms})
				require.NoError(t, err)
				ds[i].DeclareSubscriber(probe.PingKey(fmt.Sprintf("d%d", i)))
			}
			if lagging { // the lateness the lag meter would measure on a saturated gateway
				stop := make(chan struct{})
				defer close(stop)
				go func() {
					tk := time.NewTicker(500 * ms)
					defer tk.Stop()
					for {
						select {
						case <-stop:
							return
						case <-tk.C:
							g.wakeLag.note(350 * ms)
						}
					}
				}()
			}
			g.Run()
			time.Sleep(30 * time.Second)
			synctest.Wait()
			for _, d := range ds {
				if d.Classifier().Class() == ClassNoncritical {
					demoted++
				}
			}
			suspended = int(g.GatewayHealth().SuspendedTotal[SuspendGatewayLag])
		})
		return demoted, suspended
	}
	demoted, suspended := run(t, true)
	require.Zero(t, demoted, "no device blamed for the gateway's lag")
	require.Positive(t, suspended)
	demoted, suspended = run(t, false)
	require.Equal(t, 200, demoted, "control: the same RTTs from the devices demote them")
	require.Zero(t, suspended)
}

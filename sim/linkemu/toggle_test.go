package linkemu

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

type switchRecord struct {
	at      time.Duration
	profile string
}

type recorder struct {
	start time.Time
	mu    sync.Mutex
	got   []switchRecord
}

func (r *recorder) SetProfile(p Profile) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, switchRecord{time.Since(r.start), p.Name})
	return nil
}

func TestToggleSwitchesOnTime(t *testing.T) {
	moderate, err := LookupProfile("moderate")
	require.NoError(t, err)
	for _, startOn := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			// The evaluation's toggle run: 60 s phases for 240 s.
			r := &recorder{start: time.Now()}
			ctx, cancel := context.WithTimeout(context.Background(), 240*time.Second+time.Second)
			defer cancel()
			err := Toggle{On: moderate, Period: DefaultTogglePeriod, StartOn: startOn}.Run(ctx, r)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			a, b := "clean", "moderate"
			if startOn {
				a, b = b, a
			}
			require.Equal(t, []switchRecord{
				{0, a}, {60 * time.Second, b}, {120 * time.Second, a}, {180 * time.Second, b}, {240 * time.Second, a},
			}, r.got)
		})
	}
}

func TestTogglePhase(t *testing.T) {
	on := Profile{Name: "on", ToDevice: Impairment{Delay: Jitter{Mean: time.Millisecond}}}
	tg := Toggle{On: on, Period: 10 * time.Second}
	for _, tc := range []struct {
		at   time.Duration
		name string
		on   bool
	}{{0, "clean", false}, {9 * time.Second, "clean", false}, {10 * time.Second, "on", true}, {25 * time.Second, "clean", false}} {
		p, isOn := tg.Phase(tc.at)
		require.Equal(t, tc.name, p.Name, tc.at)
		require.Equal(t, tc.on, isOn, tc.at)
	}
	require.Error(t, Toggle{On: on}.Validate(), "no period")
	require.Error(t, Toggle{Period: time.Second}.Validate(), "no on profile")
	failing := failingSwitcher{}
	require.ErrorIs(t, tg.Run(context.Background(), failing), errFailing)
}

var errFailing = errors.New("failing")

type failingSwitcher struct{}

func (failingSwitcher) SetProfile(Profile) error { return errFailing }

// TestToggleDrivesAProxy runs a short toggle on a real proxy and reads the
// phases back from its timeline.
func TestToggleDrivesAProxy(t *testing.T) {
	srv := startTCPServer(t, func(c *net.TCPConn) { io.Copy(io.Discard, c) })
	p := startTCPProxy(t, srv.addr(), Config{})
	moderate, err := LookupProfile("moderate")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- Toggle{On: moderate, Period: 20 * time.Millisecond, StartOn: true}.Run(ctx, p) }()
	checkFor(t, 5*time.Second, 5*time.Millisecond, func() error {
		if len(p.Stats().Timeline) < 5 {
			return errString("fewer than 4 switches")
		}
		return nil
	})
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	tl := p.Stats().Timeline
	require.Equal(t, "clean", tl[0].Profile, "the proxy's own start")
	for i, c := range tl[1:] {
		require.Equal(t, i%2 == 0, c.Impaired, "phase %d", i)
		require.True(t, c.At.After(tl[i].At), "phase %d after the one before", i)
	}
}

type slowRecorder struct {
	recorder
	slow time.Duration
}

func (r *slowRecorder) SetProfile(p Profile) error {
	r.recorder.SetProfile(p)
	time.Sleep(r.slow) // fake time under synctest
	r.slow = 0
	return nil
}

func TestToggleSkipsMissedPhases(t *testing.T) {
	on := Profile{Name: "on", ToDevice: Impairment{Delay: Jitter{Mean: time.Millisecond}}}
	synctest.Test(t, func(t *testing.T) {
		r := &slowRecorder{recorder: recorder{start: time.Now()}, slow: 130 * time.Second}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Second)
		defer cancel()
		err := Toggle{On: on, Period: 60 * time.Second}.Run(ctx, r)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		// Phase 0 (off) took until 130 s: phase 1 is skipped, phase 2 is
		// off again (no switch), phase 3 (on) starts on time at 180 s.
		require.Equal(t, []switchRecord{{0, "clean"}, {180 * time.Second, "on"}}, r.got)
	})
}

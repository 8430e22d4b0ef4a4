package linkemu

import (
	"context"
	"fmt"
	"time"
)

// Switcher is what a Toggle drives; both proxies implement it.
type Switcher interface {
	SetProfile(p Profile) error
}

// Toggle switches a link between an impaired profile and a clean one at a
// fixed period: the evaluation's toggle run is moderate switched on and
// off every 60 s for 240 s (evaluation.md). The proxy records every switch
// with its time in Stats.Timeline.
type Toggle struct {
	// On is the impaired profile (moderate in the evaluation).
	On Profile
	// Off is the profile between impaired phases; the zero Profile means
	// Clean.
	Off Profile
	// Period is how long each phase lasts (60 s in the evaluation).
	Period time.Duration
	// StartOn begins with the impaired phase; by default the link starts
	// clean and is impaired from the first switch on.
	StartOn bool
}

// DefaultTogglePeriod is the phase length of the evaluation's toggle run.
const DefaultTogglePeriod = 60 * time.Second

// Validate checks the period and both profiles.
func (tg Toggle) Validate() error {
	if tg.Period <= 0 {
		return fmt.Errorf("toggle: period must be > 0 (got %v)", tg.Period)
	}
	if err := tg.On.Validate(); err != nil {
		return fmt.Errorf("toggle: %w", err)
	}
	return tg.off().Validate()
}

func (tg Toggle) off() Profile {
	if tg.Off.Name == "" {
		return Clean
	}
	return tg.Off
}

// Phase is the profile a toggle applies at elapsed time since it started,
// and whether that is the impaired phase.
func (tg Toggle) Phase(elapsed time.Duration) (Profile, bool) {
	on := (elapsed/tg.Period)%2 == 0 == tg.StartOn
	if on {
		return tg.On, true
	}
	return tg.off(), false
}

// Run applies the first phase at once, then switches at start + k·Period
// (no drift; if it wakes up more than a period late, it skips to the
// phase of the current time rather than replaying missed ones) until ctx
// is done, and returns ctx's error, or the first error of SetProfile.
func (tg Toggle) Run(ctx context.Context, s Switcher) error {
	if err := tg.Validate(); err != nil {
		return err
	}
	start := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	applied := time.Duration(-1) // phase index last applied
	for {
		k := time.Since(start) / tg.Period
		if p, on := tg.Phase(k * tg.Period); applied < 0 || on != tg.isOn(applied) {
			if err := s.SetProfile(p); err != nil {
				return err
			}
		}
		applied = k
		timer.Reset(time.Until(start.Add((k + 1) * tg.Period)))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
		}
	}
}

func (tg Toggle) isOn(k time.Duration) bool {
	_, on := tg.Phase(k * tg.Period)
	return on
}

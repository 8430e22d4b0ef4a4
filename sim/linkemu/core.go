package linkemu

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// core is what both proxies share: the two link directions, the profile
// applied and its timeline, the session counters.
type core struct {
	cfg       Config
	transport string
	start     time.Time
	links     [2]*link // indexed by Direction

	mu       sync.Mutex // guards profile and timeline; taken before link.mu
	profile  Profile
	timeline []ProfileChange

	active atomic.Int64
	opened atomic.Uint64
}

func newCore(transport string, cfg Config) (*core, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &core{cfg: cfg, transport: transport, start: time.Now()}
	for _, d := range []Direction{ToDevice, ToGateway} {
		c.links[d] = newLink(d, cfg.Seed, cfg.QueueBytes, cfg.RTO.Max, cfg.RTO.MaxRetransmits, cfg.Metrics)
		c.links[d].repair = cfg.RTO.Repair
	}
	c.apply(cfg.Profile, c.start)
	return c, nil
}

func (c *core) apply(p Profile, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rto, srtt := c.cfg.RTO.RTO(p), c.cfg.RTO.SRTT(p)
	impaired := !p.ToDevice.Clean() || !p.ToGateway.Clean()
	ch := ProfileChange{At: at, Profile: p.Name, Impaired: impaired,
		Expected: [2]float64{p.ToDevice.ExpectedLoss(), p.ToGateway.ExpectedLoss()}}
	ch.Counters[ToDevice] = c.links[ToDevice].set(p.ToDevice, rto, srtt)
	ch.Counters[ToGateway] = c.links[ToGateway].set(p.ToGateway, rto, srtt)
	c.profile = p
	c.timeline = append(c.timeline, ch)
	c.cfg.Metrics.profile(impaired)
}

func (c *core) setProfile(p Profile) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("set profile: %w", err)
	}
	c.apply(p, time.Now())
	return nil
}

func (c *core) currentProfile() Profile {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.profile
}

func (c *core) stats() Stats {
	c.mu.Lock()
	s := Stats{
		Transport: c.transport,
		Profile:   c.profile.Name,
		Start:     c.start,
		Taken:     time.Now(),
		Timeline:  slices.Clone(c.timeline),
	}
	s.ToDevice = c.links[ToDevice].snapshot()
	s.ToGateway = c.links[ToGateway].snapshot()
	c.mu.Unlock()
	s.Active = int(c.active.Load())
	s.Sessions = c.opened.Load()
	return s
}

// Proxy is what the UDP and TCP proxies have in common.
type Proxy interface {
	// Addr is the address the device connects to.
	Addr() string
	// SetProfile switches the impairment of both directions at once; the
	// loss chains restart in the good state.
	SetProfile(p Profile) error
	// Profile is the profile applied now.
	Profile() Profile
	// Stats is a snapshot of the counters and the profile timeline.
	Stats() Stats
	// Close stops listening, ends every session and waits for all the
	// proxy's goroutines.
	Close() error
}

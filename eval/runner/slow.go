package runner

import (
	"math/rand/v2"
	"time"

	"github.com/picobridge/picobridge/sim/linkemu"
)

// slowConsumer turns an impairment profile into the service time of a consumer that takes
// samples one at a time (the impaired DDS reader of experiments 1 and 5, whose traffic cannot
// be put behind the userspace link emulator: DDS discovery advertises the reader's real
// ports). Per sample it spends
//
//	serialization at the profile's bandwidth + one draw of the profile's delay
//
// and, when the profile's Gilbert–Elliott chain (linkemu.Channel, seeded) loses the sample:
// a reliable reader stalls for repairStall more (the sample is repaired by the writer's next
// heartbeat/NACK round), a best-effort reader drops it. A clean profile costs nothing.
// Because the reader takes the next sample only after that, its DDS reader cache fills
// whenever the service time exceeds the publication period, which is what pushes back on a
// RELIABLE KEEP_ALL writer.
type slowConsumer struct {
	im       linkemu.Impairment
	ch       *linkemu.Channel
	rng      *rand.Rand
	reliable bool

	steps, lost uint64
}

// repairStall is the extra time a reliable reader waits for a lost sample's repair: Cyclone's
// default heartbeat interval (100 ms) plus a round trip on the emulated link.
func (c *slowConsumer) repairStall() time.Duration { return 100*time.Millisecond + 2*c.im.Delay.Mean }

func newSlowConsumer(profile string, seed uint64, reliable bool) (*slowConsumer, error) {
	p, err := linkemu.LookupProfile(profile)
	if err != nil {
		return nil, err
	}
	im := p.ToDevice
	return &slowConsumer{
		im:       im,
		ch:       linkemu.NewChannel(im.Loss, seed, 0),
		rng:      rand.New(rand.NewPCG(seed, 1)),
		reliable: reliable,
	}, nil
}

// service returns how long the consumer spends on an n-byte sample and whether it drops it.
func (c *slowConsumer) service(n int) (time.Duration, bool) {
	if c.im.Clean() {
		return 0, false
	}
	var d time.Duration
	if c.im.Rate > 0 {
		d += time.Duration(float64(n*8) / float64(c.im.Rate) * float64(time.Second))
	}
	d += c.im.Delay.Sample(c.rng)
	c.steps++
	if c.ch.Step() {
		c.lost++
		if !c.reliable {
			return d, true
		}
		d += c.repairStall()
	}
	return d, false
}

// producedLoss is the share of samples the chain lost so far.
func (c *slowConsumer) producedLoss() float64 {
	if c.steps == 0 {
		return 0
	}
	return float64(c.lost) / float64(c.steps)
}

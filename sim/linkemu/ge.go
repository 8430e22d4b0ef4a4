package linkemu

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// GE is a Gilbert–Elliott loss model: a two-state Markov chain (good, bad)
// stepped once per packet, each state with its own loss probability. All
// fields are probabilities in [0, 1] (evaluation.md, impairment profiles;
// the same parameters as netem's "loss gemodel p r 1-h 1-k").
//
// The zero GE loses nothing.
type GE struct {
	// P is the probability of moving good → bad at a step.
	P float64 `yaml:"p" json:"p"`
	// R is the probability of moving bad → good at a step.
	R float64 `yaml:"r" json:"r"`
	// LossGood is the loss probability of a packet sent in the good state.
	LossGood float64 `yaml:"loss_good" json:"loss_good"`
	// LossBad is the loss probability of a packet sent in the bad state.
	LossBad float64 `yaml:"loss_bad" json:"loss_bad"`
}

// ExpectedLoss is the long-run average loss of the chain, the stationary
// mix of the two states' loss probabilities (evaluation.md):
//
//	(r·loss_good + p·loss_bad) / (p + r)
//
// With p = r = 0 the chain stays in the good state and the loss is LossGood.
func (g GE) ExpectedLoss() float64 {
	if g.P+g.R == 0 {
		return g.LossGood
	}
	return (g.R*g.LossGood + g.P*g.LossBad) / (g.P + g.R)
}

// Zero reports whether the model can never lose a packet.
func (g GE) Zero() bool {
	return g.LossGood == 0 && (g.LossBad == 0 || g.P == 0)
}

// Validate checks that every field is a probability and that the bad state
// can be left once entered.
func (g GE) Validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"p", g.P}, {"r", g.R}, {"loss_good", g.LossGood}, {"loss_bad", g.LossBad}} {
		if !(f.v >= 0 && f.v <= 1) { // also rejects NaN
			return fmt.Errorf("ge.%s: must be a probability in [0, 1] (got %v)", f.name, f.v)
		}
	}
	if g.P > 0 && g.R == 0 {
		return fmt.Errorf("ge.r: must be > 0 when ge.p > 0 (the bad state would never be left)")
	}
	return nil
}

// GEState is the state of a Gilbert–Elliott chain.
type GEState uint8

// The two states of the chain; a chain starts in GEGood.
const (
	GEGood GEState = iota
	GEBad
)

func (s GEState) String() string {
	if s == GEBad {
		return "bad"
	}
	return "good"
}

// Channel is one direction's Gilbert–Elliott chain driven by its own PCG
// source: the same model, seed and stream give the same loss sequence. It
// is not safe for concurrent use.
type Channel struct {
	model GE
	state GEState
	rng   *rand.Rand
}

// NewChannel returns a chain in the good state whose randomness comes from
// a PCG source seeded with (seed, stream). Use a distinct stream per
// direction so that the two directions are independent but reproducible.
func NewChannel(model GE, seed, stream uint64) *Channel {
	return &Channel{model: model, rng: rand.New(rand.NewPCG(seed, stream))}
}

// Step decides the fate of one packet: it reports whether the packet is
// lost (drawn with the current state's loss probability) and then moves
// the chain (good → bad with P, bad → good with R). netem draws in the
// same order.
func (c *Channel) Step() (lost bool) {
	switch c.state {
	case GEGood:
		lost = c.model.LossGood > 0 && c.rng.Float64() < c.model.LossGood
		if c.model.P > 0 && c.rng.Float64() < c.model.P {
			c.state = GEBad
		}
	default:
		lost = c.model.LossBad > 0 && c.rng.Float64() < c.model.LossBad
		if c.rng.Float64() < c.model.R {
			c.state = GEGood
		}
	}
	return lost
}

// State is the state the next Step draws its loss in.
func (c *Channel) State() GEState { return c.state }

// Model is the chain's parameters.
func (c *Channel) Model() GE { return c.model }

// SetModel replaces the parameters and puts the chain back in the good
// state (as replacing a netem qdisc does); the random source continues.
func (c *Channel) SetModel(m GE) {
	c.model = m
	c.state = GEGood
}

// Ahead draws the state of the chain k steps after it was in state from,
// without moving the chain, from the k-step transition probability
//
//	P(bad after k | from) = π_B + (1{from = bad} − π_B)·(1 − p − r)^k,  π_B = p/(p + r).
//
// The TCP proxy uses it for a retransmission, which happens one RTO after
// the transmission it repeats, when the link has carried other packets.
func (c *Channel) Ahead(from GEState, k int) GEState {
	p, r := c.model.P, c.model.R
	if p+r == 0 || k <= 0 {
		return from
	}
	piB := p / (p + r)
	s0 := 0.0
	if from == GEBad {
		s0 = 1
	}
	pBad := piB + (s0-piB)*math.Pow(1-p-r, float64(k))
	if c.rng.Float64() < pBad {
		return GEBad
	}
	return GEGood
}

// LostIn draws whether a transmission made in state s is lost, without
// moving the chain.
func (c *Channel) LostIn(s GEState) bool {
	loss := c.model.LossGood
	if s == GEBad {
		loss = c.model.LossBad
	}
	return loss > 0 && c.rng.Float64() < loss
}

package linkemu

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Jitter is a one-way delay drawn from a normal distribution with mean
// Mean and standard deviation SD, truncated at zero (a negative draw is
// drawn again), like netem's "delay MEAN SD distribution normal" without
// its reordering. The zero Jitter adds nothing.
type Jitter struct {
	// Mean is the mean delay.
	Mean time.Duration `json:"mean"`
	// SD is the standard deviation of the delay; 0 gives a constant delay.
	SD time.Duration `json:"sd"`
}

// Zero reports whether the delay is always 0.
func (j Jitter) Zero() bool { return j.Mean == 0 && j.SD == 0 }

// Validate rejects negative values.
func (j Jitter) Validate() error {
	if j.Mean < 0 || j.SD < 0 {
		return fmt.Errorf("delay: mean and sd must be >= 0 (got %v ± %v)", j.Mean, j.SD)
	}
	return nil
}

func (j Jitter) String() string {
	if j.Zero() {
		return "0"
	}
	return fmt.Sprintf("%v±%v", j.Mean, j.SD)
}

// maxRedraws bounds the rejection loop of Sample; with Mean >= 0 a draw
// is accepted with probability >= 1/2, so 2^-32 is the chance of falling
// back to 0.
const maxRedraws = 32

// Sample draws one delay, never negative.
func (j Jitter) Sample(rng *rand.Rand) time.Duration {
	if j.SD == 0 {
		return j.Mean
	}
	for range maxRedraws {
		d := float64(j.Mean) + rng.NormFloat64()*float64(j.SD)
		if d >= 0 {
			return time.Duration(d)
		}
	}
	return 0
}

package fleet

import (
	"context"
	"errors"
	"time"
)

// ChurnOptions configure Churn (issue 29 item 2).
type ChurnOptions struct {
	FaultOptions
	JoinHz, LeaveHz float64
	Duration        time.Duration
	Critical        int
	Sample          time.Duration
}

// ChurnReport is the result of Churn.
type ChurnReport struct{}

// Churn runs the churn soak.
func Churn(ctx context.Context, o ChurnOptions) (*ChurnReport, error) {
	return nil, errors.New("churn: not yet")
}

// Markdown prints the churn tables.
func (r *ChurnReport) Markdown() string { return "" }

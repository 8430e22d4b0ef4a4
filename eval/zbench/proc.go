package zbench

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/picobridge/picobridge/eval/benchkit"
)

// event is a JSON line ({"ev": ...}) printed by zbench.py or the Go router child.
type event struct {
	Ev    string    `json:"ev"`
	Msg   string    `json:"msg"`
	Rate  float64   `json:"rate"`
	RTTus []float64 `json:"rtt_us"`
}

// waitEvent waits for the JSON event ev on p's stdout; an "error" event fails at once.
func waitEvent(p *benchkit.Proc, ev string, timeout time.Duration) (event, error) {
	var got event
	_, err := p.WaitLine(timeout, func(s string) bool {
		var e event
		if !strings.HasPrefix(s, "{") || json.Unmarshal([]byte(s), &e) != nil {
			return false
		}
		if e.Ev == ev || e.Ev == "error" {
			got = e
			return true
		}
		return false
	})
	if err != nil {
		return event{}, err
	}
	if got.Ev == "error" {
		return event{}, fmt.Errorf("%s: error: %s; %s", p.Name, got.Msg, p.Tail())
	}
	return got, nil
}

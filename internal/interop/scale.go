package interop

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

// TimescaleEnv names the environment variable holding the factor applied to every timeout.
const TimescaleEnv = "PICOBRIDGE_TIMESCALE"

var timescale = sync.OnceValue(func() float64 {
	v := os.Getenv(TimescaleEnv)
	if v == "" {
		return 1
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f <= 0 {
		fmt.Fprintf(os.Stderr, "interop: ignoring %s=%q (want a positive number)\n", TimescaleEnv, v)
		return 1
	}
	return f
})

// Timescale returns the factor from PICOBRIDGE_TIMESCALE (1 when unset).
func Timescale() float64 { return timescale() }

// Scale multiplies a nominal timeout by [Timescale].
func Scale(d time.Duration) time.Duration { return time.Duration(float64(d) * Timescale()) }

// Seconds formats a scaled nominal duration as seconds, for zpeer.py's --timeout flags.
func Seconds(d time.Duration) string {
	return strconv.FormatFloat(Scale(d).Seconds(), 'f', 3, 64)
}

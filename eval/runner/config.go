// Package runner runs the evaluation's experiments (evaluation.md, "Experiments") and writes
// their raw samples (CSV), a summary table (summary.md) and plots (PNG). cmd/picoeval is its
// thin main; docs/eval.md says what each experiment does and how impairment is applied.
package runner

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/picobridge/picobridge/ddspath/rosbag/rosbagtest"
	"github.com/picobridge/picobridge/eval/benchkit"
)

// Levels are the impairment levels of every experiment, in table order.
var Levels = []string{"clean", "mild", "moderate", "strong"}

// DefaultBag is the real robot bag the publisher replays: hallway_room_loop of
// shared/data/mumble_rplidar_imu, found through $PICOBRIDGE_SHARED or by walking up
// from the working directory (rosbagtest.FindMumbleDir); "" when it is not there.
var DefaultBag = func() string {
	if dir, ok := rosbagtest.FindMumbleDir(); ok {
		return filepath.Join(dir, "hallway_room_loop")
	}
	return ""
}()

// Config configures a whole evaluation.
type Config struct {
	Out      string        // output directory
	Quick    bool          // short runs (smoke, CI)
	Only     []string      // experiment ids to run ("exp1", "exp5", ...); empty = all
	Duration time.Duration // publication time per run; 0 = profile default
	Seed     uint64        // impairment seed (the only one when Seeds is empty)
	Bag      string        // bag directory
	Topic    string        // bag topic replayed ("/scan")
	RateHz   float64       // fixed replay rate (30)
	Levels   []string      // restrict the levels run (smoke tests); empty = all
	Log      func(format string, a ...any)

	// Seeds, when it has more than one, runs every run of the plan once per seed (the run's
	// name gets "-s<seed>") and the summary adds the across-seed table: median and min–max
	// of the per-run critical p50/p95/p99 (issue 27: ≥ 3 seeds per cell). The middleware
	// comparison runs once per seed too; its fastest system per size must then be apart
	// from the next over all seeds (mwWinner).
	Seeds []uint64

	// Middleware comparison (experiment "mw"): empty lists mean the defaults
	// (MWProfiles, MWSizes, MWSystems); MWNoTLS skips the TLS sessions.
	MWProfiles []string
	MWSizes    []int
	MWSystems  []string
	MWNoTLS    bool
	// MWDuration is the publication time of one mw phase; 0: Duration, else 3 s.
	MWDuration time.Duration

	// Cotenant is the number of CPU busy loops (separate processes) run beside the
	// systems under test during every run, stopped after it; 0 = none.
	Cotenant int

	// BusyVariant, when > 0, runs every run of experiments 1–6, zenohd and ros2dds a
	// second time with that many busy loops beside it (run name suffix "-busy"; the
	// across-seed table and results.json keep the two apart), so that every system is
	// measured on a busy host too (issue 27 item 3). The middleware comparison runs on the
	// quiet host only.
	BusyVariant int

	// BusyLevels, when not empty, restricts the busy variant to these levels (e.g.
	// "moderate": every system once on a busy host without repeating every level).
	BusyLevels []string

	// Devices are the device programs behind the side-by-side systems (exp3's picobridge,
	// zenohd, ros2dds): DevicesDevsim (the default) and/or DevicesPico (real zenoh-pico from
	// $ZENOH_PICO_DIR; runs named with PicoSuffix). PicoLevels, when not empty, restricts
	// the zenoh-pico series to these levels. The busy variant runs devsim devices only.
	Devices    []string
	PicoLevels []string

	// GatewayCfg are `picobridge run --cfg KEY:VALUE` settings laid over the gateway's
	// configuration in experiments 3, 4 and 6 (e.g. policy.express.realtime:fifo).
	GatewayCfg []string

	// HarnessRealtime raises picoeval's own threads (the publisher, the devices, the link
	// emulator) in experiments 3, 4 and 6 once the gateway runs: "nice" or "fifo" as the
	// gateway's policy.express.realtime, with SCHED_RESET_ON_FORK so the gateway and the
	// busy loops it starts later keep their own priority; "" or "off": not. On a busy host
	// this leaves the gateway alone with the hogs, so the latency is the gateway's.
	HarnessRealtime string

	// Profile names the protocol in the summary's header ("standard", "full"; Quick says
	// "quick"); "" reads "standard". Command is the command line that made the run, quoted
	// in the header so that the page can be regenerated ("" = not shown).
	Profile, Command string

	// hostStart is hostLine() when Run started (the summary's header).
	hostStart string
}

// withDefaults fills zero fields.
func (c Config) withDefaults() Config {
	if c.Out == "" {
		c.Out = "picoeval-out"
	}
	if c.Bag == "" {
		c.Bag = DefaultBag
	}
	if c.Topic == "" {
		c.Topic = "/scan"
	}
	if c.RateHz == 0 {
		c.RateHz = 30
	}
	if len(c.Seeds) > 0 {
		c.Seed = c.Seeds[0]
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if len(c.Seeds) == 0 {
		c.Seeds = []uint64{c.Seed}
	}
	if c.Log == nil {
		c.Log = func(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) }
	}
	return c
}

// runDuration is the publication time of one run at level: the paper ran 120 s clean and
// 180 s impaired; the full profile here runs 40 s clean and 60 s impaired (the total wall time
// of all experiments stays under ~25 min), the quick profile 10 s.
func (c Config) runDuration(level string) time.Duration {
	switch {
	case c.Duration > 0:
		return c.Duration
	case c.Quick:
		return 10 * time.Second
	case level == "clean":
		return 40 * time.Second
	case level == "toggle":
		return 240 * time.Second
	}
	return 60 * time.Second
}

// devicePrograms is Devices, or DevicesDevsim alone when it is empty.
func (c Config) devicePrograms() []string {
	if len(c.Devices) == 0 {
		return []string{DevicesDevsim}
	}
	return c.Devices
}

// wants reports whether experiment id is selected.
func (c Config) wants(id string) bool {
	return len(c.Only) == 0 || slices.Contains(c.Only, id)
}

// ParseOnly splits "exp1,exp3" (spaces trimmed, empty items dropped).
func ParseOnly(s string) []string { return benchkit.SplitList(s) }

// domainID picks a DDS domain id for one run: 20–219 at random (docs/dds.md: the range test
// processes share), so that parallel test binaries rarely meet.
func domainID() uint32 { return 20 + rand.Uint32N(200) }

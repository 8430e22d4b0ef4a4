package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/picobridge/picobridge/firmware/responder"
	"github.com/picobridge/picobridge/firmware/rxtx"
	"github.com/picobridge/picobridge/firmware/zephyrfd"
	"github.com/picobridge/picobridge/sim/devsim"
)

// Device programs behind the side-by-side systems (issue 27 item 1: the critical and the
// impaired consumer are the same program behind every router or bridge).
const (
	// DevicesDevsim is sim/devsim's simulated zenoh-pico device (in picoeval's process),
	// the tuned Zephyr board: 5 ms socket window, 4096 B batches.
	DevicesDevsim = "devsim"
	// DevicesPico is real zenoh-pico: firmware/rxtx (subscriber + picobridge's probe
	// responder, one line per sample) built against $ZENOH_PICO_DIR and run under the
	// firmware/zephyrfd shim (Zephyr's per-socket lock) with a 5 ms socket window, one
	// process per device. Its runs are named with the system suffix PicoSuffix.
	DevicesPico = "pico"
)

// PicoSuffix ends the system name of a run whose devices are real zenoh-pico
// ("picobridge-pico", "zenohd-pico", "ros2dds-pico").
const PicoSuffix = "-pico"

// picoWindow is the zenoh-pico devices' socket window (locator tout, the tuned board's
// NROS_ZENOH_SOCKET_TIMEOUT_MS).
const picoWindow = 5 * time.Millisecond

// evalDevice is one device of a side-by-side run.
type evalDevice interface {
	// Connected: the device's session to its router is open and its subscription declared.
	Connected() bool
	// RecvP95 is the device's own receive share (transport callback → application) p95 in
	// ms for key; false when the program does not tell it apart (zenoh-pico delivers in the
	// callback).
	RecvP95(key string) (float64, bool)
	Stop()
}

type devsimDevice struct{ *devsim.Device }

func (d devsimDevice) Connected() bool { return d.Stats().Connected }

func (d devsimDevice) RecvP95(key string) (float64, bool) {
	if ss, ok := d.Stats().Subscriptions[key]; ok && ss.DeviceReceive.Count > 0 {
		return ss.DeviceReceive.P95, true
	}
	return 0, false
}

// picoMissing says why the zenoh-pico device series cannot run here ("" when it can).
func picoMissing() string {
	if _, err := responder.PicoFromEnv(); err != nil {
		if errors.Is(err, responder.ErrNoPico) {
			return responder.DirEnv + " not set (a zenoh-pico 1.x build, docs/testing.md)"
		}
		return err.Error()
	}
	return ""
}

var (
	picoOnce          sync.Once
	picoBin, picoShim string
	picoErr           error
	picoDir           string // removed by Run at its end
)

// picoProgram builds rxtx and the zephyrfd shim once per process, into a temporary
// folder.
func picoProgram(ctx context.Context) (bin, shim string, err error) {
	picoOnce.Do(func() {
		p, err := responder.PicoFromEnv()
		if err != nil {
			picoErr = err
			return
		}
		dir, err := os.MkdirTemp("", "picoeval-pico-")
		if err != nil {
			picoErr = err
			return
		}
		picoDir = dir
		if picoShim, picoErr = zephyrfd.Build(ctx, dir); picoErr != nil {
			return
		}
		picoBin, picoErr = rxtx.Build(ctx, p, dir)
	})
	return picoBin, picoShim, picoErr
}

// picoDevice is one rxtx process.
type picoDevice struct {
	c     *child
	ready chan struct{}
}

func (d *picoDevice) Connected() bool {
	select {
	case <-d.ready:
		return true
	default:
		return false
	}
}

func (d *picoDevice) RecvP95(string) (float64, bool) { return 0, false }

// Stop ends the program with SIGTERM (it does not watch stdin).
func (d *picoDevice) Stop() { d.c.terminate() }

// handleLine sees rxtx's stdout first: "ready" once the session is open and the
// subscription and the responder are declared.
func (d *picoDevice) handleLine(line string) bool {
	if line == "ready" {
		select {
		case <-d.ready:
		default:
			close(d.ready)
		}
		return true
	}
	return false
}

// startPicoDevice starts rxtx as device name on endpoint, subscribed to key, answering
// probes as name, reporting every sample to rec as consumer. It runs until Stop (its
// measured phase is set to a day).
func startPicoDevice(ctx context.Context, name, endpoint, key string, rec *Recorder, consumer string) (*picoDevice, error) {
	bin, shim, err := picoProgram(ctx)
	if err != nil {
		return nil, fmt.Errorf("zenoh-pico device program: %w", err)
	}
	ep := endpoint + "#tout=" + strconv.FormatInt(picoWindow.Milliseconds(), 10)
	cmd := exec.Command(bin, "-e", ep, "-s", key, "-n", name, "-l", "-w", "0", "-d", "86400")
	cmd.Env = append(os.Environ(), "LD_PRELOAD="+shim)
	d := &picoDevice{ready: make(chan struct{})}
	lr := &lineRecv{h: d, rec: rec}
	c, err := startProc("zenoh-pico device "+name, cmd, lr, consumer)
	if err != nil {
		return nil, err
	}
	d.c = c
	return d, nil
}

// lineRecv hands stdout lines to h first and receptions to rec.
type lineRecv struct {
	h   lineHandler
	rec *Recorder
}

func (l *lineRecv) handleLine(line string) bool { return l.h.handleLine(line) }

func (l *lineRecv) Received(consumer string, stampNs, recvNs int64) {
	l.rec.Received(consumer, stampNs, recvNs)
}

// devicesNote names the device program in a run's notes.
func devicesNote(program string) string {
	if program == DevicesPico {
		return fmt.Sprintf("real zenoh-pico: firmware/rxtx under the zephyrfd shim, locator tout %v (%s)", picoWindow, picoBuildNote())
	}
	return "sim/devsim " + devPlatform + "/" + devBoard + " (tuned: 5 ms socket window, 4096 B batches)"
}

// picoBuildNote is the zenoh-pico build's knobs, read from its config.h.
func picoBuildNote() string {
	p, err := responder.PicoFromEnv()
	if err != nil {
		return "build unknown"
	}
	return fmt.Sprintf("zenoh-pico in %s: Z_BATCH_UNICAST_SIZE %d B, Z_FRAG_MAX_SIZE %d B, Z_CONFIG_SOCKET_TIMEOUT %d ms",
		p.LibDir, p.Macros["Z_BATCH_UNICAST_SIZE"], p.Macros["Z_FRAG_MAX_SIZE"], p.Macros["Z_CONFIG_SOCKET_TIMEOUT"])
}

// deviceDropsNote is what a device reports it dropped itself: devsim counts ring_full,
// oversize and slot drops; zenoh-pico counts none it can report.
func deviceDropsNote(program string, m map[string]int) string {
	if program == DevicesPico {
		return "not reported (zenoh-pico)"
	}
	return fmt.Sprint(m)
}

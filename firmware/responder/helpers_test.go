package responder_test

import (
	"errors"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/firmware/responder"
	"github.com/picobridge/picobridge/internal/picotest"
)

// skipMsg is what every test that needs zenoh-pico prints without it.
const skipMsg = "SKIP: set ZENOH_PICO_DIR=<zenoh-pico build dir> to build and run the C probe responder"

// pico returns the zenoh-pico build named by ZENOH_PICO_DIR, or skips.
func pico(t *testing.T) responder.Pico {
	t.Helper()
	if testing.Short() {
		t.Skip("SKIP: -short skips the tests that compile and run C")
	}
	p, err := responder.PicoFromEnv()
	if errors.Is(err, responder.ErrNoPico) {
		t.Skip(skipMsg)
	}
	if errors.Is(err, responder.ErrConfigMismatch) {
		t.Skipf("SKIP: %s=%s cannot be built against now: %v", responder.DirEnv, os.Getenv(responder.DirEnv), err)
	}
	require.NoError(t, err)
	if _, err := exec.LookPath(responder.CC()); err != nil {
		t.Skipf("SKIP: no C compiler %q: %v", responder.CC(), err)
	}
	return p
}

// start runs a C program with its stdout and stderr lines collected; it is
// stopped with SIGINT (then SIGKILL) in t.Cleanup.
func start(t *testing.T, bin string, args ...string) *picotest.Proc {
	t.Helper()
	return picotest.Start(t, bin, args...)
}

//go:build cgo && cyclonedds

package ddssink_test

import (
	"math/rand/v2"
	"os"
	"testing"

	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/ddspath/rosbag/rosbagtest"
	"github.com/picobridge/picobridge/internal/fastddspeer"
	"github.com/stretchr/testify/require"
)

// testDomain returns a DDS domain id for one test. Other packages' tests use 20–219 and 230;
// this package uses 231–232, the only ids of the 231–250 range reserved for it that fit
// the RTPS port mapping (7400 + 250·d + 10 + 2·i must stay below 65536, so d ≤ 232).
func testDomain() uint32 { return 231 + uint32(rand.IntN(2)) }

func inCI() bool { return os.Getenv("CI") == "true" }

// needPeer builds the Fast DDS peer, skipping when g++/libfastrtps-dev are missing, except
// in CI (CI=true) where they must exist.
func needPeer(t *testing.T) string {
	t.Helper()
	if err := fastddspeer.Check(); err != nil {
		if inCI() {
			t.Fatalf("CI=true but the Fast DDS peer cannot be built: %v", err)
		}
		t.Skipf("Fast DDS peer unavailable: %v", err)
	}
	bin, err := fastddspeer.Build(t.TempDir())
	require.NoError(t, err)
	return bin
}

// needBag returns the directory of one mumble_rplidar_imu bag, skipping when the data set is
// missing, except in CI where it must exist.
func needBag(t *testing.T, name string) string {
	t.Helper()
	if _, ok := rosbagtest.FindMumbleDir(); !ok && inCI() {
		t.Fatalf("CI=true but %s is missing: set PICOBRIDGE_SHARED", rosbagtest.MumbleRel)
	}
	return rosbagtest.MumbleBag(t, name)
}

func openParticipant(t *testing.T, dom uint32) *ddspath.Participant {
	t.Helper()
	p, err := ddspath.Open(ddspath.Config{DomainID: dom})
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return p
}

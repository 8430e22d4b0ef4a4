package fleet

import (
	"os/exec"
	"slices"
	"testing"
)

func TestPinnedPrefixesTaskset(t *testing.T) {
	argv := []string{"/bin/picobridge", "router"}
	got, err := pinned("", argv)
	if err != nil || !slices.Equal(got, argv) {
		t.Fatalf("unpinned: got %q, %v; want %q", got, err, argv)
	}
	ts, err := exec.LookPath("taskset")
	if err != nil {
		t.Skip("taskset not installed: pinning cannot be checked here")
	}
	got, err = pinned("1", argv)
	want := []string{ts, "-c", "1", "/bin/picobridge", "router"}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("pinned: got %q, %v; want %q", got, err, want)
	}
}

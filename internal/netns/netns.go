// Package netns runs a test inside a network namespace of its own, so that
// multicast (scouting) never reaches a real interface: the test binary is
// run again under `unshare -n`, where only a loopback interface exists; it
// is brought up with multicast on and 224.0.0.0/4 routed to it.
package netns

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// insideEnv carries, to the re-run test binary, the name of the test to run
// and the network namespace of the parent ("<test>|<ns link>"), so that the
// child can refuse to touch the parent's interfaces.
const insideEnv = "PICOBRIDGE_NETNS_TEST"

func currentNS() string {
	l, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		return "unknown"
	}
	return l
}

// Run re-runs the calling top-level test inside a new network namespace and
// reports whether the caller is that re-run: the test body runs when Run
// returns true; when it returns false the child already ran and passed (the
// parent failed the test if it did not, or skipped it if the child
// skipped). Run skips the test, with a SKIP line, when unshare is missing or
// not permitted (it needs root or user namespaces).
func Run(t *testing.T) bool {
	t.Helper()
	if strings.Contains(t.Name(), "/") {
		t.Fatalf("netns.Run must be called from a top-level test, not %s", t.Name())
	}
	if v := os.Getenv(insideEnv); v != "" {
		name, parentNS, _ := strings.Cut(v, "|")
		if name != t.Name() {
			t.Skipf("SKIP: running %s in its network namespace only", name)
		}
		if parentNS == currentNS() {
			t.Fatalf("netns: %s=%s but this is the parent's network namespace: refusing to configure it", insideEnv, v)
		}
		for _, args := range [][]string{{"link", "set", "lo", "up", "multicast", "on"}, {"route", "add", "224.0.0.0/4", "dev", "lo"}} {
			if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
				t.Fatalf("netns: ip %s: %v: %s", strings.Join(args, " "), err, out)
			}
		}
		return true
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("SKIP: no unshare(1): multicast tests run only inside a network namespace of their own")
	}
	if out, err := exec.Command(unshare, "-n", "true").CombinedOutput(); err != nil {
		t.Skipf("SKIP: `unshare -n` is not permitted here (%v: %s): multicast tests run only inside a network namespace of their own (run as root)",
			err, strings.TrimSpace(string(out)))
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("SKIP: no ip(8) to bring up loopback in the test's network namespace")
	}
	args := []string{"-n", os.Args[0], "-test.run=^" + regexp.QuoteMeta(t.Name()) + "$", "-test.count=1", "-test.v"}
	if testing.Short() {
		args = append(args, "-test.short")
	}
	if d, ok := t.Deadline(); ok {
		// the child times out (and prints its goroutines) before the parent does
		args = append(args, "-test.timeout="+(time.Until(d)*9/10).Round(time.Second).String())
	}
	cmd := exec.Command(unshare, args...)
	cmd.Env = append(os.Environ(), insideEnv+"="+t.Name()+"|"+currentNS())
	out, err := cmd.CombinedOutput()
	t.Logf("in a new network namespace: %s\n%s", strings.Join(cmd.Args, " "), out)
	res := string(out)
	switch {
	case err != nil:
		t.Fatalf("the test failed in its network namespace: %v", err)
	case strings.Contains(res, "--- SKIP: "+t.Name()+" "):
		t.Skip("SKIP: skipped in its network namespace (see the log above)")
	case !strings.Contains(res, "--- PASS: "+t.Name()+" "):
		t.Fatalf("the test did not report PASS in its network namespace")
	}
	return false
}

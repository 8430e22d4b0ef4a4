package interop

import (
	"fmt"
	"net"
	"testing"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago (the kernel picked it
// for a listener that is closed again before returning).
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("interop: no free port on 127.0.0.1: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Endpoint returns the Zenoh locator tcp/127.0.0.1:port.
func Endpoint(port int) string { return fmt.Sprintf("tcp/127.0.0.1:%d", port) }

// FreeEndpoint is Endpoint(FreePort(t)).
func FreeEndpoint(t testing.TB) string {
	t.Helper()
	return Endpoint(FreePort(t))
}

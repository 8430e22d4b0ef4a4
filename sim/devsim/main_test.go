package devsim

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/picobridge/picobridge/internal/interop"
)

// TestMain fails the package if a goroutine outlives the tests or a zpeer
// process was left running.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if n := interop.LiveProcs(); n != 0 {
			println("devsim: zpeer processes left running:", n)
			code = 1
		} else if err := goleak.Find(goleak.IgnoreTopFunction("os/exec.(*Cmd).watchCtx")); err != nil {
			println("devsim: goroutine leak:", err.Error())
			code = 1
		}
	}
	os.Exit(code)
}

package bridge_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine (the lanes' scheduler, the
// housekeeping goroutine) outlives the tests: Gateway.Close stops them all.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

package runner

import (
	"os"
	"testing"
)

// TestMain lets the test binary act as a re-executed consumer or gateway (child.go).
func TestMain(m *testing.M) {
	MaybeChild()
	os.Exit(m.Run())
}

//go:build !cgo || !cyclonedds

package ddspath

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStubUnavailable(t *testing.T) {
	require.False(t, Available)
	_, err := Open(Config{})
	require.ErrorIs(t, err, ErrUnavailable)
	var p *Participant
	_, err = Split(p, SplitConfig{Input: "a", CriticalOutput: "b", NoncriticalOutput: "c", Type: "T"})
	require.ErrorIs(t, err, ErrUnavailable)
}

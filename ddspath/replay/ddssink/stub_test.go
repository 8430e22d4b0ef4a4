//go:build !cgo || !cyclonedds

package ddssink_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/ddspath/replay/ddssink"
)

func TestStubUnavailable(t *testing.T) {
	_, err := ddssink.New(nil, ddssink.Options{})
	require.ErrorIs(t, err, ddspath.ErrUnavailable)
	_, err = ddssink.Open(ddspath.Config{}, ddssink.Options{})
	require.ErrorIs(t, err, ddspath.ErrUnavailable)
}

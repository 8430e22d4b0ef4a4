//go:build linux

package transport

import (
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestTCPNotSentLowat reads TCP_NOTSENT_LOWAT back from both ends' sockets.
func TestTCPNotSentLowat(t *testing.T) {
	lcfg, dcfg := testConfig(), testConfig()
	dcfg.TCPNotSentLowat = 32 << 10
	client, server, _, _ := pair(t, "tcp", lcfg, dcfg)
	require.Equal(t, DefaultTCPNotSentLowat, notSentLowat(t, server))
	require.Equal(t, 32<<10, notSentLowat(t, client))
	lcfg, dcfg = testConfig(), testConfig()
	lcfg.TCPNotSentLowat = -1
	_, server, _, _ = pair(t, "tcp", lcfg, dcfg)
	require.NotEqual(t, DefaultTCPNotSentLowat, notSentLowat(t, server), "negative leaves the kernel default")
}

func notSentLowat(t *testing.T, s *Session) int {
	t.Helper()
	c, ok := s.TCPConn()
	require.True(t, ok)
	rc, err := c.SyscallConn()
	require.NoError(t, err)
	var v int
	var gerr error
	require.NoError(t, rc.Control(func(fd uintptr) {
		v, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT)
	}))
	require.NoError(t, gerr)
	return v
}

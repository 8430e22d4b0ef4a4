package transport

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A TCP session, accepted or dialled, exposes its *net.TCPConn (the same
// socket: matching addresses, a usable SyscallConn); a UDP one does not.
func TestSessionTCPConn(t *testing.T) {
	client, server, _, _ := pair(t, "tcp", testConfig(), testConfig())
	for _, s := range []*Session{client, server} {
		c, ok := s.TCPConn()
		require.True(t, ok)
		require.NotNil(t, c)
		require.Equal(t, s.RemoteAddr().String(), c.RemoteAddr().String())
		raw, err := c.SyscallConn()
		require.NoError(t, err)
		require.NoError(t, raw.Control(func(uintptr) {}))
	}
	sc, _ := server.TCPConn()
	cc, _ := client.TCPConn()
	require.Equal(t, sc.LocalAddr().String(), cc.RemoteAddr().String())

	uclient, userver, _, _ := pair(t, "udp", testConfig(), testConfig())
	for _, s := range []*Session{uclient, userver} {
		c, ok := s.TCPConn()
		require.False(t, ok)
		require.Nil(t, c)
	}
}

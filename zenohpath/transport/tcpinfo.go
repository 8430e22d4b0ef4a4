package transport

import "net"

// TCPConn returns the session's TCP connection, for reading socket state
// such as the kernel's TCP_INFO (the gateway's passive link signal,
// bridge.ReadTCPInfo); ok is false on UDP links. The connection belongs to
// the session: use it only for socket options and SyscallConn, never to
// read, write, set deadlines or close. After the session ended the socket
// is closed and such calls fail.
func (s *Session) TCPConn() (c *net.TCPConn, ok bool) {
	l, ok := s.l.(*tcpLink)
	if !ok {
		return nil, false
	}
	c, ok = netConnOf(l.c).(*net.TCPConn)
	return c, ok
}

package transport

import (
	"errors"
	"net"
)

// ErrLowatUnsupported is returned by NotSentLowat on a link without
// TCP_NOTSENT_LOWAT: not TCP (UDP), or not Linux.
var ErrLowatUnsupported = errors.New("transport: TCP_NOTSENT_LOWAT needs a TCP link on Linux")

// minPacedLowat is the least TCP_NOTSENT_LOWAT a paced session gets, in
// bytes: below a few KiB the writer would be woken per segment.
const minPacedLowat = 4 << 10

// pacedLowat is the TCP_NOTSENT_LOWAT of a session paced at rate bytes/s
// (SetTxRate) whose Config.TCPNotSentLowat is ceiling: one paced chunk (the
// batch the writer cuts, ≈ 1 ms at the rate), at least minPacedLowat, at
// most max. Unpaced (rate 0): max. So the kernel's unsent bytes, which no
// priority can overtake, stay near one batch time of the link: 16 KiB is
// 13 ms at 10 Mbit/s, a paced chunk there 1.25 KB (issue 30 item 1).
func pacedLowat(rate float64, maxContent, ceiling int) int {
	if rate <= 0 {
		return ceiling
	}
	return min(ceiling, max(pacedChunk(rate, maxContent), minPacedLowat))
}

// applyLowat sets the socket's TCP_NOTSENT_LOWAT for the pacing rate,
// when it changed; a no-op on UDP links or with Config.TCPNotSentLowat < 0.
func (s *Session) applyLowat(rate float64) {
	if s.cfg.TCPNotSentLowat <= 0 {
		return
	}
	c, ok := s.TCPConn()
	if !ok {
		return
	}
	n := pacedLowat(rate, s.maxContent, s.cfg.TCPNotSentLowat)
	if int(s.tx.lowat.Swap(int64(n))) == n {
		return
	}
	if err := setNotSentLowat(net.Conn(c), n); err != nil {
		s.log.Debug("transport: TCP_NOTSENT_LOWAT not set", "err", err)
	}
}

// NotSentLowat reads the session's TCP_NOTSENT_LOWAT back from the socket,
// in bytes (the kernel's default, net.ipv4.tcp_notsent_lowat, is
// 4294967295: unlimited).
func (s *Session) NotSentLowat() (int, error) {
	c, ok := s.TCPConn()
	if !ok {
		return 0, ErrLowatUnsupported
	}
	return getNotSentLowat(c)
}

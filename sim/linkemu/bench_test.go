package linkemu

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkTCPProxyClean measures the relay throughput of a clean TCP
// proxy carrying 1 KiB Zenoh batches (b.N batches, written 64 at a time).
func BenchmarkTCPProxyClean(b *testing.B) {
	got := make(chan int64, 1)
	srv := startTCPServer(b, func(c *net.TCPConn) {
		n, _ := io.Copy(io.Discard, c)
		got <- n
	})
	p := startTCPProxy(b, srv.addr(), Config{})
	c := dialTCP(b, p.Addr())
	batch := binary.LittleEndian.AppendUint16(nil, 1024)
	batch = append(batch, make([]byte, 1024)...)
	chunk := bytes.Repeat(batch, 64)
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	b.ResetTimer()
	var n int64
	for i := 0; i < b.N; i += 64 {
		k := min(64, b.N-i)
		w, err := c.Write(chunk[:k*len(batch)])
		require.NoError(b, err)
		n += int64(w)
	}
	require.NoError(b, c.CloseWrite())
	require.Equal(b, n, <-got)
	b.StopTimer()
	b.ReportMetric(float64(p.Stats().ToGateway.Packets)/float64(b.N), "packets/op")
}

// BenchmarkUDPProxyClean measures the relay rate of a clean UDP proxy for
// 1000-byte datagrams, keeping at most 64 in flight so that no socket
// buffer overflows.
func BenchmarkUDPProxyClean(b *testing.B) {
	sink, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(b, err)
	defer sink.Close()
	go io.Copy(io.Discard, sink)
	p := startUDPProxy(b, sink.LocalAddr().String(), Config{})
	c, err := net.Dial("udp4", p.Addr())
	require.NoError(b, err)
	defer c.Close()
	msg := make([]byte, 1000)
	b.SetBytes(int64(len(msg)))
	b.ResetTimer()
	for i := range b.N {
		for int(p.Stats().ToGateway.Delivered)+64 <= i {
			time.Sleep(10 * time.Microsecond)
		}
		_, err := c.Write(msg)
		require.NoError(b, err)
	}
	checkFor(b, 10*time.Second, time.Millisecond, func() error {
		if p.Stats().ToGateway.Delivered != uint64(b.N) {
			return errString("in flight")
		}
		return nil
	})
}

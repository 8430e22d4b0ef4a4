package server

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/probe"
	"github.com/picobridge/picobridge/zenohpath"
)

// silentDevice opens a session to the server and subscribes to the ping
// key of name without ever answering: the device is attached and probed,
// every probe is lost, so its readings' RTT can only come from TCP_INFO.
func silentDevice(t *testing.T, s *Server, name string) {
	t.Helper()
	dev, err := zenohpath.Open(context.Background(), zenohpath.Config{Connect: []string{s.Endpoints()[0]}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = dev.Close() })
	_, err = dev.DeclareSubscriber(probe.PingKey(name), func(zenohpath.Sample) {})
	require.NoError(t, err)
	eventually(t, "device attached", func() bool { return s.Gateway().Device(name) != nil })
}

// reading waits for a reading of name that settled at least one probe.
func reading(t *testing.T, s *Server, name string, cond func(bridge.Reading) bool) bridge.Reading {
	t.Helper()
	var r bridge.Reading
	eventually(t, "a reading of "+name, func() bool {
		d := s.Gateway().Devicez(bridge.DevicezOptions{Device: name})
		if len(d.Devices) != 1 {
			return false
		}
		r = d.Devices[0].Classifier.Reading
		return r.Samples > 0 && cond(r)
	})
	return r
}

const tcpInfoYAML = `
zenoh:
  listen: [%s/127.0.0.1:0]
classifier:
  probe_interval: 20ms
  probe_timeout: 50ms
  window: 10
  min_samples: 5
  evaluation_interval: 50ms
  tcp_info: %t
metrics:
  listen: ""
`

// With classifier.tcp_info a device on TCP feeds the kernel's smoothed RTT
// into its readings: with every probe lost, the reading's RTT is non-zero.
func TestTCPInfoFeedsClassifier(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("TCP_INFO is read on Linux only")
	}
	s := startTestServer(t, fmt.Sprintf(tcpInfoYAML, "tcp", true))
	silentDevice(t, s, "tcpdev")
	r := reading(t, s, "tcpdev", func(r bridge.Reading) bool { return r.RTT > 0 })
	require.Zero(t, r.Replies, "no pong: the RTT is the kernel's")
	require.Positive(t, r.RTT)
}

// Without classifier.tcp_info, or on UDP (whose sink offers no TCP_INFO),
// a device whose probes are all lost has no RTT.
func TestTCPInfoOffOrUDP(t *testing.T) {
	for _, c := range []struct {
		proto string
		on    bool
	}{{"tcp", false}, {"udp", true}} {
		t.Run(fmt.Sprintf("%s/tcp_info=%t", c.proto, c.on), func(t *testing.T) {
			s := startTestServer(t, fmt.Sprintf(tcpInfoYAML, c.proto, c.on))
			silentDevice(t, s, "dev")
			r := reading(t, s, "dev", func(bridge.Reading) bool { return true })
			require.Zero(t, r.Replies)
			require.Zero(t, r.RTT)
		})
	}
}

// faceCatcher is a FaceObserver that hands over each opened face.
type faceCatcher chan zenohpath.Face

func (c faceCatcher) FaceOpened(f zenohpath.Face)       { c <- f }
func (faceCatcher) SubscriptionsChanged(zenohpath.Face) {}
func (faceCatcher) FaceClosed(zenohpath.Face)           {}

// The device sink offers TCP_INFO exactly when the face's link is TCP, and
// on Linux reads a non-zero RTT from the kernel.
func TestDeviceSinkTCPInfoSource(t *testing.T) {
	for _, proto := range []string{"tcp", "udp"} {
		t.Run(proto, func(t *testing.T) {
			r := zenohpath.NewRouter(zenohpath.RouterConfig{})
			t.Cleanup(func() { _ = r.Close() })
			faces := make(faceCatcher, 1)
			ln, err := r.ListenObserved(context.Background(), proto+"/127.0.0.1:0", faces)
			require.NoError(t, err)
			c, err := zenohpath.Open(context.Background(), zenohpath.Config{Connect: []string{ln.Endpoint()}})
			require.NoError(t, err)
			t.Cleanup(func() { _ = c.Close() })
			f := <-faces
			src, ok := newDeviceSink(f).(bridge.TCPInfoSource)
			require.Equal(t, proto == "tcp", ok)
			if !ok || runtime.GOOS != "linux" {
				return
			}
			info, err := src.TCPInfo()
			require.NoError(t, err)
			require.Positive(t, info.RTT)
			require.Positive(t, info.SegsOut)
		})
	}
}

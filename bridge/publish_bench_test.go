package bridge_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
)

// BenchmarkPublishSubscribed: Publish of a noncritical sample to one device
// with 8 subscriptions, the sample's key included by the last one (the
// subscription scan, the traffic meter and the batched lane's offer).
func BenchmarkPublishSubscribed(b *testing.B) {
	g := newGateway(b, testConfig(b, twoDevices), nil)
	d, err := g.Attach(bridge.DeviceIdentity{ZID: "a1"}, &fakeSink{})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 8 {
		d.DeclareSubscriber(fmt.Sprintf("rt/robot/topic%d/**", i))
	}
	r := bridge.Route{Key: "rt/robot/topic7/scan", Criticality: bridge.Noncritical}
	s := bridge.Sample{Payload: make([]byte, 64)}
	b.ReportAllocs()
	for b.Loop() {
		g.Publish(r, s)
	}
}

// TestTrafficKeyFollowsSubscriptions: the meter's key of a concrete key is
// the first subscription including it, and follows a change of the
// subscriptions (the cache is per subscription list).
func TestTrafficKeyFollowsSubscriptions(t *testing.T) {
	g := newGateway(t, testConfig(t, twoDevices), nil)
	d, err := g.Attach(bridge.DeviceIdentity{ZID: "a1"}, &fakeSink{})
	require.NoError(t, err)
	keys := func() map[string]uint64 {
		out := map[string]uint64{}
		for _, k := range g.Devicez(bridge.DevicezOptions{Device: "arm"}).Devices[0].Traffic.Keys {
			out[k.Key] = k.Samples
		}
		return out
	}
	d.Offer(bridge.Sample{Key: "a/b", Payload: []byte("x")}, bridge.Noncritical)
	require.Equal(t, map[string]uint64{bridge.OtherKey: 1}, keys())
	d.DeclareSubscriber("a/**")
	d.Offer(bridge.Sample{Key: "a/b", Payload: []byte("x")}, bridge.Noncritical)
	d.DeclareSubscriber("a/b")
	d.Offer(bridge.Sample{Key: "a/b", Payload: []byte("x")}, bridge.Noncritical)
	require.Equal(t, map[string]uint64{bridge.OtherKey: 1, "a/**": 2}, keys())
	d.UndeclareSubscriber("a/**")
	d.Offer(bridge.Sample{Key: "a/b", Payload: []byte("x")}, bridge.Noncritical)
	require.Equal(t, map[string]uint64{bridge.OtherKey: 1, "a/**": 2, "a/b": 1}, keys())
}

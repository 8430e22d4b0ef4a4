package bridge_test

import (
	"fmt"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/firmware"
)

// nopSink stands for the lead's adapter of a zenohpath face.
type nopSink struct{}

func (nopSink) SendExpress(s bridge.Sample) error          { return nil }
func (nopSink) SendBatch(ss []bridge.Sample) error         { return nil }
func (nopSink) SendProbe(key string, payload []byte) error { return nil }

// How the router and DDS sides drive the gateway.
func Example() {
	cfg, err := bridge.ParseConfig("picobridge.yaml", []byte(`
routes:
  critical: ["/cmd_vel"]
devices:
  list:
    - {name: arm, zid: a1b2, platform: posix}
`))
	if err != nil {
		panic(err)
	}
	cat, _ := firmware.Catalog()
	g, err := bridge.New(cfg, bridge.Options{Catalog: cat})
	if err != nil {
		panic(err)
	}
	defer g.Close()
	g.Run() // probes, evaluations, supervisor

	// zenohpath: a zenoh-pico session opened and declared a subscriber
	d, _ := g.Attach(bridge.DeviceIdentity{ZID: "A1B2"}, nopSink{})
	d.DeclareSubscriber("cmd_vel")

	// ddspath: a topic was discovered, then a sample arrives
	r, _ := g.Routes().Resolve("/cmd_vel", "geometry_msgs/msg/Twist", "")
	fmt.Println(d.Name(), r.Key, r.Criticality, d.Lane(r.Criticality))
	g.Publish(r, bridge.Sample{Payload: []byte("twist")})

	d.Detach()
	// Output:
	// arm cmd_vel critical express
}

package server

import (
	"testing"

	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/ddspath/ros2"
)

// FuzzTokenEndpoints: any key that parses as an rmw_zenoh entity token turns
// into DDS endpoints whose topics and types map back to the token's name and
// type, with virtual GUIDs, and never panics.
func FuzzTokenEndpoints(f *testing.F) {
	f.Add("@ros2_lv/0/aac3178e146ba6f1fc6e6a4085e77f21/0/10/MP/%/%/talker/%chatter/std_msgs::msg::dds_::String_/TypeHashNotSupported/::,10:,:,:,,", true)
	f.Add("@ros2_lv/3/ab/1/2/MS/%/%bot/n/%bot%scan/sensor_msgs::msg::dds_::LaserScan_/TypeHashNotSupported/2:1:1,1:,:,:,,", false)
	f.Add("@ros2_lv/0/ab/1/3/SS/%/%/srv/%add_two_ints/example_interfaces::srv::dds_::AddTwoInts_/TypeHashNotSupported/1:2:1,10:,:,:,,", true)
	f.Add("@ros2_lv/0/ab/1/4/SC/%/%/cli/%fib%_action%send_goal/example_interfaces::action::dds_::Fibonacci_SendGoal_/TypeHashNotSupported/::,10:,:,:,,", true)
	f.Add("@ros2_lv/0/ab/1/1/NN/%/%/n", true)
	f.Fuzz(func(t *testing.T, key string, alive bool) {
		tok, err := ros2.ParseLivelinessToken(key)
		if err != nil {
			return
		}
		eps, err := tokenEndpoints(key, tok, alive)
		if err != nil {
			if tok.Kind != ros2.EntityNode && tok.Kind != ros2.EntityServiceServer && tok.Kind != ros2.EntityServiceClient {
				t.Fatalf("%q: %v", key, err)
			}
			return
		}
		want := map[ros2.EntityKind]int{ros2.EntityPublisher: 1, ros2.EntitySubscription: 1, ros2.EntityServiceServer: 2, ros2.EntityServiceClient: 2}
		if len(eps) != want[tok.Kind] {
			t.Fatalf("%q: %d endpoints", key, len(eps))
		}
		for _, e := range eps {
			if e.Alive != alive || !fromToken(e.GUID) {
				t.Fatalf("%q: %+v", key, e)
			}
			name, kind, err := ros2.ParseDDSTopic(e.Topic)
			if err != nil || name != tok.Topic {
				t.Fatalf("%q: DDS topic %q → %q %v", key, e.Topic, name, err)
			}
			var back string
			if kind == ros2.KindTopic {
				back, err = ros2.TypeFromDDS(e.TypeName)
				if (tok.Kind == ros2.EntityPublisher) != (e.Kind == ddspath.Subscription) {
					t.Fatalf("%q: %v for %s", key, e.Kind, tok.Kind)
				}
			} else {
				back, err = ros2.ServiceTypeFromDDS(e.TypeName)
			}
			if err != nil || back != tok.Type {
				t.Fatalf("%q: DDS type %q → %q %v", key, e.TypeName, back, err)
			}
		}
	})
}

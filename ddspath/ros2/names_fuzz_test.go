package ros2

import (
	"strings"
	"testing"
)

// FuzzNames checks that validation and mangling never panic and that every accepted name
// survives the round trips ROS -> DDS -> ROS and ROS -> rmw_zenoh key -> ROS.
func FuzzNames(f *testing.F) {
	for _, s := range []string{"/scan", "/robot1/imu_data", "scan", "//x", "/9a", "/a/", "rt/scan", "rq/addRequest", "~/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if _, _, err := ParseDDSTopic(s); err == nil {
			// A parsed DDS name maps back to itself.
			name, kind, _ := ParseDDSTopic(s)
			var back string
			switch kind {
			case KindTopic:
				back, _ = TopicToDDS(name)
			case KindServiceRequest:
				back, _, _ = ServiceToDDS(name)
			case KindServiceReply:
				_, back, _ = ServiceToDDS(name)
			}
			if back != s {
				t.Fatalf("%q -> %q -> %q", s, name, back)
			}
		}
		_, _ = ExpandTopicName("/ns", "node", s)
		_ = ValidateNodeName(s)
		_, _ = TypeFromDDS(s)
		_, _ = ParseZenohKeyExpr(s)
		if ValidateTopicName(s) != nil {
			return
		}
		dds, err := TopicToDDS(s)
		if err != nil {
			t.Fatal(err)
		}
		back, err := TopicFromDDS(dds)
		if err != nil || back != s {
			t.Fatalf("topic %q -> %q -> %q, %v", s, dds, back, err)
		}
		req, rep, err := ServiceToDDS(s)
		if err != nil {
			t.Fatal(err)
		}
		if n, k, err := ServiceFromDDS(req); err != nil || n != s || k != KindServiceRequest {
			t.Fatalf("service request %q -> %q -> %q %v %v", s, req, n, k, err)
		}
		if n, k, err := ServiceFromDDS(rep); err != nil || n != s || k != KindServiceReply {
			t.Fatalf("service reply %q -> %q -> %q %v %v", s, rep, n, k, err)
		}
		key, err := ZenohKeyExpr(3, s, LaserScanType, "")
		if err != nil {
			t.Fatal(err)
		}
		zk, err := ParseZenohKeyExpr(key)
		if err != nil || zk.Topic != s || zk.Domain != 3 || zk.Type != LaserScanType {
			t.Fatalf("zenoh key %q -> %+v %v", key, zk, err)
		}
		if m := MangleLiveliness(s); strings.Contains(m, "/") || DemangleLiveliness(m) != s {
			t.Fatalf("liveliness %q -> %q", s, m)
		}
	})
}

// FuzzTypeNames checks the type mangling round trip.
func FuzzTypeNames(f *testing.F) {
	for _, s := range []string{"sensor_msgs/msg/LaserScan", "a/srv/B_Request", "x/y/Z", "sensor_msgs::msg::dds_::Imu_"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d, err := ParseDDSTypeName(s); err == nil && d.DDS() != s {
			t.Fatalf("dds type %q -> %q", s, d.DDS())
		}
		dds, err := TypeToDDS(s)
		if err != nil {
			return
		}
		back, err := TypeFromDDS(dds)
		if err != nil || back != s {
			t.Fatalf("type %q -> %q -> %q, %v", s, dds, back, err)
		}
	})
}

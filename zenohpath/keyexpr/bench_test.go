package keyexpr

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// ROS 2 keys as rmw_zenoh builds them (zenoh-wire.md §16.1, §16.2).
const (
	rosScan   = "0/scan/sensor_msgs::msg::dds_::LaserScan_/RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18"
	rosImu    = "0/robot1/imu_data/sensor_msgs::msg::dds_::Imu_/RIHS01_7d9a00ff7a2a6d8ec6e0b7ff4b9d4ba2b1b7c0f5bbd8a9f3c2e1d0a9b8c7d6e5"
	rosToken  = "@ros2_lv/0/aac3178e146ba6f1fc6e6a4085e77f21/0/11/MP/%/%/talker/%chatter/std_msgs::msg::dds_::String_/RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18/::,7:,:,:,,"
	longKey   = "a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/r/s/t/u/v/w/x/y/z"
	longMatch = "a/**/m/*/o/**/z"
)

var benchPairs = []struct {
	name string
	a, b string
}{
	{"ScanPrefix", rosScan, "0/scan/**"},
	{"ScanOtherTopic", rosScan, "0/chatter/**"},
	{"ScanExact", rosScan, rosScan},
	{"ScanStars", rosScan, "0/*/sensor_msgs::msg::dds_::LaserScan_/*"},
	{"ScanDollar", rosScan, "0/scan/sensor_msgs$*/RIHS01_$*"},
	{"ImuPattern", "robot/*/imu_data", "robot/**"},
	{"ImuTypeAnyNS", rosImu, "0/**/imu_data/**"},
	{"DoubleStarVsLong", "**", longKey},
	{"LongMiddle", longKey, longMatch},
	{"TokenSubscription", rosToken, "@ros2_lv/0/**"},
	{"TokenVsDoubleStar", rosToken, "**"},
}

func BenchmarkKeyExprIntersects(b *testing.B) {
	for _, p := range benchPairs {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Intersects(p.a, p.b)
			}
		})
	}
}

func BenchmarkKeyExprIncludes(b *testing.B) {
	for _, p := range benchPairs {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Includes(p.b, p.a) // pattern includes key
			}
		})
	}
}

// BenchmarkKeyExprMatcher matches a concrete key against a compiled subscription, the router's
// per-PUSH operation.
func BenchmarkKeyExprMatcher(b *testing.B) {
	for _, p := range benchPairs {
		m := NewMatcher(MustNew(p.b))
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m.Matches(p.a)
			}
		})
	}
}

func BenchmarkKeyExprValidate(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if !IsCanonical(rosToken) {
			b.Fatal("not canonical")
		}
	}
}

func BenchmarkKeyExprCanonize(b *testing.B) {
	s := strings.Repeat("a/**/**/*/b$*$*/", 8) + "c"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Canonize(s); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRelationsAllocs pins zero allocations on the routing hot path (style.md convention 21).
func TestRelationsAllocs(t *testing.T) {
	for _, p := range benchPairs {
		m := NewMatcher(MustNew(p.b))
		allocs := testing.AllocsPerRun(100, func() {
			m.Matches(p.a)
			m.Intersects(p.a)
			m.Includes(p.a)
			Intersects(p.a, p.b)
			Intersects(p.b, p.a)
			Includes(p.a, p.b)
			Includes(p.b, p.a)
		})
		require.Zero(t, allocs, p.name)
	}
}

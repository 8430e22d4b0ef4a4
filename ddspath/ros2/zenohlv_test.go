package ros2

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestZenohQoS(t *testing.T) {
	require.Equal(t, "::,:,:,:,,", DefaultZenohQoS().String())
	q := DefaultZenohQoS()
	q.Depth = 10
	require.Equal(t, "::,10:,:,:,,", q.String()) // zenoh-wire.md §16.2 example
	back, err := ParseZenohQoS("::,10:,:,:,,")
	require.NoError(t, err)
	require.Equal(t, q, back)

	// nano-ros style explicit values: BEST_EFFORT, VOLATILE, KEEP_LAST 1.
	q, err = ParseZenohQoS("2:2:1,1:,:,:,,")
	require.NoError(t, err)
	require.Equal(t, ZenohQoS{Reliability: 2, Durability: 2, History: 1, Depth: 1, Liveliness: 1}, q)
	require.Equal(t, "2::,1:,:,:,,", q.String())

	full := ZenohQoS{Reliability: 2, Durability: 1, History: 2, Depth: 5, Deadline: 1500 * time.Millisecond,
		Lifespan: 3 * time.Second, Liveliness: 3, LivelinessLease: 7}
	s := full.String()
	require.Equal(t, "2:1:2,5:1,500000000:3,0:3,0,7", s)
	back, err = ParseZenohQoS(s)
	require.NoError(t, err)
	require.Equal(t, full, back)

	for _, bad := range []string{"", ":::::", "x::,:,:,:,,", "::,:,:,:,", "::1:,:,:,,", "::,:1,x:,:,,", "::,:1,1000000000:,:,,", "::,-1:,:,:,,"} {
		_, err := ParseZenohQoS(bad)
		require.Error(t, err, bad)
	}
}

func TestLivelinessToken(t *testing.T) {
	// zenoh-wire.md §16.2 example (hash shortened there; full String hash here).
	want := "@ros2_lv/2/aac3178e146ba6f1fc6e6a4085e77f21/0/10/MS/%/%/listener/%chatter/std_msgs::msg::dds_::String_/" + stringHash + "/::,10:,:,:,,"
	q := DefaultZenohQoS()
	q.Depth = 10
	tok := LivelinessToken{
		Domain: 2, ZID: "aac3178e146ba6f1fc6e6a4085e77f21", NodeID: 0, EntityID: 10, Kind: EntitySubscription,
		Enclave: "/", Namespace: "/", Node: "listener", Topic: "/chatter", Type: "std_msgs/msg/String", TypeHash: stringHash, QoS: q,
	}
	k, err := tok.Key()
	require.NoError(t, err)
	require.Equal(t, want, k)
	back, err := ParseLivelinessToken(k)
	require.NoError(t, err)
	require.Equal(t, tok, back)

	node := LivelinessToken{Domain: 0, ZID: "abc", NodeID: 3, EntityID: 99, Kind: EntityNode, Enclave: "/", Namespace: "/robot1", Node: "lidar"}
	k, err = node.Key()
	require.NoError(t, err)
	require.Equal(t, "@ros2_lv/0/abc/3/3/NN/%/%robot1/lidar", k)
	back, err = ParseLivelinessToken(k)
	require.NoError(t, err)
	node.EntityID = 3
	_, err = ParseLivelinessToken("@ros2_lv/0/abc/3/4/NN/%/%robot1/lidar")
	require.Error(t, err)
	require.Equal(t, node, back)

	for _, bad := range []LivelinessToken{
		{ZID: "", Kind: EntityNode, Namespace: "/", Node: "n"},
		{ZID: "a/b", Kind: EntityNode, Namespace: "/", Node: "n"},
		{ZID: "a", Kind: EntityNode, Namespace: "ns", Node: "n"},
		{ZID: "a", Kind: EntityNode, Namespace: "/", Node: "9n"},
		{ZID: "a", Kind: "XX", Namespace: "/", Node: "n", Topic: "/t", Type: "a/msg/B"},
		{ZID: "a", Kind: EntityPublisher, Namespace: "/", Node: "n", Topic: "t", Type: "a/msg/B"},
		{ZID: "a", Kind: EntityPublisher, Namespace: "/", Node: "n", Topic: "/t", Type: "a/B"},
		{ZID: "a", Kind: EntityPublisher, Namespace: "/", Node: "n", Topic: "/t", Type: "a/msg/B", TypeHash: "x"},
	} {
		_, err := bad.Key()
		require.Error(t, err, "%+v", bad)
	}
	for _, bad := range []string{"", "@ros2_lv/0/abc/3/3/NN/%/%", "@ros2/0/abc/3/3/NN/%/%/n", "@ros2_lv/x/abc/3/3/NN/%/%/n",
		"@ros2_lv/0/abc/x/3/NN/%/%/n", "@ros2_lv/0/abc/3/3/NN/%/%/n/extra", "@ros2_lv/0/abc/3/3/MP/%/%/n/%t/a::msg::dds_::B_/" + stringHash,
		"@ros2_lv/0/abc/3/3/QQ/%/%/n/%t/a::msg::dds_::B_/" + stringHash + "/::,:,:,:,,",
		"@ros2_lv/0/abc/3/3/MP/%/%/n/t%/a::msg::dds_::B_/" + stringHash + "/::,:,:,:,,",
		"@ros2_lv/0/abc/3/3/MP/%/%/n/%t/a::msg::B_/" + stringHash + "/::,:,:,:,,",
		"@ros2_lv/0/abc/3/3/MP/%/%/n/%t/a::msg::dds_::B_/RIHS/::,:,:,:,,",
		"@ros2_lv/0/abc/3/3/MP/%/%/n/%t/a::msg::dds_::B_/" + stringHash + "/::"} {
		_, err := ParseLivelinessToken(bad)
		require.Error(t, err, bad)
	}
}

func FuzzLivelinessToken(f *testing.F) {
	f.Add("@ros2_lv/2/aac3178e146ba6f1fc6e6a4085e77f21/0/10/MS/%/%/listener/%chatter/std_msgs::msg::dds_::String_/" + stringHash + "/::,10:,:,:,,")
	f.Add("@ros2_lv/0/abc/3/3/NN/%/%robot1/lidar")
	f.Add("2:2:1,1:,:,:,,")
	f.Fuzz(func(t *testing.T, s string) {
		if q, err := ParseZenohQoS(s); err == nil {
			q2, err := ParseZenohQoS(q.String())
			if err != nil || q2 != q {
				t.Fatalf("qos %q -> %q -> %+v %v", s, q.String(), q2, err)
			}
		}
		tok, err := ParseLivelinessToken(s)
		if err != nil {
			return
		}
		k, err := tok.Key()
		if err != nil {
			t.Fatalf("parsed %q but cannot render: %v", s, err)
		}
		tok2, err := ParseLivelinessToken(k)
		if err != nil || tok2 != tok {
			t.Fatalf("%q -> %q -> %+v %v", s, k, tok2, err)
		}
	})
}

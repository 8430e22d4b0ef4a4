package server

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/ddspath/ros2"
)

// The gateway's routes announced as zenoh-bridge-ros2dds announces its own
// (zenoh-plugin-ros2dds 1.10.2 route_*.rs): one token per topic or service
// route, one AS/AC per action, none for an action's other services and
// topics.
func TestROS2DDSRouteTokens(t *testing.T) {
	q := ddspath.ROSDefaultQoS()
	q.Depth = 7
	tl := q
	tl.Durability, tl.Reliability, tl.Depth = ddspath.TransientLocal, ddspath.BestEffort, 1
	for _, tc := range []struct {
		kind                     ros2.EntityKind
		name, key, rosType, hash string
		q                        ddspath.QoS
		want                     string
	}{
		{ros2.EntityPublisher, "/chatter", "bot1/chatter", "std_msgs/msg/String", "", q,
			"@/ab12/@ros2_lv/MP/bot1§chatter/std_msgs§msg§String/:1::0,7"},
		{ros2.EntitySubscription, "/map", "map", "nav_msgs/msg/OccupancyGrid", "RIHS01_" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", tl,
			"@/ab12/@ros2_lv/MS/map/nav_msgs§msg§OccupancyGrid/:0:1:0,1:typehash=RIHS01_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef;"},
		{ros2.EntityServiceServer, "/add", "add", "example_interfaces/srv/AddTwoInts", "", svcQoS(nil),
			"@/ab12/@ros2_lv/SS/add/example_interfaces§srv§AddTwoInts"},
		{ros2.EntityServiceClient, "/add", "add", "example_interfaces/srv/AddTwoInts", "", svcQoS(nil),
			"@/ab12/@ros2_lv/SC/add/example_interfaces§srv§AddTwoInts"},
		{ros2.EntityServiceServer, "/fib/_action/send_goal", "bot1/fib/_action/send_goal", "example_interfaces/action/Fibonacci_SendGoal", "", svcQoS(nil),
			"@/ab12/@ros2_lv/AS/bot1§fib/example_interfaces§action§Fibonacci"},
		{ros2.EntityServiceClient, "/fib/_action/send_goal", "fib/_action/send_goal", "example_interfaces/action/Fibonacci_SendGoal", "", svcQoS(nil),
			"@/ab12/@ros2_lv/AC/fib/example_interfaces§action§Fibonacci"},
		{ros2.EntityServiceServer, "/fib/_action/get_result", "fib/_action/get_result", "example_interfaces/action/Fibonacci_GetResult", "", svcQoS(nil), ""},
		{ros2.EntityServiceServer, "/fib/_action/cancel_goal", "fib/_action/cancel_goal", "action_msgs/srv/CancelGoal", "", svcQoS(nil), ""},
		{ros2.EntityPublisher, "/fib/_action/feedback", "fib/_action/feedback", "example_interfaces/action/Fibonacci_FeedbackMessage", "", q, ""},
		{ros2.EntityPublisher, "/fib/_action/status", "fib/_action/status", "action_msgs/msg/GoalStatusArray", "", tl, ""},
	} {
		tok, ok := ros2ddsToken("ab12", tc.kind, tc.name, tc.key, tc.rosType, tc.hash, tc.q)
		if tc.want == "" {
			require.False(t, ok, tc.name)
			continue
		}
		require.True(t, ok, tc.name)
		key, err := tok.Key()
		require.NoError(t, err)
		require.Equal(t, tc.want, key)
	}
}

// Another bridge's tokens become the DDS endpoints of its remote peers.
func TestROS2DDSTokenEndpoints(t *testing.T) {
	type ep struct {
		kind  ddspath.EndpointKind
		topic string
		typ   string
	}
	eps := func(ns, key string) []ep {
		tok, err := ros2.ParseROS2DDSToken(key)
		require.NoError(t, err)
		got, err := ros2ddsEndpoints(ns, key, tok, true)
		require.NoError(t, err, key)
		var out []ep
		for _, e := range got {
			require.True(t, fromToken(e.GUID))
			require.True(t, e.Alive)
			out = append(out, ep{e.Kind, e.Topic, e.TypeName})
		}
		return out
	}
	require.Equal(t, []ep{{ddspath.Subscription, "rt/chatter", "std_msgs::msg::dds_::String_"}},
		eps("/bot1", "@/f00d/@ros2_lv/MP/bot1§chatter/std_msgs§msg§String/:1:0:0,10"))
	require.Equal(t, []ep{{ddspath.Publication, "rt/other/chatter", "std_msgs::msg::dds_::String_"}},
		eps("/bot1", "@/f00d/@ros2_lv/MS/other§chatter/std_msgs§msg§String/:0::0,1"))
	require.Equal(t, []ep{
		{ddspath.Publication, "rq/addRequest", "example_interfaces::srv::dds_::AddTwoInts_Request_"},
		{ddspath.Subscription, "rr/addReply", "example_interfaces::srv::dds_::AddTwoInts_Response_"},
	}, eps("/", "@/f00d/@ros2_lv/SS/add/example_interfaces§srv§AddTwoInts"))
	require.Equal(t, []ep{
		{ddspath.Subscription, "rq/addRequest", "example_interfaces::srv::dds_::AddTwoInts_Request_"},
		{ddspath.Publication, "rr/addReply", "example_interfaces::srv::dds_::AddTwoInts_Response_"},
	}, eps("/", "@/f00d/@ros2_lv/SC/add/example_interfaces§srv§AddTwoInts"))
	require.Equal(t, []ep{
		{ddspath.Publication, "rq/fib/_action/send_goalRequest", "example_interfaces::action::dds_::Fibonacci_SendGoal_Request_"},
		{ddspath.Subscription, "rr/fib/_action/send_goalReply", "example_interfaces::action::dds_::Fibonacci_SendGoal_Response_"},
		{ddspath.Publication, "rq/fib/_action/cancel_goalRequest", "action_msgs::srv::dds_::CancelGoal_Request_"},
		{ddspath.Subscription, "rr/fib/_action/cancel_goalReply", "action_msgs::srv::dds_::CancelGoal_Response_"},
		{ddspath.Publication, "rq/fib/_action/get_resultRequest", "example_interfaces::action::dds_::Fibonacci_GetResult_Request_"},
		{ddspath.Subscription, "rr/fib/_action/get_resultReply", "example_interfaces::action::dds_::Fibonacci_GetResult_Response_"},
		{ddspath.Subscription, "rt/fib/_action/feedback", "example_interfaces::action::dds_::Fibonacci_FeedbackMessage_"},
		{ddspath.Subscription, "rt/fib/_action/status", "action_msgs::msg::dds_::GoalStatusArray_"},
	}, eps("/", "@/f00d/@ros2_lv/AS/fib/example_interfaces§action§Fibonacci"))
	ac := eps("/", "@/f00d/@ros2_lv/AC/fib/example_interfaces§action§Fibonacci")
	require.Len(t, ac, 8)
	require.Equal(t, ep{ddspath.Subscription, "rq/fib/_action/send_goalRequest", "example_interfaces::action::dds_::Fibonacci_SendGoal_Request_"}, ac[0])
	require.Equal(t, ep{ddspath.Publication, "rt/fib/_action/status", "action_msgs::msg::dds_::GoalStatusArray_"}, ac[7])

	tok, _ := ros2.ParseROS2DDSToken("@/f00d/@ros2_lv/SS/add/std_msgs§msg§String")
	_, err := ros2ddsEndpoints("/", "k", tok, true)
	require.Error(t, err, "a message type on a service token")
	tok, _ = ros2.ParseROS2DDSToken("@/f00d/@ros2_lv")
	_, err = ros2ddsEndpoints("/", "k", tok, true)
	require.Error(t, err)
}

//go:build cgo && cyclonedds

package server

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/ddspath/ros2"
	"github.com/picobridge/picobridge/zenohpath"
)

func graphTokens(t *testing.T, cli *zenohpath.Session, domain uint32) map[ros2.EntityKind][]ros2.LivelinessToken {
	t.Helper()
	replies, err := cli.Liveliness().Get(fmt.Sprintf("@ros2_lv/%d/**", domain), &zenohpath.LivelinessGetOptions{Timeout: 5 * time.Second})
	require.NoError(t, err)
	out := map[ros2.EntityKind][]ros2.LivelinessToken{}
	for rep := range replies {
		smp, ok := rep.Ok()
		require.True(t, ok)
		tok, err := ros2.ParseLivelinessToken(smp.KeyExpr())
		require.NoError(t, err, smp.KeyExpr())
		out[tok.Kind] = append(out[tok.Kind], tok)
	}
	return out
}

// TestRmwZenohGraphAndAttachment: with key_style rmw_zenoh the gateway is a
// node in the rmw_zenoh graph (NN), announces a bridged DDS server (SS, with
// the service type rmw_zenoh uses) and a bridged publication (MP), answers
// a query on the rmw_zenoh service key with the 33-byte attachment echoing
// the request's sequence number and GID, and drops SS when the server goes.
func TestRmwZenohGraphAndAttachment(t *testing.T) {
	domain := svcDomain()
	s := startDDSServer(t, fmt.Sprintf("zenoh:\n  listen: [tcp/127.0.0.1:0]\nmetrics:\n  listen: \"\"\ndds:\n  domain: %d\nroutes:\n  key_style: rmw_zenoh\n", domain))
	p, err := ddspath.Open(ddspath.Config{DomainID: domain})
	require.NoError(t, err)
	tag := fmt.Sprintf("%d_%d", os.Getpid(), rand.Uint32())
	name, topic := "/gadd_"+tag, "/gtopic_"+tag
	startDDSAddServer(t, p, name)
	_, err = p.NewWriter("rt"+topic, "std_msgs::msg::dds_::String_", ddspath.ROSDefaultQoS())
	require.NoError(t, err)
	require.Eventually(t, func() bool { return serviceReady(s, name, dirToDDS) }, 20*time.Second, 20*time.Millisecond, "queryable")

	cli, err := zenohpath.Open(context.Background(), zenohpath.Config{Connect: s.Endpoints()})
	require.NoError(t, err)
	defer cli.Close()
	var toks map[ros2.EntityKind][]ros2.LivelinessToken
	require.Eventually(t, func() bool {
		toks = graphTokens(t, cli, domain)
		return len(toks[ros2.EntityServiceServer]) == 1 && len(toks[ros2.EntityPublisher]) == 1
	}, 20*time.Second, 50*time.Millisecond, "SS and MP tokens")
	zid := s.Router().ZID().String()
	require.Len(t, toks[ros2.EntityNode], 1)
	nn := toks[ros2.EntityNode][0]
	require.Equal(t, ros2.LivelinessToken{Domain: domain, ZID: zid, Kind: ros2.EntityNode, Enclave: "/", Namespace: "/", Node: "picobridge"}, nn)
	ss := toks[ros2.EntityServiceServer][0]
	require.Equal(t, name, ss.Topic)
	require.Equal(t, "example_interfaces/srv/AddTwoInts", ss.Type)
	require.Equal(t, ros2.TypeHashNotSupported, ss.TypeHash)
	require.Equal(t, 10, ss.QoS.Depth)
	mp := toks[ros2.EntityPublisher][0]
	require.Equal(t, topic, mp.Topic)
	require.Equal(t, "std_msgs/msg/String", mp.Type)
	ids := []uint64{ss.EntityID, mp.EntityID}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	require.NotEqual(t, ids[0], ids[1])
	key, err := ss.Key()
	require.NoError(t, err)
	require.Contains(t, key, fmt.Sprintf("@ros2_lv/%d/%s/0/", domain, zid))
	require.Contains(t, key, "/SS/%/%/picobridge/%gadd_"+tag+"/example_interfaces::srv::dds_::AddTwoInts_/TypeHashNotSupported/")

	svcKey := fmt.Sprintf("%d/gadd_%s/example_interfaces::srv::dds_::AddTwoInts_/TypeHashNotSupported", domain, tag)
	att := ros2.ZenohAttachment{Seq: 42, Timestamp: time.Now(), GID: [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}}
	replies, err := cli.Get(svcKey, &zenohpath.GetOptions{Payload: addRequest(20, 22), Attachment: att.Marshal(),
		Target: zenohpath.QueryTargetAllComplete, Timeout: 10 * time.Second})
	require.NoError(t, err)
	var n int
	for rep := range replies {
		smp, ok := rep.Ok()
		require.True(t, ok)
		n++
		require.Equal(t, addReply(42), smp.Payload())
		back, err := ros2.ParseZenohAttachment(smp.Attachment())
		require.NoError(t, err)
		require.Equal(t, att.Seq, back.Seq)
		require.Equal(t, att.GID, back.GID)
		require.False(t, back.Timestamp.Before(att.Timestamp))
	}
	require.Equal(t, 1, n)

	require.NoError(t, p.Close())
	require.Eventually(t, func() bool {
		toks = graphTokens(t, cli, domain)
		return len(toks[ros2.EntityServiceServer]) == 0 && len(toks[ros2.EntityPublisher]) == 0
	}, 30*time.Second, 100*time.Millisecond, "SS and MP tokens gone with the DDS endpoints")
	require.Len(t, toks[ros2.EntityNode], 1)
}

//go:build cgo && cyclonedds

package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/ddspath/ros2"
	"github.com/picobridge/picobridge/zenohpath"
)

// serveDDS answers requests of one service in rmw_cyclonedds's layout with
// fn(enc · body) → enc · body, each request on its own goroutine.
func serveDDS(t *testing.T, p *ddspath.Participant, name, reqType string, fn func([]byte) []byte) {
	t.Helper()
	rq, rr, err := ros2.ServiceToDDS(name)
	require.NoError(t, err)
	rd, err := p.NewReader(rq, reqType, ddspath.ROSDefaultQoS())
	require.NoError(t, err)
	w, err := p.NewWriter(rr, otherType(reqType), ddspath.ROSDefaultQoS())
	require.NoError(t, err)
	go func() {
		for smp := range rd.C() {
			h, body, err := ros2.SplitServiceHeader(smp.CDR)
			if err != nil {
				continue
			}
			go func() {
				rep, _ := ros2.JoinServiceHeader(fn(body), h)
				_ = w.Write(rep, time.Time{})
			}()
		}
	}()
}

// fibSequence is CDR sequence<int32> little endian, aligned as after a
// 16-byte goal id (offset 16 from the body's start).
func fibSequence(n int) []byte {
	seq := []int32{0, 1}
	for len(seq) < n+1 {
		seq = append(seq, seq[len(seq)-1]+seq[len(seq)-2])
	}
	seq = seq[:n+1]
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(seq)))
	for _, v := range seq {
		b = binary.LittleEndian.AppendUint32(b, uint32(v))
	}
	return b
}

// TestActionRoundTripAcrossGateway: a DDS Fibonacci action server
// (send_goal / get_result / cancel_goal services in rmw_cyclonedds's layout,
// feedback and TRANSIENT_LOCAL status topics) is driven from Zenoh through
// the gateway: goal accepted, every feedback message received in order, the
// result, and a cancel answered, each on the action's plain keys.
func TestActionRoundTripAcrossGateway(t *testing.T) {
	domain := svcDomain()
	s := startDDSServer(t, fmt.Sprintf("zenoh:\n  listen: [tcp/127.0.0.1:0]\nmetrics:\n  listen: \"\"\ndds:\n  domain: %d\n", domain))
	p, err := ddspath.Open(ddspath.Config{DomainID: domain})
	require.NoError(t, err)
	defer p.Close()
	action := fmt.Sprintf("/fib_%d_%d", os.Getpid(), rand.Uint32())
	const pkg = "example_interfaces::action::dds_::Fibonacci_"
	fb, err := p.NewWriter("rt"+action+"/_action/feedback", pkg+"FeedbackMessage_", ddspath.ROSDefaultQoS())
	require.NoError(t, err)
	stq := ddspath.QoS{Reliability: ddspath.Reliable, History: ddspath.KeepLast, Depth: 1, Durability: ddspath.TransientLocal}
	status, err := p.NewWriter("rt"+action+"/_action/status", "action_msgs::msg::dds_::GoalStatusArray_", stq)
	require.NoError(t, err)

	const order = 6
	var mu sync.Mutex
	done := make(chan struct{})
	var goalID []byte
	serveDDS(t, p, action+"/_action/send_goal", pkg+"SendGoal_Request_", func(req []byte) []byte {
		mu.Lock()
		goalID = append([]byte(nil), req[4:20]...)
		mu.Unlock()
		go func() { // execute: feedback per step, then the result is ready
			for i := 1; i <= order; i++ {
				_ = fb.Write(append(append([]byte{0, 1, 0, 0}, req[4:20]...), fibSequence(i)...), time.Time{})
				time.Sleep(10 * time.Millisecond)
			}
			_ = status.Write(append(append([]byte{0, 1, 0, 0, 1, 0, 0, 0}, req[4:20]...), 0, 0, 0, 0, 0, 0, 0, 0, 4), time.Time{})
			close(done)
		}()
		return []byte{0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0} // accepted, stamp 0
	})
	serveDDS(t, p, action+"/_action/get_result", pkg+"GetResult_Request_", func(req []byte) []byte {
		<-done
		return append([]byte{0, 1, 0, 0, 4, 0, 0, 0}, fibSequence(order)...) // SUCCEEDED, sequence
	})
	serveDDS(t, p, action+"/_action/cancel_goal", "action_msgs::srv::dds_::CancelGoal_Request_", func(req []byte) []byte {
		return []byte{0, 1, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0} // ERROR_GOAL_TERMINATED, no goals
	})
	key := action[1:] + "/_action/"
	for _, part := range []string{"send_goal", "get_result", "cancel_goal"} {
		require.Eventually(t, func() bool { return serviceReady(s, action+"/_action/"+part, dirToDDS) }, 20*time.Second, 20*time.Millisecond, part)
	}
	require.Eventually(t, func() bool { return fb.Matched() > 0 && status.Matched() > 0 }, 20*time.Second, 20*time.Millisecond, "feedback and status routes")

	cli, err := zenohpath.Open(context.Background(), zenohpath.Config{Connect: s.Endpoints()})
	require.NoError(t, err)
	defer cli.Close()
	feedback := make(chan []byte, 64)
	_, err = cli.DeclareSubscriber(key+"feedback", func(smp zenohpath.Sample) { feedback <- smp.Payload() })
	require.NoError(t, err)
	time.Sleep(200 * time.Millisecond) // the subscription reaches the router

	uuid := bytes.Repeat([]byte{0xab}, 16)
	goal := append(append([]byte{0, 1, 0, 0}, uuid...), binary.LittleEndian.AppendUint32(nil, order)...)
	t0 := time.Now()
	ok, msg, _ := getOne(t, cli, key+"send_goal", goal)
	require.Equal(t, []byte{0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, ok, msg)
	for i := 1; i <= order; i++ {
		select {
		case f := <-feedback:
			require.Equal(t, append(append([]byte{0, 1, 0, 0}, uuid...), fibSequence(i)...), f, "feedback %d", i)
		case <-time.After(10 * time.Second):
			t.Fatalf("feedback %d missing", i)
		}
	}
	ok, msg, _ = getOne(t, cli, key+"get_result", append([]byte{0, 1, 0, 0}, uuid...))
	require.Equal(t, append([]byte{0, 1, 0, 0, 4, 0, 0, 0}, fibSequence(order)...), ok, msg)
	rtt := time.Since(t0)
	mu.Lock()
	require.Equal(t, uuid, goalID)
	mu.Unlock()
	ok, msg, _ = getOne(t, cli, key+"cancel_goal", append([]byte{0, 1, 0, 0}, uuid...))
	require.Equal(t, []byte{0, 1, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0}, ok, msg)
	require.Equal(t, 3.0, testutil.ToFloat64(s.svcStats.calls.WithLabelValues(dirToDDS, callOK)))
	t.Logf("action goal → %d feedback → result across the gateway in %v", order, rtt)
}

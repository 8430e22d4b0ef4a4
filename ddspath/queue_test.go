//go:build cgo && cyclonedds

package ddspath

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSampleQueuePolicies(t *testing.T) {
	mk := func(i int) *Sample { return &Sample{CDR: []byte{byte(i)}} }
	drain := func(q *sampleQueue) []byte {
		var out []byte
		for len(q.ch) > 0 {
			out = append(out, (<-q.ch).CDR[0])
		}
		return out
	}
	done := make(chan struct{})

	q := newSampleQueue(3, DropOldest, done)
	for i := range 5 {
		require.True(t, q.push(mk(i)))
	}
	require.Equal(t, []byte{2, 3, 4}, drain(q))
	require.Equal(t, uint64(2), q.dropped.Load())
	require.Equal(t, uint64(5), q.recv.Load())

	q = newSampleQueue(3, DropNewest, done)
	for i := range 5 {
		require.True(t, q.push(mk(i)))
	}
	require.Equal(t, []byte{0, 1, 2}, drain(q))
	require.Equal(t, uint64(2), q.dropped.Load())

	q = newSampleQueue(1, Block, done)
	require.True(t, q.push(mk(0)))
	pushed := make(chan bool)
	go func() { pushed <- q.push(mk(1)) }()
	select {
	case <-pushed:
		t.Fatal("Block policy did not block on a full queue")
	case <-time.After(20 * time.Millisecond):
	}
	require.Equal(t, byte(0), (<-q.ch).CDR[0])
	require.True(t, <-pushed)
	go func() { pushed <- q.push(mk(2)) }() // full again: blocks until done
	close(done)
	require.False(t, <-pushed)
	require.Equal(t, uint64(1), q.dropped.Load())
	q.close()
}

func TestConfigXML(t *testing.T) {
	x := Config{DomainID: 3}.XML()
	require.Contains(t, x, `<NetworkInterface address="127.0.0.1" multicast="false"/>`)
	require.Contains(t, x, `<AllowMulticast>false</AllowMulticast>`)
	require.Contains(t, x, `<Peer address="127.0.0.1"/>`)
	require.Contains(t, x, `<ParticipantIndex>auto</ParticipantIndex>`)
	x = Config{Interface: "eth0", Multicast: true, Peers: []string{"10.0.0.2", "a&b"}, WhcHigh: 1 << 20, TraceFile: "/tmp/t.log"}.XML()
	require.Contains(t, x, `<NetworkInterface name="eth0" multicast="true"/>`)
	require.Contains(t, x, `<Peer address="a&amp;b"/>`)
	require.Contains(t, x, `<WhcHigh>1048576B</WhcHigh><WhcHighInit>1048576B</WhcHighInit>`)
	require.Contains(t, x, `<SocketReceiveBufferSize max="4194304B"/>`)
	require.Contains(t, x, `<OutputFile>/tmp/t.log</OutputFile>`)
	require.Equal(t, "<x/>", Config{CycloneXML: "<x/>"}.XML())
}

func TestTypeHashFromUserData(t *testing.T) {
	require.Equal(t, "RIHS01_ab", TypeHashFromUserData([]byte("typehash=RIHS01_ab;")))
	require.Equal(t, "RIHS01_cd", TypeHashFromUserData([]byte("enclave=/;typehash=RIHS01_cd;")))
	require.Equal(t, "", TypeHashFromUserData([]byte("enclave=/;")))
	require.Equal(t, "", TypeHashFromUserData(nil))
}

func TestQoSNormalizeAndString(t *testing.T) {
	q := QoS{}.Normalize()
	require.Equal(t, int32(1), q.Depth)
	require.Equal(t, DefaultMaxBlocking, q.MaxBlocking)
	require.Equal(t, Unlimited, q.MaxSamples)
	require.Equal(t, "RELIABLE(max_blocking=100ms) VOLATILE KEEP_LAST 10", ROSDefaultQoS().Normalize().String())
}

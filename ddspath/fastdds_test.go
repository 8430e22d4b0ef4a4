//go:build cgo && cyclonedds

package ddspath

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/picobridge/picobridge/internal/fastddspeer"
	"github.com/stretchr/testify/require"
)

var (
	peerOnce sync.Once
	peerBin  string
	peerErr  error
	peerDir  string // removed by TestMain
)

// fastDDSPeer builds the Fast DDS peer once per test process (or uses
// $FASTDDSPEER) and skips the test when Fast DDS is not installed.
func fastDDSPeer(t *testing.T) string {
	t.Helper()
	if err := fastddspeer.Check(); err != nil {
		t.Skipf("skipping Fast DDS interop: %v", err)
	}
	peerOnce.Do(func() {
		peerDir, peerErr = os.MkdirTemp("", "ddspath-fastddspeer-")
		if peerErr != nil {
			return
		}
		peerBin, peerErr = fastddspeer.Build(peerDir)
	})
	require.NoError(t, peerErr)
	return peerBin
}

func startPeer(t *testing.T, bin string, args ...string) *fastddspeer.Peer {
	t.Helper()
	p, err := fastddspeer.Start(bin, args...)
	require.NoError(t, err)
	t.Cleanup(p.Kill)
	return p
}

// laserScanCDR serializes a sensor_msgs/msg/LaserScan as XCDR1 little endian
// (encapsulation 00 01 00 00; alignment counted from after the header).
func laserScanCDR(sec int32, nsec uint32, frame string, n int) []byte {
	b := []byte{0x00, 0x01, 0x00, 0x00}
	align := func(a int) {
		for (len(b)-4)%a != 0 {
			b = append(b, 0)
		}
	}
	u32 := func(v uint32) { align(4); b = binary.LittleEndian.AppendUint32(b, v) }
	f32 := func(v float32) { u32(math.Float32bits(v)) }
	u32(uint32(sec))
	u32(nsec)
	u32(uint32(len(frame) + 1))
	b = append(b, frame...)
	b = append(b, 0)
	f32(-math.Pi)                 // angle_min
	f32(math.Pi)                  // angle_max
	f32(2 * math.Pi / float32(n)) // angle_increment
	f32(0.0001)                   // time_increment
	f32(0.1)                      // scan_time
	f32(0.12)                     // range_min
	f32(30)                       // range_max
	u32(uint32(n))                // ranges
	for i := range n {
		f32(1 + float32(i)*0.01)
	}
	u32(uint32(n)) // intensities
	for i := range n {
		f32(float32(i % 100))
	}
	return b
}

func TestLaserScanGolden(t *testing.T) {
	got := laserScanCDR(1700000000, 5, "laser", 360)
	want, err := os.ReadFile(filepath.Join("testdata", "laserscan_360.cdr"))
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Len(t, got, 2940)
}

// TestCycloneToFastDDS: ddspath writes LaserScan samples (and one 64 KB
// fragmented sample) on rt/scan; the Fast DDS peer receives the exact bytes
// and source timestamps.
func TestCycloneToFastDDS(t *testing.T) {
	bin := fastDDSPeer(t)
	dom := newDomainID()
	p, err := Open(Config{DomainID: dom})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	topic := "rt/scan"
	payloads := [][]byte{
		laserScanCDR(1700000000, 1, "laser", 360),
		laserScanCDR(1700000000, 2, "laser", 360),
		laserScanCDR(1700000000, 3, "base_scan", 8000), // 64 KB: fragmented
	}
	peer := startPeer(t, bin, "--sub", topic, "--type", laserType, "--count", strconv.Itoa(len(payloads)),
		"--domain", strconv.Itoa(int(dom)), "--hex", "--timeout", "30")
	q := QoS{Reliability: Reliable, History: KeepAll}
	w, err := p.NewWriter(topic, laserType, q)
	require.NoError(t, err)
	_, err = peer.WaitLine("matched 1", 15*time.Second*timeScale())
	require.NoError(t, err)
	waitFor(t, 15*time.Second, "writer matched", func() bool { return w.Matched() == 1 })

	base := time.Unix(1700000000, 987654321)
	for i, b := range payloads {
		require.NoError(t, w.Write(b, base.Add(time.Duration(i)*time.Microsecond)))
	}
	require.NoError(t, peer.Wait(30*time.Second*timeScale()))
	got, err := peer.Samples()
	require.NoError(t, err)
	require.Len(t, got, len(payloads))
	for i, s := range got {
		require.Equal(t, payloads[i], s.Bytes, "sample %d", i)
		require.Equal(t, len(payloads[i]), s.Size)
		require.Equal(t, base.Add(time.Duration(i)*time.Microsecond).UnixNano(), s.SrcNs, "sample %d", i)
	}
}

// TestFastDDSToCyclone: the Fast DDS peer publishes LaserScan bytes with
// preset source timestamps; ddspath receives them exactly, and discovery
// reports the Fast DDS writer.
func TestFastDDSToCyclone(t *testing.T) {
	bin := fastDDSPeer(t)
	dom := newDomainID()
	p, err := Open(Config{DomainID: dom})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	topic := "rt/scan"

	var mu sync.Mutex
	var seen []Endpoint
	ctx, cancel := context.WithCancel(context.Background())
	watchDone := make(chan error, 1)
	go func() {
		watchDone <- p.WatchEndpoints(ctx, func(e Endpoint) {
			mu.Lock()
			seen = append(seen, e)
			mu.Unlock()
		})
	}()
	t.Cleanup(func() { cancel(); <-watchDone })

	for _, tc := range []struct {
		name string
		cdr  []byte
	}{
		{"laserscan_2940B", laserScanCDR(1700000000, 5, "laser", 360)},
		{"laserscan_64KB_fragmented", laserScanCDR(1700000000, 6, "base_scan", 8000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "sample.cdr")
			require.NoError(t, os.WriteFile(file, tc.cdr, 0o644))
			r, err := p.NewReader(topic, laserType, QoS{Reliability: Reliable, History: KeepAll})
			require.NoError(t, err)
			defer r.Close()
			const n = 5
			const ts0 = int64(1700000000123456789)
			peer := startPeer(t, bin, "--pub", topic, "--type", laserType, "--count", strconv.Itoa(n),
				"--domain", strconv.Itoa(int(dom)), "--payload-file", file, "--ts-ns", strconv.FormatInt(ts0, 10),
				"--ts-step-ns", "1000", "--go-on-stdin", "--timeout", "30")
			_, err = peer.WaitLine("matched 1", 15*time.Second*timeScale())
			require.NoError(t, err)
			// Reader-side match too: a VOLATILE reader drops data from a
			// writer it has not discovered yet (dds-cyclone.md §8.6).
			waitFor(t, 15*time.Second, "reader matched", func() bool { return r.Matched() == 1 })
			require.NoError(t, peer.Go())
			for i := range n {
				s := recv(t, r, 10*time.Second)
				require.Equal(t, tc.cdr, s.CDR, "sample %d", i)
				require.Equal(t, ts0+int64(i)*1000, s.SourceTimestamp.UnixNano(), "sample %d", i)
			}
			require.NoError(t, peer.Wait(30*time.Second*timeScale()))
		})
	}

	mu.Lock()
	defer mu.Unlock()
	var pub *Endpoint
	for i := range seen {
		if seen[i].Kind == Publication && seen[i].Topic == topic && seen[i].Alive {
			pub = &seen[i]
		}
	}
	require.NotNil(t, pub, "Fast DDS writer not discovered: %+v", seen)
	require.Equal(t, laserType, pub.TypeName)
	require.Equal(t, Reliable, pub.QoS.Reliability)
	require.Equal(t, Volatile, pub.QoS.Durability)
	require.Empty(t, pub.TypeHash)
}

// TestCycloneToFastDDSTransientLocalLateJoiner: a TRANSIENT_LOCAL KEEP_LAST 3
// ddspath writer publishes 5 samples before the Fast DDS reader exists; the
// late TRANSIENT_LOCAL Fast DDS reader gets the last 3 with their timestamps.
func TestCycloneToFastDDSTransientLocalLateJoiner(t *testing.T) {
	bin := fastDDSPeer(t)
	dom := newDomainID()
	p, err := Open(Config{DomainID: dom})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	topic := "rt/scan"
	w, err := p.NewWriter(topic, laserType, QoS{Reliability: Reliable, History: KeepLast, Depth: 3, Durability: TransientLocal})
	require.NoError(t, err)
	base := time.Unix(1700000400, 0)
	var payloads [][]byte
	for i := range 5 {
		b := laserScanCDR(1700000400, uint32(i), "laser", 90)
		payloads = append(payloads, b)
		require.NoError(t, w.Write(b, base.Add(time.Duration(i)*time.Second)))
	}
	peer := startPeer(t, bin, "--sub", topic, "--type", laserType, "--count", "3", "--keep-last", "10",
		"--transient-local", "--domain", strconv.Itoa(int(dom)), "--hex", "--timeout", "30")
	require.NoError(t, peer.Wait(40*time.Second*timeScale()))
	got, err := peer.Samples()
	require.NoError(t, err)
	require.Len(t, got, 3)
	for i, s := range got {
		require.Equal(t, payloads[i+2], s.Bytes)
		require.Equal(t, base.Add(time.Duration(i+2)*time.Second).UnixNano(), s.SrcNs)
	}
}

// TestFastDDSBestEffortToCycloneSensorQoS: ROS sensor-data QoS on both sides
// (BEST_EFFORT KEEP_LAST 5) matches across vendors and delivers.
func TestFastDDSBestEffortToCycloneSensorQoS(t *testing.T) {
	bin := fastDDSPeer(t)
	dom := newDomainID()
	p, err := Open(Config{DomainID: dom})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	topic := "rt/scan"
	r, err := p.NewReader(topic, laserType, SensorDataQoS())
	require.NoError(t, err)
	peer := startPeer(t, bin, "--pub", topic, "--type", laserType, "--count", "20", "--size", "1500",
		"--best-effort", "--keep-last", "5", "--rate", "200", "--go-on-stdin", "--domain", strconv.Itoa(int(dom)), "--timeout", "30")
	_, err = peer.WaitLine("matched 1", 15*time.Second*timeScale())
	require.NoError(t, err)
	waitFor(t, 15*time.Second, "reader matched", func() bool { return r.Matched() == 1 })
	require.NoError(t, peer.Go())
	require.NoError(t, peer.Wait(30*time.Second*timeScale()))
	// best effort on loopback: expect (nearly) all, require most and exact sizes
	waitFor(t, 5*time.Second, "samples", func() bool { return r.Stats().Received >= 15 })
	s := recv(t, r, time.Second)
	require.Len(t, s.CDR, 1500)
	require.Equal(t, []byte{0, 1, 0, 0}, s.CDR[:4])
}

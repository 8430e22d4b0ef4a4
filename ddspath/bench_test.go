//go:build cgo && cyclonedds

package ddspath

import (
	"fmt"
	"testing"
	"time"
)

var benchSizes = []int{1536, 64 << 10}

// BenchmarkWrite measures Writer.Write (copy into C + dds_write_ts) with one
// matched best-effort reader in another participant of the process.
func BenchmarkWrite(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			a, r := benchPair(b)
			topic := fmt.Sprintf("rt/bench_write_%d_%d", size, time.Now().UnixNano())
			q := QoS{Reliability: BestEffort, History: KeepLast, Depth: 1}
			_, w := benchReaderWriter(b, a, r, topic, q, WithQueue(1, DropOldest))
			p := cdrSample(size, 0)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if err := w.Write(p, time.Time{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkWriteTake measures one write and the take of that sample through
// the waitset goroutine and the queue (RELIABLE KEEP_ALL, in process).
func BenchmarkWriteTake(b *testing.B) {
	for _, size := range benchSizes {
		for _, mode := range []string{"waitset", "listener"} {
			b.Run(fmt.Sprintf("%dB/%s", size, mode), func(b *testing.B) {
				a, r := benchPair(b)
				topic := fmt.Sprintf("rt/bench_wt_%d_%s_%d", size, mode, time.Now().UnixNano())
				q := QoS{Reliability: Reliable, History: KeepAll}
				opts := []ReaderOption{WithQueue(16, DropNewest)}
				if mode == "listener" {
					opts = append(opts, WithListener())
				}
				rd, w := benchReaderWriter(b, a, r, topic, q, opts...)
				for w.Matched() == 0 {
					time.Sleep(time.Millisecond)
				}
				p := cdrSample(size, 0)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					if err := w.Write(p, time.Time{}); err != nil {
						b.Fatal(err)
					}
					<-rd.C()
				}
			})
		}
	}
}

func benchPair(b *testing.B) (*Participant, *Participant) {
	b.Helper()
	cfg := Config{DomainID: newDomainID()}
	a, err := Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	c, err := Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close(); _ = a.Close() })
	return a, c
}

// benchReaderWriter creates a reader of topic on rp and a writer on wp,
// closed (writer first) when the benchmark ends.
func benchReaderWriter(b *testing.B, wp, rp *Participant, topic string, q QoS, opts ...ReaderOption) (*Reader, *Writer) {
	b.Helper()
	rd, err := rp.NewReader(topic, laserType, q, opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rd.Close() })
	wr, err := wp.NewWriter(topic, laserType, q)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { wr.Close() })
	return rd, wr
}

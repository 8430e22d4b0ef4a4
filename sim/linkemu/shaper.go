package linkemu

import "time"

// Bitrate is a link rate in bits per second; 0 means unlimited.
type Bitrate int64

// Kbit is 1000 bit/s, the unit of the profiles table (evaluation.md) and
// of tc's "kbit".
const Kbit Bitrate = 1000

// TxTime is the serialization time of n bytes at rate r (0 if unlimited).
func (r Bitrate) TxTime(n int) time.Duration {
	if r <= 0 {
		return 0
	}
	return time.Duration(int64(n) * 8 * int64(time.Second) / int64(r))
}

// shaper serializes packets at a fixed rate with a bounded backlog, as
// netem's "rate" does: a packet starts transmission when the previous one
// has left and leaves TxTime(size) later. Times are passed in, so the model
// is a pure function of its inputs. Not safe for concurrent use.
type shaper struct {
	rate  Bitrate
	limit int       // backlog bound in bytes; 0 = unbounded
	busy  time.Time // when the transmitter is free again
}

// reserve books n bytes arriving at now. It returns when the last bit has
// left the transmitter, or ok = false when bounded and the bytes already
// queued ahead exceed the limit (the packet is then not booked). TCP books
// unbounded: it bounds what it holds per connection instead.
func (s *shaper) reserve(now time.Time, n int, bounded bool) (departure time.Time, ok bool) {
	if s.rate <= 0 {
		return now, true
	}
	start := now
	if s.busy.After(now) {
		start = s.busy
		if bounded && s.limit > 0 {
			backlog := int64(s.busy.Sub(now)) * int64(s.rate) / 8 / int64(time.Second)
			if backlog+int64(n) > int64(s.limit) {
				return time.Time{}, false
			}
		}
	}
	s.busy = start.Add(s.rate.TxTime(n))
	return s.busy, true
}

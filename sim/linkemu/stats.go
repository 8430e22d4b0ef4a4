package linkemu

import "time"

// Direction names one direction of the emulated link.
type Direction uint8

// The two directions. The device is the proxy's client; the gateway is
// the upstream.
const (
	ToDevice  Direction = iota // gateway → device
	ToGateway                  // device → gateway
)

func (d Direction) String() string {
	if d == ToGateway {
		return "to_gateway"
	}
	return "to_device"
}

// DirStats counts what one direction of the link did. A "packet" is a UDP
// datagram, or on TCP one unit of the stream (a Zenoh batch with its
// length prefix, or a chunk; see Framing).
type DirStats struct {
	// Packets is the number of packets offered to the link.
	Packets uint64 `json:"packets"`
	// Sent is the number of transmissions on the emulated link: on UDP the
	// packets that got past the queue, on TCP Packets plus Retransmits.
	Sent uint64 `json:"sent"`
	// Lost is the number of transmissions the Gilbert–Elliott chain lost.
	// UDP drops them; TCP retransmits them (Config.RTO.Repair).
	Lost uint64 `json:"lost"`
	// QueueDrops counts UDP datagrams dropped because the bandwidth queue
	// held more than Config.QueueBytes (TCP pushes back instead).
	QueueDrops uint64 `json:"queue_drops"`
	// Dropped counts UDP datagrams that never reach the receiver: Lost
	// plus QueueDrops (0 on TCP).
	Dropped uint64 `json:"dropped"`
	// Retransmits is the number of emulated TCP retransmissions (= Lost on
	// TCP, 0 on UDP).
	Retransmits uint64 `json:"retransmits"`
	// Stalled counts TCP packets that waited for at least one
	// retransmission.
	Stalled uint64 `json:"stalled"`
	// FastRepairs counts TCP retransmissions sent before a retransmission
	// timeout (RACK or TLP, RepairLinux); Timeouts those sent after one.
	// FastRepairs + Timeouts = Retransmits.
	FastRepairs uint64 `json:"fast_repairs"`
	Timeouts    uint64 `json:"timeouts"`
	// Delivered is the number of packets written to the receiver.
	Delivered uint64 `json:"delivered"`
	// Delayed counts delivered packets with a positive added delay.
	Delayed uint64 `json:"delayed"`
	// BytesIn and BytesOut count payload bytes read from the sender and
	// written to the receiver (TCP: including Zenoh length prefixes).
	BytesIn  uint64 `json:"bytes_in"`
	BytesOut uint64 `json:"bytes_out"`
	// AddedDelaySum and AddedDelayMax describe the scheduled delay (release
	// time − arrival time) of delivered packets, in nanoseconds in JSON.
	AddedDelaySum time.Duration `json:"added_delay_sum_ns"`
	AddedDelayMax time.Duration `json:"added_delay_max_ns"`
	// BadSteps is the number of transmissions made while the chain was in
	// the bad state; BadSteps/Sent estimates the time share of that state.
	BadSteps uint64 `json:"bad_steps"`
}

// ProducedLoss is the loss ratio the link actually produced: lost
// transmissions over transmissions (0 before any). Compare it with
// Impairment.ExpectedLoss.
func (d DirStats) ProducedLoss() float64 {
	if d.Sent == 0 {
		return 0
	}
	return float64(d.Lost) / float64(d.Sent)
}

// DropRatio is the share of offered packets that were dropped (UDP: GE
// loss plus queue drops; always 0 on TCP, which retransmits).
func (d DirStats) DropRatio() float64 {
	if d.Packets == 0 {
		return 0
	}
	return float64(d.Dropped) / float64(d.Packets)
}

// MeanAddedDelay is the mean scheduled delay of delivered packets.
func (d DirStats) MeanAddedDelay() time.Duration {
	if d.Delivered == 0 {
		return 0
	}
	return d.AddedDelaySum / time.Duration(d.Delivered)
}

// sub is d − o for the counters (AddedDelayMax stays d's).
func (d DirStats) sub(o DirStats) DirStats {
	d.Packets -= o.Packets
	d.Sent -= o.Sent
	d.Lost -= o.Lost
	d.QueueDrops -= o.QueueDrops
	d.Dropped -= o.Dropped
	d.Retransmits -= o.Retransmits
	d.Stalled -= o.Stalled
	d.FastRepairs -= o.FastRepairs
	d.Timeouts -= o.Timeouts
	d.Delivered -= o.Delivered
	d.Delayed -= o.Delayed
	d.BytesIn -= o.BytesIn
	d.BytesOut -= o.BytesOut
	d.AddedDelaySum -= o.AddedDelaySum
	d.BadSteps -= o.BadSteps
	return d
}

func (d *DirStats) add(o DirStats) {
	d.Packets += o.Packets
	d.Sent += o.Sent
	d.Lost += o.Lost
	d.QueueDrops += o.QueueDrops
	d.Dropped += o.Dropped
	d.Retransmits += o.Retransmits
	d.Stalled += o.Stalled
	d.FastRepairs += o.FastRepairs
	d.Timeouts += o.Timeouts
	d.Delivered += o.Delivered
	d.Delayed += o.Delayed
	d.BytesIn += o.BytesIn
	d.BytesOut += o.BytesOut
	d.AddedDelaySum += o.AddedDelaySum
	d.AddedDelayMax = max(d.AddedDelayMax, o.AddedDelayMax)
	d.BadSteps += o.BadSteps
}

// ProfileChange is one point of the impairment timeline: from At on, the
// link applied Profile. The evaluation plots these for the toggle run.
type ProfileChange struct {
	At      time.Time `json:"at"`
	Profile string    `json:"profile"`
	// Impaired is false when the profile is clean in both directions.
	Impaired bool `json:"impaired"`
	// Expected is each direction's ExpectedLoss under Profile, indexed by
	// Direction.
	Expected [2]float64 `json:"expected_loss"`
	// Counters are each direction's cumulative counters at At, indexed by
	// Direction: the difference between two changes is what one phase did.
	Counters [2]DirStats `json:"counters"`
}

// Phase is what the link did while one profile was applied.
type Phase struct {
	Profile  string        `json:"profile"`
	Impaired bool          `json:"impaired"`
	Start    time.Time     `json:"start"`
	Duration time.Duration `json:"duration_ns"`
	// Expected and Counters are indexed by Direction; Counters are this
	// phase's own (AddedDelayMax excepted: it is the maximum so far).
	Expected [2]float64  `json:"expected_loss"`
	Counters [2]DirStats `json:"counters"`
}

// Phases splits the counters by profile phase, the last one ending at
// the snapshot (Stats.Taken).
func (s Stats) Phases() []Phase {
	out := make([]Phase, 0, len(s.Timeline))
	for i, c := range s.Timeline {
		end, endCounters := s.Taken, [2]DirStats{s.ToDevice, s.ToGateway}
		if i+1 < len(s.Timeline) {
			end, endCounters = s.Timeline[i+1].At, s.Timeline[i+1].Counters
		}
		ph := Phase{Profile: c.Profile, Impaired: c.Impaired, Start: c.At, Duration: end.Sub(c.At), Expected: c.Expected}
		for d := range ph.Counters {
			ph.Counters[d] = endCounters[d].sub(c.Counters[d])
		}
		out = append(out, ph)
	}
	return out
}

// ExpectedLoss is the loss ratio a direction should have produced over
// the run: each phase's ExpectedLoss weighted by the transmissions made
// in it (with one profile all along, that profile's ExpectedLoss). Compare
// it with the direction's ProducedLoss.
func (s Stats) ExpectedLoss(d Direction) float64 {
	var sent, lost float64
	for _, ph := range s.Phases() {
		n := float64(ph.Counters[d].Sent)
		sent += n
		lost += n * ph.Expected[d]
	}
	if sent == 0 {
		if len(s.Timeline) == 0 {
			return 0
		}
		return s.Timeline[len(s.Timeline)-1].Expected[d]
	}
	return lost / sent
}

// Stats is a snapshot of a proxy.
type Stats struct {
	// Transport is "udp" or "tcp".
	Transport string `json:"transport"`
	// Profile is the name of the profile applied now.
	Profile string `json:"profile"`
	// Start is when the proxy started listening; Taken when this snapshot
	// was taken.
	Start time.Time `json:"start"`
	Taken time.Time `json:"taken"`
	// Active is the number of open TCP connection pairs or UDP client
	// mappings; Sessions counts all accepted so far.
	Active   int    `json:"active"`
	Sessions uint64 `json:"sessions"`
	// ToDevice and ToGateway are the per-direction counters.
	ToDevice  DirStats `json:"to_device"`
	ToGateway DirStats `json:"to_gateway"`
	// Timeline lists every profile applied, the first at Start.
	Timeline []ProfileChange `json:"timeline"`
}

// Dir returns the counters of one direction.
func (s Stats) Dir(d Direction) DirStats {
	if d == ToGateway {
		return s.ToGateway
	}
	return s.ToDevice
}

// Total adds up both directions.
func (s Stats) Total() DirStats {
	t := s.ToDevice
	t.add(s.ToGateway)
	return t
}

// ProducedLoss is the loss ratio produced over both directions.
func (s Stats) ProducedLoss() float64 { return s.Total().ProducedLoss() }

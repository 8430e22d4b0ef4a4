package zenohpath

import (
	"github.com/picobridge/picobridge/zenohpath/keyexpr"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// Priority of a message (§8.1): 1 RealTime … 5 Data (default) … 7 Background.
type Priority = wire.Priority

// Priorities usable by applications (Control, 0, is reserved for the router).
const (
	PriorityRealTime        = wire.PriorityRealTime
	PriorityInteractiveHigh = wire.PriorityInteractiveHigh
	PriorityInteractiveLow  = wire.PriorityInteractiveLow
	PriorityDataHigh        = wire.PriorityDataHigh
	PriorityData            = wire.PriorityData
	PriorityDataLow         = wire.PriorityDataLow
	PriorityBackground      = wire.PriorityBackground
)

// CongestionControl says what happens when a link is congested: drop the
// message (the default) or block the sender for a bounded time.
type CongestionControl = wire.CongestionControl

// Congestion control modes.
const (
	CongestionControlDrop  = wire.CongestionDrop
	CongestionControlBlock = wire.CongestionBlock
)

// Reliability selects the transport channel of a publication.
type Reliability uint8

// Reliability modes; the zero value is Reliable.
const (
	ReliabilityReliable Reliability = iota
	ReliabilityBestEffort
)

// Encoding of a payload (§1.5): a predefined id and an optional schema.
type Encoding = wire.Encoding

// Timestamp is a hybrid logical clock value (§1.4).
type Timestamp = wire.Timestamp

// QueryTarget selects the queryables a Get reaches (§10.6).
type QueryTarget = wire.QueryTarget

// Query targets.
const (
	QueryTargetBestMatching = wire.TargetBestMatching
	QueryTargetAll          = wire.TargetAll
	QueryTargetAllComplete  = wire.TargetAllComplete
)

// ConsolidationMode is sent with a Get (§10.3); replies are always delivered
// as they come (this client does not consolidate).
type ConsolidationMode = wire.Consolidation

// Consolidation modes.
const (
	ConsolidationModeAuto      = wire.ConsolidationAuto
	ConsolidationModeNone      = wire.ConsolidationNone
	ConsolidationModeMonotonic = wire.ConsolidationMonotonic
	ConsolidationModeLatest    = wire.ConsolidationLatest
)

// SampleKind is Put or Delete.
type SampleKind uint8

// Sample kinds.
const (
	SampleKindPut SampleKind = iota
	SampleKindDelete
)

func (k SampleKind) String() string {
	if k == SampleKindDelete {
		return "delete"
	}
	return "put"
}

// Sample is one publication (or liveliness change, or reply) as received.
// Its byte slices belong to the receiver.
type Sample struct {
	key        string
	payload    []byte
	kind       SampleKind
	encoding   Encoding
	timestamp  *Timestamp
	attachment []byte
	qos        wire.QoS
}

// KeyExpr is the sample's key.
func (s Sample) KeyExpr() string { return s.key }

// Payload is the sample's data (nil for a delete).
func (s Sample) Payload() []byte { return s.payload }

// Kind is Put or Delete.
func (s Sample) Kind() SampleKind { return s.kind }

// Encoding is the payload's encoding (id 0, zenoh/bytes, when absent).
func (s Sample) Encoding() Encoding { return s.encoding }

// Timestamp returns the sample's timestamp, if it has one.
func (s Sample) Timestamp() (Timestamp, bool) {
	if s.timestamp == nil {
		return Timestamp{}, false
	}
	return *s.timestamp, true
}

// Attachment is the user attachment (nil when absent).
func (s Sample) Attachment() []byte { return s.attachment }

// Priority is the sample's priority.
func (s Sample) Priority() Priority { return s.qos.Priority() }

// CongestionControl is the sender's congestion control.
func (s Sample) CongestionControl() CongestionControl { return s.qos.CongestionControl() }

// Express reports the sender's express flag.
func (s Sample) Express() bool { return s.qos.Express() }

func sampleFromBody(key string, b wire.ZenohMessage, q wire.QoS) Sample {
	s := Sample{key: key, qos: q}
	switch b := b.(type) {
	case *wire.Put:
		s.payload, s.attachment = b.Payload, b.Attachment
		if b.HasEncoding {
			s.encoding = b.Encoding
		}
		if b.HasTimestamp {
			ts := b.Timestamp
			s.timestamp = &ts
		}
	case *wire.Del:
		s.kind = SampleKindDelete
		s.attachment = b.Attachment
		if b.HasTimestamp {
			ts := b.Timestamp
			s.timestamp = &ts
		}
	}
	return s
}

// canonKey validates a key expression, canonizing it if needed.
func canonKey(key string) (string, error) {
	k, err := keyexpr.Autocanonize(key)
	if err != nil {
		return "", err
	}
	return k.String(), nil
}

// qosOf builds the QoS ext value; ok is false when it equals the default
// (the ext is then omitted, §8.1).
func qosOf(p Priority, cc CongestionControl, express bool) (wire.QoS, bool) {
	if p == 0 {
		p = PriorityData
	}
	q := wire.NewQoS(p, cc, express)
	return q, q != wire.DefaultQoS
}

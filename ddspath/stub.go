//go:build !cgo || !cyclonedds

package ddspath

import (
	"context"
	"time"
)

// Available reports whether this binary has the Cyclone DDS implementation.
const Available = false

// Participant is a DDS domain participant (unavailable in this build).
type Participant struct{}

// Open returns ErrUnavailable: built without cgo or the cyclonedds tag.
func Open(cfg Config) (*Participant, error) { return nil, ErrUnavailable }

// DomainID returns the participant's domain id.
func (p *Participant) DomainID() uint32 { return 0 }

// GUID returns the participant's GUID.
func (p *Participant) GUID() GUID { return GUID{} }

// Close does nothing.
func (p *Participant) Close() error { return nil }

// NewWriter returns ErrUnavailable.
func (p *Participant) NewWriter(topic, typeName string, q QoS) (*Writer, error) {
	return nil, ErrUnavailable
}

// NewReader returns ErrUnavailable.
func (p *Participant) NewReader(topic, typeName string, q QoS, opts ...ReaderOption) (*Reader, error) {
	if _, err := buildReaderOptions(opts); err != nil {
		return nil, err
	}
	return nil, ErrUnavailable
}

// WatchEndpoints returns ErrUnavailable.
func (p *Participant) WatchEndpoints(ctx context.Context, fn func(Endpoint)) error {
	return ErrUnavailable
}

// Writer publishes raw CDR samples (unavailable in this build).
type Writer struct{}

func (w *Writer) Topic() string                         { return "" }
func (w *Writer) QoS() QoS                              { return QoS{} }
func (w *Writer) Write(cdr []byte, ts time.Time) error  { return ErrUnavailable }
func (w *Writer) Matched() int                          { return 0 }
func (w *Writer) WaitForAcks(ctx context.Context) error { return ErrUnavailable }
func (w *Writer) Stats() WriterStats                    { return WriterStats{} }
func (w *Writer) Close() error                          { return nil }

// Reader receives raw CDR samples (unavailable in this build).
type Reader struct{}

func (r *Reader) Topic() string                          { return "" }
func (r *Reader) QoS() QoS                               { return QoS{} }
func (r *Reader) C() <-chan *Sample                      { return nil }
func (r *Reader) Stats() ReaderStats                     { return ReaderStats{} }
func (r *Reader) Matched() int                           { return 0 }
func (r *Reader) WriterGUID(handle uint64) (GUID, error) { return GUID{}, ErrUnavailable }
func (r *Reader) Close() error                           { return nil }

// InstanceHandle returns ErrUnavailable.
func (w *Writer) InstanceHandle() (uint64, error) { return 0, ErrUnavailable }

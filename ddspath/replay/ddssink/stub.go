//go:build !cgo || !cyclonedds

package ddssink

import (
	"context"
	"time"

	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/ddspath/replay"
)

// Sink is a replay.Sink on DDS (unavailable in this build: needs cgo and -tags cyclonedds).
type Sink struct{}

// New returns ddspath.ErrUnavailable in this build.
func New(p *ddspath.Participant, opt Options) (*Sink, error) { return nil, ddspath.ErrUnavailable }

// Open returns ddspath.ErrUnavailable in this build.
func Open(cfg ddspath.Config, opt Options) (*Sink, error) { return nil, ddspath.ErrUnavailable }

func (s *Sink) Participant() *ddspath.Participant            { return nil }
func (s *Sink) Declare(t replay.TopicInfo) error             { return ddspath.ErrUnavailable }
func (s *Sink) Write(string, []byte, time.Time) error        { return ddspath.ErrUnavailable }
func (s *Sink) Writer(topic string) *ddspath.Writer          { return nil }
func (s *Sink) Topics() []string                             { return nil }
func (s *Sink) WaitMatched(ctx context.Context, n int) error { return ddspath.ErrUnavailable }
func (s *Sink) WaitForAcks(ctx context.Context) error        { return ddspath.ErrUnavailable }
func (s *Sink) Stats() Stats                                 { return Stats{} }
func (s *Sink) Close() error                                 { return nil }

package transport

import (
	"sync"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// The receive path holds nothing large between batches: the read buffer
// comes from rxPool (link.go), the parser from parserPool for the duration
// of one batch, and a reassembly buffer from wire's pool for the duration
// of one fragment train. See docs/transport.md, "Memory per session: RX".

// parserPool holds the wire.Parsers of all read loops (a Parser is about
// 3 KB plus its interned keys; one per session would cost that much per
// idle session).
var parserPool = sync.Pool{New: func() any { return new(wire.Parser) }}

// rxBatch decodes one batch and dispatches what it holds (onMessage,
// onFragment), with a parser taken from parserPool for the call. The
// Handler's view of the messages (valid only during HandleNetwork) is what
// allows giving the parser and the batch buffer back afterwards.
func (s *Session) rxBatch(b []byte) error {
	p := parserPool.Get().(*wire.Parser)
	s.parser = p
	err := p.WalkBatch(b, s.walkFn)
	s.parser = nil
	parserPool.Put(p)
	return err
}

// releaseRX gives back what the read goroutine may still hold: the read
// buffer and any partial reassembly. Read goroutine only, after its last
// batch.
func (s *Session) releaseRX() {
	releaseRead(s.l)
	for i := range s.reasm {
		s.reasm[i].Reset()
	}
}

// fragDropReason maps a reassembly drop to the counted reason.
var fragDropReason = [...]dropReason{
	wire.FragmentGap:        dropFragmentGap,
	wire.FragmentOversize:   dropFragmentOversize,
	wire.FragmentNoFirst:    dropFragmentNoFirst,
	wire.FragmentDropMarker: dropFragmentMarker,
}

// newReassemblers returns the two channels' reassemblers: bounded by
// Config.MaxMessageSize, First required when Patch ≥ 1 was negotiated.
func newReassemblers(cfg *Config, mask uint64, patch bool) [2]wire.Reassembler {
	r := wire.Reassembler{Max: cfg.MaxMessageSize, SNMask: mask, RequireFirst: patch}
	return [2]wire.Reassembler{r, r}
}

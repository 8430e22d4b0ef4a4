package wire

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestIterators(t *testing.T) {
	// Rust-style batch: FRAME(R) [PUSH, RESPONSE_FINAL] FRAME(BE) [RESPONSE_FINAL] KEEP_ALIVE
	batch := unhex(t, `25 07 5d 01 01 02 "hi" 1a 03 05 09 1a 04 04`)
	var p Parser
	walk := func(inner bool, stopAfter int) []string {
		var got []string
		for tm, err := range p.TransportMessages(batch) {
			require.NoError(t, err)
			got = append(got, kindOf(tm))
			if f, ok := tm.(*Frame); ok && inner {
				i := 0
				for nm, err := range p.NetworkMessages(f.Payload) {
					require.NoError(t, err)
					got = append(got, kindOf(nm))
					if i++; i == stopAfter {
						break
					}
				}
			}
		}
		return got
	}
	require.Equal(t, []string{"*wire.Frame", "*wire.Push", "*wire.ResponseFinal", "*wire.Frame", "*wire.ResponseFinal", "*wire.KeepAlive"}, walk(true, 0))
	require.Equal(t, []string{"*wire.Frame", "*wire.Frame", "*wire.KeepAlive"}, walk(false, 0))
	require.Equal(t, []string{"*wire.Frame", "*wire.Push", "*wire.Frame", "*wire.ResponseFinal", "*wire.KeepAlive"}, walk(true, 1))

	// errors carry batch offsets, then the iteration ends
	var errs []error
	for _, err := range p.TransportMessages(unhex(t, `04 25 00 5d 01 01 09 "x"`)) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	require.Len(t, errs, 1)
	var we *Error
	require.ErrorAs(t, errs[0], &we)
	require.Equal(t, 6, we.Offset)
	for _, err := range p.NetworkMessages(unhex(t, `1a 01 5d 01 01 09 "x"`)) {
		if err != nil {
			require.ErrorAs(t, err, &we)
			require.Equal(t, 5, we.Offset)
		}
	}
}

func kindOf(v any) string {
	switch v.(type) {
	case *Frame:
		return "*wire.Frame"
	case *KeepAlive:
		return "*wire.KeepAlive"
	case *Push:
		return "*wire.Push"
	case *ResponseFinal:
		return "*wire.ResponseFinal"
	}
	return "?"
}

func TestIteratorAllocs(t *testing.T) {
	batch := framePush(3, WireExpr{Scope: 1, Mapping: MappingSender}, make([]byte, 64))
	var p Parser
	n := 0
	run := func() {
		for tm, err := range p.TransportMessages(batch) {
			if err != nil {
				t.Fatal(err)
			}
			if f, ok := tm.(*Frame); ok {
				for nm, err := range p.NetworkMessages(f.Payload) {
					if err != nil {
						t.Fatal(err)
					}
					n += len(nm.(*Push).Body.(*Put).Payload)
				}
			}
		}
	}
	run()
	require.Zero(t, testing.AllocsPerRun(100, run))
}

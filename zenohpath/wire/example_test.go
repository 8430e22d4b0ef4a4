package wire_test

import (
	"fmt"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// Decoding a batch received from zenoh-pico (stream prefix already removed):
// FRAME(R, sn 2) carrying PUSH(scope 1, M) · PUT "[   0] Pub from Pico!".
func ExampleParser_WalkBatch() {
	batch := []byte("\x25\x02\x5d\x01\x01\x15[   0] Pub from Pico!")
	var p wire.Parser // one per link, reused for every batch
	err := p.WalkBatch(batch, func(t wire.TransportMessage, n wire.NetworkMessage) error {
		switch m := n.(type) {
		case nil:
			if f, ok := t.(*wire.Frame); ok {
				fmt.Println("frame reliable:", f.Reliable, "sn:", f.SN)
			}
		case *wire.Push:
			put := m.Body.(*wire.Put) // aliases batch: copy to keep it
			fmt.Printf("push scope %d mapping sender %v payload %q\n", m.WireExpr.Scope, bool(m.WireExpr.Mapping), put.Payload)
		}
		return nil
	})
	fmt.Println("err:", err)
	// Output:
	// frame reliable: true sn: 2
	// push scope 1 mapping sender true payload "[   0] Pub from Pico!"
	// err: <nil>
}

// Building a batch for zenoh-pico: answer its publisher INTEREST with an
// aggregated DeclareSubscriber and DeclareFinal, in one FRAME, with the TCP
// length prefix.
func ExampleAppendFrame() {
	content := wire.AppendFrame(nil, true, 11259375,
		&wire.Declare{HasInterestID: true, InterestID: 2,
			Body: &wire.DeclareSubscriber{ID: 902, WireExpr: wire.WireExpr{Suffix: "demo/example/zenoh-pico-pub"}}},
		&wire.Declare{HasInterestID: true, InterestID: 2, Body: &wire.DeclareFinal{}})
	fmt.Println(len(content) <= wire.MaxStreamBatchContent(2048))
	stream := wire.AppendStreamBatch(nil, content)
	fmt.Printf("% x\n", stream[:8])
	// Output:
	// true
	// 2a 00 25 ef 9b af 05 3e
}

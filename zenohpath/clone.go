package zenohpath

import "github.com/picobridge/picobridge/zenohpath/wire"

// cloneNetwork returns a copy of m that owns all its bytes (wire.CloneNetwork:
// encode, decode). Used where a message must outlive the batch it was decoded
// from. The messages the router builds always re-decode.
func cloneNetwork(m wire.NetworkMessage) wire.NetworkMessage {
	c, err := wire.CloneNetwork(m)
	if err != nil {
		panic("zenohpath: re-decoding an encoded message failed: " + err.Error())
	}
	return c
}

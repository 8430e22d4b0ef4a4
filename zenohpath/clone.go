package zenohpath

import "github.com/picobridge/picobridge/zenohpath/wire"

// cloneNetwork returns a copy of m that owns all its bytes (encode, decode).
// Used where a message must outlive the batch it was decoded from.
func cloneNetwork(m wire.NetworkMessage) wire.NetworkMessage {
	b := m.Append(make([]byte, 0, m.Len()))
	c, _, err := wire.ParseNetwork(b)
	if err != nil {
		panic("zenohpath: re-decoding an encoded message failed: " + err.Error())
	}
	return c
}

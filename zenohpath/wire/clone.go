package wire

// CloneNetwork returns a copy of m that owns all its bytes, for a message
// that must outlive the batch (and the Parser step) it was decoded from.
// It re-encodes m into one fresh buffer and decodes that, so the copy's
// []byte fields alias the new buffer only.
func CloneNetwork(m NetworkMessage) (NetworkMessage, error) {
	b := m.Append(make([]byte, 0, m.Len()))
	c, _, err := (*Parser)(nil).Network(b)
	return c, err
}

// CloneTransport is CloneNetwork for transport messages.
func CloneTransport(m TransportMessage) (TransportMessage, error) {
	b := m.Append(make([]byte, 0, m.Len()))
	c, _, err := (*Parser)(nil).Transport(b)
	return c, err
}

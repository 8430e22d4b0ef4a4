package transport

// Sequence numbers (zenoh-wire.md §5). Each session has two channels,
// best effort (0) and reliable (1), each with a TX counter and an RX
// "last accepted" value. SNs live inside mask (0x0FFF_FFFF for the default
// 32-bit resolution) and wrap to 0.

const (
	chBestEffort = 0
	chReliable   = 1
)

func channel(reliable bool) int {
	if reliable {
		return chReliable
	}
	return chBestEffort
}

// snAccept reports whether sn is acceptable after last: strictly after it,
// at most half the SN space ahead (Rust's "gap has no bit above mask>>1").
// An SN with bits outside the mask is never acceptable.
func snAccept(last, sn, mask uint64) bool {
	if sn&^mask != 0 {
		return false
	}
	gap := (sn - last) & mask
	return gap != 0 && gap <= mask>>1
}

// snPrev is the "last" value before initial (initial − 1 mod mask+1).
func snPrev(initial, mask uint64) uint64 { return (initial - 1) & mask }

// snNext is (sn + 1) mod mask+1.
func snNext(sn, mask uint64) uint64 { return (sn + 1) & mask }

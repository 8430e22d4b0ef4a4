package measure

// Delivery describes how one consumer's stream compares with what was published.
type Delivery struct {
	Published  int // messages published (successful writes)
	Received   int // samples received, duplicates included
	Unique     int // distinct sequence numbers received
	Missing    int // published sequence numbers never received
	Duplicates int // receptions of an already received sequence number
	Reordered  int // receptions with a sequence number lower than an earlier one
}

// Complete reports whether every published message arrived exactly once and in order.
func (d Delivery) Complete() bool {
	return d.Missing == 0 && d.Duplicates == 0 && d.Reordered == 0 && d.Received == d.Published
}

// CheckDelivery compares a consumer's samples (in receive order) with the set of published
// sequence numbers.
func CheckDelivery(published []uint64, samples []Sample) Delivery {
	pub := make(map[uint64]bool, len(published))
	for _, s := range published {
		pub[s] = true
	}
	d := Delivery{Published: len(pub), Received: len(samples)}
	seen := make(map[uint64]bool, len(samples))
	var last uint64
	for i, s := range samples {
		if seen[s.Seq] {
			d.Duplicates++
			continue
		}
		seen[s.Seq] = true
		if i > 0 && s.Seq < last {
			d.Reordered++
		}
		last = max(last, s.Seq)
	}
	d.Unique = len(seen)
	for s := range pub {
		if !seen[s] {
			d.Missing++
		}
	}
	return d
}

//go:build race

package keyexpr

// raceEnabled scales the brute-force property tests down under the race detector, which
// slows their regexp matching about a hundredfold.
const raceEnabled = true

//go:build !race

package keyexpr

const raceEnabled = false

//go:build !race

package zenohpath

const raceEnabled = false

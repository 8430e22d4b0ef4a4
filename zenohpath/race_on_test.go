//go:build race

package zenohpath

// raceEnabled: the race detector makes sync objects and allocations larger
// (the fleet smoke test measured 16.7 KB per idle session under -race,
// 10.2 KB without).
const raceEnabled = true

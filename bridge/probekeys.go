package bridge

import "github.com/picobridge/picobridge/probe"

// The probe protocol lives in package probe (docs/probe.md). These
// forwarding names serve gateway.go and server/devices.go until the split of
// the bridge core (docs/architecture.md, item 3) moves those files onto
// package probe; new code uses probe directly.
const (
	ProbePing = probe.Ping
	ProbePong = probe.Pong
)

// PingKey is probe.PingKey.
func PingKey(device string) string { return probe.PingKey(device) }

// ParseProbeKey is probe.ParseKey.
func ParseProbeKey(key string) (device string, kind probe.Kind, ok bool) { return probe.ParseKey(key) }

package probe

import (
	"regexp"
	"strings"
)

// The probe keys (docs/probe.md):
//
//	@picobridge/probe/<device>/ping    gateway → device
//	@picobridge/probe/<device>/pong    device → gateway
//	@picobridge/probe/<device>/knobs   device → gateway, its knob announcement
//
// The responder's subscription to its ping key is how a device announces
// its name.
const (
	// Prefix is the first chunks of every probe key. A chunk starting
	// with @ is verbatim in Zenoh 1.x: wildcard subscriptions do not match it.
	Prefix = "@picobridge/probe/"
	// PongSubscription is the key expression the gateway subscribes to for
	// every device's pongs.
	PongSubscription = Prefix + "*/pong"
	// KnobsSubscription is the key expression the gateway subscribes to for
	// every device's knob announcement.
	KnobsSubscription = Prefix + "*/knobs"
)

// PingKey is the key the gateway publishes device's pings on.
func PingKey(device string) string { return Prefix + device + "/ping" }

// PongKey is the key device's responder answers on.
func PongKey(device string) string { return Prefix + device + "/pong" }

// KnobsKey is the key a device announces its knobs on (knobs.Announcement).
func KnobsKey(device string) string { return Prefix + device + "/knobs" }

// ParseKey splits a ping or pong key into device name and kind; ok is false
// for any other key. A device announces its name by subscribing to its
// PingKey: the router calls ParseKey on subscriber declarations.
func ParseKey(key string) (device string, kind Kind, ok bool) {
	rest, found := strings.CutPrefix(key, Prefix)
	if !found {
		return "", 0, false
	}
	device, last, found := strings.Cut(rest, "/")
	if !found || !ValidDeviceName(device) {
		return "", 0, false
	}
	switch last {
	case "ping":
		return device, Ping, true
	case "pong":
		return device, Pong, true
	}
	return "", 0, false
}

// ParseKnobsKey returns the device name of a KnobsKey; ok is false for any
// other key.
func ParseKnobsKey(key string) (device string, ok bool) {
	rest, found := strings.CutPrefix(key, Prefix)
	if !found {
		return "", false
	}
	device, found = strings.CutSuffix(rest, "/knobs")
	return device, found && ValidDeviceName(device)
}

var deviceNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// ValidDeviceName reports whether s can name a device: 1 to 64 of
// A-Z a-z 0-9 _ . - (one key chunk, no wildcard; the rule of devices.list[].name
// in the gateway's configuration).
func ValidDeviceName(s string) bool { return deviceNameRE.MatchString(s) }

// Package firmware holds the device side of picobridge: the platform and
// board profiles (TOML) that describe what a zenoh-pico device was compiled
// with. The files are embedded, so the binary works from any directory.
//
//	platforms/<name>.toml          one per platform (RTOS / OS family)
//	boards/<platform>/<name>.toml  one per board
//
// The knob schema, the ladder and the checks live in package knobs.
package firmware

import (
	"embed"
	"sync"

	"github.com/picobridge/picobridge/knobs"
)

// Profiles is the embedded profile tree (platforms/, boards/).
//
//go:embed platforms/*.toml boards/*/*.toml
var Profiles embed.FS

// Prefix is prepended to profile file names in messages and provenance.
const Prefix = "firmware"

var catalog = sync.OnceValues(func() (*knobs.Catalog, error) {
	return knobs.LoadCatalog(Profiles, Prefix)
})

// Catalog returns the embedded profiles, loaded and checked once.
func Catalog() (*knobs.Catalog, error) { return catalog() }

// Package knobs models the compile-time knobs of a zenoh-pico / nano-ros
// device, so that the gateway can shape what it sends to each device the
// way the device was built.
//
// The pieces:
//
//   - Registry: every knob the gateway cares about (anchors.md §2.1) with its
//     type, unit, valid range, builtin default, TOML key under [knobs] and its
//     build spellings (NROS_* canonical, deprecated ZPICO_* aliases, Zephyr
//     CONFIG_NROS_* Kconfig symbols).
//   - Profiles: platform and board TOML files (ParseProfile, LoadCatalog); the
//     shipped ones are embedded in package firmware (firmware.Catalog).
//   - Env: the env rung, from the process environment (ProcessEnv) and from
//     KEY=VALUE or Kconfig files (ParseEnvFile).
//   - Catalog.Resolve: the ladder builtin < platform (inherits chain, child
//     wins per field) < board < env/Kconfig, with a Source (rung, file and
//     line, or variable) for every value, the capability check (split lock
//     needs threads) and warnings for values set but not effective.
//   - CapacityOf: the device capacity model the bridge uses per device
//     (largest message, batch size, ring depth, drain and flush intervals,
//     express-rate ceiling).
//   - Advise: nano-ros's TX tuning decision tree applied to a device's
//     traffic (ParseTraffic), with expected throughput.
//
// A bridge resolves a device once:
//
//	cat, err := firmware.Catalog()
//	r, err := cat.Resolve(knobs.Options{Platform: "zephyr", Board: "native_sim"})
//	capa := knobs.CapacityOf(r)
//
// Configuration problems come back as one *ConfigError listing every
// *Problem, each naming file, line, column and key; match them with
// errors.Is against ErrUnknownKey, ErrRange, ErrBadValue and the other
// sentinels. The package does no I/O beyond reading the board file a caller
// names by path.
package knobs

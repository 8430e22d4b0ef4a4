// Package ddspath reads and writes ROS 2 topics on DDS as raw CDR through
// Cyclone DDS 0.10.2 (cgo), without any type support: a sample is the
// serialized XCDR1 bytes including the 4-byte encapsulation header, passed
// through untouched in both directions.
//
// The cgo implementation is behind the build tag "cyclonedds" (files with
// //go:build cgo && cyclonedds). Without it every constructor returns
// ErrUnavailable so the rest of the module builds and tests without Cyclone.
//
// Ownership and concurrency:
//
//   - A Participant owns everything created from it; Participant.Close closes
//     its writers, readers, splits and endpoint watchers, then deletes the DDS
//     participant and, with the last participant of a domain id, the domain.
//   - Bytes passed to Writer.Write are copied by C before Write returns.
//   - Sample.CDR is a Go-owned copy; nothing returned to the caller aliases
//     C memory.
//   - A Reader owns at most one goroutine (default mode) that Close stops and
//     waits for; in listener mode Cyclone's threads call into Go through a
//     runtime/cgo.Handle, copy the samples and enqueue them, nothing more.
//     The handle is deleted only after dds_delete(reader) has returned.
//   - Received samples go into a bounded queue (Reader.C) whose overflow
//     policy (DropOldest, DropNewest, Block) is chosen per reader; drops are
//     counted in Reader.Stats.
//
// Lock order: Participant.mu before Reader.mu / Writer.mu; the registry lock
// (domains) is taken only by Open and Participant.Close, never while holding
// another ddspath lock.
//
// See docs/dds.md for the configuration, the Fast DDS peer and measurements.
package ddspath

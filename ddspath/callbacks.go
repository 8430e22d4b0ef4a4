//go:build cgo && cyclonedds

package ddspath

// This file holds only the //export trampolines: a cgo preamble next to
// //export may not contain C definitions.

/*
#include "rawcdr.h"
*/
import "C"

import "runtime/cgo"

// pbGoDataAvailable is Cyclone's data-available listener for readers made
// WithListener. It runs on a Cyclone thread: it only takes, copies and
// enqueues (Reader.drain), never blocks and never deletes entities.
//
//export pbGoDataAvailable
func pbGoDataAvailable(rd C.dds_entity_t, h C.uintptr_t) {
	r, ok := cgo.Handle(h).Value().(*Reader)
	if !ok || r.closed.Load() {
		return
	}
	r.drain(rd)
}

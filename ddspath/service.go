//go:build cgo && cyclonedds

package ddspath

/*
#include "rawcdr.h"
*/
import "C"

// InstanceHandle is the writer's Cyclone instance handle
// (dds_get_instance_handle): a process-unique 64-bit number. rmw_cyclonedds
// uses the request writer's handle as the client id ("guid") of the 16-byte
// service request header (ros2-services.md §2.1), so a bridge acting as a
// service client puts this value there and recognises its replies by it.
func (w *Writer) InstanceHandle() (uint64, error) {
	if w.closed.Load() {
		return 0, ErrClosed
	}
	var ih C.dds_instance_handle_t
	if rc := C.dds_get_instance_handle(w.wr, &ih); rc < 0 {
		return 0, ddsErr("dds_get_instance_handle", rc)
	}
	return uint64(ih), nil
}

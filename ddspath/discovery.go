//go:build cgo && cyclonedds

package ddspath

/*
#include <stdlib.h>
#include "rawcdr.h"
*/
import "C"

import (
	"context"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// endpointWatch is one running WatchEndpoints call.
type endpointWatch struct {
	gc       C.dds_entity_t
	stopOnce sync.Once
	stopped  chan struct{} // closed when the loop returned
}

func (w *endpointWatch) close() error {
	w.stopOnce.Do(func() { C.dds_set_guardcondition(w.gc, true) })
	<-w.stopped
	return nil
}

// WatchEndpoints reports remote publications and subscriptions (DDS builtin
// topics DCPSPublication / DCPSSubscription) to fn until ctx is done or the
// participant is closed; it returns ctx.Err() or ErrClosed. Endpoints that
// exist already are reported first. Endpoints of p itself and DCPS* topics
// are skipped. A vanished endpoint is reported once with Alive false and the
// topic, type and QoS it was announced with.
//
// fn runs on the caller's goroutine (WatchEndpoints blocks); it must not call
// p.Close.
func (p *Participant) WatchEndpoints(ctx context.Context, fn func(Endpoint)) error {
	w := &endpointWatch{stopped: make(chan struct{})}
	defer close(w.stopped) // runs last: after every entity below is deleted
	pubs := C.pb_create_builtin_reader(p.pp, 0)
	if pubs < 0 {
		return ddsErr("dds_create_reader(DCPSPublication)", C.dds_return_t(pubs))
	}
	defer C.dds_delete(pubs)
	subs := C.pb_create_builtin_reader(p.pp, 1)
	if subs < 0 {
		return ddsErr("dds_create_reader(DCPSSubscription)", C.dds_return_t(subs))
	}
	defer C.dds_delete(subs)
	ws := C.dds_create_waitset(p.pp)
	if ws < 0 {
		return ddsErr("dds_create_waitset", C.dds_return_t(ws))
	}
	defer C.dds_delete(ws)
	gc := C.dds_create_guardcondition(p.pp)
	if gc < 0 {
		return ddsErr("dds_create_guardcondition", C.dds_return_t(gc))
	}
	defer C.dds_delete(gc)
	for i, rd := range []C.dds_entity_t{pubs, subs} {
		rc := C.dds_create_readcondition(rd, C.DDS_ANY_STATE)
		if rc < 0 {
			return ddsErr("dds_create_readcondition", C.dds_return_t(rc))
		}
		if e := C.dds_waitset_attach(ws, rc, C.dds_attach_t(i)); e < 0 {
			return ddsErr("dds_waitset_attach", e)
		}
	}
	if e := C.dds_waitset_attach(ws, gc, 2); e < 0 {
		return ddsErr("dds_waitset_attach", e)
	}

	w.gc = gc
	if err := p.adopt(w); err != nil {
		return err
	}
	defer p.disown(w)
	stop := context.AfterFunc(ctx, func() { w.stopOnce.Do(func() { C.dds_set_guardcondition(gc, true) }) })
	defer stop()

	eps := (*C.pb_endpoint)(C.calloc(takeBatch, C.size_t(unsafe.Sizeof(C.pb_endpoint{}))))
	defer C.free(unsafe.Pointer(eps))
	known := map[GUID]Endpoint{}
	for {
		for kind, rd := range []C.dds_entity_t{pubs, subs} {
			for {
				n := C.pb_endpoints_take(rd, eps, takeBatch, p.ih)
				if n <= 0 {
					break
				}
				got := collectEndpoints(EndpointKind(kind), unsafe.Slice(eps, takeBatch)[:n], known)
				C.pb_endpoints_return(rd, eps, n)
				for _, e := range got {
					fn(e)
				}
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if p.isClosed() {
			return ErrClosed
		}
		if rc := C.dds_waitset_wait(ws, nil, 0, C.dds_duration_t(ddsInfinity)); rc < 0 {
			return ddsErr("dds_waitset_wait", rc)
		}
		var triggered C.bool
		if C.dds_read_guardcondition(gc, &triggered); bool(triggered) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return ErrClosed
		}
	}
}

func (p *Participant) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// collectEndpoints converts taken builtin-topic samples (valid until the loan
// is returned) into Go values, tracking known endpoints for gone events.
func collectEndpoints(kind EndpointKind, eps []C.pb_endpoint, known map[GUID]Endpoint) []Endpoint {
	var out []Endpoint
	for i := range eps {
		e := &eps[i]
		if e.valid == 0 {
			continue
		}
		guid := GUID(C.GoBytes(unsafe.Pointer(&e.key[0]), 16))
		if e.topic == nil {
			// key-only sample: the endpoint went away
			if prev, ok := known[guid]; ok {
				delete(known, guid)
				prev.Alive = false
				out = append(out, prev)
			}
			continue
		}
		ep := Endpoint{
			Kind:        kind,
			GUID:        guid,
			Participant: GUID(C.GoBytes(unsafe.Pointer(&e.participant_key[0]), 16)),
			Alive:       e.alive != 0,
			Topic:       C.GoString(e.topic),
			TypeName:    C.GoString(e.type_name),
			QoS:         qosFromC(&e.qos),
		}
		if strings.HasPrefix(ep.Topic, "DCPS") {
			continue
		}
		ep.TypeHash = TypeHashFromUserData(ep.QoS.UserData)
		if ep.Alive {
			known[guid] = ep
		} else {
			if _, ok := known[guid]; !ok {
				continue // never reported alive: nothing to retract
			}
			delete(known, guid)
		}
		out = append(out, ep)
	}
	return out
}

func qosFromC(q *C.pb_qos_out) QoS {
	out := QoS{Depth: 1, MaxSamples: Unlimited, MaxBlocking: DefaultMaxBlocking}
	if q.has_reliability != 0 {
		if q.reliability != 0 {
			out.Reliability = Reliable
		}
		if int64(q.max_blocking) >= ddsInfinity {
			out.MaxBlocking = -1
		} else {
			out.MaxBlocking = time.Duration(q.max_blocking)
		}
	}
	if q.has_durability != 0 {
		out.Durability = Durability(q.durability)
	}
	if q.has_history != 0 {
		if q.history != 0 {
			out.History = KeepAll
		}
		out.Depth = int32(q.depth)
	}
	if q.has_limits != 0 {
		out.MaxSamples = int32(q.max_samples)
	}
	if q.userdata_len > 0 {
		out.UserData = C.GoBytes(q.userdata, C.int(q.userdata_len))
	}
	return out
}

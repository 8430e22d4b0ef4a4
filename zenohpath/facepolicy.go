package zenohpath

import (
	"github.com/picobridge/picobridge/zenohpath/transport"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// Face combinations the router cannot serve are refused at open (issue 12
// item 4): the session gets CLOSE(UNSUPPORTED) and the log a WARN that says
// what to do instead, rather than a face that is accepted and then carries
// nothing (a Rust router waits for link-state and declarations that never
// come, zenoh-mesh-auth.md §0 and §2.8).

// unsupportedFace returns why a session with a remote of role remote,
// accepted (dialled=false) or dialled by us, cannot be served by a router
// announcing ours, and what the operator can do; "" when it is supported.
// mesh reports whether the router runs the router↔router link-state
// protocol (mesh.go) with remote routers.
func unsupportedFace(ours, remote wire.WhatAmI, dialled, mesh bool) string {
	if remote != wire.WhatAmIRouter {
		return ""
	}
	switch {
	case ours == wire.WhatAmIRouter && mesh:
		return ""
	case ours == wire.WhatAmIRouter && !dialled:
		return "a Zenoh router dialled us as a router, and router↔router link-state is off on this router: " +
			"let picobridge dial that router instead (picobridge router -e <its endpoint>), or connect it as a client"
	case !dialled:
		// A router puts a peer in PULL mode (zenoh-mesh-auth.md §2.8): it
		// declares nothing until the peer sends interests, which we send
		// only to faces we dialled.
		return "a Zenoh router dialled us while we run as a peer: a router declares nothing to a peer that does not ask; " +
			"let picobridge dial the router instead (-e <its endpoint>), or run picobridge as a router"
	}
	return ""
}

// refuseUnsupported closes s with CLOSE(UNSUPPORTED) and logs at WARN when
// the combination is unsupported; it reports whether it did.
func (r *Router) refuseUnsupported(s *transport.Session, dialled bool) bool {
	why := unsupportedFace(r.whatami, s.PeerWhatAmI(), dialled, r.meshOn())
	if why == "" {
		return false
	}
	r.log.Warn("session refused: unsupported combination of roles", "zid", s.PeerZID().String(),
		"whatami", s.PeerWhatAmI().String(), "ours", r.whatami.String(), "remote", addrString(s), "what_to_do", why)
	_ = s.Close(transport.ReasonUnsupported)
	return true
}

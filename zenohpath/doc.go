// Package zenohpath is picobridge's Zenoh 1.x (protocol 0x09) router and the Go
// client API built on it.
//
// # Router
//
// A [Router] keeps one face per transport session (and one for each in-process
// [Session]). It resolves wire expressions in both mapping directions (M=1: the
// scope id was declared by the sender, M=0: by the receiver, zenoh-wire.md §9.1),
// keeps the subscribers, queryables and liveliness tokens each face declared,
// answers INTERESTs (aggregated for zenoh-pico's A flag, one declaration per
// entity otherwise, always terminated by DeclareFinal for a Current part,
// §9.7, §12.4) and forwards future declarations to the faces that asked. PUSHes
// go to every other face with an intersecting subscriber; REQUESTs go to the
// faces with an intersecting queryable under a request id of the target face,
// and the querier gets exactly one RESPONSE_FINAL once every target finished or
// the query timed out (§9.3–§9.5, §12.5). When a face dies everything it
// declared is undeclared towards the faces that were told about it.
//
// An "upstream" face is one where we are the client (picobridge router -e, or a
// Session in client mode): we declare our faces' entities to it and forward it
// our faces' interests, nothing more (upstream.go), so a client learns the
// entities it asked about and N clients cost a router O(N) declarations.
// PUSHes and REQUESTs go to it unless an answered interest of ours says it has
// no match.
//
// PUSH fan-out encodes the routed message once and queues the same bytes on
// every transport face (link.sendShared).
//
// # Client API
//
// [Open] returns a [Session] shaped like zenoh-go (§15.2): publishers,
// subscribers, Get, queryables and liveliness. A Session is a Router with one
// local face; in client mode it dials one router (upstream), in peer mode it
// may also listen and route between the clients that connect to it.
//
// # Concurrency and locks
//
// Router.mu (a RWMutex: a PUSH whose route is cached takes it shared) guards
// every table. Declarations and interest replies are sent
// while holding it (so their order per face is the order of the table changes);
// data (PUSH, REQUEST, RESPONSE, RESPONSE_FINAL) is sent after releasing it, so
// a slow face never stalls routing for longer than its transport's block
// timeout. Lock order: Router.mu, then localLink.mu; a transport Send never
// calls back into the router. Never call a transport Close while holding
// Router.mu (its HandleClose re-enters the router).
package zenohpath

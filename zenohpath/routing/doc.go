// Package routing holds the router↔router protocol rules of Zenoh 1.x
// (zenoh-mesh-auth.md §1, §2): the link-state codec carried in network OAM
// messages (OAM id 0x0001), the network graph built from the link-states of
// every router (with the link weights each sets, §1.6), and the routing
// trees computed over it (one per source router: its parent, children and
// next hops). It is pure logic over values with no I/O and no locking; the
// zenohpath router owns one Network, calls it under its own lock and sends
// what it returns.
package routing

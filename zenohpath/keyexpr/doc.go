// Package keyexpr implements Zenoh 1.x key expressions: validation, canonical form, and the
// two set relations a router needs, intersects and includes (zenoh-wire.md §11).
//
// A key expression is a '/'-separated list of non-empty UTF-8 chunks denoting a set of keys.
// Wildcards:
//
//	"*"   exactly one chunk (alone in its chunk)
//	"**"  zero or more chunks (alone in its chunk)
//	"$*"  any, possibly empty, substring inside a chunk: "robot$*", "a$*b"
//
// A chunk starting with '@' is verbatim ("@ros2_lv", "@adv", admin space "@/..."): it is
// matched only by an identical chunk, never by *, ** or $*.
//
// The canonical form is the only one accepted on the wire (zenoh-wire.md §11.1): "$*$*" becomes
// "$*", a chunk "$*" becomes "*", "**/**" becomes "**" and "**/*" becomes "*/**". With canonical
// forms, string equality is set equality.
//
// The functions mirror the Rust crate zenoh-keyexpr (key_expr/borrowed.rs, canon.rs,
// intersect/classical.rs, include.rs) and zenoh-pico (src/session/keyexpr.c): same accepted
// language, same canonical strings, same answers on canonical inputs. The matching algorithms
// are our own: a dynamic program over chunk indices (linear in each chunk pair, never
// exponential) that allocates nothing for expressions of up to [MaxStackChunks] chunks.
package keyexpr

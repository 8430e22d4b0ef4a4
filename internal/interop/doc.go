// Package interop is picobridge's harness for interoperability tests against the real Rust
// Zenoh, driven through Python's eclipse-zenoh package (pinned at [ZenohVersion]).
//
// Each Zenoh endpoint a test needs (router, peer, client publisher, subscriber, queryable,
// getter, liveliness token, liveliness subscriber or getter) is one process running
// testdata/zpeer.py, which reports what it sees as JSON lines on stdout. [Start] launches it
// and parses the lines into [Event]s; [Proc.WaitEvent] polls for the next event of a kind;
// the process is stopped in t.Cleanup and its stdout and stderr are logged when the test
// failed. [StartProxy] puts a recording TCP proxy between two endpoints so tests can look at
// the batches real Zenoh sends.
//
// Environment:
//
//	PICOBRIDGE_PYTHON     python interpreter that can `import zenoh` (default: python3 on PATH)
//	PICOBRIDGE_TIMESCALE  factor applied to every timeout of the harness (default 1; e.g. 3 on slow CI)
//	PICOBRIDGE_ZPEER_LOG  Rust log level for every zpeer process (e.g. debug), written to its stderr
//	CI                    when "true", a missing or wrong eclipse-zenoh fails the test instead of skipping it
//
// docs/interop.md describes the harness, the flags and events of zpeer.py and how a test
// swaps the Python router for picobridge's Go router.
package interop

// Package measure computes the evaluation's measures (evaluation.md, "Measures") from raw
// records: message latency percentiles, publisher rate per 5 s window and its standard
// deviation over sliding 5 s windows, publish errors and blocked time, delivered rate,
// delivery order, classifier transitions with detection and recovery times after a toggle,
// and the CPU time and peak RSS of a process.
//
// Everything here is a pure function of its inputs except the resource readers in
// resources.go; all times are on one clock (Unix nanoseconds of the host's CLOCK_REALTIME).
package measure

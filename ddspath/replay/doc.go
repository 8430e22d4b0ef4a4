// Package replay publishes recorded or synthetic ROS 2 messages onto an output Sink with
// their recorded timing, a speed factor, or a fixed rate per topic, optionally rewriting each
// message's header stamp to its send time so that a receiver can measure latency.
//
// The pieces:
//
//   - Sink: where messages go (the lead adapts ddspath's raw-CDR writer to it; PrintSink is
//     the dry-run output).
//   - Source: a time-ordered stream of Items (offset, topic, CDR). NewBagSource replays a
//     rosbag2 bag at recorded timing × speed, optionally looping; NewFixedRateSource cycles
//     one topic of a bag at a fixed rate; NewSyntheticScan makes LaserScans.
//   - Clock: wall time in production, VirtualClock in tests and dry runs (no real sleeps).
//   - Engine: merges the sources by due time, sleeps until each item is due, restamps,
//     writes, and counts.
package replay

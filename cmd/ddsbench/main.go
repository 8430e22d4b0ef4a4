// Command ddsbench measures ddspath (Cyclone DDS, raw CDR) against the Fast
// DDS peer on loopback and prints a Markdown table: write→take throughput and
// p50/p99 latency at 1 kHz and at full rate for 1.5 KB and 64 KB samples.
// Build with -tags cyclonedds. See docs/dds.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/picobridge/picobridge/eval/ddsbench"
)

func main() {
	role := flag.String("role", "bench", "bench, or sub (internal: the ddspath subscriber process)")
	domain := flag.Uint("domain", 42, "DDS domain id")
	topic := flag.String("topic", "", "sub role: topic")
	count := flag.Int("count", 0, "sub role: samples to receive")
	peer := flag.String("peer", "", "fastddspeer binary (default: built into a temp dir)")
	countRate := flag.Int("count-rate", 2000, "samples per 1 kHz run")
	countFull := flag.Int("count-full", 5000, "samples per full-rate run")
	quiet := flag.Bool("q", false, "no progress lines on stderr")
	hb := flag.Duration("peer-heartbeat", 0, "Fast DDS publisher heartbeat period (0: Fast DDS default 3s)")
	whc := flag.Int("whc-high", 0, "ddspath Config.WhcHigh in bytes (0: Cyclone's 30 kB initial / 500 kB adaptive)")
	pairs := flag.String("pairs", "", "comma-separated pair numbers to run (1-5, default all): "+ddsbench.PairList())
	flag.Parse()

	if *role == "sub" {
		if err := ddsbench.RunSubscriberMain(uint32(*domain), *topic, *count, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "ddsbench sub:", err)
			os.Exit(1)
		}
		return
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ddsbench:", err)
		os.Exit(1)
	}
	cfg := ddsbench.Config{DomainID: uint32(*domain), PeerBinary: *peer, Self: self,
		CountRate: *countRate, CountFull: *countFull, Log: os.Stderr}
	cfg.Cyclone.WhcHigh = *whc
	cfg.PeerHeartbeat = *hb
	if cfg.Pairs, err = ddsbench.ParsePairs(*pairs); err != nil {
		fmt.Fprintln(os.Stderr, "ddsbench:", err)
		os.Exit(2)
	}
	if *quiet {
		cfg.Log = nil
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := ddsbench.Run(ctx, cfg)
	fmt.Print(ddsbench.Markdown(res))
	if err != nil {
		fmt.Fprintln(os.Stderr, "ddsbench:", err)
		os.Exit(1)
	}
}

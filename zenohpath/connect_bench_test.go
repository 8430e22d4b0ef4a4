package zenohpath

import (
	"fmt"
	"testing"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// BenchmarkFleetDeclare measures what N devices cost the router's tables
// when they connect: each face declares a subscriber on its own key and a
// pico publisher interest (K|S|R|A) on the next device's key, plus one
// gateway subscriber on "fleet/**". ns/face is the routing work per
// connecting device (links only count); with O(N) connect cost it stays flat
// as N grows.
func BenchmarkFleetDeclare(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			for range b.N {
				r := NewRouter(RouterConfig{})
				gw, _ := r.addFace(nopLink{}, RandomZID(), wire.WhatAmIClient, false)
				r.handle(gw, declSub(1, "fleet/**"))
				for i := range n {
					f, _ := r.addFace(nopLink{}, RandomZID(), wire.WhatAmIClient, false)
					r.handle(f, declSub(1, fmt.Sprintf("fleet/dev%d/cmd", i)))
					r.handle(f, &wire.Interest{Mode: wire.InterestCurrentFuture, ID: 2,
						Options:  wire.InterestKeyExprs | wire.InterestSubscribers | wire.InterestRestricted | wire.InterestAggregate,
						WireExpr: wireKey(fmt.Sprintf("fleet/dev%d/cmd", i+1))})
				}
				_ = r.Close()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/face")
		})
	}
}

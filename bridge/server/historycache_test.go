package server

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func hist(items [][]byte) []string {
	out := make([]string, len(items))
	for i, p := range items {
		out[i] = string(p)
	}
	return out
}

// routes.transient_local_cache_multiplier: each writer keeps its depth, the
// route at most depth × multiplier samples, the oldest of any writer going
// first; _max=N answers the newest N.
func TestHistoryCacheMultiplier(t *testing.T) {
	h := newHistoryCache(2, 3) // depth 2, multiplier 3: 6 in all
	for _, s := range []string{"a1", "a2", "a3"} {
		h.add(1, []byte(s))
	}
	require.Equal(t, []string{"a2", "a3"}, hist(h.snapshot(0)), "one writer: its depth, as a DDS late joiner of it gets")
	for _, s := range []string{"b1", "b2", "b3", "c1"} {
		h.add(2+uint64(s[0]-'b'), []byte(s))
	}
	require.Equal(t, []string{"a2", "a3", "b2", "b3", "c1"}, hist(h.snapshot(0)), "every writer keeps its depth")
	h.add(4, []byte("d1"))
	h.add(4, []byte("d2"))
	require.Equal(t, []string{"a3", "b2", "b3", "c1", "d1", "d2"}, hist(h.snapshot(0)), "at most depth × multiplier: the oldest goes")
	require.Equal(t, []string{"d1", "d2"}, hist(h.snapshot(2)))
	require.Equal(t, 6, len(h.snapshot(100)))

	one := newHistoryCache(5, 1) // multiplier 1: the route holds one writer's depth
	for i := range 4 {
		one.add(uint64(i%2), []byte{byte('0' + i)})
	}
	one.add(0, []byte("4"))
	one.add(1, []byte("5"))
	require.Equal(t, []string{"1", "2", "3", "4", "5"}, hist(one.snapshot(0)))
}

func TestHistoryMaxParam(t *testing.T) {
	for params, want := range map[string]int{"": 0, "_max=3": 3, "a=b;_max=7": 7, "_max=x": 0, "_max=-1": 0, "_maxx=2": 0} {
		require.Equal(t, want, maxParam(params), params)
	}
}

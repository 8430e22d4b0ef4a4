package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/keyexpr"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// The @adv keys, byte for byte as zenoh-ext 1.10.2 builds them for
// zenoh-bridge-ros2dds 1.10.2 (advanced_publisher.rs: KE_ADV_PREFIX / KE_PUB /
// zid / KE_UHLC / KE_EMPTY for a cache without sample_miss_detection;
// advanced_subscriber.rs: `<key>/@adv/**` with _max, liveliness
// `<key>/@adv/pub/**`), and how they intersect.
func TestAdvHistoryKeys(t *testing.T) {
	// ZenohId's Display is the u128 (little-endian wire bytes) in hex,
	// leading zeros stripped: wire 01 02 … 10 → "100f0e0d0c0b0a090807060504030201".
	zid := wire.MustZID([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	require.Equal(t, "@adv/pub/100f0e0d0c0b0a090807060504030201/uhlc/_", advPubSuffix(zid))
	small := wire.MustZID([]byte{0xab, 0x0c, 0x00})
	require.Equal(t, "robot1/map/@adv/pub/cab/uhlc/_", advPubKey("robot1/map", small))
	require.Equal(t, "robot1/map/@adv/**?_max=7;_anyke", advHistorySelector("robot1/map", 7))
	require.Equal(t, "robot1/map/@adv/pub/**", advLivelinessKey("robot1/map"))

	adv := advPubKey("robot1/map", zid)
	require.True(t, keyexpr.Intersects("robot1/map/@adv/**", adv), "the AdvancedSubscriber's history query reaches our cache")
	require.True(t, keyexpr.Intersects(advLivelinessKey("robot1/map"), adv), "its liveliness subscriber sees our token")
	require.False(t, keyexpr.Intersects("robot1/map", adv), "plain subscribers of the key never see the @adv key")
	require.False(t, keyexpr.Intersects("robot1/**", adv), "** does not match the verbatim @adv chunk")
	require.False(t, keyexpr.Intersects("robot1/map/@adv/**", "robot1/map"), "our plain-key queryable does not answer @adv queries")
}

func TestAdvTokenZID(t *testing.T) {
	require.Equal(t, "cab", advTokenZID("robot1/map", "robot1/map/@adv/pub/cab/uhlc/_"))
	require.Equal(t, "cab", advTokenZID("robot1/map", "robot1/map/@adv/pub/cab/7/_"), "a sequenced publisher (eid)")
	require.Equal(t, "", advTokenZID("robot1/map", "robot1/mapx/@adv/pub/cab/uhlc/_"))
	require.Equal(t, "", advTokenZID("robot1/map", "robot1/map/@adv/sub/cab/uhlc/_"))
}

// snBounded: zenoh-ext's cache answers a bounded _sn range only with
// samples that carry source info (advanced_cache.rs decode_sn_range).
func TestAdvHistorySNParam(t *testing.T) {
	for params, want := range map[string]bool{"": false, "_max=5": false, "_sn=..": false, "_sn=3..": true, "_sn=..9": true, "_max=2;_sn=4..6": true, "_sn=4": true} {
		require.Equal(t, want, snBounded(params), params)
	}
}

// The gateway's HLC: uhlc's NTP64 (UNIX seconds << 32 | fraction), the 4
// low bits a counter, strictly increasing on a stalled or backward clock,
// the session's ZID as ID.
func TestAdvHistoryHLC(t *testing.T) {
	require.Equal(t, uint64(1)<<32|1<<31, ntp64(time.Unix(1, 500_000_000)))
	require.Equal(t, uint64(1_700_000_000)<<32|1<<30, ntp64(time.Unix(1_700_000_000, 250_000_000)))
	zid := wire.MustZID([]byte{7})
	now := time.Unix(1_700_000_000, 0)
	h := newHLC(zid)
	h.now = func() time.Time { return now }
	a, b := h.next(), h.next()
	require.Equal(t, uint64(1_700_000_000)<<32, a.Time)
	require.Equal(t, a.Time+1, b.Time, "same instant: the counter")
	require.Equal(t, zid, a.ZID)
	now = now.Add(-time.Second)
	require.Equal(t, b.Time+1, h.next().Time, "a clock going back never reorders")
	now = now.Add(2 * time.Second)
	require.Equal(t, uint64(1_700_000_001)<<32, h.next().Time)
}

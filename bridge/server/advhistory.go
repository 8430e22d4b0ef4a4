package server

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/picobridge/picobridge/zenohpath"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// zenoh-ext's AdvancedPublisher / AdvancedSubscriber key layout, as
// zenoh-bridge-ros2dds ≥ 1.6 speaks it for TRANSIENT_LOCAL topics (read in
// zenoh-ext 1.10.2 and zenoh-plugin-ros2dds 1.10.2; docs/bridge.md
// "zenoh-bridge-ros2dds keys"):
//
//   - route_publisher.rs declares `.advanced().cache(max_samples(depth ×
//     transient_local_cache_multiplier)).publisher_detection()`, no
//     sample_miss_detection: advanced_publisher.rs `cache()` then picks
//     Sequencing::Timestamp, so the publisher's suffix is
//     `@adv/pub/<zid>/uhlc/_` (KE_ADV_PREFIX "@adv" / KE_PUB "pub" / zid /
//     KE_UHLC "uhlc" / KE_EMPTY "_", no metadata chunk); its cache's
//     queryable and its liveliness token are both `<key>/<suffix>`; every
//     put carries an HLC timestamp of the session and no source info.
//   - advanced_cache.rs answers a query with the cached samples on their
//     own key `<key>` (the query carries `_anyke`), oldest first, the newest
//     `_max` of them; a bounded `_sn` range selects only samples with source
//     info (none here); `_time` filters by timestamp.
//   - route_subscriber.rs declares `.advanced().history(
//     detect_late_publishers().max_samples(depth))`: advanced_subscriber.rs
//     gets `<key>/@adv/**?_max=<depth>` (plus `_anyke`, ReplyKeyExpr::Any,
//     target All, consolidation None), and subscribes to liveliness
//     `<key>/@adv/pub/**` with history, querying `<token key>?_max=<depth>`
//     for each publisher it detects. Replies with a timestamp are
//     delivered in timestamp order per source and deduplicated by it;
//     replies without one are delivered as they come (twice when both
//     queries reach the same cache).

// advPubSuffix is the key suffix of a timestamp-sequenced AdvancedPublisher
// of the session zid: "@adv/pub/<zid>/uhlc/_" (zid in Rust's ZenohId form,
// wire.ZID.String).
func advPubSuffix(zid wire.ZID) string {
	return "@adv/pub/" + zid.String() + "/uhlc/_"
}

// advPubKey is the queryable and liveliness token key of the gateway's
// AdvancedPublisher on key.
func advPubKey(key string, zid wire.ZID) string { return key + "/" + advPubSuffix(zid) }

// advHistorySelector is an AdvancedSubscriber's initial history query for
// the newest depth samples on key.
func advHistorySelector(key string, depth int) string {
	return key + "/@adv/**?_max=" + strconv.Itoa(depth) + ";_anyke"
}

// advLivelinessKey is what an AdvancedSubscriber with
// detect_late_publishers watches: every AdvancedPublisher on key.
func advLivelinessKey(key string) string { return key + "/@adv/pub/**" }

// advTokenZID is the zid chunk of an AdvancedPublisher token on key
// (`<key>/@adv/pub/<zid>/…`, advanced_cache.rs ke_liveliness), "" when tok
// is not one.
func advTokenZID(key, tok string) string {
	rest, ok := strings.CutPrefix(tok, key+"/@adv/pub/")
	if !ok {
		return ""
	}
	zid, _, _ := strings.Cut(rest, "/")
	return zid
}

// snBounded reports whether params carry a bounded _sn range (a
// retransmission query): zenoh-ext's cache then answers only samples with
// source info, which the gateway's never have.
func snBounded(params string) bool {
	for _, kv := range strings.Split(params, ";") {
		if v, ok := strings.CutPrefix(kv, "_sn="); ok {
			return v != ".."
		}
	}
	return false
}

// hlc issues the gateway's Zenoh timestamps (what a Rust session with
// timestamping gives every AdvancedPublisher put): NTP64 time (seconds
// since the UNIX epoch << 32 | fraction, uhlc's format) with its 4 low
// bits a counter, strictly increasing, and the session's ZID as the
// timestamp's ID (zenoh-ext keys its per-source order on it).
type hlc struct {
	mu   sync.Mutex
	last uint64
	zid  wire.ZID
	now  func() time.Time
}

func newHLC(zid wire.ZID) *hlc { return &hlc{zid: zid, now: time.Now} }

// ntp64 is t in uhlc's NTP64 form.
func ntp64(t time.Time) uint64 {
	ns := uint64(t.UnixNano())
	sec, frac := ns/1e9, ns%1e9
	return sec<<32 | (frac<<32)/1e9
}

func (h *hlc) next() zenohpath.Timestamp {
	h.mu.Lock()
	defer h.mu.Unlock()
	t := ntp64(h.now()) &^ 0xf
	if t <= h.last {
		t = h.last + 1
	}
	h.last = t
	return zenohpath.Timestamp{Time: t, ZID: h.zid}
}

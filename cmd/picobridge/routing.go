package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/picobridge/picobridge/zenohpath"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// transportWeightsKey is zenohd's key of the link weights towards
// neighbour routers (zenoh-mesh-auth.md §1.6; docs/router.md "Link
// weights"), which `picobridge router --cfg` takes as a JSON list.
const transportWeightsKey = "routing/router/linkstate/transport_weights"

// transportWeights reads --cfg routing/router/linkstate/transport_weights:
// a JSON list of {"dst_zid": "<zid hex>", "weight": 1..65535}; the last
// such --cfg wins. Errors name the flag, the key and the allowed values.
func (o *routerOptions) transportWeights() (map[wire.ZID]uint16, error) {
	var rc zenohpath.RoutingConfig
	for _, kv := range o.cfg {
		k, v, ok := strings.Cut(kv, ":")
		if !ok || routerKey(k) != transportWeightsKey {
			continue // scouting() names a malformed or unknown key
		}
		var ws []zenohpath.TransportWeight
		d := json.NewDecoder(strings.NewReader(strings.TrimSpace(v)))
		d.DisallowUnknownFields()
		if err := d.Decode(&ws); err != nil {
			return nil, fmt.Errorf(`--cfg %s: %q: want a JSON list of {"dst_zid": "<zid hex>", "weight": 1..65535}: %v`, transportWeightsKey, v, err)
		}
		rc.Router.Linkstate.TransportWeights = ws
	}
	m, err := rc.TransportWeightMap()
	if err != nil {
		return nil, fmt.Errorf("--cfg %w", err)
	}
	return m, nil
}

package zenohpath

import (
	"fmt"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// RoutingConfig is the `routing` section of the configuration, with the
// key names of zenohd's DEFAULT_CONFIG.json5: today only
// router.linkstate.transport_weights (zenoh-mesh-auth.md §1.6).
type RoutingConfig struct {
	Router RouterRoutingConfig `yaml:"router" json:"router"`
}

// RouterRoutingConfig is routing.router.
type RouterRoutingConfig struct {
	Linkstate LinkstateConfig `yaml:"linkstate" json:"linkstate"`
}

// LinkstateConfig is routing.router.linkstate.
type LinkstateConfig struct {
	// TransportWeights are our link weights towards neighbour routers
	// (zenohd: routing/router/linkstate/transport_weights; none by
	// default): the edge to a router costs the larger of the weights both
	// ends set, 100 when neither does (§1.6). RouterConfig.TransportWeights
	// takes them (TransportWeightMap).
	TransportWeights []TransportWeight `yaml:"transport_weights" json:"transport_weights"`
}

// TransportWeight is one entry of transport_weights: the weight of our
// link to router DstZID.
type TransportWeight struct {
	// DstZID is the neighbour's zid as zenohd prints it (1..32 hex digits:
	// 1..16 bytes, not all zero).
	DstZID string `yaml:"dst_zid" json:"dst_zid"`
	// Weight is the link's cost, 1..65535 (zenohd: a NonZeroU16).
	Weight int `yaml:"weight" json:"weight"`
}

// RoutingProblem is one invalid routing key: Key is relative to the
// routing section, dotted ("router.linkstate.transport_weights[0].weight").
type RoutingProblem struct {
	Key, Msg string
}

func (p RoutingProblem) Error() string { return "routing." + p.Key + ": " + p.Msg }

const weightsKey = "router.linkstate.transport_weights"

// Problems lists every invalid key of c (nil: valid): a dst_zid that is
// not 1..32 hex digits (or all zero), a weight outside 1..65535, a dst_zid
// given twice (zenohd refuses that too, link_weights_from_config).
func (c RoutingConfig) Problems() []RoutingProblem {
	var ps []RoutingProblem
	seen := map[wire.ZID]int{}
	for i, w := range c.Router.Linkstate.TransportWeights {
		k := fmt.Sprintf("%s[%d]", weightsKey, i)
		if z, err := wire.ParseZID(w.DstZID); err != nil {
			ps = append(ps, RoutingProblem{k + ".dst_zid", fmt.Sprintf("want a zid as zenohd prints it: 1..32 hex digits (1..16 bytes), not all zero (got %q)", w.DstZID)})
		} else if j, dup := seen[z]; dup {
			ps = append(ps, RoutingProblem{k + ".dst_zid", fmt.Sprintf("%s already has a weight in transport_weights[%d] (allowed: one entry per zid)", w.DstZID, j)})
		} else {
			seen[z] = i
		}
		if w.Weight < 1 || w.Weight > 0xffff {
			ps = append(ps, RoutingProblem{k + ".weight", fmt.Sprintf("must be in 1..65535 (got %d)", w.Weight)})
		}
	}
	return ps
}

// TransportWeightMap is the transport weights by zid, for
// RouterConfig.TransportWeights; the first problem of Problems if any.
func (c RoutingConfig) TransportWeightMap() (map[wire.ZID]uint16, error) {
	if ps := c.Problems(); len(ps) > 0 {
		return nil, ps[0]
	}
	out := map[wire.ZID]uint16{}
	for _, w := range c.Router.Linkstate.TransportWeights {
		z, _ := wire.ParseZID(w.DstZID)
		out[z] = uint16(w.Weight)
	}
	return out, nil
}

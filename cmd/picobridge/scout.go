package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/picobridge/picobridge/internal/cli"
	"github.com/picobridge/picobridge/zenohpath"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

func init() { subcommands = append(subcommands, newScoutCommand) }

// scoutingKeys are the --cfg keys of `picobridge router`, named as in
// zenohd's configuration (scouting/multicast/...), plus scouting/unicast/address.
var scoutingKeys = map[string]func(*zenohpath.ScoutingConfig, string) error{
	"scouting/multicast/enabled": func(c *zenohpath.ScoutingConfig, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("want true or false")
		}
		c.Multicast.Enabled = b
		return nil
	},
	"scouting/multicast/address":   func(c *zenohpath.ScoutingConfig, v string) error { c.Multicast.Address = v; return nil },
	"scouting/multicast/interface": func(c *zenohpath.ScoutingConfig, v string) error { c.Multicast.Interface = v; return nil },
	"scouting/unicast/address":     func(c *zenohpath.ScoutingConfig, v string) error { c.Unicast.Address = v; return nil },
}

// routerKey is the key of `picobridge router --cfg` for k: zenohd's key
// with / between the parts, written with / or . (scouting.multicast.enabled
// is scouting/multicast/enabled), and the keys `picobridge run` names the
// same settings by taken as aliases (zenoh.scouting.multicast.enabled,
// zenoh.routing.router.linkstate.transport_weights).
func routerKey(k string) string {
	key := strings.ReplaceAll(strings.TrimSpace(k), ".", "/")
	if rest, ok := strings.CutPrefix(key, "zenoh/"); ok && (strings.HasPrefix(rest, "scouting/") || strings.HasPrefix(rest, "routing/")) {
		key = rest
	}
	switch key {
	case "zenoh/mode", "zenoh/id":
		key = strings.TrimPrefix(key, "zenoh/")
	case "zenoh/listen", "zenoh/connect":
		key = strings.TrimPrefix(key, "zenoh/") + "/endpoints"
	case "transport/max_message_size":
		key = "transport/link/rx/max_message_size"
	}
	return key
}

// cfgKeyNames lists every key of `picobridge router --cfg`.
func cfgKeyNames() []string {
	return append(append(append(scoutingKeyNames(), securityKeyNames()...), transportWeightsKey), routerFlagKeyNames()...)
}

func scoutingKeyNames() []string {
	var ks []string
	for k := range scoutingKeys {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// scouting builds the scouting configuration from --cfg: KEY:VALUE, the key
// with / (zenohd) or . separators, the value optionally quoted as in JSON5
// ("eth0"). Errors name the flag, the key and the allowed keys or values.
func (o *routerOptions) scouting() (zenohpath.ScoutingConfig, error) {
	var c zenohpath.ScoutingConfig
	for _, kv := range o.cfg {
		k, v, ok := strings.Cut(kv, ":")
		if !ok {
			return c, fmt.Errorf("--cfg %q: want KEY:VALUE, e.g. scouting/multicast/interface:eth0", kv)
		}
		key := routerKey(k)
		if _, flagKey := routerFlagKeys[key]; flagKey || isSecurityKey(key) || key == transportWeightsKey {
			continue // security.go, routing.go
		}
		set, ok := scoutingKeys[key]
		if !ok {
			return c, fmt.Errorf("--cfg %q: unknown key %q (allowed: %s)", kv, k, strings.Join(cfgKeyNames(), ", "))
		}
		v = strings.TrimSpace(v)
		if uq, err := strconv.Unquote(v); err == nil {
			v = uq
		}
		if err := set(&c, v); err != nil {
			return c, fmt.Errorf("--cfg %s: %q: %w", key, v, err)
		}
	}
	if ps := c.Problems(); len(ps) > 0 {
		p := ps[0]
		return c, fmt.Errorf("--cfg scouting/%s: %s", strings.ReplaceAll(p.Key, ".", "/"), p.Msg)
	}
	return c, nil
}

// scoutOptions are the flags of `picobridge scout` (like zenoh's z_scout).
type scoutOptions struct {
	address   string
	iface     string
	what      string
	timeout   time.Duration
	ttl       int
	jsonLines bool
}

func newScoutCommand() *cobra.Command {
	var o scoutOptions
	cmd := &cobra.Command{
		Use:   "scout",
		Short: "List the Zenoh routers and peers that answer a SCOUT (like z_scout)",
		Long: `Sends a Zenoh SCOUT (to the multicast group 224.0.0.224:7446 by default, or to a
unicast address) and prints each HELLO received within the timeout: zid, whatami and
locators, one line per node. Exits 1 when nothing answered. This sends multicast on the
network: use --interface to choose where.`,
		Example: `  picobridge scout
  picobridge scout --interface eth0 --timeout 3s
  picobridge scout --address 10.0.0.5:7446 --what router --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runScout(ctx, o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.address, "address", "a", zenohpath.DefaultScoutingAddress, "where the SCOUT goes: multicast group or unicast IP, host:port")
	f.StringVarP(&o.iface, "interface", "i", "", "interface a multicast SCOUT leaves by (default: the system's route)")
	f.StringVarP(&o.what, "what", "w", "router|peer", "roles asked for, |-separated: router, peer, client")
	f.DurationVarP(&o.timeout, "timeout", "t", zenohpath.DefaultScoutTimeout, "how long to collect HELLOs")
	f.IntVar(&o.ttl, "ttl", 1, "multicast hop limit (1: the local network)")
	f.BoolVar(&o.jsonLines, "json", false, "print one JSON object per HELLO: {\"zid\",\"whatami\",\"locators\",\"from\"}")
	return cmd
}

func parseWhat(s string) (wire.WhatMask, error) {
	var m wire.WhatMask
	for _, p := range strings.Split(s, "|") {
		switch strings.TrimSpace(p) {
		case "router":
			m |= wire.WhatRouter
		case "peer":
			m |= wire.WhatPeer
		case "client":
			m |= wire.WhatClient
		default:
			return 0, cli.Usagef("--what %q: want router, peer and/or client joined by |", s)
		}
	}
	return m, nil
}

func runScout(ctx context.Context, o scoutOptions, out io.Writer) error {
	what, err := parseWhat(o.what)
	if err != nil {
		return err
	}
	if o.timeout <= 0 || o.timeout > time.Hour {
		return cli.Usagef("--timeout %s: want more than 0 and at most 1h", o.timeout)
	}
	if o.ttl < 1 || o.ttl > 255 {
		return cli.Usagef("--ttl %d: want 1 to 255", o.ttl)
	}
	n := 0
	var werr error
	err = zenohpath.Scout(ctx, zenohpath.ScoutOptions{Address: o.address, Interface: o.iface, What: what, Timeout: o.timeout, TTL: o.ttl},
		func(h zenohpath.Hello) {
			n++
			if o.jsonLines {
				b, _ := json.Marshal(struct {
					ZID      string   `json:"zid"`
					WhatAmI  string   `json:"whatami"`
					Locators []string `json:"locators"`
					From     string   `json:"from"`
				}{h.ZID.String(), h.WhatAmI.String(), append([]string{}, h.Locators...), h.From})
				_, werr = fmt.Fprintf(out, "%s\n", b)
			} else {
				_, werr = fmt.Fprintln(out, h.String())
			}
		})
	if err != nil {
		return err
	}
	if werr != nil {
		return werr
	}
	if n == 0 {
		return fmt.Errorf("no HELLO within %s from udp/%s (what=%s)", o.timeout, o.address, o.what)
	}
	return nil
}

package zenohpath

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/picobridge/picobridge/zenohpath/keyexpr"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// Zenoh's admin space as zenohd answers it (issue 12 item 3;
// zenoh-mesh-auth.md §5): one queryable on @/<zid>/<whatami>/**, which the
// mesh propagates like any queryable, answering
//
//	@/<zid>/router                    application/json: the node summary
//	@/<zid>/router/linkstate/north    text/plain: the router graph in Graphviz dot
//
// so that a get on @/** from any client of the mesh sees the gateway; and
// the sections of AdminConfig.Sections (the gateway's devices and routes
// under @/<zid>/picobridge, as zenoh-bridge-ros2dds serves its bridged
// entities under @/<zid>/ros2), one queryable each.

// Predefined encoding ids of the replies (zenoh-wire.md §1.5).
const (
	encodingTextPlain = 4
	encodingJSON      = 5
)

// AdminConfig configures ServeAdminSpace. The zero value is usable.
type AdminConfig struct {
	// Version is reported as "version" (zenohd: its build string).
	Version string
	// Metadata is reported as "metadata" (zenohd: the config's metadata
	// object); nil = null.
	Metadata any
	// Sections are more parts of the admin space, each under
	// @/<zid>/<Prefix>.
	Sections []AdminSection
}

// AdminSection is a part of the admin space that a user of the router
// (the gateway) provides: Entries, called for each query that intersects
// @/<zid>/<Prefix>/**, returns the entries at that moment, keyed by their
// path below @/<zid>/<Prefix> ("" = the prefix itself, "devices/dev1");
// each one whose full key intersects the query is answered as JSON
// (encoding application/json; a value that does not marshal is skipped).
type AdminSection struct {
	Prefix  string
	Entries func() map[string]any
}

// AdminSpace is a running admin space (ServeAdminSpace); Close stops it.
type AdminSpace struct {
	s *Session
}

// Close undeclares the admin queryable.
func (a *AdminSpace) Close() error { return a.s.Close() }

// AdminKey is the root of the router's admin space: @/<zid>/<whatami>
// (zenohd: @/<zid>/router).
func (r *Router) AdminKey() string { return "@/" + r.zid.String() + "/" + r.whatami.String() }

// ServeAdminSpace declares the admin queryable on an in-process session of
// the router (hidden from Faces). Errors: ErrClosed when the router is
// closed.
func (r *Router) ServeAdminSpace(cfg AdminConfig) (*AdminSpace, error) {
	s, err := newSession(r, false, 0)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	s.face.hidden = true
	r.mu.Unlock()
	root := r.AdminKey()
	_, err = s.DeclareQueryable(root+"/**", func(q *Query) { r.answerAdmin(q, root, cfg) }, nil)
	if err != nil {
		_ = s.Close()
		return nil, err
	}
	for _, sec := range cfg.Sections {
		base := "@/" + r.zid.String() + "/" + sec.Prefix
		_, err = s.DeclareQueryable(base+"/**", func(q *Query) { answerSection(q, base, sec.Entries) }, nil)
		if err != nil {
			_ = s.Close()
			return nil, fmt.Errorf("zenohpath: admin section %q: %w", sec.Prefix, err)
		}
	}
	return &AdminSpace{s: s}, nil
}

// answerSection replies with the entries of a section that the query's key
// expression intersects, in key order.
func answerSection(q *Query, base string, entries func() map[string]any) {
	es := entries()
	keys := make([]string, 0, len(es))
	for k := range es {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		full := base
		if k != "" {
			full += "/" + k
		}
		if c, err := keyexpr.Canonize(full); err != nil || c != full || strings.ContainsAny(full, "*$") || !keyexpr.Intersects(q.KeyExpr(), full) {
			continue // a name that is no key chunk ("a/*", "") is not served
		}
		b, err := json.Marshal(es[k])
		if err != nil {
			continue
		}
		_ = q.Reply(full, b, &ReplyOptions{Encoding: &Encoding{ID: encodingJSON}})
	}
}

func (r *Router) answerAdmin(q *Query, root string, cfg AdminConfig) {
	if keyexpr.Intersects(q.KeyExpr(), root) {
		if b, err := json.Marshal(r.adminSummary(cfg)); err == nil {
			_ = q.Reply(root, b, &ReplyOptions{Encoding: &Encoding{ID: encodingJSON}})
		}
	}
	if k := root + "/linkstate/north"; r.mesh != nil && keyexpr.Intersects(q.KeyExpr(), k) {
		r.mu.RLock()
		dot := r.mesh.net.Dot()
		r.mu.RUnlock()
		_ = q.Reply(k, []byte(dot), &ReplyOptions{Encoding: &Encoding{ID: encodingTextPlain}})
	}
}

// AdminSummary is the JSON of @/<zid>/router, in zenohd's field order.
type AdminSummary struct {
	ZID      string         `json:"zid"`
	Version  string         `json:"version"`
	Metadata any            `json:"metadata"`
	Locators []string       `json:"locators"`
	Sessions []AdminSession `json:"sessions"`
	Plugins  any            `json:"plugins"`
}

// AdminSession is one entry of AdminSummary.Sessions.
type AdminSession struct {
	Peer    string       `json:"peer"`
	WhatAmI string       `json:"whatami"`
	Links   []AdminLink  `json:"links"`
	Weight  *AdminWeight `json:"weight"`
	SHM     bool         `json:"shm"`
	Region  string       `json:"region"`
}

// AdminLink is one link of a session: our end (not reported yet: "") and
// the remote end, as locators.
type AdminLink struct {
	Src string `json:"src"`
	Dst string `json:"dst"`
}

// AdminWeight is the edge towards a router neighbour (null until both ends
// claim the link), as zenohd's links_info (zenoh-mesh-auth.md §5):
// SrcWeight our configured weight towards it, DstWeight its weight towards
// us (null = unset), ActualWeight the edge cost (§1.6) truncated to u16.
type AdminWeight struct {
	SrcWeight    *uint16 `json:"src_weight"`
	DstWeight    *uint16 `json:"dst_weight"`
	ActualWeight uint16  `json:"actual_weight"`
}

// adminSummary builds the node summary (zenohd's local_data).
func (r *Router) adminSummary(cfg AdminConfig) AdminSummary {
	out := AdminSummary{ZID: r.zid.String(), Version: cfg.Version, Metadata: cfg.Metadata,
		Locators: r.Endpoints(), Sessions: []AdminSession{}}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, f := range r.sortedFaces() {
		sl, ok := f.link.(sessionLink)
		if !ok || f.hidden {
			continue
		}
		as := AdminSession{Peer: f.zid.String(), WhatAmI: f.whatami.String(), Links: []AdminLink{}, Region: adminRegion(f)}
		if a := sl.s.RemoteAddr(); a != nil { // our end is not known per session: src stays ""
			as.Links = append(as.Links, AdminLink{Dst: a.Network() + "/" + a.String()})
		}
		if f.mesh {
			if li, ok := r.mesh.net.LinkInfo(f.zid); ok {
				as.Weight = &AdminWeight{SrcWeight: optWeight(li.SrcWeight), DstWeight: optWeight(li.DstWeight), ActualWeight: li.ActualWeight()}
			}
		}
		out.Sessions = append(out.Sessions, as)
	}
	sort.SliceStable(out.Sessions, func(i, j int) bool { return out.Sessions[i].Peer < out.Sessions[j].Peer })
	return out
}

// optWeight is a link weight as the admin JSON has it: null when unset.
func optWeight(w uint16) *uint16 {
	if w == 0 {
		return nil
	}
	return &w
}

// adminRegion names a session's region as zenohd 1.9+ does (§2.1).
func adminRegion(f *face) string {
	switch {
	case f.mesh, f.whatami == wire.WhatAmIRouter:
		return "north"
	case f.whatami == wire.WhatAmIPeer:
		return "south:0:peer"
	}
	return "south:0:client"
}

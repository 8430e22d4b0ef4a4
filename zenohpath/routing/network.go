package routing

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// LinkID names one of our router sessions (the router uses its face id).
type LinkID uint64

// node is one router of the graph. Its index in Network.nodes is our psid
// for it; the local node is index 0.
type node struct {
	zid        wire.ZID
	whatami    wire.WhatAmI
	hasWhatAmI bool
	sn         uint64
	links      []wire.ZID // neighbours it claims
	// weights are the link weights the node set, by neighbour (only the
	// set ones: 1..65535; a link without entry is unset, §1.2, §1.6).
	weights  map[wire.ZID]uint16
	locators []string
}

// peerLink is one router session: the remote's zid and its numbering
// (psid → zid, learnt from the link-states it sent).
type peerLink struct {
	id   LinkID
	zid  wire.ZID
	psid map[uint64]wire.ZID
}

// tree is the shortest-path tree rooted at one node, seen from the local
// node: the predecessor of every node on its path from the root.
type tree struct {
	parent []int // by node index; -1 = root or unreachable
	reach  []bool
}

// Network is the router link-state graph of Zenoh 1.x (zenoh-mesh-auth.md
// §1.3–§1.5, §2.2, §2.3), seen from the local router: its nodes, its
// edges (both ends must claim a link), the per-link psid maps and one tree
// per root. It is not safe for concurrent use; the zenohpath router calls
// it under its lock. Methods return the link-state lists to send, per link.
type Network struct {
	nodes []*node // index = our psid; nil = free slot
	idx   map[wire.ZID]int
	links map[LinkID]*peerLink
	trees []tree // by root index, after ComputeTrees
	// children[root] = the links to our children in tree(root), as last
	// computed (to find new children).
	children map[wire.ZID]map[LinkID]bool
	locators []string
	// config is our configured weight per neighbour router (zenohd's
	// routing.router.linkstate.transport_weights, §1.6); nil = none.
	config map[wire.ZID]uint16
}

// Out is what a Network operation asks the caller to send: a link-state
// list per link (never empty lists).
type Out map[LinkID][]LinkState

// NewNetwork starts a graph holding only the local router (psid 0, sn 1,
// §1.3), which announces locators (nil = none).
func NewNetwork(self wire.ZID, locators []string) *Network {
	n := &Network{
		nodes:    []*node{{zid: self, whatami: wire.WhatAmIRouter, hasWhatAmI: true, sn: 1, weights: map[wire.ZID]uint16{}}},
		idx:      map[wire.ZID]int{self: 0},
		links:    map[LinkID]*peerLink{},
		children: map[wire.ZID]map[LinkID]bool{},
		locators: locators,
	}
	n.nodes[0].locators = locators
	n.ComputeTrees()
	return n
}

// Self is the local router's zid.
func (n *Network) Self() wire.ZID { return n.nodes[0].zid }

func (n *Network) add(z wire.ZID) int {
	if i, ok := n.idx[z]; ok {
		return i
	}
	nd := &node{zid: z, weights: map[wire.ZID]uint16{}}
	for i := 1; i < len(n.nodes); i++ {
		if n.nodes[i] == nil {
			n.nodes[i] = nd
			n.idx[z] = i
			return i
		}
	}
	n.nodes = append(n.nodes, nd)
	n.idx[z] = len(n.nodes) - 1
	return len(n.nodes) - 1
}

// state is node i as we describe it: always with zid and whatami (a
// receiver may take a zid again, §1.3 and §6 item 4), with links as our
// psids (links to nodes we do not index are left out).
func (n *Network) state(i int) LinkState {
	nd := n.nodes[i]
	s := LinkState{PSID: uint64(i), SN: nd.sn, HasZID: true, ZID: nd.zid, Links: []uint64{}}
	if nd.hasWhatAmI {
		s.HasWhatAmI, s.WhatAmI = true, nd.whatami
	}
	if i == 0 && len(nd.locators) > 0 {
		s.HasLocators, s.Locators = true, nd.locators
	}
	var ws []uint16
	set := false
	for _, z := range nd.links {
		if j, ok := n.idx[z]; ok {
			s.Links = append(s.Links, uint64(j))
			w := nd.weights[z]
			ws = append(ws, w)
			set = set || w != 0
		}
	}
	// The H block only when a link has a weight, unset ones as 0 (§1.2;
	// make_link_state): so is a relayed node's state, as it set it.
	if set {
		s.Weights = ws
	}
	return s
}

// states describes the nodes of idxs plus every node their links name (so
// that the receiver can map each psid), in index order.
func (n *Network) states(idxs []int) []LinkState {
	want := map[int]bool{}
	for _, i := range idxs {
		if i < len(n.nodes) && n.nodes[i] != nil {
			want[i] = true
			for _, z := range n.nodes[i].links {
				if j, ok := n.idx[z]; ok {
					want[j] = true
				}
			}
		}
	}
	keys := make([]int, 0, len(want))
	for i := range want {
		keys = append(keys, i)
	}
	sort.Ints(keys)
	out := make([]LinkState, 0, len(keys))
	for _, i := range keys {
		out = append(out, n.state(i))
	}
	return out
}

func (n *Network) all() []int {
	var out []int
	for i, nd := range n.nodes {
		if nd != nil {
			out = append(out, i)
		}
	}
	return out
}

func (n *Network) linksTo(z wire.ZID) int {
	c := 0
	for _, l := range n.links {
		if l.zid == z {
			c++
		}
	}
	return c
}

// AddLink registers a new router session id with the router z (whatami w)
// (§2.2): the local node claims z and bumps its sn; the new link gets the
// whole graph, the other links the local node's new state (and z's entry
// when z is new to the graph). It returns what to send.
func (n *Network) AddLink(id LinkID, z wire.ZID, w wire.WhatAmI) Out {
	_, known := n.idx[z]
	i := n.add(z)
	nd := n.nodes[i]
	if !nd.hasWhatAmI {
		nd.whatami, nd.hasWhatAmI = w, true
	}
	n.links[id] = &peerLink{id: id, zid: z, psid: map[uint64]wire.ZID{}}
	self := n.nodes[0]
	if !slices.Contains(self.links, z) {
		self.links = append(self.links, z)
		if w := n.config[z]; w != 0 {
			self.weights[z] = w
		}
		self.sn++
	}
	out := Out{id: n.states(n.all())}
	upd := []int{0}
	if !known {
		upd = append(upd, i)
	}
	for lid := range n.links {
		if lid != id {
			out[lid] = n.states(upd)
		}
	}
	n.ComputeTrees()
	return out
}

// RemoveLink forgets router session id (§2.2 "On link close"): when it was
// the last one to its router, the local node drops the claim, bumps its sn
// and tells the remaining links. Nodes no longer reachable are removed;
// their zids are returned.
func (n *Network) RemoveLink(id LinkID) (Out, []wire.ZID) {
	l := n.links[id]
	if l == nil {
		return nil, nil
	}
	delete(n.links, id)
	out := Out{}
	if n.linksTo(l.zid) == 0 {
		self := n.nodes[0]
		if k := slices.Index(self.links, l.zid); k >= 0 {
			self.links = slices.Delete(self.links, k, k+1)
			delete(self.weights, l.zid)
			self.sn++
			for lid := range n.links {
				out[lid] = n.states([]int{0})
			}
		}
	}
	gone := n.prune()
	n.ComputeTrees()
	return out, gone
}

// HandleLinkStates applies a LinkStateList received on link id (§1.5): the
// psid map of the link is updated first, then each entry newer than what
// we hold replaces the node's links and locators; our own entry is never
// taken from others. New nodes are flooded to every link (the sender
// included, so that it learns our psid for them), updated ones to every
// other link. It returns what to send, the zids of the nodes removed as
// unreachable, and whether the graph changed. An entry whose psid was
// never mapped on the link is skipped, as are links to unmapped psids.
func (n *Network) HandleLinkStates(id LinkID, list []LinkState) (Out, []wire.ZID, bool) {
	l := n.links[id]
	if l == nil {
		return nil, nil, false
	}
	for _, s := range list {
		if s.HasZID {
			l.psid[s.PSID] = s.ZID
		}
	}
	var fresh, updated []int
	for _, s := range list {
		z, ok := l.psid[s.PSID]
		if !ok || z == n.Self() {
			continue
		}
		i, known := n.idx[z]
		if known && s.SN <= n.nodes[i].sn {
			continue
		}
		isNew := !known || n.nodes[i].sn == 0
		i = n.add(z)
		nd := n.nodes[i]
		nd.sn = s.SN
		if s.HasWhatAmI {
			nd.whatami, nd.hasWhatAmI = s.WhatAmI, true
		} else if !nd.hasWhatAmI {
			nd.whatami, nd.hasWhatAmI = wire.WhatAmIRouter, true
		}
		if s.HasLocators {
			nd.locators = append([]string(nil), s.Locators...)
		}
		nd.links = nd.links[:0]
		nd.weights = map[wire.ZID]uint16{}
		for k, p := range s.Links {
			lz, ok := l.psid[p]
			if !ok {
				continue
			}
			if !slices.Contains(nd.links, lz) {
				nd.links = append(nd.links, lz)
			}
			// A later duplicate replaces the weight, as Rust's map insert.
			if k < len(s.Weights) && s.Weights[k] != 0 {
				nd.weights[lz] = s.Weights[k]
			} else {
				delete(nd.weights, lz)
			}
		}
		if isNew {
			fresh = append(fresh, i)
		} else {
			updated = append(updated, i)
		}
	}
	if len(fresh)+len(updated) == 0 {
		return nil, nil, false
	}
	// Placeholders for the nodes the new links name (sn 0, §1.5 step 3).
	for _, i := range append(slices.Clone(fresh), updated...) {
		for _, z := range n.nodes[i].links {
			n.add(z)
		}
	}
	gone := n.prune()
	out := Out{}
	live := func(idxs []int) []int {
		return slices.DeleteFunc(slices.Clone(idxs), func(i int) bool { return i >= len(n.nodes) || n.nodes[i] == nil })
	}
	fresh, updated = live(fresh), live(updated)
	for lid := range n.links {
		send := slices.Clone(fresh)
		if lid != id {
			send = append(send, updated...)
		}
		if len(send) > 0 {
			out[lid] = n.states(send)
		}
	}
	n.ComputeTrees()
	return out, gone, true
}

// edge reports whether nodes i and j both claim each other.
func (n *Network) edge(i, j int) bool {
	a, b := n.nodes[i], n.nodes[j]
	return a != nil && b != nil && slices.Contains(a.links, b.zid) && slices.Contains(b.links, a.zid)
}

// neighbours lists the nodes with an edge to i, in index order.
func (n *Network) neighbours(i int) []int {
	var out []int
	for _, z := range n.nodes[i].links {
		if j, ok := n.idx[z]; ok && n.edge(i, j) {
			out = append(out, j)
		}
	}
	sort.Ints(out)
	return out
}

// prune removes the nodes not reachable from the local node over claimed
// links (§1.5 step 4) and returns their zids. Reachability follows what
// each node claims, not confirmed edges, as Rust's remove_detached_nodes
// does (a DFS over the nodes' links): a node that a reachable node claims
// stays, even before its own state confirms the edge. Pruning it (as we
// once did, over confirmed edges) dropped it from the links of the
// claiming node's state that we relayed next, with that node's sn; the
// receiver then kept the truncated state and ignored the full one (same
// sn), and lacked the edge for good: in a square of two gateways and two
// Rust routers one Rust router routed along another tree than the others,
// so data was duplicated, looped or, from the other side, never arrived.
func (n *Network) prune() []wire.ZID {
	seen := make([]bool, len(n.nodes))
	seen[0] = true
	stack := []int{0}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, z := range n.nodes[i].links {
			j, ok := n.idx[z]
			if ok && !seen[j] {
				seen[j] = true
				stack = append(stack, j)
			}
		}
	}
	var gone []wire.ZID
	for i := 1; i < len(n.nodes); i++ {
		nd := n.nodes[i]
		if nd == nil || seen[i] {
			continue
		}
		// A node we have a session with stays (its edge may just not be
		// confirmed yet); it is not reachable for routing until it is.
		if n.linksTo(nd.zid) > 0 {
			continue
		}
		delete(n.idx, nd.zid)
		n.nodes[i] = nil
		for _, l := range n.links {
			for p, z := range l.psid {
				if z == nd.zid {
					delete(l.psid, p)
				}
			}
		}
		if nd.sn > 0 {
			gone = append(gone, nd.zid)
		}
	}
	for len(n.nodes) > 1 && n.nodes[len(n.nodes)-1] == nil {
		n.nodes = n.nodes[:len(n.nodes)-1]
	}
	return gone
}

// ComputeTrees recomputes the shortest-path tree of every root (§2.3).
// Call it after changing the graph; the other operations already do.
func (n *Network) ComputeTrees() {
	n.trees = make([]tree, len(n.nodes))
	for r := range n.nodes {
		if n.nodes[r] == nil {
			continue
		}
		n.trees[r] = n.dijkstra(r)
	}
}

func (n *Network) dijkstra(root int) tree {
	N := len(n.nodes)
	dist := make([]float64, N)
	t := tree{parent: make([]int, N), reach: make([]bool, N)}
	done := make([]bool, N)
	for i := range dist {
		dist[i] = -1
		t.parent[i] = -1
	}
	dist[root] = 0
	t.reach[root] = true
	for {
		u := -1
		for i := range N {
			if !done[i] && dist[i] >= 0 && (u < 0 || dist[i] < dist[u]) {
				u = i
			}
		}
		if u < 0 {
			return t
		}
		done[u] = true
		for _, v := range n.neighbours(u) {
			d := dist[u] + n.weight(u, v)
			if dist[v] < 0 || d < dist[v] {
				dist[v], t.parent[v], t.reach[v] = d, u, true
			}
		}
	}
}

// Index is our psid of router z (the NodeId we put on what z sourced).
func (n *Network) Index(z wire.ZID) (uint16, bool) {
	i, ok := n.idx[z]
	return uint16(i), ok
}

// ZIDAt is the router at our psid i.
func (n *Network) ZIDAt(i uint16) (wire.ZID, bool) {
	if int(i) >= len(n.nodes) || n.nodes[i] == nil {
		return wire.ZID{}, false
	}
	return n.nodes[i].zid, true
}

// Source maps a NodeId received on link id (the sender's psid; 0 or
// absent = the sender itself, §2.6) to the router it names.
func (n *Network) Source(id LinkID, nodeID uint16) (wire.ZID, bool) {
	l := n.links[id]
	if l == nil {
		return wire.ZID{}, false
	}
	if nodeID == 0 {
		return l.zid, true
	}
	z, ok := l.psid[uint64(nodeID)]
	return z, ok
}

// Reachable reports whether router z is reachable over confirmed edges.
func (n *Network) Reachable(z wire.ZID) bool {
	i, ok := n.idx[z]
	return ok && i < len(n.trees) && n.trees[0].reach != nil && n.trees[0].reach[i]
}

// linkTo returns a link to the neighbour at index j (the lowest id when
// there are several).
func (n *Network) linkTo(j int) (LinkID, bool) {
	var best LinkID
	found := false
	for id, l := range n.links {
		if l.zid == n.nodes[j].zid && (!found || id < best) {
			best, found = id, true
		}
	}
	return best, found
}

// NextHop is the link on which something sourced by router src goes
// towards router dst (§2.3 directions): the child of the local node under
// which dst hangs in src's tree, or the local node's parent in that tree
// when dst is not below it. false when dst is unreachable or is us.
func (n *Network) NextHop(src, dst wire.ZID) (LinkID, bool) {
	r, ok1 := n.idx[src]
	d, ok2 := n.idx[dst]
	if !ok1 || !ok2 || d == 0 || r >= len(n.trees) || n.trees[r].parent == nil {
		return 0, false
	}
	t := n.trees[r]
	if !t.reach[d] || !t.reach[0] {
		return 0, false
	}
	for v := d; v >= 0; v = t.parent[v] {
		p := t.parent[v]
		if p == 0 {
			return n.linkTo(v)
		}
		if p < 0 {
			break
		}
	}
	// dst is not below us: towards the root.
	if p := t.parent[0]; p >= 0 {
		return n.linkTo(p)
	}
	return 0, false
}

// Children are the links to our children in the tree of router root
// (where what root sourced goes on from us, §2.4).
func (n *Network) Children(root wire.ZID) []LinkID {
	r, ok := n.idx[root]
	if !ok || r >= len(n.trees) || n.trees[r].parent == nil {
		return nil
	}
	var out []LinkID
	for v, p := range n.trees[r].parent {
		if p == 0 && v != 0 {
			if id, ok := n.linkTo(v); ok {
				out = append(out, id)
			}
		}
	}
	slices.Sort(out)
	return out
}

// NewChildren compares every tree's children with the previous call's and
// returns, per root, the links that became children (they must now get
// what the root sourced, §2.3).
func (n *Network) NewChildren() map[wire.ZID][]LinkID {
	out := map[wire.ZID][]LinkID{}
	now := map[wire.ZID]map[LinkID]bool{}
	for _, nd := range n.nodes {
		if nd == nil {
			continue
		}
		cs := map[LinkID]bool{}
		for _, id := range n.Children(nd.zid) {
			cs[id] = true
			if !n.children[nd.zid][id] {
				out[nd.zid] = append(out[nd.zid], id)
			}
		}
		now[nd.zid] = cs
	}
	n.children = now
	return out
}

// Routers lists the zids of the reachable routers other than us, sorted.
func (n *Network) Routers() []wire.ZID {
	var out []wire.ZID
	for i := 1; i < len(n.nodes); i++ {
		if n.nodes[i] != nil && n.trees[0].reach != nil && i < len(n.trees[0].reach) && n.trees[0].reach[i] {
			out = append(out, n.nodes[i].zid)
		}
	}
	sort.Slice(out, func(a, b int) bool { return bytes.Compare(out[a].Bytes(), out[b].Bytes()) < 0 })
	return out
}

// Dot renders the graph in Graphviz dot as zenohd's admin space does
// (§5: node labels are zids, edge labels the costs).
func (n *Network) Dot() string {
	var b strings.Builder
	b.WriteString("graph {\n")
	for i, nd := range n.nodes {
		if nd != nil {
			fmt.Fprintf(&b, "    %d [ label = \"%s\" ]\n", i, nd.zid)
		}
	}
	for i, nd := range n.nodes {
		if nd == nil {
			continue
		}
		for _, j := range n.neighbours(i) {
			if j > i {
				fmt.Fprintf(&b, "    %d -- %d [ label = \"%v\" ]\n", i, j, n.weight(i, j))
			}
		}
	}
	b.WriteString("}\n")
	return b.String()
}

package zvec

import (
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/picobridge/picobridge/zenohpath/wire"
)

// Describer renders decoded batches in the wording of the transcripts'
// `# expect:` lines. It keeps the per-connection state needed for that:
// both sides' key-expression tables (to resolve scopes with the M flag),
// declared entities (for "(was ...)"), and one fragment reassembler per
// direction. An InitSyn resets all of it (a new session starts).
type Describer struct {
	keys  [2]map[uint16]string
	ents  [2]map[entKey]string
	reasm [2]wire.Reassembler
	p     wire.Parser
	p2    wire.Parser
}

type entKey struct {
	kind wire.DeclID
	id   uint32
}

// NewDescriber returns a Describer with empty tables.
func NewDescriber() *Describer {
	d := &Describer{}
	d.Reset()
	return d
}

// Reset forgets all session state (call it when a new connection starts).
func (d *Describer) Reset() {
	for i := range d.keys {
		d.keys[i] = map[uint16]string{}
		d.ents[i] = map[entKey]string{}
		d.reasm[i].Reset()
	}
}

func side(dir Direction) int {
	if dir == GatewayToDevice {
		return 1
	}
	return 0
}

// Batch decodes one batch sent in direction dir ("" counts as D>G) and
// returns one description per transport message. On a decode error it
// returns the descriptions so far and the *wire.Error (offset counted from
// the start of the batch).
func (d *Describer) Batch(dir Direction, batch []byte) ([]string, error) {
	s := side(dir)
	var out []string
	var frame *strings.Builder
	var msgs []string
	flush := func() {
		if frame == nil {
			return
		}
		frame.WriteString(joinMsgs(msgs))
		out = append(out, frame.String())
		frame, msgs = nil, msgs[:0]
	}
	err := d.p.WalkBatch(batch, func(t wire.TransportMessage, n wire.NetworkMessage) error {
		if n != nil {
			msgs = append(msgs, d.network(s, n))
			return nil
		}
		flush()
		switch m := t.(type) {
		case *wire.Frame:
			frame = &strings.Builder{}
			fmt.Fprintf(frame, "FRAME %s sn=%d", rel(m.Reliable), m.SN)
			if m.HasQoS {
				fmt.Fprintf(frame, " QoS=0x%02x", uint8(m.QoS))
			}
			frame.WriteString(": ")
		case *wire.Fragment:
			desc, err := d.fragment(s, m)
			out = append(out, desc)
			return err
		default:
			out = append(out, d.transport(t))
		}
		return nil
	})
	if err != nil && frame != nil {
		msgs = append(msgs, "<decode error>")
	}
	flush()
	return out, err
}

func joinMsgs(msgs []string) string {
	switch len(msgs) {
	case 0:
		return "(no network msgs)"
	case 1:
		return msgs[0]
	}
	same := true
	for _, m := range msgs[1:] {
		if m != msgs[0] {
			same = false
			break
		}
	}
	if same {
		return fmt.Sprintf("(%d network msgs) %s  [x %d identical messages]", len(msgs), msgs[0], len(msgs))
	}
	return fmt.Sprintf("(%d network msgs) %s", len(msgs), strings.Join(msgs, " ; "))
}

func rel(r bool) string {
	if r {
		return "R"
	}
	return "BE"
}

func (d *Describer) fragment(s int, f *wire.Fragment) (string, error) {
	var b strings.Builder
	b.WriteString("FRAGMENT ")
	if f.Reliable {
		b.WriteString("R")
	} else {
		b.WriteString("BE(R=0)")
	}
	fmt.Fprintf(&b, " sn=%d", f.SN)
	if f.More {
		b.WriteString(" more")
	} else {
		b.WriteString(" last")
	}
	if f.First {
		b.WriteString(" First")
	}
	if f.Drop {
		b.WriteString(" Drop")
	}
	fmt.Fprintf(&b, " %d B", len(f.Payload))
	msg, done, err := d.reasm[s].Push(f)
	if err != nil {
		return b.String(), err
	}
	if !done {
		fmt.Fprintf(&b, " (buffered %d B)", d.reasm[s].Buffered())
		return b.String(), nil
	}
	m, n, err := d.p2.Network(msg)
	if err != nil {
		return b.String(), fmt.Errorf("reassembled message: %w", err)
	}
	if n != len(msg) {
		return b.String(), fmt.Errorf("reassembled message: %d trailing bytes", len(msg)-n)
	}
	fmt.Fprintf(&b, " => reassembled %d B: %s", len(msg), d.network(s, m))
	return b.String(), nil
}

func lease(l time.Duration) string {
	if l%time.Second == 0 {
		return fmt.Sprintf("%ds", l/time.Second)
	}
	return fmt.Sprintf("%dms", l/time.Millisecond)
}

func size(has bool, res uint8, batch uint16) string {
	if has {
		return fmt.Sprintf("S{res=0x%02x batch=%d}", res, batch)
	}
	return fmt.Sprintf("(no S: res 0x%02x, batch %d)", res, batch)
}

func exts(es []wire.Ext) string {
	var b strings.Builder
	for _, e := range es {
		switch e.Enc() {
		case wire.ExtEncZ64:
			fmt.Fprintf(&b, " ext0x%02x=%d", e.Header, e.Value)
		case wire.ExtEncZBuf:
			fmt.Fprintf(&b, " ext0x%02x=hex:%x", e.Header, e.Body)
		default:
			fmt.Fprintf(&b, " ext0x%02x", e.Header)
		}
	}
	return b.String()
}

func patch(p uint64) string {
	if p == 0 {
		return ""
	}
	return fmt.Sprintf(" Patch=%d", p)
}

func (d *Describer) transport(t wire.TransportMessage) string {
	switch m := t.(type) {
	case *wire.InitSyn:
		d.Reset()
		return fmt.Sprintf("InitSyn v=0x%02x whatami=%s zid=%s(%dB) %s%s%s", m.Version, m.WhatAmI, m.ZID.Hex(), m.ZID.Len(),
			size(m.HasSize, m.Resolution, m.BatchSize), patch(m.Patch), exts(m.Exts))
	case *wire.InitAck:
		return fmt.Sprintf("InitAck v=0x%02x whatami=%s zid=%s(%dB) %s cookie=%x%s%s", m.Version, m.WhatAmI, m.ZID.Hex(), m.ZID.Len(),
			size(m.HasSize, m.Resolution, m.BatchSize), m.Cookie, patch(m.Patch), exts(m.Exts))
	case *wire.OpenSyn:
		return fmt.Sprintf("OpenSyn lease=%s initial_sn=%d cookie=%x%s", lease(m.Lease), m.InitialSN, m.Cookie, exts(m.Exts))
	case *wire.OpenAck:
		return fmt.Sprintf("OpenAck lease=%s initial_sn=%d%s", lease(m.Lease), m.InitialSN, exts(m.Exts))
	case *wire.Close:
		scope := "link"
		if m.Session {
			scope = "session"
		}
		return fmt.Sprintf("CLOSE %s reason=%d(%s)%s", scope, m.Reason, m.Reason, exts(m.Exts))
	case *wire.KeepAlive:
		return "KEEP_ALIVE" + exts(m.Exts)
	case *wire.Join:
		return fmt.Sprintf("JOIN v=0x%02x whatami=%s zid=%s(%dB) %s lease=%s next_sn=%d/%d%s%s", m.Version, m.WhatAmI, m.ZID.Hex(), m.ZID.Len(),
			size(m.HasSize, m.Resolution, m.BatchSize), lease(m.Lease), m.NextSNReliable, m.NextSNBestEffort, patch(m.Patch), exts(m.Exts))
	case *wire.TransportOAM:
		return fmt.Sprintf("OAM id=%d%s", m.ID, exts(m.Exts))
	}
	return fmt.Sprintf("%T", t)
}

// key renders `key="K" (scope S, N, M, suffix="...")` resolving the scope
// in the table the M flag designates.
func (d *Describer) key(s int, w wire.WireExpr) string {
	return fmt.Sprintf("key=%q (%s)", d.resolve(s, w), flagsOf(w))
}

func flagsOf(w wire.WireExpr) string {
	f := fmt.Sprintf("scope %d", w.Scope)
	if w.HasSuffix() {
		f += ", N"
	}
	if w.Mapping {
		f += ", M"
	}
	if w.Scope != 0 && w.HasSuffix() {
		f += fmt.Sprintf(", suffix=%q", w.Suffix)
	}
	return f
}

func (d *Describer) resolve(s int, w wire.WireExpr) string {
	if w.Scope == 0 {
		return w.Suffix
	}
	table := s
	if w.Mapping == wire.MappingReceiver {
		table = 1 - s
	}
	prefix, ok := d.keys[table][w.Scope]
	if !ok {
		prefix = fmt.Sprintf("<unknown scope %d>", w.Scope)
	}
	return prefix + w.Suffix
}

func netExt(x wire.NetExt) string {
	var b strings.Builder
	if x.HasQoS {
		fmt.Fprintf(&b, " QoS=0x%02x(%s)", uint8(x.QoS), x.QoS)
	}
	if x.HasTimestamp {
		b.WriteString(" " + ts(x.Timestamp))
	}
	if x.HasNodeID {
		fmt.Fprintf(&b, " NodeId=%d", x.NodeID)
	}
	return b.String()
}

func ts(t wire.Timestamp) string {
	return fmt.Sprintf("ts=%d(~%ds since epoch)/zid %s", t.Time, t.Seconds(), t.ZID.Hex())
}

func (d *Describer) network(s int, n wire.NetworkMessage) string {
	switch m := n.(type) {
	case *wire.Push:
		return "PUSH " + d.key(s, m.WireExpr) + netExt(m.NetExt) + exts(m.Exts) + " " + zenoh(m.Body)
	case *wire.Request:
		var b strings.Builder
		fmt.Fprintf(&b, "REQUEST rid=%d %s%s", m.ID, d.key(s, m.WireExpr), netExt(m.NetExt))
		if m.HasTarget {
			fmt.Fprintf(&b, " Target=%d", m.Target)
		}
		if m.HasBudget {
			fmt.Fprintf(&b, " Budget=%d", m.Budget)
		}
		if m.HasTimeout {
			fmt.Fprintf(&b, " Timeout=%dms", m.Timeout/time.Millisecond)
		}
		b.WriteString(exts(m.Exts) + " " + zenoh(m.Body))
		return b.String()
	case *wire.Response:
		var b strings.Builder
		fmt.Fprintf(&b, "RESPONSE rid=%d %s%s", m.ID, d.key(s, m.WireExpr), netExt(m.NetExt))
		if m.HasResponderID {
			fmt.Fprintf(&b, " ResponderId{zid %s eid=%d}", m.ResponderID.ZID.Hex(), m.ResponderID.EID)
		}
		b.WriteString(exts(m.Exts) + " " + zenoh(m.Body))
		return b.String()
	case *wire.ResponseFinal:
		return fmt.Sprintf("RESPONSE_FINAL rid=%d%s%s", m.ID, netExt(m.NetExt), exts(m.Exts))
	case *wire.Declare:
		var b strings.Builder
		b.WriteString("DECLARE ")
		if m.HasInterestID {
			fmt.Fprintf(&b, "I=%d ", m.InterestID)
		}
		if x := netExt(m.NetExt) + exts(m.Exts); x != "" {
			b.WriteString(x[1:] + " ")
		}
		b.WriteString(d.declaration(s, m.Body))
		return b.String()
	case *wire.Interest:
		var b strings.Builder
		fmt.Fprintf(&b, "INTEREST %s id=%d", m.Mode, m.ID)
		if m.Mode != wire.InterestFinal {
			var o wire.InterestOptions
			if m.Options&wire.InterestRestricted != 0 {
				o = m.Options&^(wire.InterestNamed|wire.InterestMapping) | opt(m.WireExpr.HasSuffix(), wire.InterestNamed) | opt(bool(m.WireExpr.Mapping), wire.InterestMapping)
			} else {
				o = m.Options
			}
			fmt.Fprintf(&b, " opts=0x%02x[%s]", uint8(o), o)
			if m.Options&wire.InterestRestricted != 0 {
				b.WriteString(" " + d.key(s, m.WireExpr))
			}
		}
		b.WriteString(netExt(m.NetExt) + exts(m.Exts))
		return b.String()
	case *wire.NetworkOAM:
		return fmt.Sprintf("OAM id=%d%s%s", m.ID, netExt(m.NetExt), exts(m.Exts))
	}
	return fmt.Sprintf("%T", n)
}

func opt(ok bool, o wire.InterestOptions) wire.InterestOptions {
	if ok {
		return o
	}
	return 0
}

func (d *Describer) was(s int, kind wire.DeclID, id uint32) string {
	k := entKey{kind, id}
	key, ok := d.ents[s][k]
	if !ok {
		return ""
	}
	delete(d.ents[s], k)
	return fmt.Sprintf(" (was %q)", key)
}

func undeclWE(has bool, w wire.WireExpr) string {
	if !has {
		return ""
	}
	m := 0
	if w.Mapping {
		m = 1
	}
	return fmt.Sprintf(" WireExpr{scope %d, suffix %q, M=%d}", w.Scope, w.Suffix, m)
}

func (d *Describer) entity(s int, name string, kind wire.DeclID, id uint32, w wire.WireExpr) string {
	key := d.resolve(s, w)
	d.ents[s][entKey{kind, id}] = key
	return fmt.Sprintf("%s id=%d %s", name, id, d.key(s, w))
}

func (d *Describer) declaration(s int, body wire.DeclarationBody) string {
	switch m := body.(type) {
	case *wire.DeclareKeyExpr:
		key := d.resolve(s, m.WireExpr)
		d.keys[s][m.ID] = key
		return fmt.Sprintf("DeclareKeyExpr id=%d %s%s", m.ID, d.key(s, m.WireExpr), exts(m.Exts))
	case *wire.UndeclareKeyExpr:
		was := ""
		if key, ok := d.keys[s][m.ID]; ok {
			was = fmt.Sprintf(" (was %q)", key)
			delete(d.keys[s], m.ID)
		}
		return fmt.Sprintf("UndeclareKeyExpr id=%d%s%s", m.ID, was, exts(m.Exts))
	case *wire.DeclareSubscriber:
		return d.entity(s, "DeclareSubscriber", wire.IDDeclareSubscriber, m.ID, m.WireExpr) + exts(m.Exts)
	case *wire.UndeclareSubscriber:
		return fmt.Sprintf("UndeclareSubscriber id=%d%s%s%s", m.ID, d.was(s, wire.IDDeclareSubscriber, m.ID), undeclWE(m.HasWireExpr, m.WireExpr), exts(m.Exts))
	case *wire.DeclareQueryable:
		out := d.entity(s, "DeclareQueryable", wire.IDDeclareQueryable, m.ID, m.WireExpr)
		if m.HasInfo {
			out += fmt.Sprintf(" complete=%t distance=%d", m.Complete, m.Distance)
		}
		return out + exts(m.Exts)
	case *wire.UndeclareQueryable:
		return fmt.Sprintf("UndeclareQueryable id=%d%s%s%s", m.ID, d.was(s, wire.IDDeclareQueryable, m.ID), undeclWE(m.HasWireExpr, m.WireExpr), exts(m.Exts))
	case *wire.DeclareToken:
		return d.entity(s, "DeclareToken", wire.IDDeclareToken, m.ID, m.WireExpr) + exts(m.Exts)
	case *wire.UndeclareToken:
		return fmt.Sprintf("UndeclareToken id=%d%s%s%s", m.ID, d.was(s, wire.IDDeclareToken, m.ID), undeclWE(m.HasWireExpr, m.WireExpr), exts(m.Exts))
	case *wire.DeclareFinal:
		return "DeclareFinal" + exts(m.Exts)
	}
	return fmt.Sprintf("%T", body)
}

func enc(has bool, e wire.Encoding) string {
	if !has {
		return ""
	}
	name := e.Name()
	if name == "" {
		name = "?"
	}
	s := fmt.Sprintf(" enc=%d(%s)", e.ID, name)
	if e.Schema != nil {
		s += fmt.Sprintf(";schema=%q", e.Schema)
	}
	return s
}

func source(has bool, si wire.SourceInfo) string {
	if !has {
		return ""
	}
	return fmt.Sprintf(" source{zid %s eid=%d sn=%d}", si.ZID.Hex(), si.EID, si.SN)
}

func attachment(a []byte) string {
	if a == nil {
		return ""
	}
	return " attachment=" + Bytes(a)
}

func zenoh(z wire.ZenohMessage) string {
	switch m := z.(type) {
	case *wire.Put:
		var b strings.Builder
		b.WriteString("PUT")
		if m.HasTimestamp {
			b.WriteString(" " + ts(m.Timestamp))
		}
		b.WriteString(enc(m.HasEncoding, m.Encoding) + source(m.HasSourceInfo, m.SourceInfo))
		if m.Shm {
			b.WriteString(" shm")
		}
		b.WriteString(attachment(m.Attachment) + exts(m.Exts))
		fmt.Fprintf(&b, " payload=%s (%d B)", Bytes(m.Payload), len(m.Payload))
		return b.String()
	case *wire.Del:
		out := "DEL"
		if m.HasTimestamp {
			out += " " + ts(m.Timestamp)
		}
		return out + source(m.HasSourceInfo, m.SourceInfo) + attachment(m.Attachment) + exts(m.Exts)
	case *wire.Query:
		var b strings.Builder
		b.WriteString("QUERY")
		if m.HasConsolidation {
			fmt.Fprintf(&b, " consolidation=%d", m.Consolidation)
		}
		if m.Parameters != "" {
			fmt.Fprintf(&b, " params=%q", m.Parameters)
		}
		b.WriteString(source(m.HasSourceInfo, m.SourceInfo))
		if m.HasBody {
			fmt.Fprintf(&b, " body{%s payload=%s}", enc(true, m.Body.Encoding)[1:], Bytes(m.Body.Payload))
		}
		b.WriteString(attachment(m.Attachment) + exts(m.Exts))
		return b.String()
	case *wire.Reply:
		out := "REPLY"
		if m.HasConsolidation {
			out += fmt.Sprintf(" consolidation=%d", m.Consolidation)
		}
		return out + exts(m.Exts) + " [" + zenoh(m.Body) + "]"
	case *wire.Err:
		return fmt.Sprintf("ERR%s%s%s payload=%s (%d B)", enc(m.HasEncoding, m.Encoding), source(m.HasSourceInfo, m.SourceInfo), exts(m.Exts), Bytes(m.Payload), len(m.Payload))
	case nil:
		return "<no body>"
	}
	return fmt.Sprintf("%T", z)
}

// Bytes renders a payload as the transcripts do: printable ASCII quoted
// ("a"x10240 for a long run of one character, the first 48 characters and
// "..." beyond 64), anything else as hex:… (cut after 64 bytes).
func Bytes(b []byte) string {
	printable := true
	same := true
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			printable = false
			break
		}
		if c != b[0] {
			same = false
		}
	}
	if !printable {
		if len(b) > 64 {
			return "hex:" + hex.EncodeToString(b[:64]) + "..."
		}
		return "hex:" + hex.EncodeToString(b)
	}
	switch {
	case len(b) > 16 && same:
		return fmt.Sprintf("%q", string(b[:1])) + fmt.Sprintf("x%d", len(b))
	case len(b) > 64:
		return `"` + string(b[:48]) + `..."`
	}
	return `"` + string(b) + `"`
}

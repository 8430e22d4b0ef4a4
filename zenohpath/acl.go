package zenohpath

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/picobridge/picobridge/zenohpath/keyexpr"
	"github.com/picobridge/picobridge/zenohpath/transport"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// Access control, in the spirit of zenohd's access_control section (rules,
// subjects, policies, default_permission; docs/security.md). It applies to
// transport faces (devices, clients, upstream routers), never to in-process
// sessions. A face's subjects are matched once, when it opens, from its
// ZID and authenticated identity (transport.Identity).
//
// Decision for one message (zenohd's priority): a deny rule whose key
// expression includes the message's key wins; else an allow rule that
// includes it; else default_permission. A rule key includes the message key
// only if every key it names is named by the rule (a wildcard declaration
// "demo/**" is not included by the rule "demo/a/**": zenohd's "superset and
// partial overlap are not matches").
//
// A denied put, delete, query or reply is dropped (a denied query is
// answered with RESPONSE_FINAL at once, so the querier does not wait for its
// timeout); a denied declaration is not recorded and not propagated, and
// nothing is sent back, which is what zenohd's ACL interceptor does. Each
// denial is counted in picobridge_acl_denied_total{action,flow,subject} and
// logged at most once per aclLogInterval per face, action and flow.

// ACLConfig is the access_control section (zenohd key names).
type ACLConfig struct {
	// Enabled turns access control on; when false nothing else is read.
	Enabled bool `yaml:"enabled" json:"enabled"`
	// DefaultPermission is what applies when no rule matches: "allow" or
	// "deny". Empty means deny (fail closed, as zenohd's default).
	DefaultPermission string       `yaml:"default_permission" json:"default_permission"`
	Rules             []ACLRule    `yaml:"rules" json:"rules"`
	Subjects          []ACLSubject `yaml:"subjects" json:"subjects"`
	Policies          []ACLPolicy  `yaml:"policies" json:"policies"`
	// DeviceZIDs maps device names (ACLSubject.Devices) to their ZIDs in
	// hex as zenohd prints them, for devices identified by ZID rather than
	// by an authenticated name; the gateway fills it from devices.list.
	DeviceZIDs map[string]string `yaml:"-" json:"-"`
}

// ACLRule is one rule: permission on messages in flows for key expressions.
type ACLRule struct {
	ID         string `yaml:"id" json:"id"`
	Permission string `yaml:"permission" json:"permission"` // allow or deny
	// Flows: ingress (messages the face sends us) and/or egress (messages
	// we send the face); empty = both.
	Flows []string `yaml:"flows" json:"flows"`
	// Messages: put, delete, declare_subscriber, declare_queryable, query,
	// reply (at least one).
	Messages []string `yaml:"messages" json:"messages"`
	// KeyExprs: the rule applies to a message whose key they include (at
	// least one).
	KeyExprs []string `yaml:"key_exprs" json:"key_exprs"`
}

// ACLSubject says which faces a policy is for. Lists are ORed inside and
// ANDed across (zenohd's Cartesian product); an empty list matches any
// face, so an empty subject matches every face.
type ACLSubject struct {
	ID string `yaml:"id" json:"id"`
	// CertCommonNames: the subject CN of the peer's TLS certificate.
	CertCommonNames []string `yaml:"cert_common_names" json:"cert_common_names"`
	// Usernames: the usrpwd user the peer authenticated as.
	Usernames []string `yaml:"usernames" json:"usernames"`
	// ZIDs: the peer's Zenoh ID in hex as zenohd prints it.
	ZIDs []string `yaml:"zids" json:"zids"`
	// LinkProtocols: tcp, udp, tls.
	LinkProtocols []string `yaml:"link_protocols" json:"link_protocols"`
	// Devices (picobridge): device names; a face is the device when its
	// usrpwd user, certificate CN or one of its certificate SANs is the
	// name, or its ZID is the one ACLConfig.DeviceZIDs gives for it.
	Devices []string `yaml:"devices" json:"devices"`
	// Interfaces (zenohd: the local network interface) is not supported:
	// refused at start.
	Interfaces []string `yaml:"interfaces" json:"interfaces"`
}

// ACLPolicy applies rules to subjects, by id.
type ACLPolicy struct {
	ID       string   `yaml:"id" json:"id"`
	Rules    []string `yaml:"rules" json:"rules"`
	Subjects []string `yaml:"subjects" json:"subjects"`
}

// aclAction is a message kind rules name.
type aclAction uint8

const (
	aclPut aclAction = iota
	aclDelete
	aclDeclareSubscriber
	aclDeclareQueryable
	aclQuery
	aclReply
	numACLActions
)

// ACLActions are the allowed values of ACLRule.Messages, in order.
var ACLActions = []string{"put", "delete", "declare_subscriber", "declare_queryable", "query", "reply"}

func (a aclAction) String() string { return ACLActions[a] }

type aclFlow uint8

const (
	aclIngress aclFlow = iota
	aclEgress
	numACLFlows
)

// ACLFlows are the allowed values of ACLRule.Flows.
var ACLFlows = []string{"ingress", "egress"}

func (f aclFlow) String() string { return ACLFlows[f] }

// aclLogInterval is the least time between two log lines about denials of
// one face, action and flow; each line carries the count since the last.
const aclLogInterval = 10 * time.Second

// aclNoSubject is the subject label of a denial by default_permission on a
// face no subject matched.
const aclNoSubject = "none"

// ACL is a compiled access control configuration (NewACL).
type ACL struct {
	defaultAllow bool
	rules        map[string]*aclRule
	subjects     []*aclSubject
	// policies: for each subject index, the rules that apply to it.
	bySubject map[*aclSubject][]*aclRule
	deviceZID map[string]string
}

type aclRule struct {
	id    string
	allow bool
	flows [numACLFlows]bool
	acts  [numACLActions]bool
	keys  []string // canonical
}

type aclSubject struct {
	id                                string
	cns, users, zids, protos, devices []string
	deviceZIDs                        []string // normalised ZIDs of the devices (ACLConfig.DeviceZIDs)
}

// ACLError is a problem in the access_control configuration; Key is the
// dotted path of the value (access_control.rules[1].messages[0]).
type ACLError struct {
	Key string
	Msg string
}

func (e *ACLError) Error() string { return e.Key + ": " + e.Msg }

// NewACL validates and compiles cfg. It returns nil (no access control)
// when cfg.Enabled is false. Errors name the key, the value and the
// allowed values (*ACLError).
func NewACL(cfg ACLConfig) (*ACL, error) {
	if !cfg.Enabled {
		return nil, nil
	}
	const root = "access_control"
	a := &ACL{rules: map[string]*aclRule{}, bySubject: map[*aclSubject][]*aclRule{}, deviceZID: map[string]string{}}
	switch cfg.DefaultPermission {
	case "allow":
		a.defaultAllow = true
	case "deny", "":
	default:
		return nil, &ACLError{root + ".default_permission", fmt.Sprintf("%q (allowed: allow, deny)", cfg.DefaultPermission)}
	}
	for name, z := range cfg.DeviceZIDs {
		a.deviceZID[name] = normZID(z)
	}
	for i, r := range cfg.Rules {
		k := fmt.Sprintf("%s.rules[%d]", root, i)
		if r.ID == "" {
			return nil, &ACLError{k + ".id", "required"}
		}
		if _, dup := a.rules[r.ID]; dup {
			return nil, &ACLError{k + ".id", fmt.Sprintf("%q names two rules", r.ID)}
		}
		cr := &aclRule{id: r.ID}
		switch r.Permission {
		case "allow":
			cr.allow = true
		case "deny":
		default:
			return nil, &ACLError{k + ".permission", fmt.Sprintf("%q (allowed: allow, deny)", r.Permission)}
		}
		if len(r.Flows) == 0 {
			cr.flows = [numACLFlows]bool{true, true}
		}
		for j, f := range r.Flows {
			n := slices.Index(ACLFlows, f)
			if n < 0 {
				return nil, &ACLError{fmt.Sprintf("%s.flows[%d]", k, j), fmt.Sprintf("%q (allowed: %s)", f, strings.Join(ACLFlows, ", "))}
			}
			cr.flows[n] = true
		}
		if len(r.Messages) == 0 {
			return nil, &ACLError{k + ".messages", "at least one of " + strings.Join(ACLActions, ", ")}
		}
		for j, m := range r.Messages {
			n := slices.Index(ACLActions, m)
			if n < 0 {
				return nil, &ACLError{fmt.Sprintf("%s.messages[%d]", k, j), fmt.Sprintf("%q (allowed: %s)", m, strings.Join(ACLActions, ", "))}
			}
			cr.acts[n] = true
		}
		if len(r.KeyExprs) == 0 {
			return nil, &ACLError{k + ".key_exprs", "at least one key expression"}
		}
		for j, ke := range r.KeyExprs {
			c, err := keyexpr.Canonize(ke)
			if err != nil {
				return nil, &ACLError{fmt.Sprintf("%s.key_exprs[%d]", k, j), fmt.Sprintf("%q: %v", ke, err)}
			}
			cr.keys = append(cr.keys, c)
		}
		a.rules[r.ID] = cr
	}
	subjects := map[string]*aclSubject{}
	for i, s := range cfg.Subjects {
		k := fmt.Sprintf("%s.subjects[%d]", root, i)
		if s.ID == "" {
			return nil, &ACLError{k + ".id", "required"}
		}
		if _, dup := subjects[s.ID]; dup {
			return nil, &ACLError{k + ".id", fmt.Sprintf("%q names two subjects", s.ID)}
		}
		if len(s.Interfaces) > 0 {
			return nil, &ACLError{k + ".interfaces", "not supported by picobridge (match on link_protocols, zids, usernames, cert_common_names or devices)"}
		}
		for j, p := range s.LinkProtocols {
			if p != "tcp" && p != "udp" && p != "tls" {
				return nil, &ACLError{fmt.Sprintf("%s.link_protocols[%d]", k, j), fmt.Sprintf("%q (allowed: tcp, udp, tls)", p)}
			}
		}
		cs := &aclSubject{id: s.ID, cns: s.CertCommonNames, users: s.Usernames, protos: s.LinkProtocols, devices: s.Devices}
		for _, z := range s.ZIDs {
			cs.zids = append(cs.zids, normZID(z))
		}
		for _, d := range s.Devices {
			if z, ok := a.deviceZID[d]; ok {
				cs.deviceZIDs = append(cs.deviceZIDs, z)
			}
		}
		subjects[s.ID] = cs
		a.subjects = append(a.subjects, cs)
	}
	for i, p := range cfg.Policies {
		k := fmt.Sprintf("%s.policies[%d]", root, i)
		if len(p.Rules) == 0 || len(p.Subjects) == 0 {
			return nil, &ACLError{k, "needs rules and subjects"}
		}
		var rs []*aclRule
		for j, id := range p.Rules {
			r, ok := a.rules[id]
			if !ok {
				return nil, &ACLError{fmt.Sprintf("%s.rules[%d]", k, j), fmt.Sprintf("%q is no rule id", id)}
			}
			rs = append(rs, r)
		}
		for j, id := range p.Subjects {
			s, ok := subjects[id]
			if !ok {
				return nil, &ACLError{fmt.Sprintf("%s.subjects[%d]", k, j), fmt.Sprintf("%q is no subject id", id)}
			}
			a.bySubject[s] = append(a.bySubject[s], rs...)
		}
	}
	return a, nil
}

func normZID(z string) string {
	return strings.TrimLeft(strings.TrimPrefix(strings.ToLower(strings.TrimSpace(z)), "0x"), "0")
}

// matches reports whether the subject describes a face.
func (s *aclSubject) matches(zid wire.ZID, id transport.Identity) bool {
	in := func(list []string, vals ...string) bool {
		if len(list) == 0 {
			return true
		}
		for _, v := range vals {
			if v != "" && slices.Contains(list, v) {
				return true
			}
		}
		return false
	}
	z := normZID(zid.String())
	if !in(s.cns, id.CertCommonName) || !in(s.users, id.User) || !in(s.zids, z) || !in(s.protos, id.LinkProtocol) {
		return false
	}
	if len(s.devices) == 0 {
		return true
	}
	return in(s.devices, id.Names()...) || slices.Contains(s.deviceZIDs, z)
}

// forFace compiles what applies to one face: the rules of every policy
// whose subject matches it, by flow and action.
func (a *ACL) forFace(f *face) *faceACL {
	if a == nil || f.local {
		return nil
	}
	fa := &faceACL{defaultAllow: a.defaultAllow, subject: aclNoSubject}
	var names []string
	for _, s := range a.subjects {
		rs, ok := a.bySubject[s]
		if !ok || !s.matches(f.zid, f.ident) {
			continue
		}
		names = append(names, s.id)
		for _, r := range rs {
			for fl := range numACLFlows {
				for act := range numACLActions {
					if !r.flows[fl] || !r.acts[act] {
						continue
					}
					if r.allow {
						fa.allow[fl][act] = append(fa.allow[fl][act], aclKeys{r.id, r.keys})
					} else {
						fa.deny[fl][act] = append(fa.deny[fl][act], aclKeys{r.id, r.keys})
					}
				}
			}
		}
	}
	if len(names) > 0 {
		fa.subject = names[0] // the label: the first subject in configuration order
	}
	return fa
}

type aclKeys struct {
	rule string
	keys []string
}

// faceACL is the access control of one face (immutable but for the log
// rate limiting).
type faceACL struct {
	defaultAllow bool
	subject      string // metrics label
	allow, deny  [numACLFlows][numACLActions][]aclKeys
	lastLog      [numACLFlows][numACLActions]atomic.Int64 // unix ns of the last log line
	unlogged     [numACLFlows][numACLActions]atomic.Int64 // denials since it
}

// decide returns whether the message is allowed and the rule that decided
// ("" for default_permission). A nil faceACL allows everything.
func (fa *faceACL) decide(fl aclFlow, act aclAction, key string) (bool, string) {
	if fa == nil {
		return true, ""
	}
	for _, r := range fa.deny[fl][act] {
		for _, k := range r.keys {
			if keyexpr.Includes(k, key) {
				return false, r.rule
			}
		}
	}
	for _, r := range fa.allow[fl][act] {
		for _, k := range r.keys {
			if keyexpr.Includes(k, key) {
				return true, r.rule
			}
		}
	}
	return fa.defaultAllow, ""
}

// permit is decide for the router: a denial is counted and logged
// (rate-limited) against face f. Safe without Router.mu held for writing.
func (r *Router) permit(f *face, fl aclFlow, act aclAction, key string) bool {
	fa := f.acl
	if fa == nil {
		return true
	}
	ok, rule := fa.decide(fl, act, key)
	if ok {
		return true
	}
	r.metrics.aclDeniedInc(act.String(), fl.String(), fa.subject)
	now := time.Now().UnixNano()
	last := fa.lastLog[fl][act].Load()
	if now-last < int64(aclLogInterval) || !fa.lastLog[fl][act].CompareAndSwap(last, now) {
		fa.unlogged[fl][act].Add(1)
		return false
	}
	if rule == "" {
		rule = "default_permission"
	}
	f.log.Warn("access control: denied", "action", act.String(), "flow", fl.String(), "key", key, "rule", rule,
		"subject", fa.subject, "auth_id", authID(f.ident), "denied_since_last_line", fa.unlogged[fl][act].Swap(0)+1,
		"log_interval", aclLogInterval)
	return false
}

// pushAction is the ACL action of a PUSH body.
func pushAction(m *wire.Push) aclAction {
	if _, ok := m.Body.(*wire.Del); ok {
		return aclDelete
	}
	return aclPut
}

// permitTargets drops from targets the faces (other than from, which the
// caller skips anyway) whose egress rules deny act on key; it returns
// targets itself when none does (no copy: targets may be a cached route).
func (r *Router) permitTargets(targets []*face, from *face, act aclAction, key string) []*face {
	if r.acl == nil {
		return targets
	}
	ok := func(t *face) bool { return t == from || r.permit(t, aclEgress, act, key) }
	for i, t := range targets {
		if ok(t) {
			continue
		}
		out := slices.Clone(targets[:i])
		for _, u := range targets[i+1:] {
			if ok(u) {
				out = append(out, u)
			}
		}
		return out
	}
	return targets
}

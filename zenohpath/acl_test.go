package zenohpath_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath"
	"github.com/picobridge/picobridge/zenohpath/transport"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// aclRouter starts a router with access control and a usrpwd dictionary
// (users dev and ops, password pw) on tcp/127.0.0.1:0.
func aclRouter(t *testing.T, cfg zenohpath.ACLConfig) (*zenohpath.Router, string, *prometheus.Registry) {
	t.Helper()
	acl, err := zenohpath.NewACL(cfg)
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	m, err := zenohpath.NewMetrics(reg)
	require.NoError(t, err)
	r := zenohpath.NewRouter(zenohpath.RouterConfig{Logger: testLogger(t), Metrics: m, ACL: acl,
		Transport: transport.Config{UsrPwd: &transport.UsrPwdConfig{Dictionary: map[string]string{"dev": "pw", "ops": "pw"}}}})
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	ln, err := r.Listen(context.Background(), "tcp/127.0.0.1:0")
	require.NoError(t, err)
	return r, ln.Endpoint(), reg
}

func aclClient(t *testing.T, ep, user string, zid wire.ZID) *zenohpath.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := zenohpath.Open(ctx, zenohpath.Config{Connect: []string{ep}, ZID: zid, UsrPwd: &transport.UsrPwdConfig{User: user, Password: "pw"}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

func denied(t *testing.T, reg *prometheus.Registry, action, flow, subject string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "picobridge_acl_denied_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["action"] == action && l["flow"] == flow && l["subject"] == subject {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func nextSample(t *testing.T, sub *zenohpath.Subscriber) zenohpath.Sample {
	t.Helper()
	select {
	case s := <-sub.Samples():
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no sample within 10 s")
	}
	return zenohpath.Sample{}
}

// faceOf returns the router's face whose auth id is user (a zero FaceInfo
// until the router registered it: Open may return first).
func faceOf(t *testing.T, r *zenohpath.Router, user string) zenohpath.FaceInfo {
	t.Helper()
	for _, f := range r.Faces() {
		if f.AuthID == user {
			return f
		}
	}
	return zenohpath.FaceInfo{}
}

func getAll(t *testing.T, s *zenohpath.Session, sel string) []string {
	t.Helper()
	replies, err := s.Get(sel, &zenohpath.GetOptions{Timeout: 5 * time.Second})
	require.NoError(t, err)
	var keys []string
	for r := range replies {
		if smp, ok := r.Ok(); ok {
			keys = append(keys, smp.KeyExpr())
		}
	}
	return keys
}

// TestACLEveryAction: deny rules for the subject "dev" (usrpwd user dev),
// one per action, with default_permission allow; ops is unrestricted.
func TestACLEveryAction(t *testing.T) {
	cfg := zenohpath.ACLConfig{
		Enabled: true, DefaultPermission: "allow",
		Rules: []zenohpath.ACLRule{
			{ID: "no-cmd", Permission: "deny", Flows: []string{"ingress"}, Messages: []string{"put", "delete"}, KeyExprs: []string{"robot/cmd/**"}},
			{ID: "no-secret-sub", Permission: "deny", Messages: []string{"declare_subscriber"}, KeyExprs: []string{"secret/**"}},
			{ID: "no-svc", Permission: "deny", Flows: []string{"ingress"}, Messages: []string{"declare_queryable"}, KeyExprs: []string{"svc/**"}},
			{ID: "no-private-query", Permission: "deny", Flows: []string{"ingress"}, Messages: []string{"query"}, KeyExprs: []string{"private/**"}},
			{ID: "no-hidden-reply", Permission: "deny", Flows: []string{"ingress"}, Messages: []string{"reply"}, KeyExprs: []string{"svc2/hidden/**"}},
			{ID: "no-raw-out", Permission: "deny", Flows: []string{"egress"}, Messages: []string{"put"}, KeyExprs: []string{"tele/raw/**"}},
		},
		Subjects: []zenohpath.ACLSubject{{ID: "dev", Usernames: []string{"dev"}}},
		Policies: []zenohpath.ACLPolicy{{Rules: []string{"no-cmd", "no-secret-sub", "no-svc", "no-private-query", "no-hidden-reply", "no-raw-out"}, Subjects: []string{"dev"}}},
	}
	r, ep, reg := aclRouter(t, cfg)
	dev := aclClient(t, ep, "dev", zenohpath.RandomZID())
	ops := aclClient(t, ep, "ops", zenohpath.RandomZID())
	eventually(t, "both faces", 10*time.Second, func() bool { return faceOf(t, r, "dev").ID != 0 && faceOf(t, r, "ops").ID != 0 })

	t.Run("put_and_delete", func(t *testing.T) {
		sub, err := ops.DeclareSubscriberChan("robot/**", 16)
		require.NoError(t, err)
		eventually(t, "ops subscriber at the router", 10*time.Second, func() bool { return faceOf(t, r, "ops").Subscribers >= 1 })
		require.NoError(t, dev.Put("robot/cmd/vel", []byte("go"), nil))
		require.NoError(t, dev.Put("robot/state", []byte("ok"), nil))
		require.Equal(t, "robot/state", nextSample(t, sub).KeyExpr(), "the denied put came through")
		require.NoError(t, dev.Delete("robot/cmd/vel", nil))
		require.NoError(t, dev.Delete("robot/state", nil))
		s := nextSample(t, sub)
		require.Equal(t, "robot/state", s.KeyExpr())
		require.Equal(t, zenohpath.SampleKindDelete, s.Kind())
		require.Equal(t, 1.0, denied(t, reg, "put", "ingress", "dev"))
		require.Equal(t, 1.0, denied(t, reg, "delete", "ingress", "dev"))
		// ops is not the subject: its put on the same key goes through.
		require.NoError(t, ops.Put("robot/cmd/vel", []byte("go"), nil))
		require.NoError(t, sub.Undeclare())
	})

	t.Run("declare_subscriber", func(t *testing.T) {
		before := faceOf(t, r, "dev").Subscribers
		_, err := dev.DeclareSubscriberChan("secret/**", 16)
		require.NoError(t, err)
		open, err := dev.DeclareSubscriberChan("public/**", 16)
		require.NoError(t, err)
		eventually(t, "dev's allowed subscriber", 10*time.Second, func() bool { return faceOf(t, r, "dev").Subscribers > before })
		require.Equal(t, before+1, faceOf(t, r, "dev").Subscribers, "the denied subscriber was recorded")
		require.NoError(t, ops.Put("secret/plan", []byte("x"), nil))
		require.NoError(t, ops.Put("public/news", []byte("y"), nil))
		require.Equal(t, "public/news", nextSample(t, open).KeyExpr())
		require.Equal(t, 1.0, denied(t, reg, "declare_subscriber", "ingress", "dev"))
	})

	t.Run("declare_queryable_and_reply", func(t *testing.T) {
		before := faceOf(t, r, "dev").Queryables
		reply := func(q *zenohpath.Query) {
			_ = q.Reply("svc2/hidden/x", []byte("h"), nil)
			_ = q.Reply("svc2/ok/y", []byte("o"), nil)
		}
		_, err := dev.DeclareQueryable("svc/**", func(q *zenohpath.Query) { _ = q.Reply(q.KeyExpr(), []byte("s"), nil) }, nil)
		require.NoError(t, err)
		_, err = dev.DeclareQueryable("svc2/**", reply, nil)
		require.NoError(t, err)
		eventually(t, "dev's allowed queryable", 10*time.Second, func() bool { return faceOf(t, r, "dev").Queryables > before })
		require.Equal(t, before+1, faceOf(t, r, "dev").Queryables, "the denied queryable was recorded")
		require.Empty(t, getAll(t, ops, "svc/a"))
		require.Equal(t, []string{"svc2/ok/y"}, getAll(t, ops, "svc2/**"))
		require.Equal(t, 1.0, denied(t, reg, "declare_queryable", "ingress", "dev"))
		require.Equal(t, 1.0, denied(t, reg, "reply", "ingress", "dev"))
	})

	t.Run("query", func(t *testing.T) {
		_, err := ops.DeclareQueryable("private/**", func(q *zenohpath.Query) { _ = q.Reply(q.KeyExpr(), []byte("p"), nil) }, nil)
		require.NoError(t, err)
		eventually(t, "ops queryable", 10*time.Second, func() bool { return dev.HasMatchingQueryables("private/a") })
		t0 := time.Now()
		require.Empty(t, getAll(t, dev, "private/a"))
		require.Less(t, time.Since(t0), 5*time.Second, "a denied query must be finished at once, not by its timeout")
		require.Equal(t, []string{"private/a"}, getAll(t, ops, "private/a"))
		require.Equal(t, 1.0, denied(t, reg, "query", "ingress", "dev"))
	})

	t.Run("egress_put", func(t *testing.T) {
		sub, err := dev.DeclareSubscriberChan("tele/**", 16)
		require.NoError(t, err)
		eventually(t, "dev subscriber", 10*time.Second, func() bool { return faceOf(t, r, "dev").Subscribers >= 2 })
		require.NoError(t, ops.Put("tele/raw/imu", []byte("r"), nil))
		require.NoError(t, ops.Put("tele/cooked/imu", []byte("c"), nil))
		require.Equal(t, "tele/cooked/imu", nextSample(t, sub).KeyExpr())
		require.Equal(t, 1.0, denied(t, reg, "put", "egress", "dev"))
	})
}

// TestACLDefaultDeny: default_permission deny with allow rules for a device
// identified by ZID (devices + DeviceZIDs), and by zids; a face no subject
// matches may do nothing (counted with subject none).
func TestACLDefaultDeny(t *testing.T) {
	devZID := zenohpath.RandomZID()
	cfg := zenohpath.ACLConfig{
		Enabled: true,
		Rules: []zenohpath.ACLRule{
			{ID: "out", Permission: "allow", Messages: []string{"put", "declare_subscriber"}, KeyExprs: []string{"dev/out/**"}},
			{ID: "in", Permission: "allow", Messages: []string{"declare_subscriber", "put"}, KeyExprs: []string{"dev/in/**"}},
			{ID: "no-in-stop", Permission: "deny", Messages: []string{"put"}, KeyExprs: []string{"dev/in/stop"}},
		},
		Subjects: []zenohpath.ACLSubject{{ID: "arm", Devices: []string{"arm-1"}}, {ID: "ops", Usernames: []string{"ops"}}},
		Policies: []zenohpath.ACLPolicy{
			{Rules: []string{"out", "in", "no-in-stop"}, Subjects: []string{"arm"}},
			{Rules: []string{"out", "in"}, Subjects: []string{"ops"}},
		},
		DeviceZIDs: map[string]string{"arm-1": devZID.String()},
	}
	r, ep, reg := aclRouter(t, cfg)
	arm := aclClient(t, ep, "dev", devZID)
	ops := aclClient(t, ep, "ops", zenohpath.RandomZID())

	in, err := arm.DeclareSubscriberChan("dev/in/**", 16)
	require.NoError(t, err)
	_, err = arm.DeclareSubscriberChan("other/**", 16) // not allowed: default deny
	require.NoError(t, err)
	out, err := ops.DeclareSubscriberChan("dev/out/**", 16)
	require.NoError(t, err)
	eventually(t, "subscribers", 10*time.Second, func() bool {
		return faceOf(t, r, "dev").Subscribers == 1 && faceOf(t, r, "ops").Subscribers == 1
	})
	require.NoError(t, arm.Put("other/x", nil, nil))
	require.NoError(t, arm.Put("dev/out/a", nil, nil))
	require.Equal(t, "dev/out/a", nextSample(t, out).KeyExpr())
	// Deny beats allow: dev/in/stop is allowed by "in" and denied by
	// "no-in-stop" (egress towards arm).
	require.NoError(t, ops.Put("dev/in/stop", nil, nil))
	require.NoError(t, ops.Put("dev/in/go", nil, nil))
	require.Equal(t, "dev/in/go", nextSample(t, in).KeyExpr())
	require.Equal(t, 1.0, denied(t, reg, "declare_subscriber", "ingress", "arm"))
	require.Equal(t, 1.0, denied(t, reg, "put", "ingress", "arm"))
	require.Equal(t, 1.0, denied(t, reg, "put", "egress", "arm"))

	// A client that is no subject: everything denied by default.
	anon := zenohpath.ACLConfig{Enabled: true, DefaultPermission: "deny"}
	_, ep2, reg2 := aclRouter(t, anon)
	c := aclClient(t, ep2, "dev", zenohpath.RandomZID())
	require.NoError(t, c.Put("any/key", nil, nil))
	eventually(t, "denial counted", 10*time.Second, func() bool { return denied(t, reg2, "put", "ingress", "none") == 1 })
}

func TestNewACLRefuses(t *testing.T) {
	ok := zenohpath.ACLRule{ID: "r", Permission: "allow", Messages: []string{"put"}, KeyExprs: []string{"a/**"}}
	for name, tc := range map[string]struct {
		cfg  zenohpath.ACLConfig
		want string
	}{
		"default":      {zenohpath.ACLConfig{DefaultPermission: "maybe"}, `access_control.default_permission: "maybe" (allowed: allow, deny)`},
		"rule id":      {zenohpath.ACLConfig{Rules: []zenohpath.ACLRule{{Permission: "allow"}}}, "access_control.rules[0].id: required"},
		"dup rule":     {zenohpath.ACLConfig{Rules: []zenohpath.ACLRule{ok, ok}}, `access_control.rules[1].id: "r" names two rules`},
		"permission":   {zenohpath.ACLConfig{Rules: []zenohpath.ACLRule{{ID: "x", Permission: "permit"}}}, `access_control.rules[0].permission: "permit"`},
		"flow":         {zenohpath.ACLConfig{Rules: []zenohpath.ACLRule{{ID: "x", Permission: "deny", Flows: []string{"in"}}}}, `rules[0].flows[0]: "in" (allowed: ingress, egress)`},
		"no messages":  {zenohpath.ACLConfig{Rules: []zenohpath.ACLRule{{ID: "x", Permission: "deny"}}}, "rules[0].messages: at least one of put, delete"},
		"message":      {zenohpath.ACLConfig{Rules: []zenohpath.ACLRule{{ID: "x", Permission: "deny", Messages: []string{"pub"}}}}, `rules[0].messages[0]: "pub" (allowed: put, delete, declare_subscriber, declare_queryable, query, reply)`},
		"no keys":      {zenohpath.ACLConfig{Rules: []zenohpath.ACLRule{{ID: "x", Permission: "deny", Messages: []string{"put"}}}}, "rules[0].key_exprs: at least one"},
		"bad key":      {zenohpath.ACLConfig{Rules: []zenohpath.ACLRule{{ID: "x", Permission: "deny", Messages: []string{"put"}, KeyExprs: []string{"a//b"}}}}, `rules[0].key_exprs[0]: "a//b"`},
		"subject id":   {zenohpath.ACLConfig{Subjects: []zenohpath.ACLSubject{{}}}, "subjects[0].id: required"},
		"dup subject":  {zenohpath.ACLConfig{Subjects: []zenohpath.ACLSubject{{ID: "s"}, {ID: "s"}}}, `subjects[1].id: "s" names two subjects`},
		"interfaces":   {zenohpath.ACLConfig{Subjects: []zenohpath.ACLSubject{{ID: "s", Interfaces: []string{"lo"}}}}, "subjects[0].interfaces: not supported"},
		"protocol":     {zenohpath.ACLConfig{Subjects: []zenohpath.ACLSubject{{ID: "s", LinkProtocols: []string{"quic"}}}}, `subjects[0].link_protocols[0]: "quic" (allowed: tcp, udp, tls)`},
		"empty policy": {zenohpath.ACLConfig{Policies: []zenohpath.ACLPolicy{{}}}, "policies[0]: needs rules and subjects"},
		"unknown rule": {zenohpath.ACLConfig{Subjects: []zenohpath.ACLSubject{{ID: "s"}}, Policies: []zenohpath.ACLPolicy{{Rules: []string{"nope"}, Subjects: []string{"s"}}}}, `policies[0].rules[0]: "nope" is no rule id`},
		"unknown subject": {zenohpath.ACLConfig{Rules: []zenohpath.ACLRule{ok}, Policies: []zenohpath.ACLPolicy{{Rules: []string{"r"}, Subjects: []string{"nope"}}}},
			`policies[0].subjects[0]: "nope" is no subject id`},
	} {
		tc.cfg.Enabled = true
		_, err := zenohpath.NewACL(tc.cfg)
		require.ErrorContains(t, err, tc.want, name)
	}
	a, err := zenohpath.NewACL(zenohpath.ACLConfig{DefaultPermission: "bogus"})
	require.NoError(t, err, "a disabled ACL is not read")
	require.Nil(t, a)
}

package zenohpath

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath/transport"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

// TestACLDecide pins the decision rules: deny > allow > default; a rule
// applies only when its key includes the message's whole key; subjects AND
// across lists and OR inside one.
func TestACLDecide(t *testing.T) {
	a, err := NewACL(ACLConfig{Enabled: true, DefaultPermission: "allow",
		Rules: []ACLRule{
			{ID: "deny-a", Permission: "deny", Messages: []string{"declare_subscriber", "put"}, KeyExprs: []string{"demo/a/**"}},
			{ID: "allow-a1", Permission: "allow", Messages: []string{"put"}, KeyExprs: []string{"demo/a/1"}},
		},
		Subjects: []ACLSubject{{ID: "s", Usernames: []string{"u1", "u2"}, LinkProtocols: []string{"tls"}}},
		Policies: []ACLPolicy{{Rules: []string{"deny-a", "allow-a1"}, Subjects: []string{"s"}}},
	})
	require.NoError(t, err)
	zid := wire.MustZID([]byte{1, 2, 3})
	faceFor := func(id transport.Identity) *faceACL { return a.forFace(&face{zid: zid, ident: id}) }
	fa := faceFor(transport.Identity{LinkProtocol: "tls", User: "u2"})
	require.Equal(t, "s", fa.subject)
	for _, tc := range []struct {
		act  aclAction
		key  string
		ok   bool
		rule string
	}{
		{aclPut, "demo/a/1", false, "deny-a"},        // deny beats allow
		{aclPut, "demo/a/b/c", false, "deny-a"},      // included by demo/a/**
		{aclPut, "demo/b", true, ""},                 // no rule: default allow
		{aclDeclareSubscriber, "demo/**", true, ""},  // a superset is not a match
		{aclDeclareSubscriber, "demo/*/x", true, ""}, // a partial overlap is not a match
		{aclDeclareSubscriber, "demo/a/*", false, "deny-a"},
		{aclDelete, "demo/a/1", true, ""}, // not a message of the rules
	} {
		ok, rule := fa.decide(aclIngress, tc.act, tc.key)
		require.Equal(t, tc.ok, ok, "%s %s", tc.act, tc.key)
		require.Equal(t, tc.rule, rule, "%s %s", tc.act, tc.key)
	}
	// Not the subject: tcp (lists AND), or another user (OR inside only).
	for _, id := range []transport.Identity{{LinkProtocol: "tcp", User: "u1"}, {LinkProtocol: "tls", User: "u3"}, {LinkProtocol: "tls"}} {
		fb := faceFor(id)
		require.Equal(t, aclNoSubject, fb.subject, "%+v", id)
		ok, _ := fb.decide(aclIngress, aclPut, "demo/a/1")
		require.True(t, ok, "%+v", id)
	}
	// In-process faces and a nil ACL allow everything.
	require.Nil(t, a.forFace(&face{local: true}))
	require.Nil(t, (*ACL)(nil).forFace(&face{}))
	ok, _ := (*faceACL)(nil).decide(aclIngress, aclPut, "x")
	require.True(t, ok)
}

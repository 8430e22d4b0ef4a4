package zenohpath_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/zenohpath"
)

// TestAdminSections: a section's entries answer the gets whose key
// expression intersects theirs, each as JSON under @/<zid>/<prefix>; an
// entry whose name is no plain key (a wildcard) is not served; the
// router's own @/<zid>/router answers beside them.
func TestAdminSections(t *testing.T) {
	r := zenohpath.NewRouter(zenohpath.RouterConfig{})
	t.Cleanup(func() { _ = r.Close() })
	calls := 0
	adm, err := r.ServeAdminSpace(zenohpath.AdminConfig{Sections: []zenohpath.AdminSection{{Prefix: "gw", Entries: func() map[string]any {
		calls++
		return map[string]any{"": map[string]int{"n": calls}, "devices/a": []string{"x"}, "devices/b": 2, "bad/*": 3}
	}}}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = adm.Close() })
	s, err := zenohpath.Open(context.Background(), zenohpath.Config{Router: r})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	base := "@/" + r.ZID().String() + "/gw"
	get := func(sel string) map[string]string {
		ch, err := s.Get(sel, &zenohpath.GetOptions{Target: zenohpath.QueryTargetAll})
		require.NoError(t, err)
		out := map[string]string{}
		for rep := range ch {
			smp, ok := rep.Ok()
			require.True(t, ok)
			out[smp.KeyExpr()] = string(smp.Payload())
		}
		return out
	}
	require.Equal(t, map[string]string{base: `{"n":1}`, base + "/devices/a": `["x"]`, base + "/devices/b": "2"}, get(base+"/**"))
	require.Equal(t, map[string]string{base + "/devices/a": `["x"]`}, get(base+"/devices/a"))
	all := get("@/**")
	require.Contains(t, all, r.AdminKey())
	require.Equal(t, `{"n":3}`, all[base], "entries are read at each query")
	require.Len(t, all, 5, "3 entries, the summary and the link-state graph")
}

package knobs_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/knobs"
)

// docs/knobs.md lists every knob with its spellings and pastes the real
// explain and advise output; this keeps it from drifting.
func TestDocsMatchRegistryAndGoldens(t *testing.T) {
	doc := string(mustRead(t, "../docs/knobs.md"))
	for _, k := range knobs.Registry() {
		require.True(t, strings.Contains(doc, "| `"+k.ID+"` |"), "docs/knobs.md lacks a row for %s", k.ID)
		for _, e := range k.Env {
			require.True(t, strings.Contains(doc, "`"+e.Name+"`"), "docs/knobs.md lacks %s", e.Name)
		}
	}
	for _, g := range []string{"explain/zephyr-native_sim.txt", "advise/zephyr.txt"} {
		require.True(t, strings.Contains(doc, string(mustRead(t, "testdata/"+g))),
			"docs/knobs.md does not paste testdata/%s verbatim", g)
	}
}

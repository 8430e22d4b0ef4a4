// Package grafana_test checks the Grafana dashboard against the gateway: every
// metric a panel queries is one that `picobridge run` registers.
package grafana_test

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/bridge/server"
)

// registeredNames starts a gateway (Zenoh side only, loopback, port 0) and
// returns the name of every metric family its registry describes, with the
// _bucket/_sum/_count series of histograms and summaries.
func registeredNames(t *testing.T) map[string]string {
	t.Helper()
	cfg := bridge.DefaultConfig()
	require.NoError(t, cfg.Override("zenoh.listen", `["tcp/127.0.0.1:0"]`))
	require.NoError(t, cfg.Override("metrics.listen", `""`))
	s, err := server.Start(context.Background(), server.Options{Config: cfg, DisableDDS: true})
	require.NoError(t, err)
	defer s.Close()
	ch := make(chan *prometheus.Desc)
	go func() { s.Registry().Describe(ch); close(ch) }()
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	names := map[string]string{}
	for d := range ch {
		m := fq.FindStringSubmatch(d.String())
		require.NotNil(t, m, d.String())
		names[m[1]] = d.String()
	}
	// Histograms and summaries are queried by their series.
	for n := range names {
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			names[n+suf] = names[n]
		}
	}
	return names
}

type dashboard struct {
	Title      string  `json:"title"`
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	Title   string `json:"title"`
	Type    string `json:"type"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // rows
}

// metricRef finds metric names in PromQL: identifiers starting with the
// picobridge_ prefix (labels and functions never do).
var metricRef = regexp.MustCompile(`\bpicobridge_[a-zA-Z0-9_]+`)

func TestDashboardQueriesRegisteredMetrics(t *testing.T) {
	b, err := os.ReadFile("picobridge.json")
	require.NoError(t, err)
	var d dashboard
	require.NoError(t, json.Unmarshal(b, &d))
	require.Equal(t, "picobridge", d.UID)
	names := registeredNames(t)

	var exprs []string
	var walk func(ps []panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				require.NotEmpty(t, tg.Expr, "panel %q", p.Title)
				exprs = append(exprs, tg.Expr)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue // the data source picker
		}
		if q, ok := v.Query.(map[string]any); ok {
			if s, ok := q["query"].(string); ok {
				exprs = append(exprs, s)
			}
		} else if s, ok := v.Query.(string); ok {
			exprs = append(exprs, s)
		}
	}
	require.GreaterOrEqual(t, len(exprs), 8, "the dashboard has its panels")
	used := map[string]bool{}
	for _, e := range exprs {
		refs := metricRef.FindAllString(e, -1)
		require.NotEmpty(t, refs, "query %q names no picobridge_ metric", e)
		for _, r := range refs {
			_, ok := names[r]
			require.True(t, ok, "query %q: %s is not a metric picobridge registers", e, r)
			used[r] = true
		}
	}
	// What the issue asks the dashboard to show.
	for _, want := range []string{
		"picobridge_device_attached", "picobridge_device_class", "picobridge_bridge_samples_forwarded_total",
		"picobridge_bridge_samples_dropped_total", "picobridge_bridge_queue_depth", "picobridge_bridge_supervisor_mode",
		"picobridge_device_rtt_seconds", "picobridge_dds_samples_dropped_total",
	} {
		require.True(t, used[want], "no panel queries %s", want)
	}
}

// TestListMetrics prints the registered families (go test -v -run TestListMetrics).
func TestListMetrics(t *testing.T) {
	names := registeredNames(t)
	seen := map[string]bool{}
	var descs []string
	for _, d := range names {
		if !seen[d] {
			seen[d] = true
			descs = append(descs, d)
		}
	}
	sort.Strings(descs)
	for _, d := range descs {
		t.Log(d)
	}
}

package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStatusRoutesNone: with no DDS endpoint discovered (a replay ended),
// status --routes says so instead of printing an empty table.
func TestStatusRoutesNone(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/devicez", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"supervisor":{"mode":"NORMAL","health":{"queue_occupancy":0},"transitions_total":0},"devices":[]}`))
	})
	mux.HandleFunc("/routez", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"dds":true,"domain":7,"routes":[],"faces":[]}`))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	var out bytes.Buffer
	require.NoError(t, runStatus(context.Background(), &out, statusOptions{addr: srv.URL, routes: true}))
	require.Equal(t, `supervisor: NORMAL (queue occupancy 0.00, 0 transitions)
no devices attached (a device is a session whose zid is in devices.list or whose probe responder announced a name)

DDS domain 7 routes:
(none: a route lives while DDS has a writer or reader of an allowed topic on this domain; none is discovered now, e.g. a bag replay has ended)
`, out.String())
}

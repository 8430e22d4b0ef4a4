package main

import (
	"context"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/internal/interop"
	"github.com/picobridge/picobridge/zenohpath"
)

// TestRouterPprof: --pprof serves net/http/pprof on its own listener, logged
// in one line; without it nothing listens.
func TestRouterPprof(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs interop.SyncBuffer
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- runRouter(ctx, routerOptions{listen: []string{"tcp/127.0.0.1:0"}, lease: 10 * time.Second, batch: 65535, logLevel: "info", pprof: "127.0.0.1:0"},
			&logs, func(*zenohpath.Router, []string) { close(ready) })
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("router exited: %v", err)
	}
	m := regexp.MustCompile(`msg=pprof addr=(127\.0\.0\.1:\d+)`).FindStringSubmatch(logs.String())
	require.NotNil(t, m, logs.String())
	resp, err := http.Get("http://" + m[1] + "/debug/pprof/allocs?debug=1")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	cancel()
	require.NoError(t, <-done)
	_, err = http.Get("http://" + m[1] + "/debug/pprof/")
	require.Error(t, err, "closed with the router")
}

func TestPprofFlag(t *testing.T) {
	for _, mk := range []func() *cobra.Command{newRouterCommand, newRunCommand} {
		cmd := mk()
		require.NoError(t, cmd.ParseFlags([]string{"--pprof", "127.0.0.1:6060"}))
		v, err := cmd.Flags().GetString("pprof")
		require.NoError(t, err)
		require.Equal(t, "127.0.0.1:6060", v)
	}
	stop, err := startPprof("", nil)
	require.NoError(t, err, "off by default")
	stop()
	_, err = startPprof("6060", nil)
	require.ErrorContains(t, err, `--pprof "6060": want HOST:PORT`)
	require.Equal(t, 2, exitCode(err), "a usage error")
}

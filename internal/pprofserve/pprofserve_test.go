package pprofserve

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func TestServesProfilesOnLoopback(t *testing.T) {
	s, err := Start("127.0.0.1:0")
	require.NoError(t, err)
	defer s.Close()
	require.True(t, strings.HasPrefix(s.Addr(), "127.0.0.1:"), s.Addr())
	code, body := get(t, "http://"+s.Addr()+"/debug/pprof/")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "allocs")
	code, body = get(t, "http://"+s.Addr()+"/debug/pprof/goroutine?debug=1")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "goroutine profile:")
	code, _ = get(t, "http://"+s.Addr()+"/metrics")
	require.Equal(t, http.StatusNotFound, code, "only pprof is served")
}

func TestStartErrors(t *testing.T) {
	_, err := Start("")
	require.Error(t, err)
	s, err := Start("127.0.0.1:0")
	require.NoError(t, err)
	defer s.Close()
	_, err = Start(s.Addr())
	require.Error(t, err, "address in use")
}

func TestCloseStopsServing(t *testing.T) {
	s, err := Start("127.0.0.1:0")
	require.NoError(t, err)
	addr := s.Addr()
	require.NoError(t, s.Close())
	_, err = http.Get("http://" + addr + "/debug/pprof/")
	require.Error(t, err)
}

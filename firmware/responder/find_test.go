package responder_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/firmware/responder"
)

func touch(t *testing.T, path string, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

// FindPico accepts an install tree and a CMake build tree (source headers
// found through CMakeCache.txt or the src argument) and explains what is
// missing otherwise. No compiler needed.
func TestFindPico(t *testing.T) {
	src := t.TempDir()
	touch(t, filepath.Join(src, "include", "zenoh-pico.h"), "")

	install := t.TempDir()
	touch(t, filepath.Join(install, "include", "zenoh-pico.h"), "")
	touch(t, filepath.Join(install, "include", "zenoh-pico", "config.h"), "")
	touch(t, filepath.Join(install, "lib", "libzenohpico.so"), "")
	p, err := responder.FindPico(install, "")
	require.NoError(t, err)
	require.Equal(t, []string{filepath.Join(install, "include")}, p.Include)
	require.Equal(t, filepath.Join(install, "lib"), p.LibDir)

	build := t.TempDir()
	touch(t, filepath.Join(build, "include", "zenoh-pico", "config.h"), "")
	touch(t, filepath.Join(build, "lib", "libzenohpico.so"), "")
	_, err = responder.FindPico(build, "")
	require.ErrorContains(t, err, responder.SrcEnv)
	p, err = responder.FindPico(build, src)
	require.NoError(t, err)
	require.Equal(t, []string{filepath.Join(build, "include"), filepath.Join(src, "include")}, p.Include)
	touch(t, filepath.Join(build, "CMakeCache.txt"), "CMAKE_HOME_DIRECTORY:INTERNAL=/nowhere\nzenohpico_SOURCE_DIR:STATIC="+src+"\n")
	p, err = responder.FindPico(build, "")
	require.NoError(t, err)
	require.Equal(t, filepath.Join(src, "include"), p.Include[1])
	require.True(t, slices.Contains(p.CFlags(), "-I"+filepath.Join(src, "include")))
	require.True(t, slices.Contains(p.CFlags(), "-std=gnu11"))

	_, err = responder.FindPico(t.TempDir(), src)
	require.ErrorContains(t, err, "config.h")

	// zenoh-pico 1.x: CMake writes config.h into the source tree; the build
	// tree's CMakeCache.txt must agree with it.
	src1 := t.TempDir()
	touch(t, filepath.Join(src1, "include", "zenoh-pico.h"), "")
	touch(t, filepath.Join(src1, "include", "zenoh-pico", "config.h"), "#define Z_FRAG_MAX_SIZE 4096\n#define Z_BATCH_UNICAST_SIZE 2048\n")
	b2048, b65535 := t.TempDir(), t.TempDir()
	for dir, batch := range map[string]string{b2048: "2048", b65535: "65535"} {
		touch(t, filepath.Join(dir, "lib", "libzenohpico.so"), "")
		touch(t, filepath.Join(dir, "CMakeCache.txt"), "zenohpico_SOURCE_DIR:STATIC="+src1+"\nBATCH_UNICAST_SIZE:STRING="+batch+"\nFRAG_MAX_SIZE:STRING=4096\n")
	}
	p, err = responder.FindPico(b2048, "")
	require.NoError(t, err)
	require.Equal(t, []string{filepath.Join(src1, "include")}, p.Include)
	require.Equal(t, map[string]int{"Z_FRAG_MAX_SIZE": 4096, "Z_BATCH_UNICAST_SIZE": 2048}, p.Macros)
	_, err = responder.FindPico(b65535, "")
	require.EqualError(t, err, "responder: "+filepath.Join(b65535, "CMakeCache.txt")+" says BATCH_UNICAST_SIZE 65535, but "+filepath.Join(src1, "include")+
		"/zenoh-pico/config.h (zenoh-pico's CMake writes it into the source tree) says Z_BATCH_UNICAST_SIZE 2048: the source tree was configured last for another build; re-run cmake for "+
		b65535+", or install it, before building against it")
	noLib := t.TempDir()
	touch(t, filepath.Join(noLib, "include", "zenoh-pico.h"), "")
	touch(t, filepath.Join(noLib, "include", "zenoh-pico", "config.h"), "")
	_, err = responder.FindPico(noLib, "")
	require.ErrorContains(t, err, "libzenohpico")

	t.Setenv(responder.DirEnv, "")
	_, err = responder.PicoFromEnv()
	require.ErrorIs(t, err, responder.ErrNoPico)
}

// The embedded sources are the files in c/.
func TestSourcesEmbedded(t *testing.T) {
	for _, n := range []string{responder.LibSource, responder.Header, responder.ExampleSource} {
		b, err := responder.Sources.ReadFile("c/" + n)
		require.NoError(t, err)
		require.True(t, strings.Contains(string(b), "SPDX-License-Identifier: Apache-2.0"), n)
	}
	dir := t.TempDir()
	require.NoError(t, responder.Extract(dir))
	_, err := os.Stat(filepath.Join(dir, responder.Header))
	require.NoError(t, err)
}

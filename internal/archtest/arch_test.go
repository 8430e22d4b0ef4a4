// Package archtest holds one test: the import rule of docs/architecture.md
// ("The rule"), checked on the source of every non-test Go file of the
// module. It reads files with go/parser only, so it needs no build tags and
// no cgo.
package archtest

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/picobridge/picobridge/"

// forbidden lists, per room (a path prefix of the importing package), the
// rooms it must never import. The rooms are the module's top-level
// folders, plus zenohpath/wire (the codec: standard library only).
var forbidden = map[string][]string{
	"probe":          {"*"},
	"zenohpath/wire": {"*"},
	// zvec describes captured transcripts with the codec; it is no part of it.
	"zenohpath/wire/zvec": {"bridge", "ddspath", "firmware", "knobs", "sim", "testlane", "eval", "internal", "cmd"},
	"knobs":               {"bridge", "zenohpath", "ddspath", "firmware", "sim", "testlane", "eval", "internal", "cmd", "probe"},
	"zenohpath":           {"bridge", "ddspath", "firmware", "knobs", "sim", "testlane", "eval", "internal", "cmd"},
	"ddspath":             {"bridge", "zenohpath", "firmware", "knobs", "sim", "testlane", "eval", "internal", "cmd"},
	"firmware":            {"bridge", "sim", "testlane", "eval", "internal", "cmd"},
	"bridge":              {"sim", "testlane", "eval", "internal", "cmd"},
	"sim":                 {"bridge", "testlane", "eval", "cmd"},
	"testlane":            {"bridge", "sim", "eval", "cmd"},
	"internal":            {"bridge", "sim", "testlane", "eval", "cmd"},
	"eval":                {"cmd"},
}

func TestImportRule(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found from %s: %v", root, err)
	}
	fset := token.NewFileSet()
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "testdata" || strings.HasPrefix(n, ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		from := filepath.ToSlash(filepath.Dir(rel))
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, is := range f.Imports {
			imp, _ := strconv.Unquote(is.Path.Value)
			if why := breaks(from, imp); why != "" {
				t.Errorf("%s imports %s: %s", rel, imp, why)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("only %d files checked: the walk missed the tree", checked)
	}
}

// stdlibExceptions are the modules a "standard library only" room imports
// anyway, each with its reason.
var stdlibExceptions = map[string]string{
	// wire/reassemble.go takes reassembly buffers from a pool (wire.Reassembler);
	// docs/architecture.md lists it as the one exception of the codec.
	"github.com/libp2p/go-buffer-pool": "zenohpath/wire",
}

// breaks returns why package dir from may not import imp ("" when it may).
func breaks(from, imp string) string {
	room := longestRoom(from)
	if room == "" {
		return ""
	}
	for _, bad := range forbidden[room] {
		if bad == "*" {
			if stdlibExceptions[imp] == room {
				continue
			}
			if strings.Contains(strings.Split(imp, "/")[0], ".") || imp == "C" {
				return room + " imports only the standard library"
			}
			continue
		}
		if strings.HasPrefix(imp, module+bad+"/") || imp == module+bad {
			return room + " must not import " + bad + " (docs/architecture.md, The rule)"
		}
	}
	return ""
}

// longestRoom is the longest key of forbidden that is dir or a parent of it.
func longestRoom(dir string) string {
	best := ""
	for room := range forbidden {
		if (dir == room || strings.HasPrefix(dir, room+"/")) && len(room) > len(best) {
			best = room
		}
	}
	return best
}

func TestBreaks(t *testing.T) {
	for _, c := range []struct{ from, imp, want string }{
		{"sim/devsim", module + "bridge", "sim must not import bridge (docs/architecture.md, The rule)"},
		{"sim/devsim", module + "probe", ""},
		{"probe", "strings", ""},
		{"probe", "github.com/stretchr/testify/require", "probe imports only the standard library"},
		{"zenohpath/wire", module + "zenohpath/keyexpr", "zenohpath/wire imports only the standard library"},
		{"zenohpath/transport", module + "zenohpath/wire", ""},
		{"zenohpath/wire/zvec", module + "zenohpath/wire", ""},
		{"zenohpath/wire", "github.com/libp2p/go-buffer-pool", ""},
		{"probe", "github.com/libp2p/go-buffer-pool", "probe imports only the standard library"},
		{"bridge/server", module + "internal/testpki", "bridge must not import internal (docs/architecture.md, The rule)"},
		{"cmd/picobridge", module + "bridge", ""},
	} {
		if got := breaks(c.from, c.imp); got != c.want {
			t.Errorf("breaks(%q, %q) = %q, want %q", c.from, c.imp, got, c.want)
		}
	}
}

package knobs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
)

// Catalog holds the platform and board profiles a resolution can use.
type Catalog struct {
	platforms []*Profile
	boards    []*Profile
}

// LoadCatalog reads platforms/*.toml and boards/<platform>/*.toml from fsys
// (firmware.Profiles in the binary). prefix is prepended to file names in
// messages and provenance, e.g. "firmware" gives "firmware/platforms/zephyr.toml".
// It checks that names are unique, that every `inherits` and board `platform`
// names a platform, that inheritance has no cycle, and that a board sits in
// the folder of its platform. All problems are reported at once.
func LoadCatalog(fsys fs.FS, prefix string) (*Catalog, error) {
	c := &Catalog{}
	var ps problems
	load := func(kind ProfileKind, pattern string) []*Profile {
		files, err := fs.Glob(fsys, pattern)
		if err != nil {
			ps.add(pattern, 0, 0, "", ErrProfile, "%v", err)
			return nil
		}
		sort.Strings(files)
		var out []*Profile
		for _, f := range files {
			name := path.Join(prefix, f)
			data, err := fs.ReadFile(fsys, f)
			if err != nil {
				ps.add(name, 0, 0, "", ErrProfile, "%v", err)
				continue
			}
			p, err := ParseProfile(kind, name, data)
			if err != nil {
				appendProblems(&ps, err)
				continue
			}
			out = append(out, p)
		}
		return out
	}
	c.platforms = load(PlatformProfile, "platforms/*.toml")
	c.boards = load(BoardProfile, "boards/*/*.toml")
	checkUnique(&ps, c.platforms)
	checkUnique(&ps, c.boards)
	for _, p := range c.platforms {
		if p.Inherits == "" {
			continue
		}
		if c.platform(p.Inherits) == nil {
			ps.add(p.File, 0, 0, "inherits", ErrProfile, "no platform named %q", p.Inherits)
		} else if _, err := c.chain(p); err != nil {
			appendProblems(&ps, err)
		}
	}
	for _, b := range c.boards {
		plat := c.platform(b.Platform)
		if plat == nil {
			ps.add(b.File, 0, 0, "platform", ErrProfile, "no platform named %q", b.Platform)
			continue
		}
		if dir := path.Base(path.Dir(b.File)); dir != plat.Name() {
			ps.add(b.File, 0, 0, "platform", ErrProfile, "board of platform %s sits under boards/%s/", plat.Name(), dir)
		}
	}
	if err := ps.err(); err != nil {
		return nil, err
	}
	return c, nil
}

func appendProblems(ps *problems, err error) {
	var ce *ConfigError
	if errors.As(err, &ce) {
		*ps = append(*ps, ce.Problems...)
		return
	}
	*ps = append(*ps, &Problem{Msg: err.Error(), Err: ErrProfile})
}

func checkUnique(ps *problems, profiles []*Profile) {
	seen := map[string]string{}
	for _, p := range profiles {
		for _, n := range p.Names {
			key := strings.ToLower(n)
			if other, dup := seen[key]; dup {
				ps.add(p.File, 0, 0, "names", ErrProfile, "%s name %q is also used by %s", p.Kind, n, other)
				continue
			}
			seen[key] = p.File
		}
	}
}

// Platforms returns the platform profiles, sorted by file name.
func (c *Catalog) Platforms() []*Profile { return c.platforms }

// Boards returns the board profiles, sorted by file name.
func (c *Catalog) Boards() []*Profile { return c.boards }

func (c *Catalog) platform(name string) *Profile {
	for _, p := range c.platforms {
		if p.HasName(name) {
			return p
		}
	}
	return nil
}

// Platform finds a platform by name or alias.
func (c *Catalog) Platform(name string) (*Profile, error) {
	if p := c.platform(name); p != nil {
		return p, nil
	}
	names := make([]string, len(c.platforms))
	for i, p := range c.platforms {
		names[i] = p.Name()
	}
	return nil, &ConfigError{Problems: []*Problem{{Key: "platform", Err: ErrUnknownPlatform,
		Msg: fmt.Sprintf("no platform named %q (known: %s)", name, strings.Join(names, ", "))}}}
}

// Board finds a board by name or alias; failing that, when ref names an
// existing file it is read as a board profile.
func (c *Catalog) Board(ref string) (*Profile, error) {
	for _, b := range c.boards {
		if b.HasName(ref) {
			return b, nil
		}
	}
	if data, err := os.ReadFile(ref); err == nil {
		return ParseProfile(BoardProfile, ref, data)
	} else if strings.ContainsRune(ref, os.PathSeparator) || strings.HasSuffix(ref, ".toml") {
		return nil, &ConfigError{Problems: []*Problem{{File: ref, Key: "board", Err: ErrUnknownBoard,
			Msg: fmt.Sprintf("cannot read board file: %v", unwrapPathErr(err))}}}
	}
	names := make([]string, len(c.boards))
	for i, b := range c.boards {
		names[i] = b.Name()
	}
	return nil, &ConfigError{Problems: []*Problem{{Key: "board", Err: ErrUnknownBoard,
		Msg: fmt.Sprintf("no board named %q and no such file (known: %s)", ref, strings.Join(names, ", "))}}}
}

func unwrapPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// chain returns p's inherits chain, root first, p last.
func (c *Catalog) chain(p *Profile) ([]*Profile, error) {
	out := []*Profile{p}
	for cur := p; cur.Inherits != ""; {
		parent := c.platform(cur.Inherits)
		if parent == nil {
			return nil, &ConfigError{Problems: []*Problem{{File: cur.File, Key: "inherits", Err: ErrProfile,
				Msg: fmt.Sprintf("no platform named %q", cur.Inherits)}}}
		}
		for _, seen := range out {
			if seen == parent {
				return nil, &ConfigError{Problems: []*Problem{{File: p.File, Key: "inherits", Err: ErrProfile,
					Msg: "inherits cycle: " + chainNames(append(out, parent))}}}
			}
		}
		out = append(out, parent)
		cur = parent
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

func chainNames(ps []*Profile) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name()
	}
	return strings.Join(names, " -> ")
}

package knobs

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinels that callers match with errors.Is on a *Problem or a *ConfigError.
var (
	// ErrSyntax: a TOML, env or Kconfig file does not parse.
	ErrSyntax = errors.New("syntax error")
	// ErrUnknownKey: a key in a profile or traffic file that nothing reads.
	ErrUnknownKey = errors.New("unknown key")
	// ErrType: a value of the wrong TOML type (a string where a bool is expected ...).
	ErrType = errors.New("wrong type")
	// ErrRange: a value outside the knob's valid range.
	ErrRange = errors.New("out of range")
	// ErrBadValue: an environment or Kconfig value that does not parse as the knob's type.
	ErrBadValue = errors.New("unparseable value")
	// ErrUnknownPlatform: no platform profile has that name or alias.
	ErrUnknownPlatform = errors.New("unknown platform")
	// ErrUnknownBoard: no board profile has that name or alias, and it is not a file.
	ErrUnknownBoard = errors.New("unknown board")
	// ErrProfile: a profile is inconsistent (missing names, inherits cycle, board of another platform ...).
	ErrProfile = errors.New("invalid profile")
)

// Problem is one configuration problem, located as precisely as the input allows.
//
// Its text follows the project convention (style guide, convention 13):
//
//	firmware/boards/zephyr/native_sim.toml:12:3: knobs.zenoh.wire.batch_unicast_size: must be ≤ 65535 (got 70000)
//	prj.conf:4: CONFIG_NROS_ZENOH_TX_BATCH: cannot parse "maybe" as a bool (want y/n, 1/0, true/false)
type Problem struct {
	File string // path as given (embedded profiles: "firmware/..."); "environment" for the process env
	Line int    // 1-based; 0 when unknown
	Col  int    // 1-based; 0 when unknown
	Key  string // dotted TOML key or variable name
	Msg  string
	Err  error // one of the sentinels above
}

func (p *Problem) Error() string {
	var b strings.Builder
	if p.File != "" {
		b.WriteString(p.File)
		if p.Line > 0 {
			fmt.Fprintf(&b, ":%d", p.Line)
			if p.Col > 0 {
				fmt.Fprintf(&b, ":%d", p.Col)
			}
		}
		b.WriteString(": ")
	}
	if p.Key != "" {
		b.WriteString(p.Key)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

func (p *Problem) Unwrap() error { return p.Err }

// ConfigError collects every problem found in one pass, so that a user fixes
// them all at once. errors.Is matches any contained sentinel; errors.As finds
// the first *Problem.
type ConfigError struct {
	Problems []*Problem
}

func (e *ConfigError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap exposes every problem to errors.Is and errors.As.
func (e *ConfigError) Unwrap() []error {
	errs := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		errs[i] = p
	}
	return errs
}

// ExitCode is the picobridge exit status for a configuration error (2, as for
// a usage error: the input is wrong, not the program).
func (e *ConfigError) ExitCode() int { return 2 }

// problems accumulates Problems; err returns nil when there are none.
type problems []*Problem

func (ps *problems) add(file string, line, col int, key string, sentinel error, format string, args ...any) {
	*ps = append(*ps, &Problem{File: file, Line: line, Col: col, Key: key, Msg: fmt.Sprintf(format, args...), Err: sentinel})
}

func (ps problems) err() error {
	if len(ps) == 0 {
		return nil
	}
	return &ConfigError{Problems: ps}
}

package knobs

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
)

// ProcessEnvFile is the File of variables taken from the process environment.
const ProcessEnvFile = "environment"

// EnvVar is one variable of the env rung: from the process environment, an
// env file (KEY=VALUE) or a Zephyr Kconfig file (prj.conf, .config).
type EnvVar struct {
	Name  string
	Value string // unquoted; "n" for a Kconfig "# CONFIG_X is not set" line
	File  string // ProcessEnvFile for the process environment
	Line  int    // 1-based; 0 for the process environment
}

func (v EnvVar) where() string {
	if v.Line == 0 {
		return v.File
	}
	return v.File + ":" + strconv.Itoa(v.Line)
}

// Env is the input of the env rung. A later variable of the same name
// replaces an earlier one (shell and Kconfig semantics; a later file after an
// earlier one), except that the process environment wins over files, as
// cargo's [env] yields to it.
type Env struct {
	Vars []EnvVar
}

// Add appends the variables of other.
func (e *Env) Add(other *Env) {
	if other != nil {
		e.Vars = append(e.Vars, other.Vars...)
	}
}

// ProcessEnv keeps the variables of environ (os.Environ form) that name a knob
// or look like one (NROS_*, ZPICO_*, CONFIG_NROS_*).
func ProcessEnv(environ []string) *Env {
	e := &Env{}
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !knobLike(name) {
			continue
		}
		e.Vars = append(e.Vars, EnvVar{Name: name, Value: value, File: ProcessEnvFile})
	}
	return e
}

func knobLike(name string) bool {
	if _, _, ok := LookupEnv(name); ok {
		return true
	}
	return strings.HasPrefix(name, "NROS_") || strings.HasPrefix(name, "ZPICO_") || strings.HasPrefix(name, "CONFIG_NROS_")
}

// ParseEnvFile reads KEY=VALUE lines (an optional leading `export `, values
// optionally in single or double quotes), blank lines and `#` comments. It
// also reads Zephyr Kconfig output: `CONFIG_X=y` and the explicit-no form
// `# CONFIG_X is not set`, which yields Value "n". Every variable is kept;
// the resolver decides which ones name knobs. Malformed lines are reported
// all at once with file and line.
func ParseEnvFile(file string, data []byte) (*Env, error) {
	e := &Env{}
	var ps problems
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(strings.TrimSuffix(sc.Text(), "\r"))
		if text == "" {
			continue
		}
		if strings.HasPrefix(text, "#") {
			if name, ok := kconfigNotSet(text); ok {
				e.Vars = append(e.Vars, EnvVar{Name: name, Value: "n", File: file, Line: line})
			}
			continue
		}
		text = strings.TrimPrefix(text, "export ")
		name, value, ok := strings.Cut(text, "=")
		name = strings.TrimSpace(name)
		if !ok {
			ps.add(file, line, 0, "", ErrSyntax, "want KEY=VALUE, got %q", clip(text))
			continue
		}
		if !validEnvName(name) {
			ps.add(file, line, 0, "", ErrSyntax, "%q is not a variable name", clip(name))
			continue
		}
		value = strings.TrimSpace(value)
		if uq, ok := unquote(value); ok {
			value = uq
		} else {
			ps.add(file, line, 0, name, ErrSyntax, "unterminated quote in %q", clip(value))
			continue
		}
		e.Vars = append(e.Vars, EnvVar{Name: name, Value: value, File: file, Line: line})
	}
	if err := sc.Err(); err != nil {
		ps.add(file, line+1, 0, "", ErrSyntax, "%v", err)
	}
	if err := ps.err(); err != nil {
		return nil, err
	}
	return e, nil
}

// kconfigNotSet recognises "# CONFIG_X is not set".
func kconfigNotSet(comment string) (string, bool) {
	rest, ok := strings.CutPrefix(comment, "# ")
	if !ok {
		return "", false
	}
	name, ok := strings.CutSuffix(rest, " is not set")
	if !ok || !strings.HasPrefix(name, "CONFIG_") || !validEnvName(name) {
		return "", false
	}
	return name, true
}

func validEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

func unquote(v string) (string, bool) {
	if v == "" {
		return v, true
	}
	q := v[0]
	if q != '"' && q != '\'' {
		return v, true
	}
	if len(v) < 2 || v[len(v)-1] != q {
		return "", false
	}
	return v[1 : len(v)-1], true
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}

// parseEnvValue parses a variable's value as the knob's type. Bools accept
// 1/0, y/n, yes/no, true/false, on/off (any case) and any integer (non-zero
// is true, as nano-ros reads them); ints accept decimal, 0x hex, 0o octal.
func parseEnvValue(k Knob, raw string) (int64, string) {
	s := strings.TrimSpace(raw)
	if k.Type == Bool {
		switch strings.ToLower(s) {
		case "1", "y", "yes", "true", "on":
			return 1, ""
		case "0", "n", "no", "false", "off":
			return 0, ""
		}
		if n, err := strconv.ParseInt(s, 0, 64); err == nil {
			return b2i(n != 0), ""
		}
		return 0, "cannot parse " + strconv.Quote(raw) + " as a bool (want y/n, 1/0, true/false)"
	}
	n, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		return 0, "cannot parse " + strconv.Quote(raw) + " as an integer (" + unitOrCount(k) + ")"
	}
	if msg := rangeMsg(k, n); msg != "" {
		return 0, msg
	}
	return n, ""
}

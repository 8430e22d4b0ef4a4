// Package zvec reads the zenoh-pico wire transcripts (*.zvec) of
// shared/testdata/zenoh-pico (format described in that folder's README)
// and renders decoded batches in the wording of their `# expect:` lines.
package zvec

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Direction of a batch.
type Direction string

// Directions: D is the device (real zenoh-pico), G the gateway/router.
const (
	DeviceToGateway Direction = "D>G"
	GatewayToDevice Direction = "G>D"
)

// Line is one data line: one batch (content without the TCP length prefix).
type Line struct {
	N      int       // 1-based data line number
	Source int       // 1-based line number in the file
	Ms     int       // milliseconds since the first accept (-1 when unknown)
	Dir    Direction // D>G or G>D ("" for bare hex input)
	Batch  []byte
	Expect string // the `# expect:` description of this line, if any
}

// Event is a `# event:` header: a TCP event placed after data line After.
type Event struct {
	Ms    int
	After int
	Text  string
}

// File is a parsed transcript.
type File struct {
	Headers map[string][]string // header key → values, in file order
	Events  []Event
	Lines   []Line
	PicoOut []string
	// Expects is the number of `# expect:` lines.
	Expects int
	// ExpectErrors are the `# expect:` lines ParseLenient could not attach
	// to a data line (malformed, no such data line, wrong direction, repeated).
	ExpectErrors []*ExpectError
}

// ExpectError is a `# expect:` line that does not fit the transcript.
type ExpectError struct {
	Source int // 1-based line number of the `# expect:` line
	Msg    string
}

func (e *ExpectError) Error() string { return fmt.Sprintf("line %d: # expect: %s", e.Source, e.Msg) }

// NewConnectionAfter reports whether a TCP accept event (a new connection,
// hence fresh session state) sits after data line n.
func (f *File) NewConnectionAfter(n int) bool {
	for _, e := range f.Events {
		if e.After == n && strings.Contains(e.Text, "accept") {
			return true
		}
	}
	return false
}

// Parse reads a .zvec transcript. A `# expect:` line that does not fit (see
// ParseLenient) is an error.
func Parse(r io.Reader) (*File, error) {
	f, err := ParseLenient(r)
	if err != nil {
		return nil, err
	}
	if len(f.ExpectErrors) > 0 {
		return nil, f.ExpectErrors[0]
	}
	return f, nil
}

// ParseLenient reads a .zvec transcript like Parse, but records the
// `# expect:` lines that are malformed, name a data line the file does not
// have, give the wrong direction or repeat a line in f.ExpectErrors instead
// of failing. Malformed data and event lines are still errors.
func ParseLenient(r io.Reader) (*File, error) {
	f := &File{Headers: map[string][]string{}}
	type expect struct {
		src  int
		dir  Direction
		desc string
	}
	expects := map[int]expect{}
	experr := func(src int, format string, args ...any) {
		f.ExpectErrors = append(f.ExpectErrors, &ExpectError{Source: src, Msg: fmt.Sprintf(format, args...)})
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	src := 0
	for sc.Scan() {
		src++
		line := strings.TrimRight(sc.Text(), "\r")
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "#") {
			kv := strings.TrimSpace(strings.TrimPrefix(line, "#"))
			key, val, ok := strings.Cut(kv, ":")
			if !ok {
				continue
			}
			key, val = strings.TrimSpace(key), strings.TrimSpace(val)
			f.Headers[key] = append(f.Headers[key], val)
			switch key {
			case "pico-out":
				f.PicoOut = append(f.PicoOut, val)
			case "event":
				ev, err := parseEvent(val)
				if err != nil {
					return nil, fmt.Errorf("line %d: %w", src, err)
				}
				f.Events = append(f.Events, ev)
			case "expect":
				// "<dir> line <N> = <description>"
				f.Expects++
				head, desc, ok := strings.Cut(val, " = ")
				fs := strings.Fields(head)
				if !ok || len(fs) != 3 || fs[1] != "line" {
					experr(src, "malformed (want `# expect: <D>G|G>D> line <N> = <description>`)")
					continue
				}
				if d := Direction(fs[0]); d != DeviceToGateway && d != GatewayToDevice {
					experr(src, "direction %q (want D>G or G>D)", fs[0])
					continue
				}
				n, err := strconv.Atoi(fs[2])
				if err != nil || n < 1 {
					experr(src, "data line number %q (want a number ≥ 1)", fs[2])
					continue
				}
				if prev, dup := expects[n]; dup {
					experr(src, "second expect for data line %d (first at line %d)", n, prev.src)
					continue
				}
				expects[n] = expect{src: src, dir: Direction(fs[0]), desc: desc}
			}
			continue
		}
		fs := strings.Fields(line)
		if len(fs) != 3 {
			return nil, fmt.Errorf("line %d: want `<ms> <dir> <hex>`", src)
		}
		ms, err := strconv.Atoi(fs[0])
		if err != nil {
			return nil, fmt.Errorf("line %d: ms: %w", src, err)
		}
		dir := Direction(fs[1])
		if dir != DeviceToGateway && dir != GatewayToDevice {
			return nil, fmt.Errorf("line %d: direction %q (want D>G or G>D)", src, fs[1])
		}
		b, err := hex.DecodeString(fs[2])
		if err != nil {
			return nil, fmt.Errorf("line %d: hex: %w", src, err)
		}
		f.Lines = append(f.Lines, Line{N: len(f.Lines) + 1, Source: src, Ms: ms, Dir: dir, Batch: b})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for n, e := range expects {
		if n > len(f.Lines) {
			experr(e.src, "data line %d does not exist (the file has %d data lines)", n, len(f.Lines))
			continue
		}
		l := &f.Lines[n-1]
		if e.dir != l.Dir {
			experr(e.src, "data line %d is %s, the expect says %s", n, l.Dir, e.dir)
			continue
		}
		l.Expect = e.desc
	}
	slices.SortFunc(f.ExpectErrors, func(a, b *ExpectError) int { return a.Source - b.Source })
	return f, nil
}

func parseEvent(v string) (Event, error) {
	// ms=<t> after line <N>: <text>
	var e Event
	head, text, ok := strings.Cut(v, ": ")
	if !ok {
		return e, fmt.Errorf("malformed event %q", v)
	}
	if _, err := fmt.Sscanf(head, "ms=%d after line %d", &e.Ms, &e.After); err != nil {
		return e, fmt.Errorf("malformed event %q: %w", v, err)
	}
	e.Text = text
	return e, nil
}

// ParseHex reads bare batches, one lower- or upper-case hex string per line
// (spaces inside a line are ignored; lines starting with '#' are skipped).
// A line may also be a .zvec data line (`<ms> <dir> <hex>`).
func ParseHex(r io.Reader) ([]Line, error) {
	var out []Line
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	src := 0
	for sc.Scan() {
		src++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		l := Line{Source: src, Ms: -1}
		if fs := strings.Fields(s); len(fs) == 3 && (fs[1] == string(DeviceToGateway) || fs[1] == string(GatewayToDevice)) {
			if ms, err := strconv.Atoi(fs[0]); err == nil {
				l.Ms, l.Dir, s = ms, Direction(fs[1]), fs[2]
			}
		} else if len(fs) >= 2 && strings.Contains(fs[1], ">") {
			// Hex has no '>': this is a data line with a bad direction.
			return nil, fmt.Errorf("line %d: direction %q (want D>G or G>D)", src, fs[1])
		}
		b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
		if err != nil {
			return nil, fmt.Errorf("line %d: hex: %w", src, err)
		}
		l.N = len(out) + 1
		l.Batch = b
		out = append(out, l)
	}
	return out, sc.Err()
}

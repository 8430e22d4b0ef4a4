// Package zvec reads the zenoh-pico wire transcripts (*.zvec) of
// shared/testdata/zenoh-pico (format described in that folder's README)
// and renders decoded batches in the wording of their `# expect:` lines.
package zvec

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"
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
}

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

// Parse reads a .zvec transcript.
func Parse(r io.Reader) (*File, error) {
	f := &File{Headers: map[string][]string{}}
	expects := map[int]string{}
	expectDir := map[int]Direction{}
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
				head, desc, ok := strings.Cut(val, " = ")
				fs := strings.Fields(head)
				if !ok || len(fs) != 3 || fs[1] != "line" {
					return nil, fmt.Errorf("line %d: malformed expect", src)
				}
				n, err := strconv.Atoi(fs[2])
				if err != nil {
					return nil, fmt.Errorf("line %d: %w", src, err)
				}
				expects[n] = desc
				expectDir[n] = Direction(fs[0])
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
			return nil, fmt.Errorf("line %d: direction %q", src, fs[1])
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
	for i := range f.Lines {
		l := &f.Lines[i]
		l.Expect = expects[l.N]
		if d, ok := expectDir[l.N]; ok && d != l.Dir {
			return nil, fmt.Errorf("expect for line %d says %s, data line is %s", l.N, d, l.Dir)
		}
	}
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

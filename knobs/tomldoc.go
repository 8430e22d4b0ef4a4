package knobs

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	toml "github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// entry is one key = value of a TOML document, flattened to its full dotted
// path ("knobs.zenoh.tx.batch", "topic[1].rate_hz") with the position of its key.
type entry struct {
	path      string
	kind      unstable.Kind // String, Bool, Integer, Array (of strings) or another (rejected by users)
	str       string
	boolean   bool
	integer   int64
	intErr    error // integer literal that does not fit int64
	float     float64
	strs      []string
	line, col int
}

// table is a [header] seen in the document, with its position.
type table struct {
	path      string
	line, col int
}

// tomlDoc is a parsed TOML document with positions.
type tomlDoc struct {
	file    string
	entries []entry
	tables  []table
}

// parseTOML checks the document with go-toml (syntax, duplicate keys, table
// redefinition; errors carry line and column), then walks the AST once more to
// keep the position of every key.
func parseTOML(file string, data []byte) (*tomlDoc, error) {
	var probe map[string]any
	if err := toml.Unmarshal(data, &probe); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			line, col := de.Position()
			key := strings.Join(de.Key(), ".")
			return nil, &ConfigError{Problems: []*Problem{{File: file, Line: line, Col: col, Key: key,
				Msg: strings.TrimPrefix(de.Error(), "toml: "), Err: ErrSyntax}}}
		}
		return nil, &ConfigError{Problems: []*Problem{{File: file, Msg: err.Error(), Err: ErrSyntax}}}
	}
	doc := &tomlDoc{file: file}
	p := unstable.Parser{}
	p.Reset(data)
	var current string
	arrayIndex := map[string]int{}
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			first, parts := keyParts(e.Key())
			name := strings.Join(parts, ".")
			if e.Kind == unstable.ArrayTable {
				i := arrayIndex[name]
				arrayIndex[name] = i + 1
				name = fmt.Sprintf("%s[%d]", name, i)
			}
			current = name
			pos := p.Shape(first.Raw).Start
			doc.tables = append(doc.tables, table{path: name, line: pos.Line, col: pos.Column})
		case unstable.KeyValue:
			doc.keyValue(&p, current, e)
		}
	}
	if err := p.Error(); err != nil { // unreachable after Unmarshal succeeded; kept for safety
		return nil, &ConfigError{Problems: []*Problem{{File: file, Msg: err.Error(), Err: ErrSyntax}}}
	}
	return doc, nil
}

func keyParts(it unstable.Iterator) (*unstable.Node, []string) {
	var first *unstable.Node
	var parts []string
	for it.Next() {
		n := it.Node()
		if first == nil {
			first = n
		}
		parts = append(parts, string(n.Data))
	}
	return first, parts
}

func (d *tomlDoc) keyValue(p *unstable.Parser, prefix string, e *unstable.Node) {
	first, parts := keyParts(e.Key())
	path := strings.Join(parts, ".")
	if prefix != "" {
		path = prefix + "." + path
	}
	pos := p.Shape(first.Raw).Start
	v := e.Value()
	en := entry{path: path, kind: v.Kind, line: pos.Line, col: pos.Column}
	switch v.Kind {
	case unstable.String:
		en.str = string(v.Data)
	case unstable.Bool:
		en.boolean = string(v.Data) == "true"
	case unstable.Integer:
		en.integer, en.intErr = strconv.ParseInt(string(v.Data), 0, 64)
	case unstable.Float:
		en.float = parseTOMLFloat(string(v.Data))
	case unstable.Array:
		it := v.Children()
		for it.Next() {
			c := it.Node()
			if c.Kind != unstable.String {
				en.kind = unstable.Invalid // array of something else: a type error for every user
				break
			}
			en.strs = append(en.strs, string(c.Data))
		}
	case unstable.InlineTable:
		it := v.Children()
		for it.Next() {
			if c := it.Node(); c.Kind == unstable.KeyValue {
				d.keyValue(p, path, c)
			}
		}
		d.tables = append(d.tables, table{path: path, line: pos.Line, col: pos.Column})
		return
	}
	d.entries = append(d.entries, en)
}

// typeName names a TOML value kind for error messages.
func typeName(k unstable.Kind) string {
	switch k {
	case unstable.String:
		return "a string"
	case unstable.Bool:
		return "a bool"
	case unstable.Integer:
		return "an integer"
	case unstable.Float:
		return "a float"
	case unstable.Array:
		return "an array of strings"
	case unstable.InlineTable:
		return "a table"
	case unstable.LocalDate, unstable.LocalTime, unstable.LocalDateTime, unstable.DateTime:
		return "a date/time"
	}
	return "an array of mixed values"
}

// parseTOMLFloat parses a float literal the TOML parser already accepted
// (underscores, inf, nan).
func parseTOMLFloat(s string) float64 {
	s = strings.ReplaceAll(s, "_", "")
	switch strings.TrimLeft(s, "+-") {
	case "inf":
		s = strings.Replace(s, "inf", "Inf", 1)
	case "nan":
		s = "NaN"
	}
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

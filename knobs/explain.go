package knobs

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteExplain prints the resolution: platform and board, then a table with
// one line per capability and per knob (knob, value, unit, set by), then the
// warnings.
func WriteExplain(w io.Writer, r *Resolved) error {
	var b strings.Builder
	fmt.Fprintf(&b, "platform: %s (%s)", r.Platform.Name(), r.Platform.File)
	if len(r.Chain) > 1 {
		fmt.Fprintf(&b, ", inherits %s", chainNames(r.Chain[:len(r.Chain)-1]))
	}
	b.WriteString("\n")
	if r.Board != nil {
		fmt.Fprintf(&b, "board:    %s (%s)\n", r.Board.Name(), r.Board.File)
	} else {
		b.WriteString("board:    none\n")
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KNOB\tVALUE\tUNIT\tSET BY")
	for _, c := range r.Capabilities {
		fmt.Fprintf(tw, "capabilities.%s\t%t\t-\t%s\n", c.Name, c.Value, c.Source)
	}
	for _, v := range r.Values {
		unit := string(v.Knob.Unit)
		if unit == "" {
			unit = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", v.Knob.ID, v, unit, v.Source)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	writeWarnings(&b, r.Warnings)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeWarnings(b *strings.Builder, ws []Warning) {
	if len(ws) == 0 {
		b.WriteString("\nwarnings: none\n")
		return
	}
	fmt.Fprintf(b, "\nwarnings (%d):\n", len(ws))
	for _, w := range ws {
		fmt.Fprintf(b, "  - %s\n", w)
	}
}

// SourceJSON is the JSON form of a Source.
type SourceJSON struct {
	Rung    string `json:"rung"`
	Profile string `json:"profile,omitempty"`
	Var     string `json:"var,omitempty"`
	VarKind string `json:"var_kind,omitempty"` // env, deprecated or kconfig
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Note    string `json:"note,omitempty"`
	Text    string `json:"text"`
}

func sourceJSON(s Source) SourceJSON {
	j := SourceJSON{Rung: s.Rung.String(), Profile: s.Profile, Var: s.Var, File: s.File, Line: s.Line, Note: s.Note, Text: s.String()}
	if s.Rung == RungEnv {
		j.VarKind = s.VarKind.String()
	}
	return j
}

// ExplainJSON is the JSON form of `knobs explain --json`.
type ExplainJSON struct {
	Platform     string           `json:"platform"`
	PlatformFile string           `json:"platform_file"`
	Inherits     []string         `json:"inherits,omitempty"`
	Board        string           `json:"board,omitempty"`
	BoardFile    string           `json:"board_file,omitempty"`
	Capabilities []CapabilityJSON `json:"capabilities"`
	Knobs        []KnobValueJSON  `json:"knobs"`
	Warnings     []WarningJSON    `json:"warnings"`
}

// CapabilityJSON is one capability in ExplainJSON.
type CapabilityJSON struct {
	Name  string     `json:"name"`
	Value bool       `json:"value"`
	SetBy SourceJSON `json:"set_by"`
}

// KnobValueJSON is one knob in ExplainJSON; Value is a JSON bool or number.
type KnobValueJSON struct {
	ID    string     `json:"id"`
	Value any        `json:"value"`
	Unit  string     `json:"unit,omitempty"`
	SetBy SourceJSON `json:"set_by"`
}

// WarningJSON is one warning in ExplainJSON.
type WarningJSON struct {
	Key string `json:"key"`
	Msg string `json:"msg"`
}

// Explain returns the JSON form of a resolution.
func Explain(r *Resolved) ExplainJSON {
	out := ExplainJSON{Platform: r.Platform.Name(), PlatformFile: r.Platform.File,
		Capabilities: []CapabilityJSON{}, Knobs: []KnobValueJSON{}, Warnings: []WarningJSON{}}
	for _, p := range r.Chain[:len(r.Chain)-1] {
		out.Inherits = append(out.Inherits, p.Name())
	}
	if r.Board != nil {
		out.Board, out.BoardFile = r.Board.Name(), r.Board.File
	}
	for _, c := range r.Capabilities {
		out.Capabilities = append(out.Capabilities, CapabilityJSON{c.Name, c.Value, sourceJSON(c.Source)})
	}
	for _, v := range r.Values {
		var val any = v.Value
		if v.Knob.Type == Bool {
			val = v.Bool()
		}
		out.Knobs = append(out.Knobs, KnobValueJSON{ID: v.Knob.ID, Value: val, Unit: string(v.Knob.Unit), SetBy: sourceJSON(v.Source)})
	}
	for _, w := range r.Warnings {
		out.Warnings = append(out.Warnings, WarningJSON(w))
	}
	return out
}

// WriteExplainJSON prints Explain(r) as indented JSON.
func WriteExplainJSON(w io.Writer, r *Resolved) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(Explain(r))
}

// WriteRegistry prints the registry as a table: knob, type, unit, range,
// default, TOML key, env names, meaning.
func WriteRegistry(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KNOB\tTYPE\tUNIT\tRANGE\tDEFAULT\tENV (canonical, deprecated*, kconfig)\tMEANING")
	for _, k := range registry {
		unit := string(k.Unit)
		if unit == "" {
			unit = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Type, unit, k.RangeString(), k.Format(k.Default), envList(k), k.Meaning)
	}
	return tw.Flush()
}

func envList(k Knob) string {
	var names []string
	for _, e := range k.Env {
		n := e.Name
		if e.Kind == EnvDeprecated {
			n += "*"
		}
		names = append(names, n)
	}
	if len(names) == 0 {
		return "-"
	}
	return strings.Join(names, " ")
}

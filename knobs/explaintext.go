package knobs

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteExplainText prints an ExplainJSON (a resolution read back from a
// gateway's /knobz) exactly as WriteExplain prints the resolution.
func WriteExplainText(w io.Writer, e ExplainJSON) error {
	var b strings.Builder
	fmt.Fprintf(&b, "platform: %s (%s)", e.Platform, e.PlatformFile)
	if len(e.Inherits) > 0 {
		fmt.Fprintf(&b, ", inherits %s", strings.Join(e.Inherits, " -> "))
	}
	b.WriteString("\n")
	if e.Board != "" {
		fmt.Fprintf(&b, "board:    %s (%s)\n", e.Board, e.BoardFile)
	} else {
		b.WriteString("board:    none\n")
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KNOB\tVALUE\tUNIT\tSET BY")
	for _, c := range e.Capabilities {
		fmt.Fprintf(tw, "capabilities.%s\t%t\t-\t%s\n", c.Name, c.Value, c.SetBy.Text)
	}
	for _, k := range e.Knobs {
		unit := k.Unit
		if unit == "" {
			unit = "-"
		}
		val := fmt.Sprint(k.Value)
		if f, ok := k.Value.(float64); ok { // decoded JSON numbers
			val = fmt.Sprintf("%d", int64(f))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", k.ID, val, unit, k.SetBy.Text)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	ws := make([]Warning, len(e.Warnings))
	for i, x := range e.Warnings {
		ws[i] = Warning(x)
	}
	writeWarnings(&b, ws)
	_, err := io.WriteString(w, b.String())
	return err
}

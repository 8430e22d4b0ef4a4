package main

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/picobridge/picobridge/zenohpath/wire"
	"github.com/picobridge/picobridge/zenohpath/wire/zvec"
)

func init() {
	subcommands = append(subcommands, newWireCommand)
}

// Exit statuses of `picobridge wire decode`.
const (
	exitDecodeError    = 2 // some batch did not decode
	exitExpectMismatch = 3 // --check: a description differs from its # expect: line
)

// wireError is returned by `wire decode`; it carries the exit status.
type wireError struct {
	code int
	msg  string
}

func (e *wireError) Error() string { return e.msg }
func (e *wireError) ExitCode() int { return e.code }

func newWireCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "wire",
		Short: "Zenoh wire tools (decode captured batches)",
	}
	var check bool
	decode := &cobra.Command{
		Use:   "decode FILE|-",
		Short: "Pretty-print every batch of a .zvec transcript, or hex batches on stdin (one per line)",
		Long: `Decode Zenoh 1.x batches and print one line per transport message, worded like
the "# expect:" lines of shared/testdata/zenoh-pico/*.zvec:

  <ms> <dir> FRAME R sn=3: PUSH key="demo/example/zenoh-pico-pub" (scope 1, M) PUT payload="..." (21 B)

FILE is a .zvec transcript; "-" reads stdin, where each line is either a bare
hex batch (content without the 2-byte TCP length prefix) or a .zvec data line.
Keys are resolved per connection (DeclareKeyExpr tables of both sides, M flag);
FRAGMENT trains are reassembled. A batch that does not decode is reported with
its line and byte offset, and the command exits with status 2; so is an empty
input ("no batches"), input that is neither a transcript nor hex, and a batch longer than 65535 bytes (the u16 TCP length
prefix). With --check (file or stdin alike), each description is compared
with the file's "# expect:" line and a summary "N/M lines match their
# expect:" ends stderr; status 3 on a difference, on an expect line that is
malformed, names a data line the file does not have or the wrong direction,
and on an input without any expect line.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWireDecode(cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], check)
		},
	}
	decode.Flags().BoolVar(&check, "check", false, `compare each description with the file's "# expect:" line`)
	cmd.AddCommand(decode)
	return cmd
}

// maxBatch is the largest batch a 2-byte TCP length prefix can carry.
const maxBatch = 0xffff

func runWireDecode(stdin io.Reader, stdout, stderr io.Writer, name string, check bool) error {
	var data []byte
	var err error
	if name == "-" {
		data, err = io.ReadAll(stdin)
		name = "stdin"
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return err
	}
	// The same parsing for a path and for stdin: a .zvec transcript first
	// (with its # expect: lines), else bare hex lines.
	var lines []zvec.Line
	file, err := zvec.ParseLenient(bytes.NewReader(data))
	if err == nil {
		lines = file.Lines
	} else if lines, err = zvec.ParseHex(bytes.NewReader(data)); err != nil {
		return &wireError{exitDecodeError, fmt.Sprintf("%s: neither a .zvec transcript nor hex lines: %v", name, err)}
	}
	if len(lines) == 0 {
		return &wireError{exitDecodeError, name + ": no batches"}
	}
	badExpects := 0
	if check {
		if file == nil || file.Expects == 0 {
			return &wireError{exitExpectMismatch, name + ": --check: no # expect: lines to compare with"}
		}
		for _, e := range file.ExpectErrors {
			badExpects++
			fmt.Fprintf(stderr, "%s: %v\n", name, e)
		}
	}
	d := zvec.NewDescriber()
	failed, mismatched, expected, matched := 0, 0, 0, 0
	for _, l := range lines {
		if file != nil && file.NewConnectionAfter(l.N-1) {
			d.Reset()
		}
		prefix := fmt.Sprintf("%d", l.N)
		if l.Dir != "" {
			prefix = fmt.Sprintf("%d %s", l.Ms, l.Dir)
		}
		tooLong := len(l.Batch) > maxBatch
		if tooLong {
			failed++
			fmt.Fprintf(stderr, "%s: batch %d (input line %d): %d bytes > %d: a TCP batch cannot exceed its u16 length prefix\n",
				name, l.N, l.Source, len(l.Batch), maxBatch)
		}
		descs, err := d.Batch(l.Dir, l.Batch)
		for _, s := range descs {
			fmt.Fprintf(stdout, "%s %s\n", prefix, s)
		}
		if check && l.Expect != "" {
			expected++
		}
		if err != nil {
			if !tooLong {
				failed++
			}
			fmt.Fprintf(stderr, "%s: %s\n", name, decodeFailure(name, l, err))
			continue
		}
		if check && l.Expect != "" {
			if got := strings.Join(descs, " | "); got != l.Expect {
				mismatched++
				fmt.Fprintf(stderr, "%s: line %d: got    %s\n%s: line %d: expect %s\n", name, l.N, got, name, l.N, l.Expect)
			} else {
				matched++
			}
		}
	}
	if check {
		fmt.Fprintf(stderr, "%s: %d/%d lines match their # expect:", name, matched, expected)
		if n := len(lines) - expected; n > 0 {
			fmt.Fprintf(stderr, " (%d of %d data lines have none)", n, len(lines))
		}
		if badExpects > 0 {
			fmt.Fprintf(stderr, "; %d bad # expect: lines", badExpects)
		}
		fmt.Fprintln(stderr)
	}
	switch {
	case failed > 0:
		return &wireError{exitDecodeError, fmt.Sprintf("%d of %d batches did not decode", failed, len(lines))}
	case mismatched > 0:
		return &wireError{exitExpectMismatch, fmt.Sprintf("%d of %d batches differ from their # expect: line", mismatched, expected)}
	case badExpects > 0:
		return &wireError{exitExpectMismatch, fmt.Sprintf("%d # expect: lines do not fit the transcript (first at line %d)", badExpects, file.ExpectErrors[0].Source)}
	}
	return nil
}

// decodeFailure names the batch (data line and source line) and the byte
// offset, and shows the bytes around it.
func decodeFailure(name string, l zvec.Line, err error) string {
	var we *wire.Error
	where := fmt.Sprintf("batch %d (input line %d, %d bytes)", l.N, l.Source, len(l.Batch))
	if !errors.As(err, &we) {
		return fmt.Sprintf("%s: %v", where, err)
	}
	off := we.Offset
	lo := max(0, off-8)
	hi := min(len(l.Batch), off+8)
	ctx := ""
	if off <= len(l.Batch) {
		ctx = fmt.Sprintf(" [bytes %d..%d: %s|%s]", lo, hi, hex.EncodeToString(l.Batch[lo:off]), hex.EncodeToString(l.Batch[off:hi]))
	}
	return fmt.Sprintf("%s offset %d: %v%s", where, off, err, ctx)
}

package testlane

import (
	"encoding/xml"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/picobridge/picobridge/firmware"
	"github.com/picobridge/picobridge/knobs"
)

func catalog() (*knobs.Catalog, error) { return firmware.Catalog() }

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// WriteSummary prints the readable summary: one header line, one line per
// check (status, name, summary) with the observed values indented below,
// and the totals.
//
//	lane: device robot1 on tcp/127.0.0.1:7447; knobs zephyr/native_sim; observed 10s
//	PASS session        the device proposed batch size 1024 B in INIT, as zenoh.wire.batch_unicast_size 1024 (set by builtin)
//	                    observed: 1 session(s); first zid … (client), negotiated 1024 B
//	…
//	lane: 8 passed, 1 failed, 1 skipped
func WriteSummary(w io.Writer, r *Report) error {
	var b strings.Builder
	name := r.Expect.Device
	if name == "" {
		name = "(unnamed)"
	}
	board := "none"
	if r.Resolved.Board != nil {
		board = r.Resolved.Board.Name()
	}
	fmt.Fprintf(&b, "lane: device %s on %s; knobs platform %s, board %s; observed %s\n", name, r.Endpoint,
		r.Resolved.Platform.Name(), board, r.Observed.Round(time.Millisecond))
	width := 14
	for _, c := range r.Results {
		width = max(width, len(c.Name)+2)
	}
	for _, c := range r.Results {
		fmt.Fprintf(&b, "%s %-*s%s\n", c.Status, width, c.Name, c.Summary)
		if c.Observed != "" {
			fmt.Fprintf(&b, "     %-*sobserved: %s\n", width, "", c.Observed)
		}
	}
	p, f, s := r.Counts()
	fmt.Fprintf(&b, "lane: %d passed, %d failed, %d skipped\n", p, f, s)
	_, err := io.WriteString(w, b.String())
	return err
}

// JUnit XML (the schema Jenkins, GitLab and GitHub test reporters read).
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Name    string       `xml:"name,attr"`
	Tests   int          `xml:"tests,attr"`
	Fail    int          `xml:"failures,attr"`
	Skipped int          `xml:"skipped,attr"`
	Time    string       `xml:"time,attr"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string          `xml:"name,attr"`
	Tests     int             `xml:"tests,attr"`
	Fail      int             `xml:"failures,attr"`
	Errors    int             `xml:"errors,attr"`
	Skipped   int             `xml:"skipped,attr"`
	Time      string          `xml:"time,attr"`
	Timestamp string          `xml:"timestamp,attr"`
	Props     []junitProperty `xml:"properties>property,omitempty"`
	Cases     []junitCase     `xml:"testcase"`
	SystemOut string          `xml:"system-out,omitempty"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

// WriteJUnit writes the report as JUnit XML: one testsuite named
// "picobridge lane <device>", one testcase per check (classname
// "lane.<device>"), the failure message the check's summary and its text
// the observed values; the device's output is the suite's system-out.
func WriteJUnit(w io.Writer, r *Report) error {
	name := r.Expect.Device
	if name == "" {
		name = "device"
	}
	secs := fmt.Sprintf("%.3f", r.Observed.Seconds())
	p, f, s := r.Counts()
	suite := junitSuite{Name: "picobridge lane " + name, Tests: p + f + s, Fail: f, Skipped: s, Time: secs,
		Timestamp: r.Started.UTC().Format("2006-01-02T15:04:05"), SystemOut: r.DeviceOutput}
	suite.Props = append(suite.Props, junitProperty{"endpoint", r.Endpoint}, junitProperty{"platform", r.Resolved.Platform.Name()})
	if r.Resolved.Board != nil {
		suite.Props = append(suite.Props, junitProperty{"board", r.Resolved.Board.Name()})
	}
	if r.Expect.File != "" {
		suite.Props = append(suite.Props, junitProperty{"expectations", r.Expect.File})
	}
	for _, c := range r.Results {
		tc := junitCase{Name: c.Name, Classname: "lane." + name, Time: "0"}
		switch c.Status {
		case Fail:
			tc.Failure = &junitFailure{Message: c.Summary, Type: "lane." + c.Name, Text: "observed: " + c.Observed}
		case Skip:
			tc.Skipped = &junitSkipped{Message: c.Summary}
		default:
			tc.SystemOut = c.Summary + "\nobserved: " + c.Observed
		}
		suite.Cases = append(suite.Cases, tc)
	}
	doc := junitSuites{Name: "picobridge lane", Tests: suite.Tests, Fail: f, Skipped: s, Time: secs, Suites: []junitSuite{suite}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

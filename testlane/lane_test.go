package testlane_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/knobs"
	"github.com/picobridge/picobridge/testlane"
	"github.com/picobridge/picobridge/zenohpath/wire"
)

func parse(t *testing.T, text string) *testlane.Expectations {
	t.Helper()
	e, err := testlane.ParseExpectations("lane.yaml", []byte(text))
	require.NoError(t, err)
	return e
}

// run runs a lane whose device is started by start (given the endpoint).
func run(t *testing.T, e *testlane.Expectations, cmd []string, start func(addr string)) *testlane.Report {
	t.Helper()
	r, err := testlane.Resolve(e, nil)
	require.NoError(t, err)
	cfg := testlane.Config{Expect: e, Resolved: r, Listen: "127.0.0.1:0", Command: cmd}
	if start != nil {
		cfg.Ready = func(ep string) { go start(strings.TrimPrefix(ep, "tcp/")) }
	}
	rep, err := testlane.Run(context.Background(), cfg)
	require.NoError(t, err)
	return rep
}

// TestLaneOversizeBatch: a hand-made device that negotiates 1024 B and then
// sends a 1500 B batch fails batch_size; one that stays within passes.
func TestLaneOversizeBatch(t *testing.T) {
	for _, tc := range []struct {
		name    string
		payload int
		status  testlane.Status
		text    string
	}{
		{"within", 900, testlane.Pass, "no batch above the negotiated size"},
		{"over", 1400, testlane.Fail, "a device→router batch of 1418 B exceeds the negotiated 1024 B (zenoh-wire.md §3.1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := parse(t, "knobs: {platform: generic}\nduration: 1s\n")
			done := make(chan struct{})
			rep := run(t, e, nil, func(addr string) {
				defer close(done)
				rawDevice(t, addr, 1024, tc.payload)
			})
			<-done
			r := result(t, rep, testlane.CheckBatchSize)
			require.Equal(t, tc.status, r.Status, r.Observed)
			require.Equal(t, tc.text, r.Summary)
			require.Equal(t, testlane.Pass, result(t, rep, testlane.CheckSession).Status)
		})
	}
}

// rawDevice opens a session by hand (INIT/OPEN, batch batch) and sends one
// FRAME with a PUSH of a payload-byte PUT, whatever its size, then waits
// for the link to close.
func rawDevice(t *testing.T, addr string, batch uint16, payload int) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Error(err)
		return
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	send := func(content []byte) { _, _ = c.Write(wire.AppendStreamBatch(nil, content)) }
	recv := func() wire.TransportMessage {
		var p [2]byte
		if _, err := io.ReadFull(c, p[:]); err != nil {
			return nil
		}
		b := make([]byte, int(p[0])|int(p[1])<<8)
		if _, err := io.ReadFull(c, b); err != nil {
			return nil
		}
		m, _, err := wire.ParseTransport(b)
		if err != nil {
			return nil
		}
		return m
	}
	send((&wire.InitSyn{Version: wire.ProtoVersion, WhatAmI: wire.WhatAmIClient, ZID: wire.MustZID([]byte{1, 2, 3, 4}),
		HasSize: true, Resolution: wire.DefaultResolution, BatchSize: batch}).Append(nil))
	ack, ok := recv().(*wire.InitAck)
	if !ok {
		t.Error("no INIT ACK")
		return
	}
	send((&wire.OpenSyn{Lease: 10 * time.Second, Cookie: ack.Cookie}).Append(nil))
	if _, ok := recv().(*wire.OpenAck); !ok {
		t.Error("no OPEN ACK")
		return
	}
	send(wire.AppendFrame(nil, true, 0, &wire.Push{WireExpr: wire.WireExpr{Suffix: "lane/raw"},
		Body: &wire.Put{Payload: make([]byte, payload)}}))
	for recv() != nil {
	}
}

// TestLaneNoDevice: nothing connects within wait.
func TestLaneNoDevice(t *testing.T) {
	e := parse(t, "knobs: {platform: posix}\nwait: 200ms\nduration: 1s\n")
	rep := run(t, e, nil, nil)
	r := result(t, rep, testlane.CheckSession)
	require.Equal(t, testlane.Fail, r.Status)
	require.Regexp(t, `^no device opened a session on tcp/127\.0\.0\.1:\d+ within 200ms$`, r.Summary)
	require.Equal(t, testlane.Skip, result(t, rep, testlane.CheckKeepAlive).Status)
}

// TestLaneDeviceExit: the device command exits 3 at once: session and
// device_exit fail, the JUnit report carries both failures.
func TestLaneDeviceExit(t *testing.T) {
	e := parse(t, "device: d\nknobs: {platform: posix}\nwait: 5s\n")
	rep := run(t, e, []string{"/bin/sh", "-c", "echo device says hi; exit 3"}, nil)
	require.Equal(t, testlane.Fail, result(t, rep, testlane.CheckSession).Status)
	r := result(t, rep, testlane.CheckDeviceExit)
	require.Equal(t, testlane.Fail, r.Status)
	require.Equal(t, "the device exited with status 3", r.Summary)
	require.Contains(t, rep.DeviceOutput, "device says hi")

	var b bytes.Buffer
	require.NoError(t, testlane.WriteJUnit(&b, rep))
	var doc struct {
		Tests  int `xml:"tests,attr"`
		Fail   int `xml:"failures,attr"`
		Suites []struct {
			Name  string `xml:"name,attr"`
			Out   string `xml:"system-out"`
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal(b.Bytes(), &doc), b.String())
	require.Equal(t, 2, doc.Fail)
	require.Len(t, doc.Suites, 1)
	require.Equal(t, "picobridge lane d", doc.Suites[0].Name)
	require.Contains(t, doc.Suites[0].Out, "device says hi")
	last := doc.Suites[0].Cases[len(doc.Suites[0].Cases)-1]
	require.Equal(t, testlane.CheckDeviceExit, last.Name)
	require.Equal(t, "the device exited with status 3", last.Failure.Message)
}

// TestExpectationsErrors: every problem of a bad file at once, each with
// file, line, column, key and the allowed values; exit status 2.
func TestExpectationsErrors(t *testing.T) {
	_, err := testlane.ParseExpectations("bad.yaml", []byte(`device: "no spaces"
knobs: {board: native_sim, colour: red}
duration: ten
responder: yes
faults:
  - {kind: stall, at: 1s}
  - {kind: stall_reads}
  - {kind: restart_router, at: 20s, expect: maybe}
tolerance: {sends: 200 percent}
`))
	// (duration did not parse, so faults[2].at is not compared with it.)
	require.Error(t, err)
	require.True(t, errors.Is(err, knobs.ErrUnknownKey))
	var ec interface{ ExitCode() int }
	require.True(t, errors.As(err, &ec))
	require.Equal(t, 2, ec.ExitCode())
	require.Equal(t, `bad.yaml:1:9: device: "no spaces" is not a device name (allowed: [A-Za-z0-9_.-]{1,64})
bad.yaml:2:28: knobs.colour: unknown key (allowed: platform, board, env_files, env)
bad.yaml:3:11: duration: "ten" is not a duration in a positive duration..1h (allowed: Go durations such as 500ms, 10s, 2m)
bad.yaml:4:12: responder: "yes" is not a bool (allowed: true, false)
bad.yaml:6:12: faults[0].kind: unknown fault "stall" (allowed: stall_reads, close_mid_fragment, restart_router)
bad.yaml:7:12: faults[1].for: stall_reads needs for: DURATION (how long reads stall)
bad.yaml:8:45: faults[2].expect: unknown recovery "maybe" (allowed: survive, reconnect)
bad.yaml:9:20: tolerance.sends: "200 percent" is not a percentage in 0%..1000% (allowed: 10%, or a fraction such as 0.1)`, err.Error())
}

// TestExpectationsDefaults: a minimal file gets the documented defaults;
// env files resolve against the file's folder.
func TestExpectationsDefaults(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "prj.conf"), []byte("CONFIG_NROS_ZENOH_LEASE_MS=4000\n"), 0o644))
	name := filepath.Join(dir, "lane.yaml")
	e, err := testlane.ParseExpectations(name, []byte("device: d1\nknobs: {board: native_sim, env_files: [prj.conf]}\nresponder: true\n"))
	require.NoError(t, err)
	require.Equal(t, testlane.DefaultWait, e.Wait)
	require.Equal(t, testlane.DefaultDuration, e.Duration)
	require.Equal(t, testlane.DefaultProbes, e.Probes)
	require.Equal(t, []string{filepath.Join(dir, "prj.conf")}, e.Knobs.EnvFiles)
	r, err := testlane.Resolve(e, nil)
	require.NoError(t, err)
	require.EqualValues(t, 4000, r.Int(knobs.LeaseMs))
	require.Equal(t, "kconfig CONFIG_NROS_ZENOH_LEASE_MS ("+filepath.Join(dir, "prj.conf")+":1)", r.Get(knobs.LeaseMs).Source.String())
}

// TestExpectationsFaultOutsideObservation: a fault after the duration.
func TestExpectationsFaultOutsideObservation(t *testing.T) {
	_, err := testlane.ParseExpectations("f.yaml", []byte("knobs: {platform: posix}\nduration: 5s\nfaults:\n  - {kind: stall_reads, at: 4s, for: 2s}\n"))
	require.EqualError(t, err, "f.yaml:4:5: faults[0].at: 4s (+ for 2s) is not before duration 5s: the fault would fall outside the observation")
	_, err = testlane.ParseExpectations("g.yaml", []byte("duration: 5s\n"))
	require.EqualError(t, err, "g.yaml:1:1: knobs: name the device's platform or board (knobs.platform, knobs.board): the checks derive from its knobs")
}

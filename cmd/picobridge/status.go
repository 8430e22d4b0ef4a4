package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/bridge/server"
	"github.com/picobridge/picobridge/probe"
	"github.com/picobridge/picobridge/zenohpath"
)

func init() { subcommands = append(subcommands, newStatusCommand) }

type statusOptions struct {
	addr        string
	device      string
	transitions bool
	jsonOut     bool
	routes      bool
	timeout     time.Duration
}

func newStatusCommand() *cobra.Command {
	var o statusOptions
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the devices of a running gateway (class, profile, rates, drops) from its /devicez",
		Example: `  picobridge status
  picobridge status --addr 10.0.0.5:9464 --device esp32-a --transitions
  picobridge status --routes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
			defer cancel()
			return runStatus(ctx, cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", "127.0.0.1:9464", "HTTP address of the gateway (its metrics.listen), or a URL")
	f.StringVar(&o.device, "device", "", "show only this device")
	f.BoolVar(&o.transitions, "transitions", false, "also list each device's class transitions")
	f.BoolVar(&o.jsonOut, "json", false, "print the raw JSON answer")
	f.BoolVar(&o.routes, "routes", false, "also list the bridged DDS routes (/routez)")
	f.DurationVar(&o.timeout, "timeout", 5*time.Second, "give up after this long")
	return cmd
}

func statusURL(addr, path string, q url.Values) string {
	base := addr
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	u := strings.TrimRight(base, "/") + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

func getJSON(ctx context.Context, u string, v any) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("is a gateway running there? %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &httpStatusError{URL: u, Status: resp.Status, Code: resp.StatusCode}
	}
	return b, json.Unmarshal(b, v)
}

// httpStatusError is an answer other than 200 OK.
type httpStatusError struct {
	URL, Status string
	Code        int
}

func (e *httpStatusError) Error() string { return fmt.Sprintf("GET %s: %s", e.URL, e.Status) }

// isNotFound reports whether err is a 404 answer.
func isNotFound(err error) bool {
	var h *httpStatusError
	return errors.As(err, &h) && h.Code == http.StatusNotFound
}

func runStatus(ctx context.Context, w io.Writer, o statusOptions) error {
	q := url.Values{}
	if o.device != "" {
		q.Set("device", o.device)
	}
	if o.transitions {
		q.Set("transitions", "1")
	}
	var dz devicezJSON
	raw, err := getJSON(ctx, statusURL(o.addr, bridge.PathDevicez, q), &dz)
	if isNotFound(err) {
		// no /devicez at all: a plain `picobridge router` serves /routerz
		var st zenohpath.Status
		if rawRouter, rerr := getJSON(ctx, statusURL(o.addr, zenohpath.StatusPath, nil), &st); rerr == nil {
			const notGateway = "is a plain Zenoh router (picobridge router), not a gateway"
			if o.device != "" {
				return fmt.Errorf("--device %q: %s %s: it has no devices", o.device, o.addr, notGateway)
			}
			if o.jsonOut {
				_, _ = w.Write(rawRouter)
				return nil
			}
			fmt.Fprintf(w, "%s %s: it has no devices, lanes or DDS routes. Its %s:\n", o.addr, notGateway, zenohpath.StatusPath)
			printRouterz(w, st)
			return nil
		}
	}
	if err != nil && !(o.device != "" && isNotFound(err)) {
		return err
	}
	if o.device != "" && (err != nil || len(dz.Devices) == 0) {
		// /devicez answers 404 for a name it does not know: say so
		var all devicezJSON
		if _, err := getJSON(ctx, statusURL(o.addr, bridge.PathDevicez, nil), &all); err != nil {
			return err
		}
		names := make([]string, len(all.Devices))
		for i, d := range all.Devices {
			names[i] = d.Name
		}
		attached := strings.Join(names, ", ")
		if attached == "" {
			attached = "none"
		}
		return fmt.Errorf("--device %q: no such device attached to the gateway at %s (attached: %s)", o.device, o.addr, attached)
	}
	var rz server.RoutezResponse
	var rawRoutes []byte
	if o.routes {
		if rawRoutes, err = getJSON(ctx, statusURL(o.addr, server.PathRoutez, nil), &rz); err != nil {
			return err
		}
	}
	if o.jsonOut {
		_, _ = w.Write(raw)
		if o.routes {
			_, _ = w.Write(rawRoutes)
		}
		return nil
	}
	printDevicez(w, dz, o.transitions)
	if o.routes {
		printRoutez(w, rz)
	}
	return nil
}

// devicezJSON mirrors bridge.DevicezResponse with the class and mode as
// the strings they are written as.
type devicezJSON struct {
	Now        time.Time `json:"now"`
	Supervisor struct {
		Mode   string `json:"mode"`
		Health struct {
			QueueOccupancy float64 `json:"queue_occupancy"`
		} `json:"health"`
		Transitions uint64 `json:"transitions_total"`
	} `json:"supervisor"`
	Devices []struct {
		Name       string `json:"name"`
		ZID        string `json:"zid"`
		Configured bool   `json:"configured"`
		Platform   string `json:"platform"`
		Board      string `json:"board"`
		Classifier struct {
			Class    string `json:"class"`
			State    string `json:"state"`
			Override string `json:"override"`
			Reading  struct {
				RTT     time.Duration `json:"rtt_ns"`
				Loss    float64       `json:"loss"`
				Samples int           `json:"samples"`
				Replies int           `json:"replies"`
			} `json:"reading"`
			ProbesSent  uint64 `json:"probes_sent"`
			Transitions uint64 `json:"transitions_total"`
			History     []struct {
				At     time.Time `json:"at"`
				From   string    `json:"from"`
				To     string    `json:"to"`
				Reason string    `json:"reason"`
			} `json:"transitions"`
		} `json:"classifier"`
		BatchedRateHz float64  `json:"batched_rate_hz"`
		Subscriptions []string `json:"subscriptions"`
		Lanes         map[string]struct {
			Depth     int               `json:"depth"`
			Forwarded uint64            `json:"forwarded"`
			Dropped   map[string]uint64 `json:"dropped"`
		} `json:"lanes"`
		Link struct {
			Learned *bridge.LinkLearnStatus `json:"learned"`
		} `json:"link"`
	} `json:"devices"`
}

func dropsString(m map[string]uint64) string {
	if len(m) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, ",")
}

func printDevicez(w io.Writer, dz devicezJSON, transitions bool) {
	fmt.Fprintf(w, "supervisor: %s (queue occupancy %.2f, %d transitions)\n", dz.Supervisor.Mode,
		dz.Supervisor.Health.QueueOccupancy, dz.Supervisor.Transitions)
	if len(dz.Devices) == 0 {
		fmt.Fprintln(w, "no devices attached (a device is a session whose zid is in devices.list or whose probe responder announced a name)")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DEVICE\tCLASS\tPROFILE\tRTT\tLOSS\tPROBES\tBATCHED HZ\tEXPRESS FWD\tEXPRESS DROPS\tBATCHED FWD\tBATCHED DROPS\tSUBSCRIPTIONS")
	for _, d := range dz.Devices {
		class := d.Classifier.Class
		if d.Classifier.Override != "" && d.Classifier.Override != "auto" {
			class += " (override)"
		}
		prof := d.Platform
		if d.Board != "" {
			prof += "/" + d.Board
		}
		if !d.Configured {
			prof += " (default)"
		}
		rtt := "-"
		if d.Classifier.Reading.Replies > 0 {
			rtt = d.Classifier.Reading.RTT.Round(100 * time.Microsecond).String()
		}
		ex, ba := d.Lanes["express"], d.Lanes["batched"]
		var subs []string
		for _, s := range d.Subscriptions {
			if !strings.HasPrefix(s, probe.Prefix) {
				subs = append(subs, s)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.1f%%\t%d\t%g\t%d\t%s\t%d\t%s\t%s\n", d.Name, class, prof, rtt,
			100*d.Classifier.Reading.Loss, d.Classifier.ProbesSent, d.BatchedRateHz,
			ex.Forwarded, dropsString(ex.Dropped), ba.Forwarded, dropsString(ba.Dropped), strings.Join(subs, " "))
	}
	_ = tw.Flush()
	for _, d := range dz.Devices {
		if l := d.Link.Learned; l != nil { // policy.link.estimate: learn (issue 30)
			rate := "not learned (unpaced)"
			if l.RateBytesPerS > 0 {
				rate = fmt.Sprintf("%.3g Mbit/s", l.RateBytesPerS*8/1e6)
			}
			fmt.Fprintf(w, "  link %s: learned %s, min RTT %v (probe %v), queue %v (%.0f B)\n", d.Name, rate,
				l.MinRTT, l.ProbeMinRTT.Round(10*time.Microsecond), l.QueueDelay.Round(10*time.Microsecond), l.QueueBytes)
		}
	}
	if transitions {
		for _, d := range dz.Devices {
			for _, t := range d.Classifier.History {
				fmt.Fprintf(w, "  %s %s: %s -> %s (%s)\n", t.At.Format(time.RFC3339Nano), d.Name, t.From, t.To, t.Reason)
			}
		}
	}
}

func printRoutez(w io.Writer, rz server.RoutezResponse) {
	if !rz.DDS {
		fmt.Fprintln(w, "\nDDS: not running")
		return
	}
	fmt.Fprintf(w, "\nDDS domain %d routes:\n", rz.Domain)
	if len(rz.Routes) == 0 {
		fmt.Fprintln(w, "(none: a route lives while DDS has a writer or reader of an allowed topic on this domain; none is discovered now, e.g. a bag replay has ended)")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tTYPE\tDIRECTION\tKEY\tCRITICALITY\tQOS\tENDPOINTS\tSAMPLES\tERRORS")
	for _, r := range rz.Routes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\n", r.Topic, r.Type, r.Direction, r.Key, r.Criticality, r.QoS, r.Endpoints, r.Samples, r.Errors)
	}
	_ = tw.Flush()
}

// printRouterz prints a router's /routerz: its zid, listen endpoints, a
// count of faces by kind and of entities, and one line per face.
func printRouterz(w io.Writer, st zenohpath.Status) {
	fmt.Fprintf(w, "zid: %s\n", st.ZID)
	fmt.Fprintf(w, "listen: %s\n", strings.Join(st.Listen, ", "))
	kinds := map[string]int{}
	for _, f := range st.Faces {
		kinds[f.WhatAmI]++
	}
	var parts []string
	for _, k := range []string{"router", "peer", "client"} {
		if n := kinds[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, plural(n, k)))
		}
	}
	byKind := ""
	if len(parts) > 0 {
		byKind = " (" + strings.Join(parts, ", ") + ")"
	}
	fmt.Fprintf(w, "faces: %d%s, %d %s, %d %s, %d %s\n", len(st.Faces), byKind,
		st.Subscribers, plural(st.Subscribers, "subscriber"), st.Queryables, plural(st.Queryables, "queryable"), st.Tokens, plural(st.Tokens, "token"))
	if len(st.Faces) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FACE\tZID\tWHATAMI\tUPSTREAM\tSUBSCRIBERS\tQUERYABLES\tTOKENS\tAUTH")
	for _, f := range st.Faces {
		up, auth := "no", f.AuthID
		if f.Upstream {
			up = "yes"
		}
		if auth == "" {
			auth = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", f.ID, f.ZID, f.WhatAmI, up, f.Subscribers, f.Queryables, f.Tokens, auth)
	}
	_ = tw.Flush()
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/internal/cli"
	"github.com/picobridge/picobridge/knobs"
)

// gatewayFlags select a connected device of a running gateway.
type gatewayFlags struct {
	addr   string
	device string
}

func (g *gatewayFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&g.addr, "gateway", "", "HTTP address of a running gateway (its metrics.listen, e.g. 127.0.0.1:9464): ask it about a connected device")
	cmd.Flags().StringVar(&g.device, "device", "", "with --gateway: the connected device's name")
}

// explainFromGateway prints the ladder of a connected device from the
// gateway's /knobz: the same table as a local explain, with the device
// rung (what the device announced) on top.
func explainFromGateway(cmd *cobra.Command, g gatewayFlags, asJSON bool) error {
	if g.addr == "" || g.device == "" {
		return cli.Usagef("knobs explain: --gateway and --device go together")
	}
	if cmd.Flags().Changed("platform") || cmd.Flags().Changed("board") || cmd.Flags().Changed("env") {
		return cli.Usagef("knobs explain: --gateway takes the device's knobs from the gateway; drop --platform, --board and --env")
	}
	var e knobs.ExplainJSON
	raw, err := getJSON(cmd.Context(), statusURL(g.addr, bridge.PathKnobz, url.Values{"device": {g.device}}), &e)
	if err != nil {
		return err
	}
	if asJSON {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return err
		}
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	return knobs.WriteExplainText(cmd.OutOrStdout(), e)
}

// adviseFromGateway prints the advice a running gateway gives for the
// traffic it observes toward a connected device (its /advicez): the same
// knobs.Advise and the same tables as `knobs advise --traffic`, with the
// device's resolution as the gateway holds it (device rung included).
func adviseFromGateway(cmd *cobra.Command, g gatewayFlags, asJSON bool) error {
	if g.addr == "" {
		return cli.Usagef("knobs advise: --device needs --gateway ADDR")
	}
	for _, f := range []string{"platform", "board", "env", "traffic"} {
		if cmd.Flags().Changed(f) {
			return cli.Usagef("knobs advise: --gateway takes the device's knobs and traffic from the gateway; drop --%s", f)
		}
	}
	q := url.Values{}
	if g.device != "" {
		q.Set("device", g.device)
	}
	if asJSON {
		q.Set("format", "json")
	}
	u := statusURL(g.addr, bridge.PathAdvicez, q)
	body, code, err := getBodyStatus(cmd.Context(), u)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		if code == http.StatusBadRequest && g.device == "" {
			// the gateway wants a device name: none or several are attached
			return fmt.Errorf("knobs advise --gateway %s: %s; name one with --device NAME", g.addr, body)
		}
		return fmt.Errorf("GET %s: %d %s: %s", u, code, http.StatusText(code), body)
	}
	_, err = cmd.OutOrStdout().Write(body)
	return err
}

// getBodyStatus GETs u and returns the answer (trimmed when not 200) and
// its HTTP status; err only when there is no answer.
func getBodyStatus(ctx context.Context, u string) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("is a gateway running there? %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		b = []byte(strings.TrimSpace(string(b)))
	}
	return b, resp.StatusCode, nil
}

package main

import (
	"encoding/json"
	"net/url"

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

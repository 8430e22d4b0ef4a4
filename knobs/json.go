package knobs

import (
	"encoding/json"
	"io"
)

// jsonValue is a knob value as JSON: a bool for Bool knobs, else a number.
func jsonValue(k Knob, v int64) any {
	if k.Type == Bool {
		return v != 0
	}
	return v
}

// RegistryKnobJSON is one knob of `knobs list --json`.
type RegistryKnobJSON struct {
	ID      string    `json:"id"`
	Type    string    `json:"type"`
	Unit    string    `json:"unit,omitempty"`
	Min     any       `json:"min"`
	Max     any       `json:"max"`
	Default any       `json:"default"`
	Env     []EnvJSON `json:"env"`
	Meaning string    `json:"meaning"`
	Source  string    `json:"source,omitempty"`
}

// EnvJSON is one build spelling of a knob.
type EnvJSON struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
}

// WriteRegistryJSON prints the registry as indented JSON (`knobs list --json`).
func WriteRegistryJSON(w io.Writer) error {
	out := []RegistryKnobJSON{}
	for _, k := range registry {
		j := RegistryKnobJSON{ID: k.ID, Type: k.Type.String(), Unit: string(k.Unit),
			Min: jsonValue(k, k.Min), Max: jsonValue(k, k.Max), Default: jsonValue(k, k.Default),
			Env: []EnvJSON{}, Meaning: k.Meaning, Source: k.Source}
		for _, e := range k.Env {
			j.Env = append(j.Env, EnvJSON{Name: e.Name, Kind: e.Kind.String()})
		}
		out = append(out, j)
	}
	return writeJSON(w, out)
}

// AdviceJSON is the JSON form of `knobs advise --json`.
type AdviceJSON struct {
	Platform     string               `json:"platform"`
	PlatformFile string               `json:"platform_file"`
	Board        string               `json:"board,omitempty"`
	BoardFile    string               `json:"board_file,omitempty"`
	Traffic      string               `json:"traffic"`
	Settings     []RecommendationJSON `json:"settings"`
	Topics       []TopicAdviceJSON    `json:"topics"`
	Throughput   Throughput           `json:"throughput"`
	Capacity     CapacityJSON         `json:"capacity"`
	Notes        []string             `json:"notes"`
	Warnings     []WarningJSON        `json:"warnings"`
}

// RecommendationJSON is one knob of AdviceJSON.
type RecommendationJSON struct {
	ID      string     `json:"id"`
	Current any        `json:"current"`
	Advised any        `json:"advised"`
	Changed bool       `json:"changed"`
	Unit    string     `json:"unit,omitempty"`
	SetBy   SourceJSON `json:"set_by"`
	Reason  string     `json:"reason"`
}

// TopicAdviceJSON is one topic of AdviceJSON.
type TopicAdviceJSON struct {
	Name            string  `json:"name"`
	Direction       string  `json:"direction"`
	Line            int     `json:"line"`
	RateHz          float64 `json:"rate_hz"`
	SizeBytes       int     `json:"size_bytes"`
	LatencyBudgetMs int64   `json:"latency_budget_ms"`
	Lane            string  `json:"lane,omitempty"` // published topics only
	Reason          string  `json:"reason"`
}

// CapacityJSON is the device RX capacity under the advice.
type CapacityJSON struct {
	MaxMessageBytes int `json:"max_message_bytes"`
	SlotBytes       int `json:"slot_bytes"`
	LargeSlotBytes  int `json:"large_slot_bytes"`
	LargeSlots      int `json:"large_slots"`
	RingDepth       int `json:"ring_depth"`
	// GatewayFlushMs is the gateway's batched-lane cadence the ring check
	// used (knobs.Traffic.GatewayFlush); the device's receive is not paced
	// by its socket window, so there is no express ceiling.
	GatewayFlushMs int64 `json:"gateway_flush_ms"`
}

// AdviceToJSON returns the JSON form of an Advice.
func AdviceToJSON(a *Advice) AdviceJSON {
	r := a.Resolved
	out := AdviceJSON{Platform: r.Platform.Name(), PlatformFile: r.Platform.File, Traffic: a.Traffic.File,
		Settings: []RecommendationJSON{}, Topics: []TopicAdviceJSON{}, Throughput: a.Throughput,
		Notes: append([]string{}, a.Notes...), Warnings: []WarningJSON{}}
	if r.Board != nil {
		out.Board, out.BoardFile = r.Board.Name(), r.Board.File
	}
	for _, s := range a.Settings {
		k := s.Current.Knob
		out.Settings = append(out.Settings, RecommendationJSON{ID: k.ID, Current: jsonValue(k, s.Current.Value),
			Advised: jsonValue(k, s.Value), Changed: s.Changed(), Unit: string(k.Unit), SetBy: sourceJSON(s.Current.Source), Reason: s.Reason})
	}
	for _, t := range a.Topics {
		j := TopicAdviceJSON{Name: t.Topic.Name, Direction: t.Topic.Direction.String(), Line: t.Topic.Line, RateHz: t.Topic.RateHz,
			SizeBytes: t.Topic.SizeBytes, LatencyBudgetMs: t.Topic.LatencyBudget.Milliseconds(), Reason: t.Reason}
		if t.Topic.Direction == Pub {
			j.Lane = t.Lane.String()
		}
		out.Topics = append(out.Topics, j)
	}
	c := a.Capacity
	out.Capacity = CapacityJSON{MaxMessageBytes: c.MaxMessageBytes, SlotBytes: c.SlotBytes, LargeSlotBytes: c.LargeSlotBytes,
		LargeSlots: c.LargeSlots, RingDepth: c.RingDepth, GatewayFlushMs: a.Traffic.GatewayFlush().Milliseconds()}
	for _, w := range r.Warnings {
		out.Warnings = append(out.Warnings, WarningJSON(w))
	}
	return out
}

// WriteAdviceJSON prints AdviceToJSON(a) as indented JSON (`knobs advise --json`).
func WriteAdviceJSON(w io.Writer, a *Advice) error { return writeJSON(w, AdviceToJSON(a)) }

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

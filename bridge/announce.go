package bridge

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"

	"github.com/picobridge/picobridge/knobs"
	"github.com/picobridge/picobridge/probe"
)

// Knob announcements (docs/probe.md, "Knob announcement"): a device's probe
// responder publishes its compile-time transport knobs once per session on
// probe.KnobsKey(name) (knobs.Announcement, 32 bytes). The gateway resolves the
// device's profile from it with provenance device (knobs.RungDevice) and
// warns when it disagrees with devices.list.

// ErrUnknownAnnouncer: an announcement names no attached device.
var ErrUnknownAnnouncer = errors.New("bridge: knob announcement from no attached device")

// HandleKnobs takes a publication on a knobs key (probe.KnobsSubscription): it
// decodes the announcement and re-resolves the device's profile from it.
// Errors: a key that is not a knobs key, a bad payload
// (knobs.ErrAnnouncement), or ErrUnknownAnnouncer.
func (g *Gateway) HandleKnobs(key string, payload []byte) error {
	name, ok := probe.ParseKnobsKey(key)
	if !ok {
		return fmt.Errorf("bridge: %q is not a knobs key", key)
	}
	a, err := knobs.DecodeAnnouncement(payload)
	if err != nil {
		return err
	}
	d := g.Device(name)
	if d == nil {
		return fmt.Errorf("%w: %s", ErrUnknownAnnouncer, name)
	}
	d.ApplyAnnouncement(a)
	return nil
}

// announceState is what a device's announcement left.
type announceState struct {
	mu            sync.Mutex
	disagreements []string
	fix           string // the setting that would stop the first oversize drop
}

// ApplyAnnouncement resolves the device's profile anew: its configuration
// (devices.list entry or devices.default) with the announced knobs on top
// (provenance device), then reconfigures its lanes. Each knob where the
// announcement disagrees with a devices.list entry is logged as a warning
// and listed in /devicez (DeviceStatus.KnobDisagreements).
func (d *Device) ApplyAnnouncement(a knobs.Announcement) {
	g := d.g
	d.mu.RLock()
	dc, name := d.conf, d.name
	d.mu.RUnlock()
	base := g.profile[g.profileKey(dc)].resolved
	r, ds := base.WithAnnouncement(a, name)
	d.announced.Store(&resolvedProfile{r, knobs.CapacityOf(r)})
	lines := make([]string, 0, len(ds))
	log := g.log.With(slog.String("device", name), slog.String("zid", d.zid))
	for _, x := range ds {
		lines = append(lines, x.String())
		if dc != nil {
			log.Warn("device knobs disagree with devices.list: using what the device announced", slog.String("knob", x.Knob),
				slog.String("announced", x.Resolved.Knob.Format(x.Announced)), slog.String("configured", x.Resolved.String()),
				slog.String("configured_by", x.Resolved.Source.String()))
		}
	}
	d.ann.mu.Lock()
	d.ann.disagreements = lines
	d.ann.fix = ""
	d.ann.mu.Unlock()
	log.Info("device profile from its knob announcement", slog.Int("disagreements", len(ds)))
	d.configure(dc, name)
}

// Announced reports whether the device's profile comes from its announcement.
func (d *Device) Announced() bool { return d.announced.Load() != nil }

// Resolved is the device's knob resolution (with provenance: builtin,
// platform, board, env, device).
func (d *Device) Resolved() *knobs.Resolved {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.resolved
}

// profileKey is the g.profile key of a configuration (nil: devices.default).
func (g *Gateway) profileKey(dc *DeviceConfig) string {
	if dc == nil {
		return "devices.default"
	}
	for i := range g.cfg.Devices.List {
		if g.cfg.Devices.List[i].Name == dc.Name {
			return fmt.Sprintf("devices.list[%d]", i)
		}
	}
	return "devices.default"
}

// oversizeFix says which setting would let a message of size bytes reach
// a device that announced nothing and has no devices.list entry, or "".
func oversizeFix(r *knobs.Resolved, capa knobs.Capacity, size int) string {
	if r.Bool(knobs.Fragmentation) {
		v := r.Get(knobs.FragMaxSize)
		return fmt.Sprintf("the device announced no knobs and has no devices.list entry, so it gets devices.default: %s %s (set by %s) allows %d B messages, this one is %d B; if the device was built with a larger Z_FRAG_MAX_SIZE, give it a devices.list entry with its board (or devices.default.env: {NROS_ZENOH_FRAG_MAX_SIZE: \"%d\"}), or run the probe responder so it announces its knobs",
			knobs.FragMaxSize, v, v.Source, capa.MaxMessageBytes, size, size)
	}
	v := r.Get(knobs.BatchUnicastSize)
	return fmt.Sprintf("the device announced no knobs and has no devices.list entry, so it gets devices.default: without %s, %s %s (set by %s) allows %d B messages, this one is %d B; give it a devices.list entry with its board, or run the probe responder so it announces its knobs",
		knobs.Fragmentation, knobs.BatchUnicastSize, v, v.Source, capa.MaxMessageBytes, size)
}

// oversizeHint is the egress hook for the first oversize drop of a device:
// for an unlisted device that announced nothing it records and returns the
// fix (oversizeFix).
func (d *Device) oversizeHint(size int) string {
	d.mu.RLock()
	dc, r, capa := d.conf, d.resolved, d.capa
	d.mu.RUnlock()
	if r == nil {
		return ""
	}
	if capa.LargeSlots > 0 && size > capa.MaxSampleBytes(false) && size <= capa.MaxSampleBytes(true) {
		return fmt.Sprintf("%d B is larger than the %d B small subscriber slot (%s): if the device's application declared this subscription large, list it in devices.list[].large_subscriptions (%d large slots of %d B); else raise %s",
			size, capa.SlotBytes, knobs.SubscriberBufferSize, capa.LargeSlots, capa.LargeSlotBytes, knobs.SubscriberBufferSize)
	}
	if dc != nil || d.Announced() {
		return ""
	}
	fix := oversizeFix(r, capa, size)
	d.ann.mu.Lock()
	if d.ann.fix == "" {
		d.ann.fix = fix
	}
	d.ann.mu.Unlock()
	return fix
}

// knobStatus is the /devicez view of the device's knob source.
func (d *Device) knobStatus() (source string, disagreements []string, fix string) {
	source = "config"
	if d.Announced() {
		source = "device"
	}
	d.ann.mu.Lock()
	defer d.ann.mu.Unlock()
	return source, append([]string(nil), d.ann.disagreements...), d.ann.fix
}

// PathKnobz is the HTTP path of one device's knob resolution.
const PathKnobz = "/knobz"

// ErrNoSuchDevice: Knobz names no attached device.
var ErrNoSuchDevice = errors.New("bridge: no attached device of that name")

// Knobz is the ladder of one attached device (`knobs explain --gateway`):
// its resolution with every value's provenance (builtin, platform, board,
// env, device), and the disagreements of its announcement.
func (g *Gateway) Knobz(device string) (knobs.ExplainJSON, error) {
	d := g.Device(device)
	if d == nil || d.Resolved() == nil {
		return knobs.ExplainJSON{}, fmt.Errorf("%w: %q", ErrNoSuchDevice, device)
	}
	return knobs.Explain(d.Resolved()), nil
}

// HandleKnobz serves PathKnobz?device=NAME: the device's knobs.ExplainJSON,
// 404 when no such device is attached, 400 without a name.
func (g *Gateway) HandleKnobz(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("device")
	if name == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "want ?device=NAME"})
		return
	}
	e, err := g.Knobz(name)
	if err != nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, e)
}

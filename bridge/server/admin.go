package server

import (
	"github.com/picobridge/picobridge/bridge"
	"github.com/picobridge/picobridge/zenohpath"
)

// The gateway's part of the Zenoh admin space (issue 12 item 4), beside the
// router's own @/<zid>/router (zenohpath.ServeAdminSpace), as
// zenoh-bridge-ros2dds serves its bridged entities under @/<zid>/ros2:
//
//	@/<zid>/picobridge                 JSON AdminSummary
//	@/<zid>/picobridge/devices/<name>  JSON bridge.DeviceStatus (as /devicez, with transitions)
//	@/<zid>/picobridge/routes          JSON RoutezResponse (as /routez)
//
// A get on @/** from any Zenoh client of the gateway, of its upstream or
// of the mesh it is in receives them, each as its own reply.

// AdminPrefix is the gateway's section of the admin space, below @/<zid>/.
const AdminPrefix = "picobridge"

// AdminSummary is the JSON of @/<zid>/picobridge.
type AdminSummary struct {
	ZID       string   `json:"zid"`
	Version   string   `json:"version"`
	Mode      string   `json:"mode"`
	ConnectAs string   `json:"connect_as"`
	Listen    []string `json:"listen"`
	Connect   []string `json:"connect"`
	DDS       bool     `json:"dds"`
	Domain    int      `json:"dds_domain"`
	KeyStyle  string   `json:"key_style"`
	// Devices are the names of the attached devices, in /devicez order.
	Devices []string `json:"devices"`
	// Routes is the number of bridged DDS routes.
	Routes int `json:"routes"`
	// MeshRouters are the other routers of the router link-state graph.
	MeshRouters []string `json:"mesh_routers"`
}

// AdminKey is the root of the gateway's admin section: @/<zid>/picobridge.
func (s *Server) AdminKey() string { return "@/" + s.router.ZID().String() + "/" + AdminPrefix }

// adminEntries are the entries of the gateway's admin section now.
func (s *Server) adminEntries() map[string]any {
	dz := s.gw.Devicez(bridge.DevicezOptions{Transitions: true})
	rz := s.Routez()
	sum := AdminSummary{ZID: s.router.ZID().String(), Version: s.opts.Version, Mode: string(s.cfg.Zenoh.Mode),
		ConnectAs: connectAsShown(s.cfg.Zenoh.ConnectAs), Listen: s.Endpoints(), Connect: append([]string{}, s.cfg.Zenoh.Connect...),
		DDS: rz.DDS, Domain: s.cfg.DDS.Domain, KeyStyle: string(s.cfg.Routes.KeyStyle),
		Devices: []string{}, Routes: len(rz.Routes), MeshRouters: s.router.MeshRouters()}
	out := map[string]any{"": sum, "routes": rz}
	for _, d := range dz.Devices {
		sum.Devices = append(sum.Devices, d.Name)
		out["devices/"+d.Name] = d
	}
	out[""] = sum
	return out
}

// serveAdmin serves the router's admin space and the gateway's section.
func (s *Server) serveAdmin() (*zenohpath.AdminSpace, error) {
	return s.router.ServeAdminSpace(zenohpath.AdminConfig{Version: "picobridge " + s.opts.Version,
		Sections: []zenohpath.AdminSection{{Prefix: AdminPrefix, Entries: s.adminEntries}}})
}

package server

import (
	"cmp"

	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/ddspath/ros2"
)

// The gateway as a ROS node on DDS: its participant announces one node,
// dds.nodename in dds.namespace, on ros_discovery_info, owning every DDS
// reader and writer the gateway makes (topic routes, service endpoints,
// endpoints made for device tokens), updated as they come and go
// (ddspath.Participant.AnnounceNode). ROS 2 tools attach endpoints to nodes
// only through it, and zenoh-bridge-ros2dds routes only endpoints a node
// claims (zenoh-plugin-ros2dds discovered_entities.rs): without it the
// plugin discovers our writers and routes none of their samples.
// The Gid layout follows dds.ros_distro (ros2.GidSizeForDistro).

// announceNode starts the announcement on p; on a problem (a nodename that
// is no ROS node name, e.g. with '-' or '.') it logs a warning and returns
// nil: the bridge works, DDS tools just see endpoints without a node.
func announceNode(s *Server, p *ddspath.Participant) *ddspath.NodeAnnouncer {
	distro := cmp.Or(s.cfg.DDS.ROSDistro, ros2.DefaultROSDistro)
	size, err := ros2.GidSizeForDistro(distro)
	if err != nil {
		s.log.Warn("no ROS node announced on ros_discovery_info", "err", err)
		return nil
	}
	cfg := ddspath.NodeConfig{Namespace: s.cfg.DDS.Namespace, Name: s.cfg.DDS.Nodename, GidSize: size}
	a, err := p.AnnounceNode(cfg)
	if err != nil {
		s.log.Warn("no ROS node announced on ros_discovery_info: DDS tools and zenoh-bridge-ros2dds see the gateway's endpoints without a node",
			"namespace", cfg.Namespace, "node", cfg.Name, "err", err)
		return nil
	}
	s.log.Info("ROS node announced on ros_discovery_info", "namespace", cmp.Or(cfg.Namespace, "/"), "node", cfg.Name,
		"ros_distro", distro, "gid_bytes", int(size))
	return a
}

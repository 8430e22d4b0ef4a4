package ddspath

import (
	"fmt"
	"time"

	"github.com/picobridge/picobridge/ddspath/ros2"
)

// NodeConfig names the one ROS 2 node a participant announces on
// ros_discovery_info (Participant.AnnounceNode).
type NodeConfig struct {
	// Namespace is the node's namespace, "/" or "/a/b"; empty means "/".
	Namespace string
	// Name is the node's name ([A-Za-z0-9_], not starting with a digit;
	// rmw_validate_node_name).
	Name string
	// GidSize is the Gid layout of the peers' distro (ros2.GidSizeForDistro);
	// 0 means ros2.GidSizeHumble.
	GidSize ros2.GidSize
}

func (c NodeConfig) normalize() (NodeConfig, error) {
	if c.Namespace == "" {
		c.Namespace = "/"
	}
	if err := ros2.ValidateNamespace(c.Namespace); err != nil {
		return c, fmt.Errorf("ddspath: node namespace: %w", err)
	}
	if err := ros2.ValidateNodeName(c.Name); err != nil {
		return c, fmt.Errorf("ddspath: node name: %w", err)
	}
	if c.GidSize == 0 {
		c.GidSize = ros2.GidSizeHumble
	}
	if c.GidSize != ros2.GidSizeHumble && c.GidSize != ros2.GidSizeIron {
		return c, fmt.Errorf("ddspath: node Gid size %d: want %d (up to humble) or %d (iron and later)", c.GidSize, ros2.GidSizeHumble, ros2.GidSizeIron)
	}
	return c, nil
}

// DiscoveryInfoQoS is the QoS of ros_discovery_info writers as
// rmw_cyclonedds_cpp creates them (rmw_node.cpp, Humble): RELIABLE,
// TRANSIENT_LOCAL, KEEP_LAST 1, so a late joiner gets each participant's
// latest state. rmw sets an infinite max_blocking_time; ours is
// NodeWriteTimeout so that a write can never hang the announcer (KEEP_LAST
// writers do not block on a full history, so this changes nothing on the wire
// but the announced value).
func DiscoveryInfoQoS() QoS {
	return QoS{Reliability: Reliable, MaxBlocking: NodeWriteTimeout, History: KeepLast, Depth: 1, Durability: TransientLocal}
}

// NodeWriteTimeout bounds one ros_discovery_info write; a failed write is
// retried after NodeRetryInterval.
const NodeWriteTimeout = time.Second

// NodeRetryInterval is how long the announcer waits before writing again
// after a failed write.
const NodeRetryInterval = time.Second

// NodeStats are a node announcer's counters.
type NodeStats struct {
	Published uint64 // ros_discovery_info samples written
	Errors    uint64 // failed writes (retried)
	Readers   int    // reader GIDs in the last sample written
	Writers   int    // writer GIDs in the last sample written
}

//go:build !cgo || !cyclonedds

package ddspath

import "github.com/picobridge/picobridge/ddspath/ros2"

// GUID returns ErrUnavailable.
func (w *Writer) GUID() (GUID, error) { return GUID{}, ErrUnavailable }

// GUID returns ErrUnavailable.
func (r *Reader) GUID() (GUID, error) { return GUID{}, ErrUnavailable }

// NodeAnnouncer publishes ros_discovery_info (unavailable in this build).
type NodeAnnouncer struct{}

// AnnounceNode validates cfg, then returns ErrUnavailable.
func (p *Participant) AnnounceNode(cfg NodeConfig) (*NodeAnnouncer, error) {
	if _, err := cfg.normalize(); err != nil {
		return nil, err
	}
	return nil, ErrUnavailable
}

func (a *NodeAnnouncer) Info() ros2.ParticipantEntitiesInfo { return ros2.ParticipantEntitiesInfo{} }
func (a *NodeAnnouncer) Stats() NodeStats                   { return NodeStats{} }
func (a *NodeAnnouncer) WriterGUID() (GUID, error)          { return GUID{}, ErrUnavailable }
func (a *NodeAnnouncer) Close() error                       { return nil }

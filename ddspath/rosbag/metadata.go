package rosbag

import (
	"fmt"
	"os"

	"gopkg.in/yaml.v3"
)

// MetadataFile is the name of the bag's metadata file inside the bag directory.
const MetadataFile = "metadata.yaml"

// Metadata is the part of metadata.yaml (rosbag2_bagfile_information, versions 4 to 9) that
// the reader uses.
type Metadata struct {
	Version           int         `yaml:"version"`
	StorageIdentifier string      `yaml:"storage_identifier"`
	RelativeFilePaths []string    `yaml:"relative_file_paths"`
	Duration          nanos       `yaml:"duration"`
	StartingTime      nanosEpoch  `yaml:"starting_time"`
	MessageCount      int64       `yaml:"message_count"`
	CompressionFormat string      `yaml:"compression_format"`
	CompressionMode   string      `yaml:"compression_mode"`
	ROSDistro         string      `yaml:"ros_distro"`
	Topics            []metaTopic `yaml:"topics_with_message_count"`
	Files             []metaFile  `yaml:"files"`
}

type nanos struct {
	Nanoseconds int64 `yaml:"nanoseconds"`
}

type nanosEpoch struct {
	NanosecondsSinceEpoch int64 `yaml:"nanoseconds_since_epoch"`
}

type metaTopic struct {
	TopicMetadata struct {
		Name                string `yaml:"name"`
		Type                string `yaml:"type"`
		SerializationFormat string `yaml:"serialization_format"`
		OfferedQoSProfiles  string `yaml:"offered_qos_profiles"`
	} `yaml:"topic_metadata"`
	MessageCount int64 `yaml:"message_count"`
}

type metaFile struct {
	Path         string     `yaml:"path"`
	StartingTime nanosEpoch `yaml:"starting_time"`
	Duration     nanos      `yaml:"duration"`
	MessageCount int64      `yaml:"message_count"`
}

// readMetadata reads and parses a metadata.yaml file.
func readMetadata(path string) (*Metadata, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("rosbag: %w", err) // the *fs.PathError names the file
	}
	return parseMetadata(path, raw)
}

// parseMetadata parses the text of a metadata.yaml file; path names it in errors, which wrap
// ErrCorrupt.
func parseMetadata(path string, raw []byte) (*Metadata, error) {
	var doc struct {
		Info *Metadata `yaml:"rosbag2_bagfile_information"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, path, err)
	}
	if doc.Info == nil {
		return nil, fmt.Errorf("%w: %s: no rosbag2_bagfile_information", ErrCorrupt, path)
	}
	return doc.Info, nil
}

// Package rosbag reads ROS 2 bags recorded with the rosbag2 sqlite3 storage plugin: a bag
// directory (metadata.yaml plus one or more .db3 files) or a single .db3 file.
//
// A .db3 file holds the tables
//
//	topics(id, name, type, serialization_format, offered_qos_profiles[, type_description_hash])
//	messages(id, topic_id, timestamp, data)   -- timestamp: receive time, ns since the epoch
//	schema(schema_version, ros_distro)         -- schema_version >= 3 (Humble and newer)
//	metadata(id, metadata_version, metadata)   -- optional copy of metadata.yaml
//
// and data is the serialized message (CDR with its encapsulation header for ROS 2's default
// "cdr" serialization format). Source: ros2/rosbag2, rosbag2_storage_default_plugins
// sqlite_storage.cpp (read, not copied), and the Mumble bags in shared/data.
//
// Messages are streamed in receive-time order across topics and across files (a k-way merge
// of one sorted query per file); nothing loads the whole bag into memory. The package uses
// the pure-Go modernc.org/sqlite driver and must not import "C".
package rosbag

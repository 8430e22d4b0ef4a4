package rosbag

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzParseMetadata feeds arbitrary text to the metadata.yaml parser: metadata or an error
// that wraps ErrCorrupt and names the file, never a panic.
func FuzzParseMetadata(f *testing.F) {
	f.Add([]byte("rosbag2_bagfile_information:\n  version: 5\n  storage_identifier: sqlite3\n  relative_file_paths:\n    - b_0.db3\n" +
		"  duration: {nanoseconds: 120000000000}\n  starting_time: {nanoseconds_since_epoch: 1700000000000000000}\n  message_count: 3\n" +
		"  topics_with_message_count:\n    - topic_metadata: {name: /scan, type: sensor_msgs/msg/LaserScan, serialization_format: cdr, offered_qos_profiles: \"- history: 3\\n  depth: 0\\n\"}\n      message_count: 3\n" +
		"  files:\n    - {path: b_0.db3, starting_time: {nanoseconds_since_epoch: 1}, duration: {nanoseconds: 2}, message_count: 3}\n"))
	f.Add([]byte("rosbag2_bagfile_information: [\n"))
	f.Add([]byte("rosbag2_bagfile_information:\n  duration: {nanoseconds: 1e30}\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := parseMetadata("bag/metadata.yaml", raw)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "bag/metadata.yaml") {
				t.Fatalf("error %v: want ErrCorrupt naming the file", err)
			}
			return
		}
		if m == nil {
			t.Fatal("nil metadata without an error")
		}
	})
}

// FuzzOpenBag builds a bag directory from fuzzed parts, a metadata.yaml (none when empty)
// and one sqlite3 file whose topics and messages rows hold arbitrary values (NULLs, text
// where integers belong, dangling topic ids, any QoS text), then opens it and reads every
// message. Open and the cursor must return an error or a consistent bag: the cursor yields
// exactly the messages Topics counted, in receive-time order, each with a topic of the bag.
func FuzzOpenBag(f *testing.F) {
	goodMeta := "rosbag2_bagfile_information:\n  version: 5\n  storage_identifier: sqlite3\n  relative_file_paths:\n    - f_0.db3\n"
	qos := "- history: keep_last\n  depth: 10\n  reliability: best_effort\n"
	f.Add(goodMeta, int64(1), "/scan", "sensor_msgs/msg/LaserScan", qos, int64(2), "/imu", int64(1), int64(100), int64(2), int64(50), []byte("cdr"), byte(0))
	f.Add("", int64(1), "/a", "std_msgs/msg/String", "", int64(1), "/a", int64(1), int64(5), int64(7), int64(5), []byte{}, byte(0))
	f.Add(goodMeta, int64(1), "/a", "t", "- depth: x\n", int64(2), "/a", int64(2), int64(-1), int64(1), int64(9223372036854775807), []byte{0}, byte(1))
	f.Add("rosbag2_bagfile_information:\n  relative_file_paths: [../f_0.db3, f_0.db3, /]\n", int64(0), "", "", "", int64(0), "", int64(0), int64(0), int64(0), int64(0), []byte(nil), byte(2))
	f.Add(goodMeta, int64(1), "/a", "t", qos, int64(2), "/b", int64(1), int64(1), int64(2), int64(2), []byte("x"), byte(0x1f))
	f.Fuzz(func(t *testing.T, meta string, id1 int64, name1, type1, qos1 string, id2 int64, name2 string,
		msgTopic1, ts1, msgTopic2, ts2 int64, data []byte, kinds byte) {
		dir := t.TempDir()
		if meta != "" {
			if err := os.WriteFile(filepath.Join(dir, MetadataFile), []byte(meta), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		writeFuzzDB(t, filepath.Join(dir, "f_0.db3"), id1, name1, type1, qos1, id2, name2, msgTopic1, ts1, msgTopic2, ts2, data, kinds)

		b, err := Open(dir)
		if err != nil {
			if !strings.Contains(err.Error(), "rosbag") {
				t.Fatalf("error without the package's prefix: %v", err)
			}
			return
		}
		defer func() {
			if err := b.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
		}()
		var want int64
		topics := map[*Topic]bool{}
		for _, tp := range b.topics {
			want += tp.MessageCount
			topics[tp] = true
		}
		c, err := b.Messages(context.Background(), ReadOptions{})
		if err != nil {
			return
		}
		defer c.Close()
		var got int64
		prev := int64(-1 << 63)
		for c.Next() {
			m := c.Message()
			if !topics[m.Topic] {
				t.Fatalf("message %d: topic %p not in the bag", got, m.Topic)
			}
			if m.Timestamp < prev {
				t.Fatalf("message %d at %d after %d", got, m.Timestamp, prev)
			}
			prev = m.Timestamp
			got++
		}
		if c.Err() == nil && got != want {
			t.Fatalf("cursor yielded %d messages, topics count %d", got, want)
		}
	})
}

// writeFuzzDB writes a rosbag2-shaped sqlite3 file whose columns carry no type affinity, so
// each value is stored as given: bit i of kinds replaces value i (name1, the first message's
// timestamp, its topic id, its data, the schema row) by a NULL or a text.
func writeFuzzDB(t *testing.T, path string, id1 int64, name1, type1, qos1 string, id2 int64, name2 string,
	msgTopic1, ts1, msgTopic2, ts2 int64, data []byte, kinds byte) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	pick := func(bit uint, v, alt any) any {
		if kinds&(1<<bit) != 0 {
			return alt
		}
		return v
	}
	stmts := []struct {
		q    string
		args []any
	}{
		{"CREATE TABLE schema(schema_version, ros_distro)", nil},
		{"INSERT INTO schema VALUES (?, ?)", []any{pick(4, 3, "three"), "humble"}},
		{"CREATE TABLE topics(id, name, type, serialization_format, offered_qos_profiles)", nil},
		{"CREATE TABLE messages(id INTEGER PRIMARY KEY, topic_id, timestamp, data)", nil},
		{"INSERT INTO topics VALUES (?, ?, ?, 'cdr', ?)", []any{id1, pick(0, name1, nil), type1, qos1}},
		{"INSERT INTO topics VALUES (?, ?, ?, 'cdr', '')", []any{id2, name2, type1 + "2"}},
		{"INSERT INTO messages(topic_id, timestamp, data) VALUES (?, ?, ?)", []any{pick(2, msgTopic1, "one"), pick(1, ts1, "soon"), pick(3, data, nil)}},
		{"INSERT INTO messages(topic_id, timestamp, data) VALUES (?, ?, ?)", []any{msgTopic2, ts2, data}},
	}
	// No journal, no fsync, one transaction: the file is written once per input.
	for _, q := range []string{"PRAGMA journal_mode=OFF", "PRAGMA synchronous=OFF"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stmts {
		if _, err := tx.Exec(s.q, s.args...); err != nil {
			t.Fatalf("%s: %v", s.q, err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestOpenRejectsNonRegularFiles: a metadata.yaml that names a FIFO or a device is an error
// at once, not a reader blocked on it (FuzzOpenBag's metadata may name any path).
func TestOpenRejectsNonRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "f_0.db3")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	writeMeta(t, dir, "sqlite3", "", []string{"f_0.db3"})
	_, err := Open(dir)
	require.ErrorIs(t, err, ErrNotABag)
	require.ErrorContains(t, err, "is not a regular file (p")

	dev := t.TempDir()
	writeMeta(t, dev, "sqlite3", "", []string{"/../../../../../../dev/null"})
	_, err = Open(dev)
	require.ErrorIs(t, err, ErrNotABag)
}

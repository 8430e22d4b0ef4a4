package demobag

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/ddspath/rosbag"
	"github.com/picobridge/picobridge/ddspath/rosbag/rosbagtest"
)

// TestMaterializedBag: the materialized slice opens as a bag with the
// slice's exact counts, sizes and span (what SOURCE.md measured for the
// first 62 s), its first /scan is the recording's first (SOURCE.md's bytes),
// and the notice is beside it.
func TestMaterializedBag(t *testing.T) {
	root := t.TempDir()
	dir, err := Materialize(root)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(root, "demobag-"+Hash(), Name), dir)

	b, err := rosbag.Open(dir)
	require.NoError(t, err)
	defer b.Close()
	require.Equal(t, 3, b.SchemaVersion)
	require.Equal(t, "humble", b.ROSDistro)
	want := map[string]struct {
		count, size int64
		typ         string
	}{
		"/scan":     {451, 1504, "sensor_msgs/msg/LaserScan"},
		"/imu_data": {1861, 324, "sensor_msgs/msg/Imu"},
	}
	for name, w := range want {
		tp, ok := b.Topic(name)
		require.True(t, ok, name)
		require.Equal(t, w.typ, tp.Type, name)
		require.Equal(t, w.count, tp.MessageCount, name)
		require.Equal(t, w.size, tp.MinSize, name)
		require.Equal(t, w.size, tp.MaxSize, name)
	}
	s := b.Summary()
	require.Equal(t, int64(1742407985965670153), s.Start.UnixNano())
	require.Equal(t, int64(1742407985965670153+61995063124), s.End.UnixNano())
	require.Less(t, s.End.Sub(s.Start), Span)
	// The demo's default 60 s of /imu_data at 30 Hz is 1801 messages (0 s .. 60 s).
	imu, _ := b.Topic("/imu_data")
	require.Greater(t, imu.End.Sub(s.Start), 60*time.Second)
	require.Equal(t, int64(2312), b.Metadata.MessageCount)

	c, err := b.Messages(context.Background(), rosbag.ReadOptions{Topics: []string{"/scan"}})
	require.NoError(t, err)
	require.True(t, c.Next())
	require.Equal(t, "000100003109db67030e82390c0000006c617365725f6672616d650000000000", hex.EncodeToString(c.Message().Data[:32]))
	require.NoError(t, c.Close())

	for _, f := range []string{"LICENSE", "SOURCE.md"} {
		got, err := os.ReadFile(filepath.Join(filepath.Dir(dir), f))
		require.NoError(t, err)
		require.Contains(t, string(got), "Copyright (c) 2025, Rico Ruotong Jia")
	}
}

// TestMaterializeRepairsAndReuses: a second call keeps good files (same
// modification time) and rewrites a damaged one.
func TestMaterializeRepairsAndReuses(t *testing.T) {
	root := t.TempDir()
	dir, err := Materialize(root)
	require.NoError(t, err)
	meta := filepath.Join(dir, "metadata.yaml")
	db := filepath.Join(dir, "my_data_bag_0.db3")
	old := time.Unix(1_000_000, 0)
	require.NoError(t, os.Chtimes(db, old, old))
	require.NoError(t, os.WriteFile(meta, []byte("damaged"), 0o644))

	dir2, err := Materialize(root)
	require.NoError(t, err)
	require.Equal(t, dir, dir2)
	st, err := os.Stat(db)
	require.NoError(t, err)
	require.True(t, st.ModTime().Equal(old), "an intact file is not rewritten")
	got, err := os.ReadFile(meta)
	require.NoError(t, err)
	want, err := files.ReadFile(Name + "/metadata.yaml")
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got), "a damaged file is rewritten")
	left, err := filepath.Glob(filepath.Join(dir, ".*"))
	require.NoError(t, err)
	require.Empty(t, left, "no temporary file left behind")
}

// TestMaterializeUnwritableRoot: a root where no folder can be made (a
// regular file) is an error naming the path, not a half-written bag.
func TestMaterializeUnwritableRoot(t *testing.T) {
	root := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(root, []byte("x"), 0o644))
	dir, err := Materialize(root)
	require.Error(t, err)
	require.Empty(t, dir)
	require.Contains(t, err.Error(), root)
}

// TestSliceMatchesSource: when the full recording is present, every message
// of the slice is the source's message with the same id, topic, timestamp
// and bytes, and the slice holds exactly the source's messages of the first
// Span.
func TestSliceMatchesSource(t *testing.T) {
	src := rosbagtest.MumbleBag(t, "hallway_room_loop")
	dir, err := Materialize(t.TempDir())
	require.NoError(t, err)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "my_data_bag_0.db3")+"?mode=ro")
	require.NoError(t, err)
	defer db.Close()
	db.SetMaxOpenConns(1)
	_, err = db.Exec("ATTACH DATABASE ? AS src", "file:"+filepath.Join(src, "my_data_bag_0.db3")+"?mode=ro")
	require.NoError(t, err)
	var same, slice, srcFirst int64
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM messages m JOIN src.messages o ON o.id = m.id
		WHERE o.topic_id = m.topic_id AND o.timestamp = m.timestamp AND o.data = m.data`).Scan(&same))
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM messages`).Scan(&slice))
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM src.messages
		WHERE timestamp < (SELECT min(timestamp) FROM src.messages) + ?`, Span.Nanoseconds()).Scan(&srcFirst))
	require.Equal(t, int64(2312), slice)
	require.Equal(t, slice, same)
	require.Equal(t, slice, srcFirst)
	var topicsSame int64
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM topics t JOIN src.topics o ON o.id = t.id
		WHERE o.name = t.name AND o.type = t.type AND o.offered_qos_profiles = t.offered_qos_profiles`).Scan(&topicsSame))
	require.Equal(t, int64(2), topicsSame)

	// SOURCE.md beside the slice is the data set's, unchanged.
	want, err := os.ReadFile(filepath.Join(filepath.Dir(src), "SOURCE.md"))
	require.NoError(t, err)
	got, err := files.ReadFile("SOURCE.md")
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
}

package rosbag

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/picobridge/picobridge/ddspath/rosbag/rosbagtest"
)

// independentCounts asks sqlite directly, bypassing the package.
func independentCounts(t *testing.T, db3 string) map[string][2]int64 {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+db3+"?mode=ro")
	require.NoError(t, err)
	defer db.Close()
	rows, err := db.Query(`SELECT t.name, (SELECT COUNT(*) FROM messages m WHERE m.topic_id = t.id),
		(SELECT COALESCE(SUM(LENGTH(data)),0) FROM messages m WHERE m.topic_id = t.id) FROM topics t`)
	require.NoError(t, err)
	defer rows.Close()
	out := map[string][2]int64{}
	for rows.Next() {
		var name string
		var n, sz int64
		require.NoError(t, rows.Scan(&name, &n, &sz))
		out[name] = [2]int64{n, sz}
	}
	require.NoError(t, rows.Err())
	return out
}

// The figures measured on the shared data set (also listed in SOURCE.md).
var mumbleWant = map[string]map[string]struct {
	count, size int64
	typ         string
}{
	"hallway_room_loop": {
		"/scan":     {896, 1504, "sensor_msgs/msg/LaserScan"},
		"/imu_data": {3698, 324, "sensor_msgs/msg/Imu"},
	},
	"no_loop_room": {
		"/scan":     {508, 1504, "sensor_msgs/msg/LaserScan"},
		"/imu_data": {2122, 324, "sensor_msgs/msg/Imu"},
	},
}

func TestOpenRealBags(t *testing.T) {
	for _, name := range rosbagtest.MumbleBags {
		t.Run(name, func(t *testing.T) {
			dir := rosbagtest.MumbleBag(t, name)
			b, err := Open(dir)
			require.NoError(t, err)
			defer b.Close()

			require.Equal(t, 3, b.SchemaVersion)
			require.Equal(t, "humble", b.ROSDistro)
			require.NotNil(t, b.Metadata)
			require.Equal(t, 5, b.Metadata.Version)
			require.Len(t, b.Files, 1)

			indep := independentCounts(t, b.Files[0])
			want := mumbleWant[name]
			topics := b.Topics()
			require.Len(t, topics, 2)
			var total int64
			for _, tp := range topics {
				w, ok := want[tp.Name]
				require.True(t, ok, tp.Name)
				require.Equal(t, w.typ, tp.Type)
				require.Equal(t, "cdr", tp.SerializationFormat)
				require.Equal(t, indep[tp.Name][0], tp.MessageCount, "independent COUNT(*)")
				require.Equal(t, w.count, tp.MessageCount)
				require.Equal(t, indep[tp.Name][1], tp.TotalBytes)
				require.Equal(t, w.size, tp.MinSize)
				require.Equal(t, w.size, tp.MaxSize)
				require.Equal(t, w.count*w.size, tp.TotalBytes)
				require.Len(t, tp.OfferedQoS, 1)
				q := tp.OfferedQoS[0]
				require.Equal(t, ReliabilityReliable, q.Reliability)
				require.Equal(t, DurabilityVolatile, q.Durability)
				require.Equal(t, HistoryUnknown, q.History)
				require.Equal(t, LivelinessAutomatic, q.Liveliness)
				require.True(t, q.Deadline.IsInfinite())
				require.True(t, q.LivelinessLeaseDuration.IsInfinite())
				require.Equal(t, time.Duration(1<<63-1), q.Lifespan.Std())
				require.Equal(t, "reliable volatile history=unknown(3)", q.String())
				// Metadata agrees with the database.
				for _, mt := range b.Metadata.Topics {
					if mt.TopicMetadata.Name == tp.Name {
						require.Equal(t, tp.MessageCount, mt.MessageCount)
						require.Equal(t, tp.OfferedQoSRaw, mt.TopicMetadata.OfferedQoSProfiles)
					}
				}
				total += tp.MessageCount
			}
			s := b.Summary()
			require.Equal(t, total, s.MessageCount)
			require.Equal(t, b.Metadata.MessageCount, s.MessageCount)
			require.Equal(t, b.Metadata.StartingTime.NanosecondsSinceEpoch, s.Start.UnixNano())
			require.Equal(t, b.Metadata.Duration.Nanoseconds, s.Duration.Nanoseconds())
			st, err := os.Stat(b.Files[0])
			require.NoError(t, err)
			require.Equal(t, st.Size(), s.FileBytes)
		})
	}
}

func TestMessagesRealBagsInTimeOrder(t *testing.T) {
	for _, name := range rosbagtest.MumbleBags {
		t.Run(name, func(t *testing.T) {
			b, err := Open(rosbagtest.MumbleBag(t, name))
			require.NoError(t, err)
			defer b.Close()
			c, err := b.Messages(context.Background(), ReadOptions{})
			require.NoError(t, err)
			defer c.Close()
			counts := map[string]int64{}
			var last int64
			var n int
			for c.Next() {
				m := c.Message()
				require.GreaterOrEqual(t, m.Timestamp, last, "message %d out of order", n)
				last = m.Timestamp
				require.Equal(t, mumbleWant[name][m.Topic.Name].size, int64(len(m.Data)))
				require.Equal(t, []byte{0, 1, 0, 0}, m.Data[:4])
				counts[m.Topic.Name]++
				n++
			}
			require.NoError(t, c.Err())
			for topic, w := range mumbleWant[name] {
				require.Equal(t, w.count, counts[topic], topic)
			}
			s := b.Summary()
			require.Equal(t, s.End.UnixNano(), last)
		})
	}
}

func TestMessagesFirstScanBytes(t *testing.T) {
	b, err := Open(filepath.Join(rosbagtest.MumbleBag(t, "hallway_room_loop"), "my_data_bag_0.db3"))
	require.NoError(t, err)
	defer b.Close()
	require.Nil(t, b.Metadata)
	c, err := b.Messages(context.Background(), ReadOptions{Topics: []string{"/scan"}})
	require.NoError(t, err)
	defer c.Close()
	require.True(t, c.Next())
	m := c.Message()
	require.Equal(t, int64(1742407985965670153), m.Timestamp)
	require.Equal(t, "000100003109db67030e82390c0000006c617365725f6672616d650000000000", hex.EncodeToString(m.Data[:32]))
	require.Equal(t, time.Unix(0, 1742407985965670153), m.Time())
	n := 1
	for c.Next() {
		require.Equal(t, "/scan", c.Message().Topic.Name)
		n++
	}
	require.NoError(t, c.Err())
	require.Equal(t, 896, n)
}

func TestMessagesTimeWindowAndCancel(t *testing.T) {
	dir := rosbagtest.MumbleBag(t, "no_loop_room")
	b, err := Open(filepath.Join(dir, MetadataFile))
	require.NoError(t, err)
	defer b.Close()
	s := b.Summary()
	start := s.Start.Add(10 * time.Second)
	end := s.Start.Add(20 * time.Second)
	c, err := b.Messages(context.Background(), ReadOptions{Topics: []string{"/imu_data"}, Start: start, End: end})
	require.NoError(t, err)
	n := 0
	for c.Next() {
		ts := c.Message().Time()
		require.False(t, ts.Before(start))
		require.True(t, ts.Before(end))
		n++
	}
	require.NoError(t, c.Err())
	require.NoError(t, c.Close())
	require.NoError(t, c.Close())
	require.InDelta(t, 300, n, 3) // 30 Hz for 10 s

	_, err = b.Messages(context.Background(), ReadOptions{Topics: []string{"/odom"}})
	require.ErrorIs(t, err, ErrUnknownTopic)

	ctx, cancel := context.WithCancel(context.Background())
	c, err = b.Messages(ctx, ReadOptions{})
	require.NoError(t, err)
	defer c.Close()
	require.True(t, c.Next())
	cancel()
	require.False(t, c.Next())
	require.ErrorIs(t, c.Err(), context.Canceled)
}

func TestOpenErrors(t *testing.T) {
	_, err := Open(filepath.Join(t.TempDir(), "nope"))
	require.ErrorIs(t, err, fs.ErrNotExist)

	empty := t.TempDir()
	_, err = Open(empty)
	require.ErrorIs(t, err, ErrNotABag)

	garbage := filepath.Join(t.TempDir(), "bag_0.db3")
	require.NoError(t, os.WriteFile(garbage, []byte("this is not a database, just some text that is long enough to have a header"), 0o644))
	_, err = Open(garbage)
	require.ErrorIs(t, err, ErrCorrupt)
	_, err = Open(filepath.Dir(garbage))
	require.ErrorIs(t, err, ErrCorrupt)

	other := filepath.Join(t.TempDir(), "other.db3")
	db, err := sql.Open("sqlite", other)
	require.NoError(t, err)
	_, err = db.Exec("CREATE TABLE foo(x)")
	require.NoError(t, err)
	require.NoError(t, db.Close())
	_, err = Open(other)
	require.ErrorIs(t, err, ErrNotABag)

	mcap := t.TempDir()
	writeMeta(t, mcap, "mcap", "", []string{"a.mcap"})
	_, err = Open(mcap)
	require.ErrorIs(t, err, ErrUnsupported)

	zstd := t.TempDir()
	writeMeta(t, zstd, "sqlite3", "zstd", []string{"a.db3.zstd"})
	_, err = Open(zstd)
	require.ErrorIs(t, err, ErrUnsupported)

	missing := t.TempDir()
	writeMeta(t, missing, "sqlite3", "", []string{"gone_0.db3"})
	_, err = Open(missing)
	require.ErrorIs(t, err, fs.ErrNotExist)

	badYAML := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(badYAML, MetadataFile), []byte("rosbag2_bagfile_information: [\n"), 0o644))
	_, err = Open(badYAML)
	require.ErrorIs(t, err, ErrCorrupt)
	require.Equal(t, 1, strings.Count(err.Error(), "rosbag:"), "wrapped once: %v", err)

	// A dangling topic_id is corruption, not a crash.
	dangling := t.TempDir()
	p := makeDB(t, dangling, "d_0.db3", []synthTopic{{1, "/a", "std_msgs/msg/String"}}, []synthMsg{{1, 10}, {7, 20}})
	_, err = Open(p)
	require.ErrorIs(t, err, ErrCorrupt)
}

func writeMeta(t *testing.T, dir, storage, compression string, files []string) {
	t.Helper()
	y := "rosbag2_bagfile_information:\n  version: 5\n  storage_identifier: " + storage +
		"\n  compression_format: \"" + compression + "\"\n  relative_file_paths:\n"
	for _, f := range files {
		y += "    - " + f + "\n"
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, MetadataFile), []byte(y), 0o644))
}

type synthTopic struct {
	id        int64
	name, typ string
}

type synthMsg struct {
	topicID int64
	ts      int64
}

// makeDB writes a small rosbag2-shaped sqlite file (schema of Humble) for tests.
func makeDB(t *testing.T, dir, name string, topics []synthTopic, msgs []synthMsg) string {
	t.Helper()
	p := filepath.Join(dir, name)
	db, err := sql.Open("sqlite", p)
	require.NoError(t, err)
	defer db.Close()
	for _, s := range []string{
		"CREATE TABLE schema(schema_version INTEGER PRIMARY KEY,ros_distro TEXT NOT NULL)",
		"INSERT INTO schema VALUES (3, 'humble')",
		"CREATE TABLE topics(id INTEGER PRIMARY KEY,name TEXT NOT NULL,type TEXT NOT NULL,serialization_format TEXT NOT NULL,offered_qos_profiles TEXT NOT NULL)",
		"CREATE TABLE messages(id INTEGER PRIMARY KEY,topic_id INTEGER NOT NULL,timestamp INTEGER NOT NULL, data BLOB NOT NULL)",
		"CREATE INDEX timestamp_idx ON messages (timestamp ASC)",
	} {
		_, err := db.Exec(s)
		require.NoError(t, err)
	}
	for _, tp := range topics {
		_, err := db.Exec("INSERT INTO topics VALUES (?, ?, ?, 'cdr', ?)", tp.id, tp.name, tp.typ,
			"- history: keep_last\n  depth: 10\n  reliability: best_effort\n  durability: transient_local\n  deadline:\n    sec: 0\n    nsec: 0\n")
		require.NoError(t, err)
	}
	for _, m := range msgs {
		_, err := db.Exec("INSERT INTO messages(topic_id, timestamp, data) VALUES (?, ?, ?)", m.topicID, m.ts, []byte(fmt.Sprintf("%s:%d", name, m.ts)))
		require.NoError(t, err)
	}
	return p
}

func TestMultiFileMerge(t *testing.T) {
	dir := t.TempDir()
	// Same topics with different ids per file, overlapping time ranges.
	makeDB(t, dir, "b_0.db3", []synthTopic{{1, "/a", "std_msgs/msg/String"}, {2, "/b", "std_msgs/msg/Int32"}},
		[]synthMsg{{1, 100}, {2, 150}, {1, 300}, {2, 500}})
	makeDB(t, dir, "b_1.db3", []synthTopic{{1, "/b", "std_msgs/msg/Int32"}, {2, "/c", "std_msgs/msg/Empty"}},
		[]synthMsg{{1, 200}, {2, 300}, {1, 400}, {2, 600}})
	writeMeta(t, dir, "sqlite3", "", []string{"b_0.db3", "b_1.db3"})

	b, err := Open(dir)
	require.NoError(t, err)
	defer b.Close()
	require.Len(t, b.Files, 2)
	names := []string{}
	for _, tp := range b.Topics() {
		names = append(names, tp.Name)
	}
	require.Equal(t, []string{"/a", "/b", "/c"}, names)
	tb, ok := b.Topic("/b")
	require.True(t, ok)
	require.Equal(t, int64(4), tb.MessageCount)
	require.Equal(t, int64(150), tb.Start.UnixNano())
	require.Equal(t, int64(500), tb.End.UnixNano())
	require.Equal(t, HistoryKeepLast, tb.OfferedQoS[0].History)
	require.Equal(t, 10, tb.OfferedQoS[0].Depth)
	require.Equal(t, ReliabilityBestEffort, tb.OfferedQoS[0].Reliability)
	require.Equal(t, DurabilityTransientLocal, tb.OfferedQoS[0].Durability)
	_, ok = b.Topic("/nope")
	require.False(t, ok)

	read := func(opt ReadOptions) []string {
		c, err := b.Messages(context.Background(), opt)
		require.NoError(t, err)
		defer c.Close()
		var out []string
		for c.Next() {
			m := c.Message()
			out = append(out, m.Topic.Name+"="+string(m.Data))
		}
		require.NoError(t, c.Err())
		return out
	}
	require.Equal(t, []string{
		"/a=b_0.db3:100", "/b=b_0.db3:150", "/b=b_1.db3:200", "/a=b_0.db3:300", "/c=b_1.db3:300",
		"/b=b_1.db3:400", "/b=b_0.db3:500", "/c=b_1.db3:600",
	}, read(ReadOptions{}))
	require.Equal(t, []string{"/b=b_0.db3:150", "/b=b_1.db3:200", "/b=b_1.db3:400", "/b=b_0.db3:500"},
		read(ReadOptions{Topics: []string{"/b"}}))
	require.Equal(t, []string{"/a=b_0.db3:300", "/c=b_1.db3:300", "/c=b_1.db3:600"}, read(ReadOptions{Topics: []string{"/a", "/c"}, Start: time.Unix(0, 200)}))

	s := b.Summary()
	require.Equal(t, int64(8), s.MessageCount)
	require.Equal(t, 500*time.Nanosecond, s.Duration)

	// Without metadata the files are taken in natural order (bag_2 before bag_10).
	nodir := t.TempDir()
	makeDB(t, nodir, "x_10.db3", []synthTopic{{1, "/a", "std_msgs/msg/String"}}, []synthMsg{{1, 5}})
	makeDB(t, nodir, "x_2.db3", []synthTopic{{1, "/a", "std_msgs/msg/String"}}, []synthMsg{{1, 5}})
	b2, err := Open(nodir)
	require.NoError(t, err)
	defer b2.Close()
	require.Equal(t, []string{filepath.Join(nodir, "x_2.db3"), filepath.Join(nodir, "x_10.db3")}, b2.Files)
	c, err := b2.Messages(context.Background(), ReadOptions{})
	require.NoError(t, err)
	defer c.Close()
	require.True(t, c.Next())
	require.Equal(t, "x_2.db3:5", string(c.Message().Data), "tie broken by file order")

	// Conflicting types for one topic are refused.
	conflict := t.TempDir()
	makeDB(t, conflict, "c_0.db3", []synthTopic{{1, "/a", "std_msgs/msg/String"}}, nil)
	makeDB(t, conflict, "c_1.db3", []synthTopic{{1, "/a", "std_msgs/msg/Int32"}}, nil)
	_, err = Open(conflict)
	require.ErrorIs(t, err, ErrCorrupt)
}

func TestParseQoSProfiles(t *testing.T) {
	q, err := ParseQoSProfiles("")
	require.NoError(t, err)
	require.Nil(t, q)
	q, err = ParseQoSProfiles("- history: 1\n  depth: 5\n  reliability: 2\n  durability: 1\n  liveliness: 3\n  deadline:\n    sec: 1\n    nsec: 500\n")
	require.NoError(t, err)
	require.Equal(t, []QoSProfile{{
		History: HistoryKeepLast, Depth: 5, Reliability: ReliabilityBestEffort, Durability: DurabilityTransientLocal,
		Liveliness: LivelinessManualByTopic, Deadline: Duration{Sec: 1, Nsec: 500},
	}}, q)
	require.Equal(t, "best_effort transient_local keep_last(5) deadline=1.0000005s", q[0].String())
	require.Equal(t, time.Second+500, q[0].Deadline.Std())
	require.Equal(t, "default", Duration{}.String())
	require.Equal(t, "infinite", Duration{Sec: 9223372036, Nsec: 854775807}.String())
	require.True(t, Duration{Sec: 2147483647, Nsec: 4294967295}.IsInfinite())
	require.False(t, Duration{Sec: 2147483647}.IsInfinite())

	_, err = ParseQoSProfiles("- reliability: 9\n")
	require.Error(t, err)
	_, err = ParseQoSProfiles("- reliability: sometimes\n")
	require.Error(t, err)
	_, err = ParseQoSProfiles("not: [a list\n")
	require.Error(t, err)
}

// FuzzParseQoSProfiles feeds arbitrary text to the offered_qos_profiles parser: it must
// return profiles or an error, never panic.
func FuzzParseQoSProfiles(f *testing.F) {
	f.Add("- history: 3\n  depth: 0\n  reliability: 1\n  durability: 2\n  deadline:\n    sec: 9223372036\n    nsec: 854775807\n")
	f.Add("- history: keep_last\n  depth: 10\n  reliability: best_effort\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, text string) {
		q, err := ParseQoSProfiles(text)
		if err != nil {
			return
		}
		for _, p := range q {
			_ = p.String()
			_ = p.Deadline.Std()
		}
	})
}

func BenchmarkReadRealBag(b *testing.B) {
	dir, ok := rosbagtest.FindMumbleDir()
	if !ok {
		b.Skip("real bags not found (set PICOBRIDGE_SHARED)")
	}
	bag, err := Open(filepath.Join(dir, "hallway_room_loop"))
	if err != nil {
		b.Fatal(err)
	}
	defer bag.Close()
	b.ReportAllocs()
	for b.Loop() {
		c, err := bag.Messages(context.Background(), ReadOptions{})
		if err != nil {
			b.Fatal(err)
		}
		var n int64
		for c.Next() {
			n += int64(len(c.Message().Data))
		}
		if err := c.Err(); err != nil {
			b.Fatal(err)
		}
		c.Close()
		b.SetBytes(n)
	}
}

package rosbag

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the pure-Go "sqlite" database/sql driver
)

// Sentinel errors; match them with errors.Is. Missing files also match fs.ErrNotExist.
var (
	// ErrNotABag means the path exists but holds no rosbag2 sqlite3 bag.
	ErrNotABag = errors.New("rosbag: not a rosbag2 sqlite3 bag")
	// ErrCorrupt means a file of the bag cannot be read as a rosbag2 database or metadata.
	ErrCorrupt = errors.New("rosbag: corrupt bag")
	// ErrUnsupported means the bag uses a feature this reader lacks (compression, another
	// storage plugin such as mcap).
	ErrUnsupported = errors.New("rosbag: unsupported bag")
	// ErrUnknownTopic means a requested topic is not in the bag.
	ErrUnknownTopic = errors.New("rosbag: unknown topic")
)

// Topic describes one topic of the bag, merged over all its files.
type Topic struct {
	Name                string // e.g. "/scan"
	Type                string // ROS 2 type, e.g. "sensor_msgs/msg/LaserScan"
	SerializationFormat string // "cdr" for ROS 2 defaults
	// OfferedQoS are the publishers' QoS profiles parsed from OfferedQoSRaw.
	OfferedQoS    []QoSProfile
	OfferedQoSRaw string
	// TypeDescriptionHash is "RIHS01_…" in bags of schema 4 and newer (Iron+), else "".
	TypeDescriptionHash string

	MessageCount int64 // messages in the bag
	TotalBytes   int64 // sum of the serialized sizes
	MinSize      int64 // smallest serialized message, bytes
	MaxSize      int64 // largest serialized message, bytes
	Start, End   time.Time
}

// Bag is an open rosbag2 sqlite3 bag. Its methods may be used from several goroutines.
type Bag struct {
	// Path is the bag directory (or the .db3 file when opened as a single file).
	Path string
	// Files are the .db3 files in metadata order (absolute or as given).
	Files []string
	// Metadata is the parsed metadata.yaml, nil when the bag has none.
	Metadata *Metadata
	// SchemaVersion and ROSDistro come from the first file's schema table (0 and "" when
	// the table is absent, as in pre-Humble bags).
	SchemaVersion int
	ROSDistro     string

	files  []*bagFile
	topics []*Topic
	byName map[string]*Topic
}

type bagFile struct {
	path   string
	db     *sql.DB
	topics map[int64]*Topic // topic_id of this file -> merged topic
	size   int64
}

// Open opens a bag: a directory with metadata.yaml and .db3 files, a directory with .db3
// files only (taken in natural order), a metadata.yaml path, or a single .db3 file. It
// reads the topics and their message counts, sizes and time ranges, but no message data.
func Open(path string) (*Bag, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("rosbag: open %s: %w", path, err)
	}
	b := &Bag{Path: path, byName: map[string]*Topic{}}
	var files []string
	switch {
	case st.IsDir():
		files, err = b.dirFiles(path)
	case filepath.Base(path) == MetadataFile:
		b.Path = filepath.Dir(path)
		files, err = b.dirFiles(b.Path)
	default:
		files = []string{path}
	}
	if err != nil {
		return nil, err
	}
	b.Files = files
	for _, f := range files {
		if err := b.openFile(f); err != nil {
			b.Close()
			return nil, err
		}
	}
	return b, nil
}

func (b *Bag) dirFiles(dir string) ([]string, error) {
	meta, err := readMetadata(filepath.Join(dir, MetadataFile))
	switch {
	case err == nil:
		b.Metadata = meta
		if meta.StorageIdentifier != "" && meta.StorageIdentifier != "sqlite3" {
			return nil, fmt.Errorf("%w: %s: storage %q (only sqlite3 is supported)", ErrUnsupported, dir, meta.StorageIdentifier)
		}
		if meta.CompressionFormat != "" || meta.CompressionMode != "" {
			return nil, fmt.Errorf("%w: %s: compression %q mode %q", ErrUnsupported, dir, meta.CompressionFormat, meta.CompressionMode)
		}
		if len(meta.RelativeFilePaths) == 0 {
			return nil, fmt.Errorf("%w: %s: metadata lists no files", ErrCorrupt, dir)
		}
		files := make([]string, len(meta.RelativeFilePaths))
		for i, rel := range meta.RelativeFilePaths {
			// Old recorders wrote paths relative to the bag's parent directory.
			p := filepath.Join(dir, rel)
			if _, err := os.Stat(p); err != nil {
				if alt := filepath.Join(filepath.Dir(dir), rel); fileExists(alt) {
					p = alt
				} else {
					return nil, fmt.Errorf("rosbag: %s: file listed in %s: %w", p, MetadataFile, err)
				}
			}
			files[i] = p
		}
		return files, nil
	case errors.Is(err, fs.ErrNotExist):
		files, gerr := filepath.Glob(filepath.Join(dir, "*.db3"))
		if gerr != nil || len(files) == 0 {
			return nil, fmt.Errorf("%w: %s: no %s and no .db3 files", ErrNotABag, dir, MetadataFile)
		}
		slices.SortFunc(files, naturalCompare)
		return files, nil
	default:
		return nil, err // already "rosbag: ..." and naming the file: wrap once
	}
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// naturalCompare orders "bag_2.db3" before "bag_10.db3".
func naturalCompare(a, b string) int {
	na, pa := splitNumSuffix(a)
	nb, pb := splitNumSuffix(b)
	if pa != pb {
		return strings.Compare(pa, pb)
	}
	return na - nb
}

func splitNumSuffix(p string) (int, string) {
	s := strings.TrimSuffix(p, ".db3")
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	n, _ := strconv.Atoi(s[i:])
	return n, s[:i]
}

// sqliteDSN opens the database read-only through a file: URI.
func sqliteDSN(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	u := url.URL{Scheme: "file", Path: abs, RawQuery: "mode=ro"}
	return u.String(), nil
}

func (b *Bag) openFile(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("rosbag: open %s: %w", path, err)
	}
	if st.IsDir() {
		return fmt.Errorf("%w: %s is a directory", ErrNotABag, path)
	}
	if !st.Mode().IsRegular() {
		// A FIFO or a device (a metadata.yaml may name any path) would block the reader.
		return fmt.Errorf("%w: %s is not a regular file (%s)", ErrNotABag, path, st.Mode().Type())
	}
	dsn, err := sqliteDSN(path)
	if err != nil {
		return fmt.Errorf("rosbag: %s: %w", path, err)
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, path, err)
	}
	f := &bagFile{path: path, db: db, topics: map[int64]*Topic{}, size: st.Size()}
	b.files = append(b.files, f)

	ctx := context.Background()
	tables, err := tableNames(ctx, db)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, path, err)
	}
	if !tables["topics"] || !tables["messages"] {
		return fmt.Errorf("%w: %s: no topics/messages tables (is it a rosbag2 sqlite3 file?)", ErrNotABag, path)
	}
	if tables["schema"] && len(b.files) == 1 {
		row := db.QueryRowContext(ctx, "SELECT schema_version, ros_distro FROM schema ORDER BY schema_version DESC LIMIT 1")
		if err := row.Scan(&b.SchemaVersion, &b.ROSDistro); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: %s: schema table: %v", ErrCorrupt, path, err)
		}
	}
	if err := b.readTopics(ctx, f); err != nil {
		return err
	}
	return b.readCounts(ctx, f)
}

func tableNames(ctx context.Context, db *sql.DB) (map[string]bool, error) {
	return nameSet(ctx, db, "SELECT name FROM sqlite_master WHERE type = 'table'")
}

func columnNames(ctx context.Context, db *sql.DB, table string) (map[string]bool, error) {
	return nameSet(ctx, db, "SELECT name FROM pragma_table_info(?)", table)
}

// nameSet runs a query that returns one text column and collects the values.
func nameSet(ctx context.Context, db *sql.DB, query string, args ...any) (map[string]bool, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out[n] = true
	}
	return out, rows.Err()
}

func (b *Bag) readTopics(ctx context.Context, f *bagFile) error {
	cols, err := columnNames(ctx, f.db, "topics")
	if err != nil {
		return fmt.Errorf("%w: %s: topics table: %v", ErrCorrupt, f.path, err)
	}
	qos, hash := "''", "''"
	if cols["offered_qos_profiles"] {
		qos = "offered_qos_profiles"
	}
	if cols["type_description_hash"] {
		hash = "type_description_hash"
	}
	rows, err := f.db.QueryContext(ctx, "SELECT id, name, type, serialization_format, "+qos+", "+hash+" FROM topics ORDER BY id")
	if err != nil {
		return fmt.Errorf("%w: %s: topics table: %v", ErrCorrupt, f.path, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var t Topic
		if err := rows.Scan(&id, &t.Name, &t.Type, &t.SerializationFormat, &t.OfferedQoSRaw, &t.TypeDescriptionHash); err != nil {
			return fmt.Errorf("%w: %s: topics row: %v", ErrCorrupt, f.path, err)
		}
		if prev, ok := b.byName[t.Name]; ok {
			if prev.Type != t.Type {
				return fmt.Errorf("%w: %s: topic %s has type %s here and %s in an earlier file", ErrCorrupt, f.path, t.Name, t.Type, prev.Type)
			}
			f.topics[id] = prev
			continue
		}
		t.OfferedQoS, err = ParseQoSProfiles(t.OfferedQoSRaw)
		if err != nil {
			return fmt.Errorf("%w: %s: topic %s: %v", ErrCorrupt, f.path, t.Name, err)
		}
		tp := &t
		b.topics = append(b.topics, tp)
		b.byName[t.Name] = tp
		f.topics[id] = tp
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%w: %s: topics table: %v", ErrCorrupt, f.path, err)
	}
	return nil
}

func (b *Bag) readCounts(ctx context.Context, f *bagFile) error {
	rows, err := f.db.QueryContext(ctx, `SELECT topic_id, COUNT(*), COALESCE(SUM(LENGTH(data)), 0),
		MIN(LENGTH(data)), MAX(LENGTH(data)), MIN(timestamp), MAX(timestamp)
		FROM messages GROUP BY topic_id`)
	if err != nil {
		return fmt.Errorf("%w: %s: messages table: %v", ErrCorrupt, f.path, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, n, total, minSz, maxSz, t0, t1 int64
		if err := rows.Scan(&id, &n, &total, &minSz, &maxSz, &t0, &t1); err != nil {
			return fmt.Errorf("%w: %s: messages table: %v", ErrCorrupt, f.path, err)
		}
		t, ok := f.topics[id]
		if !ok {
			return fmt.Errorf("%w: %s: %d messages reference unknown topic_id %d", ErrCorrupt, f.path, n, id)
		}
		start, end := time.Unix(0, t0), time.Unix(0, t1)
		if t.MessageCount == 0 {
			t.Start, t.End, t.MinSize, t.MaxSize = start, end, minSz, maxSz
		} else {
			t.MinSize = min(t.MinSize, minSz)
			t.MaxSize = max(t.MaxSize, maxSz)
			if start.Before(t.Start) {
				t.Start = start
			}
			if end.After(t.End) {
				t.End = end
			}
		}
		t.MessageCount += n
		t.TotalBytes += total
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%w: %s: messages table: %v", ErrCorrupt, f.path, err)
	}
	return nil
}

// Close releases the database handles. Open cursors must be closed first.
func (b *Bag) Close() error {
	var errs []error
	for _, f := range b.files {
		errs = append(errs, f.db.Close())
	}
	b.files = nil
	return errors.Join(errs...)
}

// Topics returns the bag's topics in the order of the first file's topics table (then new
// topics of later files). The values are copies.
func (b *Bag) Topics() []Topic {
	out := make([]Topic, len(b.topics))
	for i, t := range b.topics {
		out[i] = *t
	}
	return out
}

// Topic returns one topic by name.
func (b *Bag) Topic(name string) (Topic, bool) {
	t, ok := b.byName[name]
	if !ok {
		return Topic{}, false
	}
	return *t, true
}

// Summary is what `ros2 bag info` shows about a whole bag.
type Summary struct {
	Files        []string
	FileBytes    int64 // sum of the .db3 file sizes
	MessageCount int64
	MessageBytes int64 // sum of serialized message sizes
	Start, End   time.Time
	Duration     time.Duration
}

// Summary computes totals over all topics.
func (b *Bag) Summary() Summary {
	s := Summary{Files: b.Files}
	for _, f := range b.files {
		s.FileBytes += f.size
	}
	for _, t := range b.topics {
		if t.MessageCount == 0 {
			continue
		}
		if s.MessageCount == 0 || t.Start.Before(s.Start) {
			s.Start = t.Start
		}
		if s.MessageCount == 0 || t.End.After(s.End) {
			s.End = t.End
		}
		s.MessageCount += t.MessageCount
		s.MessageBytes += t.TotalBytes
	}
	s.Duration = s.End.Sub(s.Start)
	return s
}

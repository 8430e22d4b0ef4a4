// Command mkslice cuts the demo's embedded bag (package eval/demo/demobag)
// out of a full rosbag2 sqlite3 recording: every message whose receive
// timestamp lies within the first --span of the bag, with its original id,
// topic, timestamp and data bytes; the schema, topics and metadata tables
// copied row by row; the tables created from the source's own CREATE
// statements. metadata.yaml is the source's, with the counts, the duration
// and the file entry recomputed for the slice.
//
// It is a maintainer's tool, not linked into any binary:
//
//	go run ./eval/demo/demobag/mkslice \
//	    --src ../shared/data/mumble_rplidar_imu/hallway_room_loop \
//	    --out eval/demo/demobag/hallway_room_loop_62s --span 62s
//
// Check the result with `picobridge bag info DIR`; the package's tests check
// the counts and the bytes against the source when it is present.
package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"gopkg.in/yaml.v3"
	_ "modernc.org/sqlite" // the pure-Go driver ddspath/rosbag reads with
)

func main() {
	src := flag.String("src", "", "source bag directory (metadata.yaml + my_data_bag_0.db3)")
	out := flag.String("out", "", "output bag directory (created; must not exist)")
	span := flag.Duration("span", 62*time.Second, "keep the messages of the bag's first SPAN")
	flag.Parse()
	if *src == "" || *out == "" || *span <= 0 {
		fmt.Fprintln(os.Stderr, "mkslice: --src DIR --out DIR [--span D] (see the package comment)")
		os.Exit(2)
	}
	if err := run(*src, *out, *span); err != nil {
		fmt.Fprintf(os.Stderr, "mkslice: %v\n", err)
		os.Exit(1)
	}
}

// dbFile is the one storage file of the Mumble bags.
const dbFile = "my_data_bag_0.db3"

func dsn(path, mode string) string {
	abs, _ := filepath.Abs(path)
	return (&url.URL{Scheme: "file", Path: abs, RawQuery: "mode=" + mode}).String()
}

func run(srcDir, outDir string, span time.Duration) error {
	if _, err := os.Stat(outDir); err == nil {
		return fmt.Errorf("%s exists; remove it first", outDir)
	}
	ctx := context.Background()
	src, err := sql.Open("sqlite", dsn(filepath.Join(srcDir, dbFile), "ro"))
	if err != nil {
		return err
	}
	defer src.Close()
	var t0 int64
	if err := src.QueryRowContext(ctx, "SELECT min(timestamp) FROM messages").Scan(&t0); err != nil {
		return fmt.Errorf("source: %w", err)
	}
	end := t0 + span.Nanoseconds() // exclusive

	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	dst, err := sql.Open("sqlite", dsn(filepath.Join(outDir, dbFile), "rwc"))
	if err != nil {
		return err
	}
	defer dst.Close()
	dst.SetMaxOpenConns(1)

	// Tables and indexes from the source's own statements, in creation order.
	rows, err := src.QueryContext(ctx, "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid")
	if err != nil {
		return err
	}
	var stmts []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return err
		}
		stmts = append(stmts, s)
	}
	if err := rows.Close(); err != nil {
		return err
	}
	tx, err := dst.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit: a no-op
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	for _, q := range []struct{ table, cols, where string }{
		{"schema", "schema_version, ros_distro", ""},
		{"metadata", "id, metadata_version, metadata", ""},
		{"topics", "id, name, type, serialization_format, offered_qos_profiles", ""},
		{"messages", "id, topic_id, timestamp, data", " WHERE timestamp < " + strconv.FormatInt(end, 10)},
	} {
		if err := copyRows(ctx, src, tx, q.table, q.cols, q.where); err != nil {
			return fmt.Errorf("table %s: %w", q.table, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if _, err := dst.ExecContext(ctx, "VACUUM"); err != nil {
		return err
	}

	// metadata.yaml: the source's, with the slice's numbers.
	counts := map[string]int64{}
	var total, first, last int64
	r2, err := dst.QueryContext(ctx, "SELECT t.name, count(*) FROM messages m JOIN topics t ON t.id = m.topic_id GROUP BY t.name")
	if err != nil {
		return err
	}
	for r2.Next() {
		var name string
		var n int64
		if err := r2.Scan(&name, &n); err != nil {
			return err
		}
		counts[name] = n
		total += n
	}
	if err := r2.Close(); err != nil {
		return err
	}
	if err := dst.QueryRowContext(ctx, "SELECT min(timestamp), max(timestamp) FROM messages").Scan(&first, &last); err != nil {
		return err
	}
	raw, err := os.ReadFile(filepath.Join(srcDir, "metadata.yaml"))
	if err != nil {
		return err
	}
	meta, err := sliceMetadata(raw, counts, total, first, last-first)
	if err != nil {
		return fmt.Errorf("metadata.yaml: %w", err)
	}
	if err := os.WriteFile(filepath.Join(outDir, "metadata.yaml"), meta, 0o644); err != nil {
		return err
	}
	fmt.Printf("mkslice: %s: %d messages %v, first %d, duration %v\n", outDir, total, counts, first, time.Duration(last-first))
	return nil
}

// copyRows copies the rows of one table, columns as listed, unchanged.
func copyRows(ctx context.Context, src *sql.DB, dst *sql.Tx, table, cols, where string) error {
	rows, err := src.QueryContext(ctx, "SELECT "+cols+" FROM "+table+where+" ORDER BY 1")
	if err != nil {
		return err
	}
	defer rows.Close()
	ct, err := rows.ColumnTypes()
	if err != nil {
		return err
	}
	ph := "?"
	for range ct[1:] {
		ph += ", ?"
	}
	ins, err := dst.PrepareContext(ctx, "INSERT INTO "+table+" ("+cols+") VALUES ("+ph+")")
	if err != nil {
		return err
	}
	defer ins.Close()
	vals := make([]any, len(ct))
	ptrs := make([]any, len(ct))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		if _, err := ins.ExecContext(ctx, vals...); err != nil {
			return err
		}
	}
	return rows.Err()
}

// sliceMetadata rewrites the bag-level and per-file counts and times of a
// rosbag2 metadata.yaml, keeping everything else (order, QoS strings).
func sliceMetadata(raw []byte, counts map[string]int64, total, start, dur int64) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	info := child(doc.Content[0], "rosbag2_bagfile_information")
	if info == nil {
		return nil, errors.New("no rosbag2_bagfile_information")
	}
	set := func(n *yaml.Node, v int64) error {
		if n == nil {
			return errors.New("missing field")
		}
		n.Value = strconv.FormatInt(v, 10)
		return nil
	}
	errs := []error{
		set(child(child(info, "duration"), "nanoseconds"), dur),
		set(child(child(info, "starting_time"), "nanoseconds_since_epoch"), start),
		set(child(info, "message_count"), total),
	}
	for _, t := range child(info, "topics_with_message_count").Content {
		name := child(child(t, "topic_metadata"), "name")
		if name == nil {
			return nil, errors.New("topic without a name")
		}
		errs = append(errs, set(child(t, "message_count"), counts[name.Value]))
	}
	files := child(info, "files")
	if files == nil || len(files.Content) != 1 {
		return nil, errors.New("want exactly one file entry")
	}
	f := files.Content[0]
	errs = append(errs, set(child(child(f, "starting_time"), "nanoseconds_since_epoch"), start),
		set(child(child(f, "duration"), "nanoseconds"), dur), set(child(f, "message_count"), total))
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2) // as rosbag2 writes it
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	return b.Bytes(), enc.Close()
}

// child is the value of key in mapping m, or nil.
func child(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

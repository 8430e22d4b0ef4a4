// Package demobag carries the demo's default recording inside the binary: the
// first 62 s of the mumble_rplidar_imu bag hallway_room_loop (a real RPLidar
// /scan, 451 LaserScans of 1504 B at 7.3 Hz, and a 30 Hz /imu_data, 1861
// Imu messages of 324 B), so that `bash scripts/run.sh` runs on a clone
// without the shared/ folder. The demo replays 60 s by default; both of its
// sources loop when asked for longer.
//
// The folder hallway_room_loop_62s is a rosbag2 sqlite3 bag (metadata.yaml
// and my_data_bag_0.db3, 1.7 MiB) cut from the full recording by
// ./mkslice: every message of the first 62 s with its original id, topic,
// receive timestamp and data bytes; the schema, topics and metadata rows as
// in the source; metadata.yaml the source's with the counts and duration of
// the slice. `picobridge bag info eval/demo/demobag/hallway_room_loop_62s`
// reads it like any bag.
//
// The data is BSD-2-Clause, © 2025 Rico Ruotong Jia (LICENSE beside it);
// SOURCE.md is the data set's provenance note, copied unchanged. Both are
// embedded too and written beside the bag by Materialize, so a binary that
// carries the data also carries its notice.
//
// Why embedded rather than found on disk: the demo binary then runs the same
// from any working directory and after `go install` or a copy, and the
// lookup cannot pick an unrelated folder. The cost is 1.7 MiB in picodemo
// only: nothing in a product binary (picobridge) imports this package.
// rosbag reads files through SQLite, so Materialize writes the bag to disk
// once (a cache folder named after its content) and returns its path.
package demobag

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"time"
)

// Name is the embedded bag's directory name.
const Name = "hallway_room_loop_62s"

// Source names the recording the slice was cut from (SOURCE.md).
const Source = "mumble_rplidar_imu/hallway_room_loop"

// Span is the stretch of the recording the slice covers, from its first
// message (mkslice --span).
const Span = 62 * time.Second

// Notice is the one-line licence notice of the data.
const Notice = "BSD-2-Clause, Copyright (c) 2025, Rico Ruotong Jia (LICENSE, SOURCE.md beside the bag)"

//go:embed LICENSE SOURCE.md hallway_room_loop_62s/metadata.yaml hallway_room_loop_62s/my_data_bag_0.db3
var files embed.FS

// embedded lists the files Materialize writes, relative to its folder.
var embedded = []string{"LICENSE", "SOURCE.md", Name + "/metadata.yaml", Name + "/my_data_bag_0.db3"}

// FS is the embedded files: LICENSE, SOURCE.md and Name/{metadata.yaml,my_data_bag_0.db3}.
func FS() fs.FS { return files }

// Hash is the first 12 hex digits of the SHA-256 over the embedded files
// (names and bytes): the name of Materialize's folder, so that a binary
// with another slice never reads a stale copy.
func Hash() string {
	h := sha256.New()
	for _, name := range embedded {
		b, _ := files.ReadFile(name) // embedded: cannot fail
		fmt.Fprintf(h, "%s %d\n", name, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// Materialize writes the embedded files under root/demobag-<Hash> (LICENSE,
// SOURCE.md and the bag folder Name) and returns the bag directory. root ""
// is the user's cache folder (os.UserCacheDir()/picobridge, e.g.
// ~/.cache/picobridge), or os.TempDir() when there is none. Files already
// there with the embedded bytes are kept; any other is replaced through a
// temporary file and a rename, so concurrent callers are safe. Errors are
// the file system's (a read-only root, a full disk).
func Materialize(root string) (string, error) {
	if root == "" {
		if c, err := os.UserCacheDir(); err == nil {
			root = filepath.Join(c, "picobridge")
		} else {
			root = os.TempDir()
		}
	}
	dir := filepath.Join(root, "demobag-"+Hash())
	for _, name := range embedded {
		want, _ := files.ReadFile(name)
		dst := filepath.Join(dir, filepath.FromSlash(name))
		if have, err := os.ReadFile(dst); err == nil && bytes.Equal(have, want) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return "", fmt.Errorf("demobag: %w", err)
		}
		if err := writeAtomic(dst, want); err != nil {
			return "", fmt.Errorf("demobag: %w", err)
		}
	}
	return filepath.Join(dir, Name), nil
}

func writeAtomic(dst string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(dst), "."+path.Base(filepath.ToSlash(dst))+".*")
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), dst); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}

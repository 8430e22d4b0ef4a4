package zvec

import (
	"errors"
	"os"
	"path/filepath"
)

// EnvShared names the environment variable that points at the shared/
// folder (or directly at shared/testdata/zenoh-pico).
const EnvShared = "PICOBRIDGE_SHARED"

// TestdataRel is the transcripts folder relative to the repository's
// sibling shared/ folder's parent.
const TestdataRel = "shared/testdata/zenoh-pico"

// FindTestdata locates the zenoh-pico transcripts: first $PICOBRIDGE_SHARED
// (the shared/ folder, or the transcripts folder itself), then
// shared/testdata/zenoh-pico in the working directory and each of its
// parents. It returns an error naming what it tried if none exists.
func FindTestdata() (string, error) {
	if v := os.Getenv(EnvShared); v != "" {
		for _, c := range []string{filepath.Join(v, "testdata", "zenoh-pico"), v} {
			if isDir(c) && hasZvec(c) {
				return c, nil
			}
		}
		return "", errors.New(EnvShared + "=" + v + " holds no testdata/zenoh-pico/*.zvec")
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		c := filepath.Join(dir, TestdataRel)
		if isDir(c) {
			return c, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no " + TestdataRel + " in the working directory or its parents; set " + EnvShared + " to the shared/ folder")
		}
		dir = parent
	}
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

func hasZvec(p string) bool {
	m, _ := filepath.Glob(filepath.Join(p, "*.zvec"))
	return len(m) > 0
}

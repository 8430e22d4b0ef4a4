//go:build !cgo || !cyclonedds

package main

import (
	"context"
	"fmt"
	"io"

	"github.com/picobridge/picobridge/ddspath"
	"github.com/picobridge/picobridge/ddspath/replay"
)

func init() {
	newReplaySink = func(context.Context, bagReplayOptions) (replay.Sink, io.Closer, error) {
		return nil, nil, fmt.Errorf("bag replay: %w; use --dry-run or rebuild with: go build -tags cyclonedds ./cmd/picobridge", ddspath.ErrUnavailable)
	}
}

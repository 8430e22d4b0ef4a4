#!/usr/bin/env bash
# The main job of the README: installs what it needs, builds picobridge and runs it on its
# embedded default. Stop it with Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
mkdir -p bin
go build -tags cyclonedds -o bin/picobridge ./cmd/picobridge
exec bin/picobridge run "$@"    # docs/run.md; the embedded default: tcp+udp 7447, DDS domain 0, HTTP 127.0.0.1:9464

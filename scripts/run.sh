#!/usr/bin/env bash
# The main job of the README: the demo (docs/demo.md). Installs what it needs (scripts/setup.sh),
# builds picobridge and the demo with Cyclone DDS, then runs the demo on its embedded defaults:
# the mumble hallway_room_loop bag's /scan at 30 Hz and /imu_data replayed onto DDS for 60 s,
# picobridge in-process on loopback ports, three simulated zenoh-pico devices (one behind an
# impaired Wi-Fi-like link), live per-device status, a summary, plots in out/demo-<timestamp>/.
# Exits by itself: 0 when the invariants hold, non-zero with the reason otherwise.
# Extra arguments go to the demo (e.g. --duration 20s, --profile strong, --out DIR; --help).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
mkdir -p bin
go build -tags cyclonedds -o bin/picobridge ./cmd/picobridge
go build -tags cyclonedds -o bin/picodemo ./cmd/picodemo
exec bin/picodemo "$@"

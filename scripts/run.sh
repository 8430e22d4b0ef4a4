#!/usr/bin/env bash
# The main job of the README: the demo (docs/demo.md). Installs what it needs (scripts/setup.sh),
# builds picobridge and the demo with Cyclone DDS, then runs the demo on its embedded defaults:
# the mumble hallway_room_loop bag's /scan at 30 Hz and /imu_data replayed onto DDS for 60 s,
# picobridge in-process on loopback ports, three simulated zenoh-pico devices (one behind an
# impaired Wi-Fi-like link), live per-device status, a summary, plots in out/demo-<timestamp>/.
# Exits by itself: PASS and 0 when every CRITICAL device received ≥ 99 % of each critical topic
# and the gateway dropped none of their critical samples (docs/demo.md), FAIL and 1 naming each
# device and topic that fell short. The recording: the first 62 s are embedded in the demo
# binary; --bag DIR, PICOBRIDGE_SHARED or ../shared pick the full one.
# Extra arguments go to the demo (e.g. --duration 20s, --profile strong, --out DIR; --help).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
mkdir -p bin
go build -tags cyclonedds -o bin/picobridge ./cmd/picobridge
go build -tags cyclonedds -o bin/picodemo ./cmd/picodemo
exec bin/picodemo "$@"

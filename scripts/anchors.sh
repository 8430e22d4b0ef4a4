#!/usr/bin/env bash
# Builds the anchors we compare with and interoperate against: the Rust Zenoh router
# `zenohd` and the `zenoh-plugin-ros2dds` plugin (the code of zenoh-bridge-ros2dds), both
# 1.10.2, with cargo, into a cache OUTSIDE the repository (never committed). Prints the
# folder; tests and benchmarks read it from PICOBRIDGE_ANCHORS (unset or incomplete: they
# skip and say so). Idempotent: a second run only checks. Opt-in: CI does not run it.
#
#   bash scripts/anchors.sh                 # builds into $PICOBRIDGE_ANCHORS or ~/.cache/picobridge/anchors
#   export PICOBRIDGE_ANCHORS=$(bash scripts/anchors.sh --print)
#
# Needs: cargo/rustc (rustup), cmake, a C compiler, and libclang-dev (the plugin's
# `cyclors` crate builds Cyclone DDS from C and runs bindgen). Runs at nice 19.
# Source of the recipe: ../shared/design/anchors.md §4.6 (zenohd loads the plugin only
# when both were built by the same rustc and the same zenoh version).
set -euo pipefail

ZENOH_VERSION="1.10.2"
PLUGIN_VERSION="1.10.2"
DIR="${PICOBRIDGE_ANCHORS:-${XDG_CACHE_HOME:-$HOME/.cache}/picobridge/anchors}"

if [ "${1:-}" = "--print" ]; then
	echo "$DIR"
	exit 0
fi
case "$DIR" in
"$(cd "$(dirname "$0")/.." && pwd)"*)
	echo "anchors: $DIR is inside the repository; pick a folder outside it (PICOBRIDGE_ANCHORS)" >&2
	exit 2
	;;
esac
command -v cargo >/dev/null || { echo "anchors: cargo not found (install rustup: https://rustup.rs)" >&2; exit 2; }

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
missing=()
for p in libclang-dev cmake g++; do
	dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	echo "anchors: apt-get install ${missing[*]}" >&2
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

mkdir -p "$DIR/bin" "$DIR/lib" "$DIR/build"
start=$(date +%s)
log() { echo "anchors: $* ($(($(date +%s) - start)) s)" >&2; }

if "$DIR/bin/zenohd" --version 2>/dev/null | grep -q "v$ZENOH_VERSION"; then
	log "zenohd $ZENOH_VERSION present"
else
	log "cargo install zenohd $ZENOH_VERSION"
	nice -n 19 cargo install zenohd --version "$ZENOH_VERSION" --locked --root "$DIR" >&2
	log "zenohd built"
fi

so="$DIR/lib/libzenoh_plugin_ros2dds.so"
stamp="$DIR/lib/ros2dds.version"
if [ -f "$so" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$PLUGIN_VERSION $(rustc --version)" ]; then
	log "zenoh-plugin-ros2dds $PLUGIN_VERSION present"
else
	# zenoh-plugin-ros2dds is a library crate (cdylib): `cargo install` cannot build it. Fetch
	# it through a throwaway crate and build the unpacked source.
	fetch="$DIR/build/fetch"
	mkdir -p "$fetch/src"
	cat >"$fetch/Cargo.toml" <<EOF
[package]
name = "picobridge-anchor-fetch"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
zenoh-plugin-ros2dds = "=$PLUGIN_VERSION"
EOF
	echo "" >"$fetch/src/lib.rs"
	log "cargo fetch zenoh-plugin-ros2dds $PLUGIN_VERSION"
	(cd "$fetch" && cargo fetch -q >&2)
	src=$(find "${CARGO_HOME:-$HOME/.cargo}/registry/src" -maxdepth 2 -type d -name "zenoh-plugin-ros2dds-$PLUGIN_VERSION" | head -1)
	[ -n "$src" ] || { echo "anchors: zenoh-plugin-ros2dds-$PLUGIN_VERSION not found in the cargo registry after fetch" >&2; exit 1; }
	rm -rf "$DIR/build/ros2dds"
	cp -r "$src" "$DIR/build/ros2dds"
	log "cargo build --release zenoh-plugin-ros2dds (builds Cyclone DDS through cyclors)"
	(cd "$DIR/build/ros2dds" && nice -n 19 cargo build --release -q >&2)
	cp "$DIR/build/ros2dds/target/release/libzenoh_plugin_ros2dds.so" "$so"
	echo "$PLUGIN_VERSION $(rustc --version)" >"$stamp"
	log "plugin built"
fi
"$DIR/bin/zenohd" --version >&2
echo "$DIR"

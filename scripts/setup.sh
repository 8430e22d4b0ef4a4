#!/usr/bin/env bash
# Installs everything picobridge's build, tests and demo need on a fresh Debian 12 machine.
# Idempotent: a second run only checks. Runs as root (CI and the dev machines are root).
set -euo pipefail
cd "$(dirname "$0")/.."

# mosquitto: the MQTT broker of picoeval's middleware comparison (the runner starts its own
# instance with a generated config on a free loopback port; the packaged service is not used).
# Pinned versions. eclipse-zenoh is the real Rust Zenoh, used by the interop tests.
ZENOH_PY_VERSION="1.10.2"
STATICCHECK_VERSION="v0.8.2"
APT_PACKAGES=(cyclonedds-dev libfastrtps-dev g++ cmake pkg-config sqlite3 mosquitto)

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${APT_PACKAGES[@]}"; do
	dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	echo "setup: apt-get install ${missing[*]}"
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

PY="${PYTHON:-python3}"
if ! "$PY" -c "import zenoh, importlib.metadata as m; assert m.version('eclipse-zenoh') == '$ZENOH_PY_VERSION'" 2>/dev/null; then
	echo "setup: pip install eclipse-zenoh==$ZENOH_PY_VERSION"
	"$PY" -m pip install -q "eclipse-zenoh==$ZENOH_PY_VERSION"
fi

go mod download
if ! command -v staticcheck >/dev/null 2>&1 && [ ! -x "$(go env GOPATH)/bin/staticcheck" ]; then
	echo "setup: go install staticcheck@$STATICCHECK_VERSION"
	go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"
fi
echo "setup: ok"

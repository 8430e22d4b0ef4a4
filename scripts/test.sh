#!/usr/bin/env bash
# The test command of the README: installs what the tests need, then runs vet, staticcheck,
# the unit and interop tests under the race detector, every fuzz target briefly and every
# benchmark once. Environment:
#   FUZZTIME            per fuzz target (default 5s)
#   ZENOH_PICO_EXAMPLES folder of built zenoh-pico examples (optional; tests say SKIP without it)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PATH="$(go env GOPATH)/bin:$PATH"
TAGS="cyclonedds"
FUZZTIME="${FUZZTIME:-5s}"

echo "== go vet"
go vet -tags "$TAGS" ./...
echo "== staticcheck"
staticcheck -tags "$TAGS" ./...

echo "== fuzz (each target ${FUZZTIME})"
for pkg in $(go list ./...); do
	for target in $(go test -tags "$TAGS" -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true); do
		echo "-- $pkg $target"
		go test -tags "$TAGS" -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "$pkg" >/tmp/picobridge-fuzz.log 2>&1 || {
			cat /tmp/picobridge-fuzz.log; exit 1; }
	done
done

echo "== benchmarks (once each)"
go test -tags "$TAGS" -run '^$' -bench . -benchtime 1x ./... >/tmp/picobridge-bench.log 2>&1 || {
	cat /tmp/picobridge-bench.log; exit 1; }

echo "== tests (race detector)"
go test -tags "$TAGS" -race -shuffle on -count 1 -timeout 30m ./...

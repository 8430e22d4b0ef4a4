#!/usr/bin/env bash
# The test command of the README: installs what the tests need, then runs vet, staticcheck,
# every fuzz target briefly, every benchmark once, and the unit, interop and end-to-end tests
# under the race detector. Environment:
#   FUZZTIME            per fuzz target: an iteration count such as 1000x (default), or a
#                       duration such as 30s for local runs (Go 1.26's fuzz coordinator can
#                       fail short duration-bound runs with "context deadline exceeded" on a
#                       loaded machine, golang/go#75804, so CI uses a count)
#   ZENOH_PICO_EXAMPLES, ZENOH_PICO_EXAMPLES_2048, ZENOH_PICO_DIR
#                       folders of built zenoh-pico examples / a zenoh-pico build; optional:
#                       without them those tests print a SKIP line naming the variable
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
GOBIN_DIR="$(go env GOPATH)/bin"
export PATH="$GOBIN_DIR:$PATH"
TAGS="cyclonedds"
FUZZTIME="${FUZZTIME:-1000x}"
LOGDIR="$(mktemp -d -t picobridge-test.XXXXXX)"

echo "== go vet"
go vet -tags "$TAGS" ./...
echo "== staticcheck"
staticcheck -tags "$TAGS" ./...

echo "== cross-build: the Zenoh-only picobridge for linux/arm64, CGO off"
CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -o "$LOGDIR/picobridge-linux-arm64" ./cmd/picobridge
file "$LOGDIR/picobridge-linux-arm64" 2>/dev/null || true

echo "== fuzz (each target ${FUZZTIME})"
for pkg in $(go list ./...); do
	for target in $(go test -tags "$TAGS" -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true); do
		echo "-- $pkg $target"
		go test -tags "$TAGS" -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "$pkg" >"$LOGDIR/fuzz.log" 2>&1 || {
			cat "$LOGDIR/fuzz.log"; exit 1; }
	done
done

echo "== benchmarks (once each)"
go test -tags "$TAGS" -run '^$' -bench . -benchtime 1x ./... >"$LOGDIR/bench.log" 2>&1 || {
	cat "$LOGDIR/bench.log"; exit 1; }

# Allocation tests skip under -race (its sync.Pool drops pooled objects at random): run them
# here without it, so CI still holds the forward path at 0 allocations.
echo "== allocation tests (no race detector)"
go test -tags "$TAGS" -count 1 -run 'Allocs' ./zenohpath/... >"$LOGDIR/allocs.log" 2>&1 || {
	cat "$LOGDIR/allocs.log"; exit 1; }

echo "== tests (race detector; full log: $LOGDIR/test.log)"
# Build every race-instrumented test binary in parallel first, then run the packages one at a
# time (-p 1): many tests start real routers, Python Zenoh peers and DDS participants, and two
# such packages at once on a 2-core CI machine starve each other (load 12 per CPU measured:
# express samples replaced, Rust routers shedding, fan-outs late). The sum of the packages'
# times on a quiet host is about 8 minutes, so running them in turn costs little.
go test -tags "$TAGS" -race -count 1 -run '^$' ./... >"$LOGDIR/build.log" 2>&1 || {
	cat "$LOGDIR/build.log"; exit 1; }
set +e
go test -tags "$TAGS" -race -shuffle on -count 1 -p 1 -timeout 30m -v ./... >"$LOGDIR/test.log" 2>&1
rc=$?
set -e
# Package results, then every skipped test with its reason: the last line the test logged
# before its "--- SKIP" (e.g. e2e_test.go:485: SKIP: set ZENOH_PICO_EXAMPLES ...), whatever
# the file is called and whether or not the message starts with SKIP; then failures.
grep -E '^(ok|FAIL|\?) ' "$LOGDIR/test.log" || true
echo "== skipped tests and why"
awk '
/^[ \t]*=== (RUN|CONT|NAME|PAUSE) / { cur = $3; next }
/^[ \t]*--- SKIP: / { n = $3; skipped[++count] = n ": " ((n in msg) ? msg[n] : "(no reason logged)"); next }
/^[ \t]+[^ \t]+\.go:[0-9]+: / { line = $0; sub(/^[ \t]+/, "", line); msg[cur] = line; next }
/^(ok|FAIL|\?)[ \t]+[^ \t]+/ { for (i = 1; i <= count; i++) print "  " $2 " " skipped[i]; count = 0; split("", msg); next }
' "$LOGDIR/test.log"
if [ "$rc" -ne 0 ]; then
	echo "== failures"
	grep -n -A40 -E '^\s*--- FAIL' "$LOGDIR/test.log" | head -400
	grep -n -B2 -A30 -E '^panic:|^fatal error:' "$LOGDIR/test.log" | head -200 || true
	echo "FAIL"
	exit "$rc"
fi
npass=$(grep -cE '^\s*--- PASS' "$LOGDIR/test.log" || true)
nfail=$(grep -cE '^\s*--- FAIL' "$LOGDIR/test.log" || true)
nskip=$(grep -cE '^\s*--- SKIP' "$LOGDIR/test.log" || true)
echo "tests: $npass passed, $nfail failed, $nskip skipped"

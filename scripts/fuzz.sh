#!/usr/bin/env bash
# A fuzz campaign: runs every Go fuzz target (FuzzXxx) of the packages named for a fixed time
# each, keeps the corpus it grows in a folder outside the checkout so the next run starts from
# it, prints a table of executions per target, and on a crasher leaves the failing input in the
# package's testdata/fuzz/<Target>/ (where `go test` replays it as a regression seed once
# committed), copies it to the log folder and exits 1. docs/testing.md describes the workflow.
#
#   FUZZTIME=10m scripts/fuzz.sh [pkg-pattern ...]      # default pattern ./...
#
# Environment:
#   FUZZTIME     per target: a duration (10m, 30s; default 1m) or an execution count (100000x)
#   FUZZTARGETS  regular expression the target names must match (default: every FuzzXxx)
#   FUZZPARALLEL fuzzing worker processes per target, -test.parallel (default 1)
#   FUZZJOBS     targets fuzzed at the same time (default 1)
#   FUZZCACHE    corpus folder (default ${XDG_CACHE_HOME:-~/.cache}/picobridge-fuzz); the
#                generated corpus of package P, target T is in $FUZZCACHE/P/T; independent
#                of GOCACHE, so `go clean -cache` does not lose it
#   FUZZOUT      folder for logs, the results table and copies of crashers (default: a new
#                temporary folder, printed)
#   FUZZTAGS     build tags for the test binaries (default none; e.g. cyclonedds)
#   FUZZRETRIES  runs per target when Go's coordinator stops early without a crasher (default 2)
#
# Go 1.26's fuzz coordinator can end a duration-bound run with "context deadline exceeded" and
# no failing input (golang/go#75804, fixed in Go 1.27): a shutdown race at the deadline, not a
# finding. The script counts such a run as complete when it reached the deadline (status
# "ok-75804") and runs the target again when it stopped early; it never reports it as a crasher.
# Exit status: 0 when no target found anything, 1 on a crasher or a target that failed to run,
# 2 on a usage or build error.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"

FUZZTIME="${FUZZTIME:-1m}"
FUZZTARGETS="${FUZZTARGETS:-^Fuzz}"
FUZZPARALLEL="${FUZZPARALLEL:-1}"
FUZZJOBS="${FUZZJOBS:-1}"
FUZZCACHE="${FUZZCACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/picobridge-fuzz}"
FUZZTAGS="${FUZZTAGS:-}"
FUZZRETRIES="${FUZZRETRIES:-2}"
if [ -z "${FUZZOUT:-}" ]; then FUZZOUT="$(mktemp -d -t picobridge-fuzz.XXXXXX)"; fi
mkdir -p "$FUZZCACHE" "$FUZZOUT/bin" "$FUZZOUT/logs" "$FUZZOUT/crashers"
FUZZCACHE="$(cd "$FUZZCACHE" && pwd)"
FUZZOUT="$(cd "$FUZZOUT" && pwd)"

case "$FUZZPARALLEL$FUZZJOBS$FUZZRETRIES" in *[!0-9]*)
	echo "fuzz.sh: FUZZPARALLEL, FUZZJOBS and FUZZRETRIES take whole numbers" >&2; exit 2 ;;
esac
if [ "$FUZZJOBS" -lt 1 ] || [ "$FUZZRETRIES" -lt 1 ]; then
	echo "fuzz.sh: FUZZJOBS and FUZZRETRIES must be at least 1" >&2; exit 2
fi

# dur_seconds D: whole seconds of a Go duration such as 10m, 1h30m, 9m54s or 57s (the forms of
# FUZZTIME and of the fuzz output's "elapsed:"); empty when D is not one.
dur_seconds() {
	local rest="$1" n=0 f
	while [[ "$rest" =~ ^([0-9]+)(h|m|s)(.*)$ ]]; do
		case "${BASH_REMATCH[2]}" in h) f=3600 ;; m) f=60 ;; s) f=1 ;; esac
		n=$((n + BASH_REMATCH[1] * f)); rest="${BASH_REMATCH[3]}"
	done
	[ -z "$rest" ] && [ "$1" != "" ] && echo "$n"
}

# The deadline in whole seconds for the go#75804 check; empty for a count (NNNx).
deadline_s=""
case "$FUZZTIME" in
*x) [[ "$FUZZTIME" =~ ^[0-9]+x$ ]] || { echo "fuzz.sh: FUZZTIME=$FUZZTIME: want a count such as 100000x" >&2; exit 2; } ;;
*)
	deadline_s="$(dur_seconds "$FUZZTIME" || true)"
	if [ -z "$deadline_s" ] || [ "$deadline_s" -eq 0 ]; then
		echo "fuzz.sh: FUZZTIME=$FUZZTIME: want a duration such as 10m, 1h30m, 45s or a count such as 100000x" >&2; exit 2
	fi ;;
esac

[ "$#" -gt 0 ] || set -- ./...
tagflag=()
[ -z "$FUZZTAGS" ] || tagflag=(-tags "$FUZZTAGS")

RESULTS="$FUZZOUT/results.tsv"
: >"$RESULTS"

# fuzz_one PKG DIR BIN TARGET: fuzzes one target (with retries on go#75804) and appends
# "pkg target status execs elapsed_s new_interesting corpus_total note" to $RESULTS.
fuzz_one() {
	local pkg="$1" dir="$2" bin="$3" target="$4"
	local log="$FUZZOUT/logs/${pkg//\//_}.$target.log"
	local attempt=0 status execs elapsed newi total note last rc sum_execs=0 sum_elapsed=0
	: >"$log"
	while :; do
		attempt=$((attempt + 1))
		echo "=== $pkg $target attempt $attempt ($(date -u +%H:%M:%S))" >>"$log"
		set +e
		(cd "$dir" && "$bin" -test.run '^$' -test.fuzz "^${target}\$" -test.fuzztime "$FUZZTIME" \
			-test.parallel "$FUZZPARALLEL" -test.fuzzcachedir "$FUZZCACHE/$pkg") >>"$log.run" 2>&1
		rc=$?
		set -e
		cat "$log.run" >>"$log"
		# fuzz: elapsed: 9m57s, execs: 12345678 (20000/sec), new interesting: 12 (total: 345)
		last="$(grep -E '^fuzz: elapsed: [0-9hms]+, execs: ' "$log.run" | tail -n 1 || true)"
		execs="$(sed -nE 's/.*execs: ([0-9]+).*/\1/p' <<<"$last")"
		elapsed="$(dur_seconds "$(sed -nE 's/^fuzz: elapsed: ([0-9hms]+),.*/\1/p' <<<"$last")" || true)"
		sum_execs=$((sum_execs + ${execs:-0})) sum_elapsed=$((sum_elapsed + ${elapsed:-0}))
		newi="$(sed -nE 's/.*new interesting: ([0-9]+).*/\1/p' <<<"$last")"
		total="$(sed -nE 's/.*\(total: ([0-9]+)\).*/\1/p' <<<"$last")"
		note=""
		if [ "$rc" -eq 0 ]; then
			status=ok
		elif grep -q 'Failing input written to' "$log.run"; then
			status=CRASHER
			local rel
			rel="$(sed -nE 's/.*Failing input written to (testdata\/fuzz\/[^ ]+).*/\1/p' "$log.run" | tail -n 1)"
			if [ -n "$rel" ] && [ -f "$dir/$rel" ]; then
				mkdir -p "$FUZZOUT/crashers/${pkg//\//_}"
				cp "$dir/$rel" "$FUZZOUT/crashers/${pkg//\//_}/"
				note="${dir#"$ROOT"/}/$rel"
			fi
		elif grep -q 'context deadline exceeded' "$log.run"; then
			if [ -n "$deadline_s" ] && [ -n "$elapsed" ] && [ "$elapsed" -ge $((deadline_s * 9 / 10)) ]; then
				status=ok-75804
			elif [ "$attempt" -lt "$FUZZRETRIES" ]; then
				rm -f "$log.run"; continue
			else
				status=stopped-75804
				note="stopped early at ${elapsed:-0}s without a crasher after $attempt runs"
			fi
		else
			status=FAIL
			note="exit $rc, see $log"
		fi
		rm -f "$log.run"
		break
	done
	# Executions and seconds add up over the runs of a target (a rerun after go#75804).
	[ "$attempt" -eq 1 ] || note="${note:+$note; }$attempt runs"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$pkg" "$target" "$status" "$sum_execs" \
		"$sum_elapsed" "${newi:-0}" "${total:-0}" "$note" >>"$RESULTS"
	echo "fuzz.sh: $pkg $target: $status, $sum_execs execs in ${sum_elapsed}s${note:+ ($note)}"
}

MODULE="$(go list -m)"
echo "fuzz.sh: FUZZTIME=$FUZZTIME FUZZPARALLEL=$FUZZPARALLEL FUZZJOBS=$FUZZJOBS"
echo "fuzz.sh: corpus $FUZZCACHE, logs $FUZZOUT"
# Build one instrumented test binary per package with fuzz targets (-fuzz at build time makes
# cmd/go instrument it for coverage guidance), then schedule the targets FUZZJOBS at a time.
build_failed=0
jobs_pkg=() jobs_dir=() jobs_bin=() jobs_target=()
mapfile -t pkglines < <(go list "${tagflag[@]}" -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{.Dir}}{{end}}' "$@")
for line in "${pkglines[@]}"; do
	[ -n "$line" ] || continue
	pkg="${line%% *}" dir="${line#* }"
	short="${pkg#"$MODULE"/}"
	targets="$(go test "${tagflag[@]}" -list "$FUZZTARGETS" "$pkg" 2>/dev/null | grep -E '^Fuzz' || true)"
	[ -n "$targets" ] || continue
	bin="$FUZZOUT/bin/${short//\//_}.test"
	if ! go test "${tagflag[@]}" -c -fuzz . -o "$bin" "$pkg" >"$FUZZOUT/logs/${short//\//_}.build.log" 2>&1; then
		cat "$FUZZOUT/logs/${short//\//_}.build.log" >&2
		build_failed=1
		continue
	fi
	for target in $targets; do
		jobs_pkg+=("$short") jobs_dir+=("$dir") jobs_bin+=("$bin") jobs_target+=("$target")
	done
done
echo "fuzz.sh: ${#jobs_target[@]} targets"
running=0
for i in "${!jobs_target[@]}"; do
	if [ "$running" -ge "$FUZZJOBS" ]; then wait -n || true; running=$((running - 1)); fi
	fuzz_one "${jobs_pkg[$i]}" "${jobs_dir[$i]}" "${jobs_bin[$i]}" "${jobs_target[$i]}" &
	running=$((running + 1))
done
wait

echo
awk -F'\t' '
BEGIN { printf "%-40s %-26s %-14s %14s %9s %8s\n", "package", "target", "status", "execs", "seconds", "corpus" }
{ printf "%-40s %-26s %-14s %14s %9s %8s%s\n", $1, $2, $3, $4, $5, $7, ($8 != "" ? "  " $8 : "") }
' "$RESULTS" | tee "$FUZZOUT/table.txt"

if [ "$build_failed" -ne 0 ]; then echo "fuzz.sh: a test binary did not build" >&2; exit 2; fi
if grep -qE $'\t(CRASHER|FAIL|stopped-75804)\t' "$RESULTS"; then
	if grep -q $'\tCRASHER\t' "$RESULTS"; then
		echo
		echo "fuzz.sh: crashers (copies in $FUZZOUT/crashers); reproduce, fix, then commit each as a regression seed:"
		awk -F'\t' '$3 == "CRASHER" { print "  go test -run \x27^" $2 "$\x27 ./" $1 "    # git add " $8 }' "$RESULTS"
	fi
	exit 1
fi
exit 0

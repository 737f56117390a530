#!/usr/bin/env bash
# fuzz.sh: runs every fuzz target of the module for a given time each and
# prints a table: target, seconds run, executions per minute, new corpus
# entries, new crashers. A crasher is kept by go test in the package's
# testdata/fuzz/TARGET/ (commit it with its fix).
#
# The figure is go test's own count (the last "execs: N" line) over the
# time it reports; inputs being minimized are not counted by go test.
#
# Usage: bench/fuzz.sh [-t TIME] [-p PARALLEL] [-m MINTIME] [-r REGEXP] [-l DIR]
#   -t  time per target, as for -fuzztime (default 5m)
#   -p  fuzzing workers, as for -parallel (default 1)
#   -m  minimization time per input, as for -fuzzminimizetime (default:
#       go test's own, 60s)
#   -r  run only the targets whose name (pkg/x.FuzzY) matches REGEXP
#   -l  keep each target's go test output in DIR (default: dropped)
# Exit status: 0 no crasher, 1 a crasher or a failed run, 2 bad usage.
set -euo pipefail

prog=${0##*/}
usage() {
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
}

time_per=5m parallel=1 mintime= only=. keep=
while getopts t:p:m:r:l:h opt; do
	case $opt in
	t) time_per=$OPTARG ;;
	p) parallel=$OPTARG ;;
	m) mintime=$OPTARG ;;
	r) only=$OPTARG ;;
	l) keep=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[[ $# -eq 0 ]] || usage
[[ $parallel =~ ^[1-9][0-9]*$ ]] || { echo "$prog: -p $parallel: not a positive number" >&2; exit 2; }

cd "$(dirname "$0")/.."
if [[ -n $keep ]]; then
	mkdir -p "$keep"
	logs=$(cd "$keep" && pwd)
else
	logs=$(mktemp -d)
	trap 'rm -rf "$logs"' EXIT
fi

# Every "func FuzzX(" of a _test.go file under pkg/ and internal/, as
# "dir FuzzX".
targets=$(grep -rsoE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]+\(' pkg internal |
	sed -E 's#^(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]+)\($#\1 \2#' | sort)

# seconds converts a duration as go test prints it (1h2m3s, 4m0s, 5s) to
# seconds.
seconds() {
	local d=$1 n=0
	[[ $d =~ ([0-9]+)h ]] && n=$((n + BASH_REMATCH[1] * 3600))
	[[ $d =~ ([0-9]+)m ]] && n=$((n + BASH_REMATCH[1] * 60))
	[[ $d =~ ([0-9]+)s ]] && n=$((n + BASH_REMATCH[1]))
	echo "$n"
}

# count prints how many files a directory holds (0 if it does not exist).
count() {
	if [[ -d $1 ]]; then
		find "$1" -type f | wc -l
	else
		echo 0
	fi
}

status=0
printf '%-36s %7s %14s %8s %9s\n' target seconds execs/min corpus+ crashers
while read -r dir name; do
	[[ -n $dir ]] || continue
	[[ "$dir.$name" =~ $only ]] || continue
	crashdir=$dir/testdata/fuzz/$name
	before=$(count "$crashdir")
	log=$logs/${dir//\//_}.$name.log
	args=(-run '^$' -fuzz "^$name\$" -fuzztime "$time_per" -parallel "$parallel")
	[[ -z $mintime ]] || args+=(-fuzzminimizetime "$mintime")
	rc=0
	go test "${args[@]}" "./$dir/" >"$log" 2>&1 || rc=$?
	after=$(count "$crashdir")
	# The last progress line: "fuzz: elapsed: 1m30s, execs: 1234 (41/sec), new interesting: 3 (total: 9)"
	last=$(grep -E '^fuzz: elapsed: [0-9hms]+, execs: ' "$log" | tail -n 1 || true)
	secs=$(seconds "$(sed -E 's/^fuzz: elapsed: ([0-9hms]+),.*/\1/' <<<"$last")")
	execs=$(sed -E 's/.*execs: ([0-9]+) .*/\1/' <<<"$last")
	newc=$(sed -nE 's/.*new interesting: ([0-9]+) .*/\1/p' <<<"$last")
	perMin=-
	if [[ -n $last && $secs -gt 0 ]]; then
		perMin=$((execs * 60 / secs))
	fi
	crashers=$((after - before))
	note=
	if [[ $rc -ne 0 && $crashers -eq 0 ]] && grep -q '^    context deadline exceeded$' "$log" &&
		! grep -q 'Failing input written' "$log"; then
		# Go 1.26's coordinator can fail a target when -fuzztime runs
		# out (go.dev/issue/75804): no input failed.
		rc=0 note=" (deadline race, go.dev/issue/75804)"
	fi
	printf '%-36s %7s %14s %8s %9s%s\n' "$dir.$name" "${secs:--}" "$perMin" "${newc:--}" "$crashers" "$note"
	if [[ $rc -ne 0 || $crashers -gt 0 ]]; then
		status=1
		echo "--- $dir.$name failed (exit $rc); the end of its log:" >&2
		tail -n 30 "$log" >&2
	fi
done <<<"$targets"
exit $status

#!/usr/bin/env bash
# filter-stream.sh: does `gtrace filter -e raw_syscalls:sys_enter`, with
# stdout to /dev/null and the default buffer, keep up with a getppid storm
# on every CPU? Prints the events it streamed per second (over its whole
# run, start-up and drain included: a lower bound) and the events it lost, and, measured in the same run, the per-event overhead of the
# stream (every sample handed to the ring at once) next to that of
# `gtrace record` (samples batched) on the same storm.
#
# Each round runs the modes none, record and filter once, in a rotating
# order, and times a getppid loop (bench/cmd/loop) under each; the table
# reports per-mode medians over the rounds. Overhead per event is the
# loop's CPU time per call under the tracer less its cost untraced.
#
# Usage: sudo bench/filter-stream.sh [-r ROUNDS] [-n CALLS] [-t THREADS]
# Exit status: 0 nothing lost (PASS), 1 events lost or a step failed,
# 2 bad usage or not root.
set -euo pipefail

prog=${0##*/}
usage() {
	cat >&2 <<EOF
usage: $prog [-r ROUNDS] [-n CALLS] [-t THREADS]

  -r ROUNDS   rounds; each runs every mode once (default 5)
  -n CALLS    getppid calls per thread and run (default 4000000)
  -t THREADS  threads making calls (default: the number of CPUs)

Needs root. Builds gtrace and the loop with the go command on PATH.
EOF
}

rounds=5 calls=4000000 threads=$(nproc)
while getopts r:n:t:h opt; do
	case $opt in
	r) rounds=$OPTARG ;;
	n) calls=$OPTARG ;;
	t) threads=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
for v in "$rounds" "$calls" "$threads"; do
	[[ $v =~ ^[1-9][0-9]*$ ]] || { echo "$prog: not a positive number: $v" >&2; usage; exit 2; }
done
(($# == 0)) || { usage; exit 2; }
if ((EUID != 0)); then
	echo "$prog: needs root to load BPF programs (run: sudo bench/filter-stream.sh)" >&2
	exit 2
fi

repo=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM

echo "$prog: building in a temporary directory" >&2
export CGO_ENABLED=0
(
	cd "$repo"
	go build -o "$tmp/loop" ./bench/cmd/loop
	go build -o "$tmp/gtrace" .
)

# run MODE: run the getppid loop under the tracer of MODE, as the
# tracer's -- CMD (held until the programs are attached; the tracer ends
# with it, without a signal and its time limit), and print "NS WALL_NS":
# the loop's CPU time per call and the tracer's whole run's wall time.
run() {
	: >"$tmp/err"
	local loop=("$tmp/loop" -n "$calls" -threads "$threads" -clock cpu)
	local w0 w1
	w0=$(date +%s%N)
	case $1 in
	none) "${loop[@]}" >"$tmp/ns" ;;
	record) "$tmp/gtrace" record -e raw_syscalls:sys_enter -o "$tmp/trace.dat" -- sh -c 'exec "$@" >"$0"' "$tmp/ns" "${loop[@]}" >/dev/null 2>"$tmp/err" ;;
	filter) "$tmp/gtrace" filter -e raw_syscalls:sys_enter -q -- sh -c 'exec "$@" >"$0"' "$tmp/ns" "${loop[@]}" >/dev/null 2>"$tmp/err" ;;
	esac || {
		echo "$prog: $1 failed:" >&2
		cat "$tmp/err" >&2
		return 1
	}
	w1=$(date +%s%N)
	echo "$(cat "$tmp/ns") $((w1 - w0))"
}

# counts MODE: "EVENTS LOST" from the tracer's last line on stderr.
counts() {
	case $1 in
	record) sed -n 's/^.*: \([0-9]*\) events (.*), \([0-9]*\) lost$/\1 \2/p' "$tmp/err" | tail -1 ;;
	filter) sed -n 's/^gtrace: \([0-9]*\) events, \([0-9]*\) lost.*$/\1 \2/p' "$tmp/err" | tail -1 ;;
	none) echo "0 0" ;;
	esac
}

modes=(none record filter)
results=$tmp/results
: >"$results"
"$tmp/loop" -n $((calls / 10 + 1)) -threads "$threads" >/dev/null # warm up
for ((r = 0; r < rounds; r++)); do
	line="round $((r + 1))/$rounds:"
	for ((i = 0; i < ${#modes[@]}; i++)); do
		mode=${modes[(i + r) % ${#modes[@]}]}
		run "$mode" >"$tmp/run"
		read -r ns wall <"$tmp/run"
		read -r events lost <<<"$(counts "$mode")"
		echo "$mode $ns $wall ${events:-0} ${lost:-0}" >>"$results"
		line+=" $mode $ns ns/call ${events:-0} events ${lost:-0} lost;"
		rm -f "$tmp/trace.dat"
	done
	echo "$line" >&2
done

echo "gtrace $(git -C "$repo" describe --always --dirty 2>/dev/null || echo unknown), Linux $(uname -r), $(nproc) CPUs;" \
	"$rounds rounds x $threads threads x $calls getppid calls; default buffer; filter's stdout to /dev/null."
echo
awk '
{ n[$1]++; k = n[$1]; cpu[$1, k] = $2; wall[$1, k] = $3; ev[$1, k] = $4; lost[$1, k] = $5; lostsum[$1] += $5
  if ($3 > 0) rate[$1, k] = $4 / ($3 / 1e9) }
function median(arr, m,    a, i, j, t, c) {
	c = n[m]
	for (i = 1; i <= c; i++) a[i] = arr[m, i]
	for (i = 2; i <= c; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	return c % 2 ? a[(c + 1) / 2] : (a[c / 2] + a[c / 2 + 1]) / 2
}
END {
	base = median(cpu, "none")
	print "| mode | cpu ns/call | overhead ns/event | events/s (whole run) | events lost (all rounds) |"
	print "|---|---:|---:|---:|---:|"
	printf "| none | %.1f | 0 | - | - |\n", base
	split("record filter", ms, " ")
	for (i = 1; i <= 2; i++) {
		m = ms[i]
		over[m] = median(cpu, m) - base
		printf "| %s | %.1f | %.1f | %.0f | %d |\n", m, median(cpu, m), over[m], median(rate, m), lostsum[m]
	}
	if (over["record"] > 0) printf "\nfilter / record overhead per event: %.2fx\n", over["filter"] / over["record"]
	printf "%s\n", lostsum["filter"] == 0 ? "PASS: gtrace filter lost no event" : "FAIL: gtrace filter lost events"
	exit lostsum["filter"] != 0
}' "$results"

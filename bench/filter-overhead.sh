#!/usr/bin/env bash
# filter-overhead.sh: the per-event cost of gtrace's filters that reject
# every event, against an empty BPF program on the same attach point,
# raw_syscalls:sys_enter's classic tracepoint, measured in one run.
#
# It runs BenchmarkPrivilegedFilterOverhead (pkg/bpfgen), which loads,
# one at a time on this attach point:
#   empty        a program that returns 0
#   record-pid   gtrace's record program, filter common_pid == 0
#                (rejects every system call, reads no field)
#   record-id    the record program, filter id == 99999 (reads a field)
#   record-glob  the record program, filter comm ~ "*zz*"
#   hist-id      gtrace's hist program (key common_pid), id == 99999
#   hist-glob    the hist program, comm ~ "*zz*"
#   traceoff-if  record-pid's program with a trigger
#                "traceoff if id == 99999" that never fires (issue 18)
#   hist-stack   the hist program keyed on common_stacktrace, no filter:
#                a bpf_get_stackid per event (issue 18)
# Each round runs a getppid loop on one thread under every variant, the
# order rotating from round to round, each paired with an untraced run
# right before it: a variant's overhead in a round is the difference of
# the thread's CPU time per call between the two. The table gives the
# medians over the rounds, the ratio (variant - none) / (empty - none),
# and each program's own run time per event from the kernel's BPF
# statistics (taken in a shorter run of their own: they cost two clock
# reads per event), with the ratio they give: (empty's overhead + the
# variant's run time - empty's) / empty's overhead. The attach point
# costs every variant the same, so the two ratios measure the same
# thing; on a busy machine the paired CPU times move by tens of ns from
# run to run, the run times by a few.
#
# It then runs BenchmarkPrivilegedStackSymbolize (pkg/hist) and prints
# how many unique kernel stacks of 12 frames a hist's output symbolizes
# per second through /proc/kallsyms.
#
# Target (PASS/FAIL): the reject-all filters (record-pid, record-id) at
# most 1.3x the empty program's overhead, by the run-time ratio (the
# paired ratio is printed beside it). See docs/performance.md.
#
# Usage: sudo bench/filter-overhead.sh [-r ROUNDS]
# Exit status: 0 target met, 1 missed or a step failed, 2 bad usage or
# not root.
set -euo pipefail

prog=${0##*/}
usage() {
	echo "usage: $prog [-r ROUNDS]   (default 15 rounds)" >&2
}
rounds=15
while getopts r:h opt; do
	case $opt in
	r) rounds=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
(($# == 0)) || { usage; exit 2; }
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "$prog: not a positive number: $rounds" >&2; exit 2; }
if ((EUID != 0)); then
	echo "$prog: needs root to load BPF programs (run: sudo bench/filter-overhead.sh)" >&2
	exit 2
fi
if ! command -v go >/dev/null; then
	echo "$prog: no go command on PATH (sudo may reset PATH: sudo env PATH=\"\$PATH\" bench/filter-overhead.sh)" >&2
	exit 1
fi

repo=$(cd "$(dirname "$0")/.." && pwd)
out=$(cd "$repo" && GTRACE_REQUIRE_BPF=1 go test -count=1 -run '^$' \
	-bench '^BenchmarkPrivilegedFilterOverhead$' -benchtime "${rounds}x" ./pkg/bpfgen/ 2>&1) || {
	echo "$out" >&2
	echo "$prog: the benchmark failed" >&2
	exit 1
}
line=$(grep '^BenchmarkPrivilegedFilterOverhead' <<<"$out") || {
	echo "$out" >&2
	echo "$prog: no benchmark line in go test's output" >&2
	exit 1
}

# metric UNIT [LINE]: the value go test printed before UNIT on LINE (the
# overhead benchmark's line when not given).
metric() {
	awk -v unit="$1" '{ for (i = 2; i <= NF; i++) if ($i == unit) { print $(i - 1); exit } }' <<<"${2:-$line}"
}

echo "raw_syscalls:sys_enter, classic tracepoint; $rounds rounds; untraced getppid: $(metric none-ns/call) ns/call"
echo
echo "| variant | overhead ns/event | ratio to empty (paired) | program ns/event | ratio to empty (run time) |"
echo "|---|---:|---:|---:|---:|"
for v in empty record-pid record-id record-glob hist-id hist-glob traceoff-if hist-stack; do
	paired=1 byprog=1
	if [[ $v != empty ]]; then
		paired=$(metric "$v/empty")
		byprog=$(metric "$v/empty-by-prog")
	fi
	printf '| %s | %s | %s | %s | %s |\n' "$v" "$(metric "$v-ns/event")" "$paired" "$(metric "$v-prog-ns/event")" "$byprog"
done
echo
sym=$(cd "$repo" && GTRACE_REQUIRE_BPF=1 go test -count=1 -run '^$' \
	-bench '^BenchmarkPrivilegedStackSymbolize$' ./pkg/hist/ 2>&1) || {
	echo "$sym" >&2
	echo "$prog: the symbolization benchmark failed" >&2
	exit 1
}
symline=$(grep '^BenchmarkPrivilegedStackSymbolize' <<<"$sym") || {
	echo "$sym" >&2
	echo "$prog: no symbolization line in go test's output" >&2
	exit 1
}
echo "stack symbolization: $(metric stacks/s "$symline") unique stacks/s ($(metric text-syms "$symline") text symbols, kallsyms parsed in $(metric kallsyms-parse-ms "$symline") ms)"
echo
status=0
for v in record-pid record-id; do
	r=$(metric "$v/empty-by-prog")
	if awk -v r="$r" 'BEGIN { exit !(r <= 1.3) }'; then
		echo "$v <= 1.3x empty: $r: PASS"
	else
		echo "$v <= 1.3x empty: $r: FAIL"
		status=1
	fi
done
exit $status

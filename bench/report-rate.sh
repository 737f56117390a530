#!/usr/bin/env bash
# report-rate.sh: how fast gtrace reads trace.dat files, as ratios, in one
# run: `gtrace report` against `trace-cmd report` on the same file (events
# per second, output to /dev/null), and the offline hist
# `gtrace hist -i FILE -e raw_syscalls:sys_enter -k common_pid,id`.
#
# The file is recorded first with gtrace record (raw_syscalls:sys_enter and
# sys_exit under a getppid loop, plus sched:sched_switch), then converted
# by trace-cmd into its default form (v7, zstd) so both tools read both
# forms: the uncompressed v7 gtrace writes and trace-cmd's zstd.
#
# Usage: sudo bench/report-rate.sh [-r ROUNDS] [-n CALLS]
# Exit status: 0 all targets met (report >= 5x trace-cmd, offline hist >=
# 20 M events/s on the uncompressed file), 1 a target missed, 2 bad usage.
set -euo pipefail

rounds=3
calls=2000000
while getopts "r:n:h" opt; do
	case $opt in
	r) rounds=$OPTARG ;;
	n) calls=$OPTARG ;;
	*)
		echo "usage: ${0##*/} [-r ROUNDS] [-n CALLS]" >&2
		exit 2
		;;
	esac
done
if [ "$(id -u)" != 0 ]; then
	echo "${0##*/}: needs root (it records with BPF)" >&2
	exit 2
fi
command -v trace-cmd >/dev/null || {
	echo "${0##*/}: needs trace-cmd (apt-get install trace-cmd)" >&2
	exit 2
}

root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$root" && go build -o "$tmp/gtrace" . && go build -o "$tmp/loop" ./bench/cmd/loop)

# Record a file: two threads of getppid calls.
"$tmp/gtrace" record -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit -e sched:sched_switch \
	-o "$tmp/none.dat" -- "$tmp/loop" -n "$calls" -threads 2 >/dev/null 2>"$tmp/record.err"
trace-cmd convert -i "$tmp/none.dat" -o "$tmp/zstd.dat" --compression zstd >/dev/null 2>&1
events=$("$tmp/gtrace" report -i "$tmp/none.dat" | tail -n +2 | wc -l)
hist_events=$("$tmp/gtrace" hist -i "$tmp/none.dat" -e raw_syscalls:sys_enter -k common_pid | awk '/Hits:/ {print $2}')

# nanos CMD...: the best wall time of $rounds runs, in ns, using date.
nanos() {
	local best="" s e t
	for _ in $(seq "$rounds"); do
		s=$(date +%s%N)
		"$@" >/dev/null 2>&1
		e=$(date +%s%N)
		t=$((e - s))
		if [ -z "$best" ] || [ "$t" -lt "$best" ]; then best=$t; fi
	done
	echo "$best"
}

status=0
echo "| file | events | trace-cmd report | gtrace report | ratio | gtrace hist -i | hist events/s |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for f in none zstd; do
	tc=$(nanos trace-cmd report -i "$tmp/$f.dat")
	gr=$(nanos "$tmp/gtrace" report -i "$tmp/$f.dat")
	gh=$(nanos "$tmp/gtrace" hist -i "$tmp/$f.dat" -e raw_syscalls:sys_enter -k common_pid,id)
	awk -v f="$f" -v ev="$events" -v hev="$hist_events" -v tc="$tc" -v gr="$gr" -v gh="$gh" 'BEGIN {
		printf "| %s | %d | %.2f M/s | %.2f M/s | %.1fx | %.3f s | %.1f M/s |\n",
			f, ev, ev/tc*1e3, ev/gr*1e3, tc/gr, gh/1e9, ev/gh*1e3
	}'
	if ! awk -v tc="$tc" -v gr="$gr" 'BEGIN{exit !(tc/gr >= 5)}'; then status=1; fi
	if [ "$f" = none ] && ! awk -v ev="$events" -v gh="$gh" 'BEGIN{exit !(ev/gh*1e3 >= 20)}'; then status=1; fi
done
echo
echo "Targets: gtrace report >= 5x trace-cmd report; offline hist >= 20 M events/s (uncompressed file)."
echo "Rates are events in the file over the best wall time of $rounds runs, process start-up included."
echo "hist -i reads every record of the file and aggregates the $hist_events sys_enter events."
exit $status

#!/usr/bin/env bash
# record-startup.sh: how long a recording of many events takes to start
# and stop, beyond the time it records: `gtrace record -e SET --duration
# 100ms` against `perf record -e SET -a -- sleep 0.1` and against the
# kernel's own way (trace-cmd's): writing 1 to the set's enable file in
# tracefs, 100 ms, then 0. Sets: syscalls:* (~700 events, which gtrace
# records with two programs on raw tracepoints) and sched:* (~30, a
# classic program each). Medians of the rounds, as ratios.
#
# Usage: sudo bench/record-startup.sh [-r ROUNDS]
# Exit status: 0 done, 1 a step failed, 2 bad usage or not root.
set -euo pipefail

prog=${0##*/}
rounds=3
while getopts r:h opt; do
	case $opt in
	r) rounds=$OPTARG ;;
	h)
		echo "usage: $prog [-r ROUNDS]" >&2
		exit 0
		;;
	*) exit 2 ;;
	esac
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "$prog: -r wants a positive number" >&2; exit 2; }
if ((EUID != 0)); then
	echo "$prog: needs root to load BPF programs and use tracefs (run: sudo bench/record-startup.sh)" >&2
	exit 2
fi
have_perf=true
command -v perf >/dev/null || have_perf=false

repo=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "$prog: building in a temporary directory" >&2
(cd "$repo" && CGO_ENABLED=0 go build -o "$tmp/gtrace" .)
"$tmp/gtrace" list >/dev/null # mounts tracefs if it is not
tracefs=$(awk '$3 == "tracefs" { print $2; exit }' /proc/mounts)
[[ -n $tracefs ]] || { echo "$prog: tracefs is not mounted" >&2; exit 1; }

# seconds CMD...: the wall time CMD takes, in seconds, less the 0.1 s it
# records.
seconds() {
	local t0 t1
	t0=$(date +%s%N)
	"$@" >/dev/null 2>"$tmp/err" || { echo "$prog: $* failed:" >&2; cat "$tmp/err" >&2; exit 1; }
	t1=$(date +%s%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 - 0.1 }'
}

native() {
	local enable=$tracefs/events/${1%%:*}/enable
	echo 1 >"$enable"
	sleep 0.1
	echo 0 >"$enable"
}

results=$tmp/results
: >"$results"
for ((r = 1; r <= rounds; r++)); do
	for set in 'syscalls:*' 'sched:*'; do
		line="round $r/$rounds $set:"
		g=$(seconds "$tmp/gtrace" record -e "$set" -o "$tmp/g.dat" --duration 100ms)
		n=$(seconds native "$set")
		p=-
		if $have_perf; then
			p=$(seconds perf record -e "$set" -a -o "$tmp/perf.data" -- sleep 0.1)
		fi
		echo "$set $g $n $p" >>"$results"
		echo "$line gtrace $g s, native $n s, perf $p s" >&2
	done
done

echo "gtrace $(git -C "$repo" describe --always --dirty 2>/dev/null || echo unknown), $(perf --version 2>/dev/null || echo 'no perf'), Linux $(uname -r), $(nproc) CPUs; $rounds rounds; seconds beyond the 0.1 s recorded."
echo
awk '
function median(list,    a, k, i, j, t) {
	k = split(list, a, " ")
	for (i = 2; i <= k; i++)
		for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
}
{ g[$1] = g[$1] " " $2; n[$1] = n[$1] " " $3; p[$1] = p[$1] " " $4; if (!($1 in seen)) { seen[$1] = 1; order[++k] = $1 } }
END {
	print "| events | gtrace s | tracefs enable/disable s | perf record s | gtrace / perf |"
	print "|---|---:|---:|---:|---:|"
	for (i = 1; i <= k; i++) {
		s = order[i]; mg = median(g[s]); mn = median(n[s])
		if (p[s] ~ /-/) { printf "| `%s` | %.3f | %.3f | - | - |\n", s, mg, mn; continue }
		mp = median(p[s])
		printf "| `%s` | %.3f | %.3f | %.3f | %.3f |\n", s, mg, mn, mp, (mp > 0 ? mg / mp : 0)
	}
}' "$results"

#!/usr/bin/env bash
# synth-overhead.sh: the per-event cost of the wakeup-latency pipeline of
# issue 19 (gtrace hist --synth, variables, onmatch, a synthetic event and
# its log2 hist, in BPF) on sched:sched_waking and sched:sched_switch,
# against an empty program and a plain hist on the same two tracepoints
# and against bpftrace's hand-written equivalent and libbpf-tools'
# runqlat, measured in one run.
#
# What runs on each sched_waking and sched_switch, one mode at a time:
#   empty      a program that returns 0 on each classic tracepoint
#              (bench/cmd/bpfref -tp): the cost of any program there
#   plain      gtrace hist -e sched:sched_waking -R 'hist:keys=pid'
#              -e sched:sched_switch -R 'hist:keys=next_pid'
#   pipeline   gtrace hist --synth 'wakeup_latency u64 lat; pid_t pid;
#              int prio' with the issue's three hists (ts0 saved on the
#              waking, the latency computed and wakeup_latency emitted on
#              the switch, its lat.log2 hist)
#   bpftrace   tracepoint:sched:sched_waking { @ts[args->pid] = nsecs; }
#              tracepoint:sched:sched_switch /@ts[args->next_pid]/ {
#              @lat = hist((nsecs - @ts[args->next_pid])/1000);
#              delete(@ts[args->next_pid]); }
#   runqlat    libbpf-tools' runqlat (Debian's libbpf-tools): compiled
#              CO-RE C doing the same job by hand, on sched_wakeup,
#              sched_wakeup_new and sched_switch as tp_btf programs (its
#              choice where the kernel has BTF); its first column is
#              sched_wakeup's program, one wakeup per message as
#              sched_waking's
# The workload is `perf bench sched pipe`: two processes ping-ponging
# through pipes, a waking and a switch per message.
#
# The figure is each program's own run time per event, from the kernel's
# BPF run-time statistics (kernel.bpf_stats_enabled, on while the script
# runs and set back to what it was at exit), read from the fdinfo of the
# tracer's program descriptors: run_time_ns / run_cnt, per program (the
# first is on sched_waking, the last on sched_switch: the order of
# their load; runqlat's sched_wakeup_new program, between them, is in
# the total only) and for all together. The median over the rounds is
# reported, with the ratios to empty and to bpftrace. Each round runs
# every mode once, the order rotating.
#
# A round in which gtrace dropped entries (Dropped: not 0) or a program
# missed events (recursion_misses) makes the run FAIL: its figure would
# flatter it.
#
# Targets (PASS/FAIL): the pipeline's cost per event below bpftrace's,
# and within 1.2x of runqlat's.
# See docs/performance.md.
#
# Usage: sudo bench/synth-overhead.sh [-r ROUNDS] [-l LOOPS]
# Exit status: 0 target met, 1 missed, events dropped or a step failed,
# 2 bad usage or not root.
set -euo pipefail

prog=${0##*/}
usage() {
	echo "usage: $prog [-r ROUNDS] [-l LOOPS]   (default 5 rounds of 200000 pipe messages)" >&2
}
rounds=5 loops=200000
while getopts r:l:h opt; do
	case $opt in
	r) rounds=$OPTARG ;;
	l) loops=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
(($# == 0)) || { usage; exit 2; }
[[ $rounds =~ ^[1-9][0-9]*$ && $loops =~ ^[1-9][0-9]*$ ]] || { usage; exit 2; }
if ((EUID != 0)); then
	echo "$prog: needs root to load BPF programs (run: sudo bench/synth-overhead.sh)" >&2
	exit 2
fi
for c in go perf bpftrace runqlat; do
	command -v "$c" >/dev/null || { echo "$prog: no $c command on PATH (apt-get install linux-perf bpftrace libbpf-tools)" >&2; exit 1; }
done

repo=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
stats_was=$(sysctl -n kernel.bpf_stats_enabled)
tracer=
cleanup() {
	[[ -z $tracer ]] || kill -TERM "$tracer" 2>/dev/null || true
	sysctl -q kernel.bpf_stats_enabled="$stats_was" || true
	[[ -n ${KEEP:-} ]] || rm -rf "$tmp"
}
trap cleanup EXIT
(cd "$repo" && go build -o "$tmp/gtrace" . && go build -o "$tmp/bpfref" ./bench/cmd/bpfref)
sysctl -q kernel.bpf_stats_enabled=1

modes=(empty plain pipeline bpftrace runqlat)
synth='wakeup_latency u64 lat; pid_t pid; int prio'
pipeline=(hist -q --synth "$synth"
	-e sched:sched_waking -R 'hist:keys=pid:ts0=common_timestamp.usecs'
	-e sched:sched_switch -R 'hist:keys=next_pid:wakeup_lat=common_timestamp.usecs-$ts0:onmatch(sched.sched_waking).wakeup_latency($wakeup_lat,next_pid,next_prio)'
	-e synthetic:wakeup_latency -R 'hist:keys=lat.log2:sort=lat')
plain=(hist -q -e sched:sched_waking -R 'hist:keys=pid' -e sched:sched_switch -R 'hist:keys=next_pid')
script='tracepoint:sched:sched_waking { @ts[args->pid] = nsecs; }
tracepoint:sched:sched_switch /@ts[args->next_pid]/ { @lat = hist((nsecs - @ts[args->next_pid])/1000); delete(@ts[args->next_pid]); }'

# progs: "RUN_TIME_NS RUN_CNT MISSES" of each BPF program the tracer holds,
# in the order of their ids (of their load), those that ran only.
progs() {
	local f
	for f in /proc/"$tracer"/fdinfo/*; do
		awk '/^prog_id:/ { id = $2 } /^run_time_ns:/ { t = $2 } /^run_cnt:/ { n = $2 } /^recursion_misses:/ { m = $2 }
			END { if (id != "" && n > 0) print id, t, n, m + 0 }' "$f" 2>/dev/null || true
	done | sort -n -u | awk '{ print $2, $3, $4 }'
}

# wait_progs N: wait until the tracer holds N programs (30 s at most).
wait_progs() {
	local i f n
	for ((i = 0; i < 600; i++)); do
		n=0
		for f in /proc/"$tracer"/fdinfo/*; do
			grep -qs '^prog_id:' "$f" && n=$((n + 1))
		done
		((n >= $1)) && return 0
		kill -0 "$tracer" 2>/dev/null || break
		sleep 0.05
	done
	echo "$prog: the tracer did not load its programs" >&2
	return 1
}

# run MODE ROUND: one run of MODE; appends "MODE WAKING SWITCH BOTH" (ns
# per event) to $tmp/results, fails the run on dropped or missed events.
run() {
	local out=$tmp/out.$1.$2
	case $1 in
	empty) "$tmp/bpfref" -mode empty -tp sched:sched_waking,sched:sched_switch >"$out" 2>&1 & ;;
	plain) "$tmp/gtrace" "${plain[@]}" >"$out" 2>&1 & ;;
	pipeline) "$tmp/gtrace" "${pipeline[@]}" >"$out" 2>&1 & ;;
	bpftrace) bpftrace -e "$script" >"$out" 2>&1 & ;;
	runqlat) runqlat >"$out" 2>&1 & ;;
	esac
	tracer=$!
	wait_progs 2
	sleep 0.5 # attached after loaded
	progs >"$tmp/before"
	perf bench sched pipe -l "$loops" >/dev/null
	progs >"$tmp/after"
	kill -INT "$tracer"
	wait "$tracer" || true
	tracer=
	if grep -q '^    Dropped: [1-9]' "$out"; then
		echo "$prog: $1 dropped entries in round $2" >&2
		status=1
	fi
	paste "$tmp/before" "$tmp/after" | awk -v mode="$1" '
		NF == 6 { t[NR] = $4 - $1; n[NR] = $5 - $2; miss += $6 - $3; tt += t[NR]; nn += n[NR] }
		END {
			if (miss > 0) { print "MISSED", mode, miss; exit }
			printf "%s %.1f %.1f %.1f\n", mode, t[1] / n[1], t[NR] / n[NR], tt / nn
		}' >>"$tmp/results"
	if grep -q '^MISSED' "$tmp/results"; then
		echo "$prog: $1 missed events (recursion) in round $2" >&2
		status=1
		sed -i '/^MISSED/d' "$tmp/results"
	fi
}

status=0
: >"$tmp/results"
for ((r = 0; r < rounds; r++)); do
	for ((i = 0; i < ${#modes[@]}; i++)); do
		run "${modes[(i + r) % ${#modes[@]}]}" "$r"
	done
done

# median MODE COLUMN: the median of a column of MODE's results.
median() {
	awk -v m="$1" -v c="$2" '$1 == m { print $c }' "$tmp/results" | sort -g |
		awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

echo "sched:sched_waking and sched:sched_switch, classic tracepoints; perf bench sched pipe -l $loops; $rounds rounds; medians"
echo
echo "| mode | sched_waking ns/event | sched_switch ns/event | both ns/event | ratio to empty | ratio to bpftrace | ratio to runqlat |"
echo "|---|---:|---:|---:|---:|---:|---:|"
empty=$(median empty 4)
bpft=$(median bpftrace 4)
rql=$(median runqlat 4)
# ratio A B: A/B to two places.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
for m in "${modes[@]}"; do
	both=$(median "$m" 4)
	printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$m" "$(median "$m" 2)" "$(median "$m" 3)" "$both" \
		"$(ratio "$both" "$empty")" "$(ratio "$both" "$bpft")" "$(ratio "$both" "$rql")"
done
echo
echo "(runqlat's first column is its sched_wakeup program, on tp_btf)"
echo
pipe=$(median pipeline 4)
if awk -v a="$pipe" -v b="$bpft" 'BEGIN { exit !(a < b) }' && ((status == 0)); then
	echo "pipeline below bpftrace: $pipe < $bpft ns/event: PASS"
else
	echo "pipeline below bpftrace: $pipe vs $bpft ns/event, or events dropped: FAIL"
	status=1
fi
if awk -v a="$pipe" -v b="$rql" 'BEGIN { exit !(a <= 1.2 * b) }' && ((status == 0)); then
	echo "pipeline within 1.2x of runqlat: $pipe vs $rql ns/event ($(ratio "$pipe" "$rql")x): PASS"
else
	echo "pipeline within 1.2x of runqlat: $pipe vs $rql ns/event ($(ratio "$pipe" "$rql")x), or events dropped: FAIL"
	status=1
fi
exit $status

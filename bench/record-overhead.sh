#!/usr/bin/env bash
# record-overhead.sh: the per-event cost of `gtrace record -e
# raw_syscalls:sys_enter` under a getppid storm on every CPU, as ratios to
# the kernel's own ring buffer read the way trace-cmd reads it (a splice
# consumer of per_cpu/cpuN/trace_pipe_raw, bench/cmd/recordbench) and to
# `perf record -e raw_syscalls:sys_enter -a`, measured in one run; with the
# events each tracer lost and the CPU time each tracer process used per
# event it wrote.
#
# Each round runs every mode once, in a rotating order, and times a getppid
# loop (bench/cmd/loop) under it; the tables report per-mode medians over
# the rounds. Overhead per event is the loop's cost per call under a
# tracer less its cost untraced: each call makes one sys_enter event.
#
# Usage: sudo bench/record-overhead.sh [-r ROUNDS] [-n CALLS] [-t THREADS]
#                                      [-b KB] [-c cpu|wall] [-d DIR] [-m MODES]
# Exit status: 0 all targets met, 1 a target missed or a step failed,
# 2 bad usage or not root.
set -euo pipefail

prog=${0##*/}
usage() {
	cat >&2 <<EOF
usage: $prog [-r ROUNDS] [-n CALLS] [-t THREADS] [-b KB] [-c cpu|wall] [-d DIR] [-m MODES]

Measures the per-event overhead of 'gtrace record -e raw_syscalls:sys_enter'
against the kernel's ring buffer with a splice consumer (trace-cmd's way)
and 'perf record -e raw_syscalls:sys_enter -a', the events each lost and the
CPU time of each tracer per event written, and prints markdown tables.

  -r ROUNDS   rounds; each runs every mode once (default 5)
  -n CALLS    getppid calls per thread and run (default 4000000)
  -t THREADS  threads making calls (default: the number of CPUs)
  -b KB       buffer per CPU of gtrace (-b) and of the kernel's ring buffer
              (buffer_size_kb) (default 8192, gtrace's default)
  -c CLOCK    which loop figure the targets use: cpu, the loop threads' CPU
              time per call (default), or wall, wall time per call and
              thread, which also counts the tracers' CPU use
  -d DIR      where the tracers write (default: a temporary directory)
  -m MODES    comma-separated subset of none,gtrace,native,perf
              (default: all; none is always run)

Needs root. Builds gtrace and the helpers with the go command on PATH.
Nothing else may use the top tracing instance meanwhile.
EOF
}

rounds=5 calls=4000000 threads=$(nproc) kb=8192 clock=cpu dir=
modes=none,gtrace,native,perf
while getopts r:n:t:b:c:d:m:h opt; do
	case $opt in
	r) rounds=$OPTARG ;;
	n) calls=$OPTARG ;;
	t) threads=$OPTARG ;;
	b) kb=$OPTARG ;;
	c) clock=$OPTARG ;;
	d) dir=$OPTARG ;;
	m) modes=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
for v in "$rounds" "$calls" "$threads" "$kb"; do
	[[ $v =~ ^[1-9][0-9]*$ ]] || { echo "$prog: not a positive number: $v" >&2; usage; exit 2; }
done
[[ $clock == cpu || $clock == wall ]] || { echo "$prog: -c wants cpu or wall, got $clock" >&2; exit 2; }
(($# == 0)) || { usage; exit 2; }
if ((EUID != 0)); then
	echo "$prog: needs root to load BPF programs and use tracefs (run: sudo bench/record-overhead.sh)" >&2
	exit 2
fi
for m in ${modes//,/ }; do
	[[ $m =~ ^(none|gtrace|native|perf)$ ]] || { echo "$prog: unknown mode: $m" >&2; exit 2; }
done

notes=()
run_modes=(none)
for m in gtrace native perf; do
	[[ ",$modes," == *",$m,"* ]] || continue
	if [[ $m == perf ]] && ! command -v perf >/dev/null; then
		notes+=("perf is not installed: its row and the gtrace/perf target are skipped.")
		continue
	fi
	run_modes+=("$m")
done
tick_ns=$((1000000000 / $(getconf CLK_TCK)))

repo=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
out=${dir:-$tmp}
tracer=
# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
	# SIGINT first: recordbench restores the tracefs settings it changed.
	if [[ -n $tracer ]]; then
		kill -INT "$tracer" 2>/dev/null || true
		for ((i = 0; i < 100; i++)); do
			kill -0 "$tracer" 2>/dev/null || break
			sleep 0.05
		done
		kill -KILL "$tracer" 2>/dev/null || true
		wait "$tracer" 2>/dev/null || true
	fi
	rm -rf "$tmp" "$out/gtrace.dat" "$out/perf.data" "$out/native"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

echo "$prog: building in a temporary directory" >&2
export CGO_ENABLED=0
(
	cd "$repo"
	go build -o "$tmp/loop" ./bench/cmd/loop
	go build -o "$tmp/recordbench" ./bench/cmd/recordbench
	go build -o "$tmp/gtrace" .
)

# wait_for COND: wait until the shell condition COND holds; fail if the
# tracer exits first or 30 s pass. COND is evaluated when called, so its
# callers quote it in single quotes.
wait_for() {
	local i
	for ((i = 0; i < 600; i++)); do
		eval "$1" && return 0
		kill -0 "$tracer" 2>/dev/null || break
		sleep 0.05
	done
	echo "$prog: tracer did not get ready ($1):" >&2
	cat "$tmp/err" "$tmp/stdout" >&2 2>/dev/null || true
	return 1
}

# ticks: the CPU time the tracer has used, in clock ticks.
ticks() { awk '{ print $14 + $15 }' "/proc/$tracer/stat"; }

# start MODE: start the tracer of MODE in the background and wait until it
# records.
# shellcheck disable=SC2016 # wait_for evaluates its argument itself
start() {
	: >"$tmp/stdout"
	: >"$tmp/err"
	case $1 in
	none) return 0 ;;
	gtrace)
		"$tmp/gtrace" record -e raw_syscalls:sys_enter -b "$kb" -o "$out/gtrace.dat" >"$tmp/stdout" 2>"$tmp/err" &
		tracer=$!
		# gtrace records once both its links are made: the comm
		# program's and sys_enter's (a raw tracepoint or a perf event).
		wait_for '(($(grep -ls "^link_type:" /proc/$tracer/fdinfo/* 2>/dev/null | wc -l) >= 2))'
		;;
	native)
		mkdir -p "$out/native"
		"$tmp/recordbench" -b "$kb" -o "$out/native" >"$tmp/stdout" 2>"$tmp/err" &
		tracer=$!
		wait_for 'grep -q "^ready$" "$tmp/stdout"'
		;;
	perf)
		perf record -e raw_syscalls:sys_enter -a -o "$out/perf.data" >"$tmp/stdout" 2>"$tmp/err" &
		tracer=$!
		# perf has opened an event per CPU once it records.
		wait_for '(($(ls -l /proc/$tracer/fd 2>/dev/null | grep -c "perf_event") >= $(nproc)))'
		sleep 0.2
		;;
	esac
}

# stop MODE: stop the tracer with SIGINT, as a user would, and wait for
# it. perf exits with a failure status when interrupted.
stop() {
	[[ -n $tracer ]] || return 0
	kill -INT "$tracer"
	if ! wait "$tracer" && [[ $1 != perf ]]; then
		echo "$prog: $1 failed:" >&2
		cat "$tmp/err" >&2
		tracer=
		return 1
	fi
	tracer=
}

# counts MODE: "EVENTS LOST", the events the tracer wrote and lost.
counts() {
	case $1 in
	gtrace) sed -n 's/^.*: \([0-9]*\) events (.*), \([0-9]*\) lost$/\1 \2/p' "$tmp/err" | tail -1 ;;
	native) sed -n 's/^events \([0-9]*\) lost \([0-9]*\)$/\1 \2/p' "$tmp/stdout" ;;
	perf)
		perf report -i "$out/perf.data" --stats 2>/dev/null | awk '
			/^raw_syscalls:sys_enter stats:/ { inside = 1; next }
			/stats:$/ { inside = 0 }
			inside && /SAMPLE events:/ { s = $3 }
			inside && /LOST_SAMPLES events:/ { l = $3 }
			END { print s + 0, l + 0 }'
		;;
	esac
}

results=$tmp/results
: >"$results"
"$tmp/loop" -n $((calls / 10 + 1)) -threads "$threads" >/dev/null # warm up
for ((r = 0; r < rounds; r++)); do
	line="round $((r + 1))/$rounds:"
	for ((i = 0; i < ${#run_modes[@]}; i++)); do
		mode=${run_modes[(i + r) % ${#run_modes[@]}]}
		start "$mode"
		t0=0
		[[ -z $tracer ]] || t0=$(ticks)
		w0=$(date +%s%N)
		ns=$("$tmp/loop" -n "$calls" -threads "$threads" -clock cpu)
		w1=$(date +%s%N)
		t1=0
		[[ -z $tracer ]] || t1=$(ticks)
		stop "$mode"
		read -r events lost <<<"$(counts "$mode")"
		wall=$(awk -v a="$w0" -v b="$w1" -v n="$calls" 'BEGIN { printf "%.1f", (b - a) / n }')
		echo "$mode $ns $wall ${events:-0} ${lost:-0} $(((t1 - t0) * tick_ns))" >>"$results"
		line+=" $mode $ns/$wall"
		rm -rf "$out/gtrace.dat" "$out/perf.data" "$out/native"
	done
	echo "$line" >&2
done

{
	echo "gtrace $(git -C "$repo" describe --always --dirty 2>/dev/null || echo unknown)," \
		"$(perf --version 2>/dev/null || echo 'no perf'), Linux $(uname -r), $(nproc) CPUs;" \
		"$rounds rounds x $threads threads x $calls getppid calls, buffers of $kb KiB per CPU;" \
		"targets on $clock time."
	echo
	awk -v order="${run_modes[*]}" -v clock="$clock" '
	{ n[$1]++; cpu[$1, n[$1]] = $2; wall[$1, n[$1]] = $3; ev[$1, n[$1]] = $4; lost[$1, n[$1]] = $5; tns[$1, n[$1]] = $6 }
	function median(arr, m,    a, i, j, t, k) {
		k = n[m]
		for (i = 1; i <= k; i++) a[i] = arr[m, i]
		for (i = 2; i <= k; i++)
			for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
	}
	END {
		k = split(order, modes, " ")
		for (i = 1; i <= k; i++) {
			m = modes[i]
			mc[m] = median(cpu, m); mw[m] = median(wall, m)
			for (r = 1; r <= n[m]; r++) {
				e = ev[m, r]; l = lost[m, r]
				lp[m, r] = (e + l > 0) ? 100 * l / (e + l) : 0
				per[m, r] = e > 0 ? tns[m, r] / e : 0
				lostsum[m] += l
			}
			mlp[m] = median(lp, m); mper[m] = median(per, m); mev[m] = median(ev, m)
		}
		for (i = 1; i <= k; i++) {
			m = modes[i]
			oc[m] = mc[m] - mc["none"]; ow[m] = mw[m] - mw["none"]
			over[m] = clock == "cpu" ? oc[m] : ow[m]
		}
		print "| mode | cpu ns/call | overhead ns/event (cpu) | wall ns/call | overhead ns/event (wall) | events written | lost | tracer CPU ns/event |"
		print "|---|---:|---:|---:|---:|---:|---:|---:|"
		for (i = 1; i <= k; i++) {
			m = modes[i]
			if (m == "none") { printf "| none | %.1f | 0 | %.1f | 0 | - | - | - |\n", mc[m], mw[m]; continue }
			printf "| %s | %.1f | %.1f | %.1f | %.1f | %d | %.3f%% (%d over all rounds) | %.1f |\n", m, mc[m], oc[m], mw[m], ow[m], mev[m], mlp[m], lostsum[m], mper[m]
		}
		if (!("gtrace" in over)) exit 0
		print ""
		print "| target | value | limit | result |"
		print "|---|---:|---:|---|"
		fail = 0
		if ("native" in over) {
			fail += target("gtrace / native overhead", ratio("native"), 1.0)
			stretch("gtrace / native overhead (stretch)", ratio("native"), 0.75)
		}
		if ("perf" in over) fail += target("gtrace / perf overhead", ratio("perf"), 0.4)
		fail += target("gtrace events lost, all rounds", lostsum["gtrace"], 0)
		fail += target("gtrace CPU ns per event written", mper["gtrace"], 100)
		exit (fail > 0)
	}
	function ratio(peer) { return over[peer] > 0 ? over["gtrace"] / over[peer] : -1 }
	function target(name, v, limit) {
		if (v < 0) { printf "| %s | - | <= %s | no overhead to compare |\n", name, limit; return 1 }
		printf "| %s | %.2f | <= %s | %s |\n", name, v, limit, v <= limit ? "PASS" : "FAIL"
		return v > limit
	}
	function stretch(name, v, limit) {
		if (v < 0) return
		printf "| %s | %.2f | <= %s | %s |\n", name, v, limit, v <= limit ? "met" : "not met"
	}' "$results" || status=$?
	for n in "${notes[@]}"; do
		echo
		echo "Note: $n"
	done
}
exit "${status:-0}"

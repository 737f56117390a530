#!/usr/bin/env bash
# hist-overhead.sh: the per-event overhead of `gtrace hist -k common_pid,id`
# on raw_syscalls:sys_enter, as ratios to no tracing, an empty BPF program,
# a minimal hand-written hist program and bpftrace, measured in one run.
#
# Each round runs every mode once, in a rotating order, and times a getppid
# loop (bench/cmd/loop) under it; the table reports per-mode medians over
# the rounds. See docs/performance.md.
#
# Usage: sudo bench/hist-overhead.sh [-r ROUNDS] [-n CALLS] [-t THREADS]
#                                    [-s SIZE] [-c cpu|wall] [-m MODES]
# Exit status: 0 all targets met, 1 a target missed or a step failed,
# 2 bad usage or not root.
set -euo pipefail

prog=${0##*/}
usage() {
	cat >&2 <<EOF
usage: $prog [-r ROUNDS] [-n CALLS] [-t THREADS] [-s SIZE] [-c cpu|wall] [-m MODES]

Measures the per-event overhead on raw_syscalls:sys_enter of
'gtrace hist -k common_pid,id' against no tracing, an empty BPF program, a
hand-written hash-map program and bpftrace, and prints a markdown table.

  -r ROUNDS   rounds; each runs every mode once (default 5)
  -n CALLS    getppid calls per thread and run (default 2000000)
  -t THREADS  threads making calls (default: the number of CPUs)
  -s SIZE     hist table size of ref, gtrace (--size) and bpftrace
              (BPFTRACE_MAP_KEYS_MAX) (default 2048, gtrace's default)
  -c CLOCK    cpu: the loop threads' CPU time per call (default, robust to
              other load); wall: wall time per call and thread
  -m MODES    comma-separated subset of none,empty,ref,gtrace,bpftrace
              (default: all; none is always run)

Needs root. Builds gtrace and the helpers with the go command on PATH.
EOF
}

rounds=5 calls=2000000 threads=$(nproc) size=2048 clock=cpu
modes=none,empty,ref,gtrace,bpftrace
while getopts r:n:t:s:c:m:h opt; do
	case $opt in
	r) rounds=$OPTARG ;;
	n) calls=$OPTARG ;;
	t) threads=$OPTARG ;;
	s) size=$OPTARG ;;
	c) clock=$OPTARG ;;
	m) modes=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
for v in "$rounds" "$calls" "$threads" "$size"; do
	[[ $v =~ ^[1-9][0-9]*$ ]] || { echo "$prog: not a positive number: $v" >&2; usage; exit 2; }
done
[[ $clock == cpu || $clock == wall ]] || { echo "$prog: -c wants cpu or wall, got $clock" >&2; exit 2; }
(($# == 0)) || { usage; exit 2; }
if ((EUID != 0)); then
	echo "$prog: needs root to load BPF programs (run: sudo bench/hist-overhead.sh)" >&2
	exit 2
fi

for m in ${modes//,/ }; do
	[[ $m =~ ^(none|empty|ref|gtrace|bpftrace)$ ]] || { echo "$prog: unknown mode: $m" >&2; exit 2; }
done

if ! command -v go >/dev/null; then
	echo "$prog: no go command on PATH (sudo may reset PATH: sudo env PATH=\"\$PATH\" bench/hist-overhead.sh)" >&2
	exit 1
fi

# The modes to run, in the canonical order; none is the baseline of all.
notes=()
run_modes=(none)
for m in empty ref gtrace bpftrace; do
	[[ ",$modes," == *",$m,"* ]] || continue
	if [[ $m == bpftrace ]] && ! command -v bpftrace >/dev/null; then
		notes+=("bpftrace is not installed: its row and the gtrace/bpftrace target are skipped.")
		continue
	fi
	run_modes+=("$m")
done
have_bpftool=false
command -v bpftool >/dev/null && have_bpftool=true

repo=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
tracer=
# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
	if [[ -n $tracer ]]; then
		kill -KILL "$tracer" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

echo "$prog: building in a temporary directory" >&2
export CGO_ENABLED=0
(
	cd "$repo"
	go build -o "$tmp/loop" ./bench/cmd/loop
	go build -o "$tmp/bpfref" ./bench/cmd/bpfref
	if [[ " ${run_modes[*]} " == *" gtrace "* ]]; then
		go build -o "$tmp/gtrace" .
	fi
)

# wait_line FILE PATTERN: wait until the tracer writes a line matching
# PATTERN to FILE; fail if it exits first or takes longer than 30 s.
wait_line() {
	local i
	for ((i = 0; i < 600; i++)); do
		grep -q -- "$2" "$1" 2>/dev/null && return 0
		kill -0 "$tracer" 2>/dev/null || break
		sleep 0.05
	done
	echo "$prog: tracer did not print '$2':" >&2
	cat "$1" >&2
	return 1
}

# attached_elsewhere: how many BPF programs processes other than the
# current tracer have attached to raw_syscalls:sys_enter.
attached_elsewhere() {
	bpftool perf show 2>/dev/null |
		awk -v me="${tracer:-0}" '$2 != me && / tracepoint +sys_enter$/ { n++ } END { print n + 0 }'
}

# attached: whether the tracer holds a BPF link (gtrace: a tp_btf program
# or a perf event link) or a perf event (bpftrace attaches its programs to
# perf events with an ioctl).
attached() {
	local fd
	for fd in /proc/"$tracer"/fd/*; do
		[[ $(readlink "$fd" 2>/dev/null) == "anon_inode:[perf_event]" ]] && return 0
		grep -qs '^link_type:' /proc/"$tracer"/fdinfo/"${fd##*/}" && return 0
	done
	return 1
}

# wait_attached FILE: wait until the tracer has attached its program; fail
# if the tracer exits first or takes longer than 30 s.
wait_attached() {
	local i
	for ((i = 0; i < 600; i++)); do
		attached && return 0
		kill -0 "$tracer" 2>/dev/null || break
		sleep 0.05
	done
	echo "$prog: tracer did not attach:" >&2
	cat "$1" >&2
	return 1
}

# start MODE: start the tracer of MODE in the background and wait until it
# is attached.
start() {
	local out=$tmp/out.$1
	case $1 in
	none) return 0 ;;
	empty | ref)
		"$tmp/bpfref" -mode "$1" -size "$size" >"$out" 2>&1 &
		tracer=$!
		wait_line "$out" '^ready$'
		;;
	gtrace)
		local args=(hist -e raw_syscalls:sys_enter -k 'common_pid,id')
		if ((size != 2048)); then
			args+=(--size "$size")
		fi
		"$tmp/gtrace" "${args[@]}" >"$out" 2>&1 &
		tracer=$!
		wait_attached "$out"
		;;
	bpftrace)
		BPFTRACE_MAP_KEYS_MAX=$size bpftrace \
			-e 'tracepoint:raw_syscalls:sys_enter { @[pid, args->id] = count(); }' >"$out" 2>&1 &
		tracer=$!
		wait_line "$out" '^Attaching'
		wait_attached "$out"
		;;
	esac
}

# stop: stop the tracer with SIGINT, as a user would, escalating to SIGTERM
# and SIGKILL if it does not exit within 10 s and 2 s.
stop() {
	[[ -n $tracer ]] || return 0
	local i sig
	for sig in INT TERM KILL; do
		kill -"$sig" "$tracer" 2>/dev/null || break
		for ((i = 0; i < 200; i++)); do
			kill -0 "$tracer" 2>/dev/null || break 2
			sleep 0.05
		done
		[[ $sig == KILL ]] || echo "$prog: tracer ignored SIG$sig" >&2
	done
	wait "$tracer" 2>/dev/null || true
	tracer=
}

results=$tmp/results
: >"$results"
"$tmp/loop" -n $((calls / 10 + 1)) -threads "$threads" >/dev/null # warm up
foreign=0
for ((r = 0; r < rounds; r++)); do
	line="round $((r + 1))/$rounds:"
	for ((i = 0; i < ${#run_modes[@]}; i++)); do
		mode=${run_modes[(i + r) % ${#run_modes[@]}]}
		start "$mode"
		if $have_bpftool; then
			n=$(attached_elsewhere)
			if ((n > foreign)); then
				foreign=$n
			fi
		fi
		ns=$("$tmp/loop" -n "$calls" -threads "$threads" -clock "$clock")
		stop
		if [[ $mode == gtrace ]]; then
			dropped=$(awk '/^ *Dropped: / { d += $2 } END { print d + 0 }' "$tmp/out.gtrace")
			if ((dropped > 0)); then
				notes+=("round $((r + 1)): gtrace dropped $dropped events (table full; try a larger -s).")
			fi
		fi
		echo "$mode $ns" >>"$results"
		line+=" $mode $ns"
	done
	echo "$line" >&2
done
if ((foreign > 0)); then
	notes+=("other processes had up to $foreign BPF programs attached to raw_syscalls:sys_enter: they add to every mode, so the ratios are compressed.")
fi

# The report: per-mode medians, overheads over none, ratios, targets.
{
	echo "gtrace $(git -C "$repo" describe --always --dirty 2>/dev/null || echo unknown)," \
		"$(command -v bpftrace >/dev/null && bpftrace --version || echo 'no bpftrace'), Linux $(uname -r), $(nproc) CPUs;" \
		"$rounds rounds x $threads threads x $calls getppid calls, $clock time, table size $size."
	echo
	awk -v order="${run_modes[*]}" '
	{ v[$1, ++n[$1]] = $2 }
	function median(m,    a, i, j, t, k) {
		k = n[m]
		for (i = 1; i <= k; i++) a[i] = v[m, i]
		for (i = 2; i <= k; i++)
			for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
	}
	function ratio(a, b) { return (b in over && over[b] > 0) ? sprintf("%.2f", over[a] / over[b]) : "-" }
	END {
		k = split(order, modes, " ")
		for (i = 1; i <= k; i++) { med[modes[i]] = median(modes[i]); over[modes[i]] = med[modes[i]] - med["none"] }
		print "| mode | ns/call | overhead ns/event | x empty | x ref |"
		print "|---|---:|---:|---:|---:|"
		for (i = 1; i <= k; i++) {
			m = modes[i]
			if (m == "none") { printf "| none | %.1f | 0 | - | - |\n", med[m]; continue }
			printf "| %s | %.1f | %.1f | %s | %s |\n", m, med[m], over[m], ratio(m, "empty"), ratio(m, "ref")
		}
		if (!("gtrace" in over)) exit 0
		print ""
		print "| target | ratio | limit | result |"
		print "|---|---:|---:|---|"
		fail = 0
		if ("ref" in over) fail += target("gtrace / ref", "ref", 1.3)
		if ("bpftrace" in over) fail += target("gtrace / bpftrace", "bpftrace", 0.5)
		exit (fail > 0)
	}
	function target(name, peer, limit,    r) {
		if (over[peer] <= 0) { printf "| %s | - | <= %.1f | no overhead to compare |\n", name, limit; return 1 }
		r = over["gtrace"] / over[peer]
		printf "| %s | %.2f | <= %.1f | %s |\n", name, r, limit, r <= limit ? "PASS" : "FAIL"
		return r > limit
	}' "$results" || status=$?
	for n in "${notes[@]}"; do
		echo
		echo "Note: $n"
	done
}
exit "${status:-0}"

#!/usr/bin/env bash
# uprobe-overhead.sh: the per-call cost of a uprobe with three fetch
# arguments on libc's write, gtrace's against the kernel's own uprobe
# event and bpftrace's, as ratios measured in one run; and each tracer's
# startup, from its command to attached.
#
# The probe: p:w LIBC:write fd=%di:s32 len=%dx:u64 buf=+0(%si):string.
# What runs on each write, one mode at a time:
#   none     nothing: the baseline every overhead is measured from
#   empty    a uprobe program that returns 0 (bench/cmd/bpfref): the
#            floor of any BPF program on a uprobe
#   kernel   the same probe as the kernel's uprobe event (uprobe_events),
#            recorded in the kernel's ring buffer with a splice consumer
#            per CPU, trace-cmd's way (bench/cmd/recordbench)
#   record   gtrace record --probe ... -e uprobes:w: the three fields
#            into trace.dat
#   hist     gtrace hist --probe ... -e uprobes:w -k fd: the record built,
#            counted by fd
#   bpftrace bpftrace -e 'uprobe:LIBC:write { @[arg0] = count(); }'
#
# The workload is dd if=/dev/zero of=/dev/null bs=1 count=CALLS: one libc
# write of one byte to fd 1 per call. Its figure is dd's CPU time (user +
# system) per write. Each round runs every mode once, in an order that
# rotates from round to round, each paired with an untraced dd right
# before it; a mode's overhead in a round is the difference. The table
# has per-mode medians over the rounds. The probes are on the library,
# so every process's writes run them: the numbers are dd's own cost.
#
# Every tracer must have lost nothing: gtrace record's "0 lost",
# gtrace hist's "Dropped: 0" and a count for fd 1 of at least CALLS, the
# kernel's overrun and dropped events 0, bpftrace's @[1] at least CALLS. A
# round with losses makes the run FAIL.
#
# Startup: the median time from starting each tracer to its ready line
# ("ready", gtrace's attach line, bpftrace's "Attaching").
#
# Targets (PASS/FAIL): record's overhead below the kernel's, hist's below
# bpftrace's. See docs/performance.md.
#
# Usage: sudo bench/uprobe-overhead.sh [-r ROUNDS] [-n CALLS] [-m MODES]
# Exit status: 0 all targets met, 1 a target missed, events were lost or a
# step failed, 2 bad usage or not root.
set -euo pipefail

prog=${0##*/}
all_modes=none,empty,kernel,record,hist,bpftrace
usage() {
	cat >&2 <<EOF
usage: $prog [-r ROUNDS] [-n CALLS] [-m MODES]

Measures the per-call overhead of a uprobe with three fetch arguments on
libc's write (dd bs=1) for gtrace record and gtrace hist against an empty
uprobe program, the kernel's uprobe event with a splice consumer and
bpftrace, and each tracer's startup, and prints markdown tables with
PASS/FAIL per target.

  -r ROUNDS   rounds; each runs every mode once (default 5)
  -n CALLS    writes per dd run (default 500000)
  -m MODES    comma-separated subset of $all_modes
              (default: all; none always runs)

Needs root, dd and ldd. Builds gtrace and the helpers with the go command
on PATH. Nothing else may use the top tracing instance meanwhile.
EOF
}

rounds=5 calls=500000 modes=$all_modes
while getopts r:n:m:h opt; do
	case $opt in
	r) rounds=$OPTARG ;;
	n) calls=$OPTARG ;;
	m) modes=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
(($# == 0)) || { usage; exit 2; }
for v in "$rounds" "$calls"; do
	[[ $v =~ ^[1-9][0-9]*$ ]] || { echo "$prog: not a positive number: $v" >&2; exit 2; }
done
for m in ${modes//,/ }; do
	[[ ",$all_modes," == *",$m,"* ]] || { echo "$prog: unknown mode: $m" >&2; exit 2; }
done
if ((EUID != 0)); then
	echo "$prog: needs root to load BPF programs (run: sudo bench/uprobe-overhead.sh)" >&2
	exit 2
fi

dd=$(command -v dd)
libc=$(ldd "$dd" | sed -n 's/.*libc\.so\.6 => \([^ ]*\).*/\1/p')
[[ -n $libc ]] || { echo "$prog: no libc.so.6 in ldd $dd" >&2; exit 1; }
notes=()
run_modes=()
for m in ${all_modes//,/ }; do
	[[ $m != none && ",$modes," == *",$m,"* ]] || continue
	if [[ $m == bpftrace ]] && ! command -v bpftrace >/dev/null; then
		notes+=("bpftrace is not installed: its row and the hist/bpftrace target are skipped.")
		continue
	fi
	run_modes+=("$m")
done

repo=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
tracer=
tfs=/sys/kernel/tracing
# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
	if [[ -n $tracer ]]; then
		# SIGTERM lets recordbench restore the tracefs files it changed.
		kill -TERM "$tracer" 2>/dev/null || true
		for _ in 1 2 3 4 5 6 7 8 9 10; do
			kill -0 "$tracer" 2>/dev/null || break
			sleep 0.5
		done
		kill -KILL "$tracer" 2>/dev/null || true
		wait "$tracer" 2>/dev/null || true
	fi
	echo "-:gtrace_bench/w" >>"$tfs/uprobe_events" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

echo "$prog: building in a temporary directory" >&2
export CGO_ENABLED=0
(
	cd "$repo"
	go build -o "$tmp/gtrace" .
	go build -o "$tmp/bpfref" ./bench/cmd/bpfref
	go build -o "$tmp/recordbench" ./bench/cmd/recordbench
)
args='fd=%di:s32 len=%dx:u64 buf=+0(%si):string'
def="p:w $libc:write $args"
# The kernel's definition: the file offset that gtrace resolves.
kdef=$("$tmp/gtrace" kprobe --list -- "p:gtrace_bench/w $libc:write $args")
offset=${kdef#* }
offset=${offset%% *}

# ddrun prints dd's CPU time (user + system) in ns.
ddrun() {
	local t
	t=$( { TIMEFORMAT='%3U %3S'; time "$dd" if=/dev/zero of=/dev/null bs=1 count="$calls" 2>/dev/null; } 2>&1)
	awk -v t="$t" 'BEGIN { split(t, a, " "); printf "%.0f\n", (a[1] + a[2]) * 1e9 }'
}

# start MODE starts the mode's tracer in the background, waits for its
# ready line and writes the startup in ms to $tmp/ms.
start() {
	local m=$1 ready t0 t1
	: >"$tmp/out" && : >"$tmp/err"
	t0=$(date +%s%N)
	case $m in
	empty)
		"$tmp/bpfref" -mode empty -attach uprobe -uprobe "$offset" >"$tmp/out" 2>"$tmp/err" &
		ready='^ready' ;;
	kernel)
		echo "$kdef" >>"$tfs/uprobe_events"
		mkdir -p "$tmp/kernel"
		"$tmp/recordbench" -e gtrace_bench/w -o "$tmp/kernel" >"$tmp/out" 2>"$tmp/err" &
		ready='^ready' ;;
	record)
		"$tmp/gtrace" record --probe "$def" -e uprobes:w -o "$tmp/trace.dat" >"$tmp/out" 2>"$tmp/err" &
		ready='recording' ;;
	hist)
		"$tmp/gtrace" hist --probe "$def" -e uprobes:w -k fd >"$tmp/out" 2>"$tmp/err" &
		ready='Ctrl-C' ;;
	bpftrace)
		bpftrace -e "uprobe:$libc:write { @[arg0] = count(); }" >"$tmp/out" 2>"$tmp/err" &
		ready='^Attaching' ;;
	esac
	tracer=$!
	until grep -q "$ready" "$tmp/out" "$tmp/err" 2>/dev/null; do
		if ! kill -0 "$tracer" 2>/dev/null; then
			echo "$prog: $m exited before it was ready:" >&2
			cat "$tmp/err" >&2
			exit 1
		fi
		sleep 0.002
	done
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000)) >"$tmp/ms"
}

# stop MODE stops the tracer and writes "ok" or what it lost to $tmp/st.
stop() {
	stopped "$@" >"$tmp/st"
}
stopped() {
	local m=$1 n
	# SIGTERM: a background job of a script ignores SIGINT (bpftrace
	# keeps it ignored); every tracer here ends cleanly on SIGTERM.
	kill -TERM "$tracer"
	wait "$tracer" || true
	tracer=
	case $m in
	empty) echo ok ;;
	kernel)
		echo "-:gtrace_bench/w" >>"$tfs/uprobe_events"
		if grep -q ' lost 0$' "$tmp/out"; then echo ok; else echo "kernel: $(cat "$tmp/out")"; fi ;;
	record)
		if grep -Eq ': [0-9]+ events .*, 0 lost$' "$tmp/err"; then echo ok; else echo "record: $(tail -1 "$tmp/err")"; fi ;;
	hist)
		n=$(sed -n 's/^{ fd: *1 } hitcount: *\([0-9]*\)$/\1/p' "$tmp/out")
		if grep -q 'Dropped: 0' "$tmp/out" && ((${n:-0} >= calls)); then echo ok; else echo "hist: fd 1 counted ${n:-0} times of $calls, $(grep Dropped "$tmp/out")"; fi ;;
	bpftrace)
		n=$(sed -n 's/^@\[1\]: \([0-9]*\)$/\1/p' "$tmp/out")
		if ((${n:-0} >= calls)); then echo ok; else echo "bpftrace: @[1] ${n:-0} of $calls"; fi ;;
	esac
}

median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : int((a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }

declare -A over startup
base=()
failed=false
for ((r = 0; r < rounds; r++)); do
	n=${#run_modes[@]}
	for ((i = 0; i < n; i++)); do
		m=${run_modes[$(((i + r) % n))]}
		b=$(ddrun)
		base+=("$b")
		start "$m"
		t=$(ddrun)
		stop "$m"
		ms=$(<"$tmp/ms") st=$(<"$tmp/st")
		if [[ $st != ok ]]; then
			echo "$prog: round $((r + 1)): $st" >&2
			failed=true
		fi
		over[$m]+="$(((t - b) / calls)) "
		startup[$m]+="$ms "
		echo "$prog: round $((r + 1)) $m: +$(((t - b) / calls)) ns/write, started in $ms ms" >&2
	done
done

med() { tr ' ' '\n' <<<"${1% }" | median; }
none=$(printf '%s\n' "${base[@]}" | median)
echo "## uprobe overhead: p:w write $args, dd bs=1 count=$calls, $rounds rounds"
echo
echo "untraced dd: $((none / calls)) ns/write (median)"
echo
echo "| mode | overhead ns/write | startup ms |"
echo "|---|---|---|"
declare -A o
for m in "${run_modes[@]}"; do
	o[$m]=$(med "${over[$m]}")
	echo "| $m | ${o[$m]} | $(med "${startup[$m]}") |"
done
echo
status=0
target() { # NAME A B: A's overhead below B's
	local a=${o[$2]:-} b=${o[$3]:-}
	[[ -n $a && -n $b ]] || return 0
	local ratio verdict=PASS
	ratio=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", (b > 0) ? a / b : 0 }')
	if ((a >= b)) || $failed; then verdict=FAIL status=1; fi
	echo "| $1 | $ratio | < 1.00 | $verdict |"
}
echo "| target | ratio | want | |"
echo "|---|---|---|---|"
target "record / kernel" record kernel
target "hist / bpftrace" hist bpftrace
for n in "${notes[@]}"; do echo; echo "$n"; done
if $failed; then
	echo
	echo "FAIL: a tracer lost events in some round (above)."
fi
exit $status

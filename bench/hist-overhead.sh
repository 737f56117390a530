#!/usr/bin/env bash
# hist-overhead.sh: the per-event overhead of `gtrace hist -k common_pid,id`
# on raw_syscalls:sys_enter, as ratios to hand-written references on the
# same attach point and to its strongest peers, measured in one run.
#
# What runs on each system call, one mode at a time:
#   none       nothing: the baseline every overhead is measured from
#   tp-empty   a program that returns 0, on the classic tracepoint
#   tp-ref     a minimal hand-written hist on the classic tracepoint
#   btf-empty  a program that returns 0, on the raw tracepoint (tp_btf)
#   btf-ref    the same hand-written hist on the raw tracepoint (tp_btf)
#   gtrace     gtrace hist -e raw_syscalls:sys_enter -k common_pid,id
#   syscount   libbpf-tools syscount -P (compiled CO-RE C; counts per
#              process on raw_syscalls:sys_exit)
#   bpftrace   bpftrace, @[pid, args->id] = count() on the tracepoint
# The references (bench/cmd/bpfref) do what gtrace's program must: a hash
# map keyed by (pid, syscall id), lookup and atomic add, or insert with
# BPF_NOEXIST. gtrace is compared with the reference on the attach point
# its own program uses (tp_btf on sys_enter when the kernel has BTF, as
# its --dry-run listing tells).
#
# The workload (bench/cmd/loop) makes getppid calls in a tight loop, one
# thread in each of THREADS separate processes started together (with -T,
# all threads in one process), so that bpftrace's and syscount's tables,
# keyed by process, get one entry per process as with separate programs.
# Its figure is the loop threads' CPU time per call (-c wall: wall time).
# Each round runs every mode once, in an order that rotates from round to
# round so that noise hits all modes alike, and each mode's run is paired
# with a run of the loop without tracing right before it: the mode's
# overhead in that round is the difference of the two, so that the slow
# drifts of a shared machine (which move a loop's figure by 10-20% within
# minutes) cancel out. The table reports per-mode medians over the rounds
# (none: of all the untraced runs), the medians of the paired overheads,
# and the ratios of gtrace's overhead to the others'.
#
# After its paired runs, each mode's tracer runs under a shorter loop
# (CALLS/4) with the kernel's BPF run-time statistics on (BPF_ENABLE_STATS
# from the loop, which leaves kernel.bpf_stats_enabled alone), and the run
# time and count of the tracer's programs, from the fdinfo of their file
# descriptors, give the time its programs take per event ("program
# ns/event", median over the rounds): the part of the overhead that is
# the program's own, without the attach point's, and with far less noise.
#
# Every tracer that counts must have counted every getppid call of the
# loop (gtrace: no Dropped: and the hitcounts of id getppid; bpftrace,
# syscount and the references: their counts at exit). A round in which a
# tracer dropped or missed events makes the run FAIL: its figure would
# flatter it.
#
# Targets (PASS/FAIL): gtrace's overhead at most 1.1x that of the
# reference on its attach point, at most 1.0x syscount -P's and at most
# 0.35x bpftrace's, and every event counted. See docs/performance.md.
#
# Usage: sudo bench/hist-overhead.sh [-r ROUNDS] [-n CALLS] [-t THREADS] [-T]
#                                    [-s SIZE] [-c cpu|wall] [-m MODES]
# Exit status: 0 all targets met, 1 a target missed, events were lost or a
# step failed, 2 bad usage or not root.
set -euo pipefail

prog=${0##*/}
all_modes=none,tp-empty,tp-ref,btf-empty,btf-ref,gtrace,syscount,bpftrace
usage() {
	cat >&2 <<EOF
usage: $prog [-r ROUNDS] [-n CALLS] [-t THREADS] [-T] [-s SIZE] [-c cpu|wall] [-m MODES]

Measures the per-event overhead on raw_syscalls:sys_enter of
'gtrace hist -k common_pid,id' against no tracing, empty programs and a
hand-written hash-map program on the classic and the raw (tp_btf)
tracepoint, libbpf-tools' 'syscount -P' and bpftrace, and prints a
markdown table with PASS/FAIL per target.

  -r ROUNDS   rounds; each runs every mode once (default 9)
  -n CALLS    getppid calls per thread and run (default 1000000)
  -t THREADS  threads making calls, each in its own process (default: the
              number of CPUs)
  -T          put all threads in one process (bpftrace's and syscount's
              tables then serialise them on one entry)
  -s SIZE     table size of the references, gtrace (--size) and bpftrace
              (BPFTRACE_MAP_KEYS_MAX) (default 32768; gtrace's default,
              2048, fills within seconds on a busy machine)
  -c CLOCK    cpu: the loop threads' CPU time per call (default, robust to
              other load); wall: wall time per call and thread
  -m MODES    comma-separated subset of
              $all_modes
              (default: all; none, the untraced run before each mode's,
              is always run)

Needs root. Builds gtrace and the helpers with the go command on PATH.
EOF
}

rounds=9 calls=1000000 threads=$(nproc) size=32768 clock=cpu one_proc=false
modes=$all_modes
while getopts r:n:t:Ts:c:m:h opt; do
	case $opt in
	r) rounds=$OPTARG ;;
	n) calls=$OPTARG ;;
	t) threads=$OPTARG ;;
	T) one_proc=true ;;
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
for m in ${modes//,/ }; do
	[[ ",$all_modes," == *",$m,"* ]] || { echo "$prog: unknown mode: $m" >&2; exit 2; }
done
if ((EUID != 0)); then
	echo "$prog: needs root to load BPF programs (run: sudo bench/hist-overhead.sh)" >&2
	exit 2
fi
if ! command -v go >/dev/null; then
	echo "$prog: no go command on PATH (sudo may reset PATH: sudo env PATH=\"\$PATH\" bench/hist-overhead.sh)" >&2
	exit 1
fi

# syscount is /usr/sbin/syscount in Debian's libbpf-tools; other
# distributions install it as bpf-syscount.
syscount=
for s in syscount bpf-syscount /usr/sbin/syscount /usr/sbin/bpf-syscount; do
	if command -v "$s" >/dev/null; then
		syscount=$(command -v "$s")
		break
	fi
done

# The modes to run, in the canonical order; none, the baseline, runs
# before each of them.
notes=()
run_modes=()
for m in ${all_modes//,/ }; do
	[[ $m != none && ",$modes," == *",$m,"* ]] || continue
	case $m in
	bpftrace)
		if ! command -v bpftrace >/dev/null; then
			notes+=("bpftrace is not installed: its row and the gtrace/bpftrace target are skipped.")
			continue
		fi
		;;
	syscount)
		if [[ -z $syscount ]]; then
			notes+=("syscount (libbpf-tools) is not installed: its row and the gtrace/syscount target are skipped.")
			continue
		fi
		;;
	btf-*)
		if [[ ! -e /sys/kernel/btf/vmlinux ]]; then
			notes+=("the kernel has no BTF: $m is skipped.")
			continue
		fi
		;;
	esac
	run_modes+=("$m")
done
if ((${#run_modes[@]} == 0)); then
	echo "$prog: no mode to run besides none" >&2
	exit 1
fi
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
	go build -o "$tmp/gtrace" .
)

gtrace_args=(hist -e raw_syscalls:sys_enter -k 'common_pid,id')
if ((size != 2048)); then
	gtrace_args+=(--size "$size")
fi
# gtrace's attach point, from its listing: a Tracing program is tp_btf.
if "$tmp/gtrace" "${gtrace_args[@]}" --dry-run 2>&1 | grep -q '(Tracing,'; then
	gtrace_attach=btf
else
	gtrace_attach=tp
fi
same_ref=$gtrace_attach-ref

sysno=$("$tmp/loop" -sysno)
expected=$((calls * threads))
loop_args=(-n "$calls" -threads "$threads" -clock "$clock")
if ! $one_proc; then
	loop_args+=(-procs "$threads")
fi

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
# current tracer have attached to the classic tracepoints
# raw_syscalls:sys_enter and sys_exit.
attached_elsewhere() {
	bpftool perf show 2>/dev/null |
		awk -v me="${tracer:-0}" '$2 != me && / tracepoint +sys_(enter|exit)$/ { n++ } END { print n + 0 }'
}

# attached: whether the tracer holds a BPF link (a tp_btf program or a
# perf event link) or a perf event (bpftrace attaches its programs to
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
	tp-* | btf-*)
		"$tmp/bpfref" -attach "${1%%-*}" -mode "${1#*-}" -size "$size" >"$out" 2>&1 &
		tracer=$!
		wait_line "$out" '^ready$'
		;;
	gtrace)
		"$tmp/gtrace" "${gtrace_args[@]}" >"$out" 2>&1 &
		tracer=$!
		wait_attached "$out"
		;;
	syscount)
		# stdbuf: its stdout is a file, which stdio would buffer fully.
		stdbuf -oL "$syscount" -P -T 1000000 >"$out" 2>&1 &
		tracer=$!
		wait_line "$out" '^Tracing'
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

# prog_stats: "ID RUN_TIME_NS RUN_CNT" of each BPF program the tracer
# holds a file descriptor of.
prog_stats() {
	local f
	for f in /proc/"$tracer"/fdinfo/*; do
		awk '/^prog_id:/ { id = $2 } /^run_time_ns:/ { t = $2 } /^run_cnt:/ { n = $2 }
			END { if (id != "" && n != "") print id, t, n }' "$f" 2>/dev/null || true
	done
}

# program_ns BEFORE AFTER: the programs' run time per event between two
# prog_stats outputs (files): the sum of their run times over the largest
# of their run counts; "-" when they did not run.
program_ns() {
	awk 'NR == FNR { t0[$1] = $2; n0[$1] = $3; next }
		{ t += $2 - t0[$1]; n = $3 - n0[$1]; if (n > max) max = n }
		END { if (max > 0) printf "%.1f\n", t / max; else print "-" }' "$1" "$2"
}

# counted MODE: the getppid calls the tracer of MODE counted, from its
# output; "-" for a mode that counts nothing.
counted() {
	local out=$tmp/out.$1
	case $1 in
	tp-ref | btf-ref) awk '$1 == "hits" { n = $4 } END { print n + 0 }' "$out" ;;
	gtrace)
		awk -v id="$sysno" '
		/^{ / && $0 ~ "id: +" id " }" { sub(/.*hitcount: */, ""); n += $1 }
		END { print n + 0 }' "$out"
		;;
	syscount)
		# PID COMM COUNT lines of the loop processes (comm "loop"): all
		# their system calls, at least their getppid calls.
		awk '$2 == "loop" && $3 ~ /^[0-9]+$/ { n += $3 } END { print n + 0 }' "$out"
		;;
	bpftrace)
		awk -v id="$sysno" '$2 == id "]:" { n += $3 } END { print n + 0 }' "$out"
		;;
	*) echo - ;;
	esac
}

results=$tmp/results
: >"$results"
lost=0
"$tmp/loop" -n $((calls / 10 + 1)) "${loop_args[@]:2}" >/dev/null # warm up
foreign=0
for ((r = 0; r < rounds; r++)); do
	line="round $((r + 1))/$rounds:"
	for ((i = 0; i < ${#run_modes[@]}; i++)); do
		mode=${run_modes[(i + r) % ${#run_modes[@]}]}
		base=$("$tmp/loop" "${loop_args[@]}")
		start "$mode"
		if $have_bpftool; then
			n=$(attached_elsewhere)
			if ((n > foreign)); then
				foreign=$n
			fi
		fi
		ns=$("$tmp/loop" "${loop_args[@]}")
		prog_stats >"$tmp/stats0"
		"$tmp/loop" -bpf-stats -n $((calls / 4 + 1)) "${loop_args[@]:2}" >/dev/null
		prog_stats >"$tmp/stats1"
		pns=$(program_ns "$tmp/stats0" "$tmp/stats1")
		stop
		if [[ $mode == gtrace ]]; then
			dropped=$(awk '/^ *Dropped: / { d += $2 } END { print d + 0 }' "$tmp/out.gtrace")
			if ((dropped > 0)); then
				notes+=("round $((r + 1)): gtrace dropped $dropped events (table full; try a larger -s): FAIL.")
				lost=1
			fi
		fi
		got=$(counted "$mode")
		if [[ $got != - ]] && ((got < expected)); then
			notes+=("round $((r + 1)): $mode counted $got of the loop's $expected getppid calls: FAIL (its figure would flatter it).")
			lost=1
		fi
		echo "$mode $base $ns $pns" >>"$results"
		line+=" $mode $base/$ns/$pns"
	done
	echo "$line" >&2
done
if ((foreign > 0)); then
	notes+=("other processes had up to $foreign BPF programs attached to raw_syscalls:sys_enter/sys_exit: they add to every mode, so the ratios are compressed.")
fi

attach_name() {
	case $1 in
	tp-*) echo "tracepoint" ;;
	btf-*) echo "tp_btf" ;;
	gtrace) [[ $gtrace_attach == btf ]] && echo "tp_btf" || echo "tracepoint" ;;
	syscount) echo "tracepoint (sys_exit)" ;;
	bpftrace) echo "tracepoint" ;;
	none) echo "-" ;;
	esac
}

# The report: per-mode medians, overheads over none, ratios, targets.
{
	layout="$threads processes x 1 thread"
	$one_proc && layout="1 process x $threads threads"
	echo "gtrace $(git -C "$repo" describe --always --dirty 2>/dev/null || echo unknown)," \
		"$(command -v bpftrace >/dev/null && bpftrace --version || echo 'no bpftrace')," \
		"${syscount:+syscount ($(dpkg-query -W -f '${Package} ${Version}' libbpf-tools 2>/dev/null || echo libbpf-tools)),}" \
		"Linux $(uname -r), $(nproc) CPUs; $(date +%F);" \
		"$rounds rounds x $layout x $calls getppid calls, $clock time, table size $size."
	echo
	attach=
	for m in "${run_modes[@]}"; do
		attach+="$m=$(attach_name "$m");"
	done
	awk -v order="none ${run_modes[*]}" -v attach="$attach" -v same="$same_ref" -v lost="$lost" '
	{
		v["none", ++n["none"]] = $2
		v[$1, ++n[$1]] = $3
		v[$1 "-over", ++n[$1 "-over"]] = $3 - $2
		if ($4 != "-") v[$1 "-prog", ++n[$1 "-prog"]] = $4
	}
	function median(m,    a, i, j, t, k) {
		k = n[m]
		for (i = 1; i <= k; i++) a[i] = v[m, i]
		for (i = 2; i <= k; i++)
			for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
	}
	END {
		k = split(attach, pairs, ";")
		for (i = 1; i <= k; i++) { split(pairs[i], kv, "="); at[kv[1]] = kv[2] }
		k = split(order, modes, " ")
		for (i = 1; i <= k; i++) {
			m = modes[i]; med[m] = median(m)
			over[m] = m == "none" ? 0 : median(m "-over")
			if (n[m "-prog"] > 0) pr[m] = median(m "-prog")
		}
		print "| mode | attach point | ns/call | overhead ns/event | gtrace / mode | program ns/event | gtrace / mode |"
		print "|---|---|---:|---:|---:|---:|---:|"
		for (i = 1; i <= k; i++) {
			m = modes[i]
			if (m == "none") { printf "| none | - | %.1f | 0 | - | - | - |\n", med[m]; continue }
			r = ("gtrace" in over && over[m] > 0) ? sprintf("%.2f", over["gtrace"] / over[m]) : "-"
			p = (m in pr) ? sprintf("%.1f", pr[m]) : "-"
			q = (("gtrace" in pr) && (m in pr) && pr[m] > 0) ? sprintf("%.2f", pr["gtrace"] / pr[m]) : "-"
			printf "| %s | %s | %.1f | %.1f | %s | %s | %s |\n", m, at[m], med[m], over[m], r, p, q
		}
		if (!("gtrace" in over)) exit lost
		print ""
		print "| target | ratio | limit | result |"
		print "|---|---:|---:|---|"
		fail = 0
		if (same in over) fail += target("gtrace / " same " (same attach point)", same, 1.1)
		if ("syscount" in over) fail += target("gtrace / syscount -P", "syscount", 1.0)
		if ("bpftrace" in over) fail += target("gtrace / bpftrace (separate processes)", "bpftrace", 0.35)
		printf "| every event counted, none dropped | - | - | %s |\n", lost ? "FAIL" : "PASS"
		exit (fail > 0 || lost)
	}
	function target(name, peer, limit,    r) {
		if (over[peer] <= 0) { printf "| %s | - | <= %.2f | FAIL (no overhead to compare) |\n", name, limit; return 1 }
		r = over["gtrace"] / over[peer]
		printf "| %s | %.2f | <= %.2f | %s |\n", name, r, limit, (r <= limit && !lost) ? "PASS" : "FAIL"
		return r > limit
	}' "$results" || status=$?
	if [[ " ${run_modes[*]} " == *" gtrace "* && " ${run_modes[*]} " != *" $same_ref "* ]]; then
		notes+=("gtrace attaches to the $(attach_name gtrace); without $same_ref, the same-attach-point target is skipped.")
	fi
	for n in "${notes[@]}"; do
		echo
		echo "Note: $n"
	done
}
exit "${status:-0}"

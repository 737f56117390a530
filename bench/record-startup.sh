#!/usr/bin/env bash
# record-startup.sh: what a user waits for when recording many events:
# how long after starting the recorder it records the events ("attached"),
# and how long after Ctrl-C it is back at the shell with a complete file,
# for gtrace record, perf record -a and trace-cmd record, with the event
# sets syscalls:* (~700 events), sched:* (~30) and *:* (every event).
#
# Method, per round, set and recorder (the recorders' order rotates from
# round to round):
#  - bench/cmd/startstop takes CLOCK_MONOTONIC (T0) and starts the
#    recorder (gtrace record -C mono, perf record -a -k mono, trace-cmd
#    record -C mono: all stamp events with CLOCK_MONOTONIC), while its
#    marker thread sleeps 1 ms and calls getppid in a loop, so that
#    sched_switch, sched_waking, sched_wakeup, the hrtimer events and the
#    system call events of nanosleep and getppid happen every millisecond;
#  - once the recorder's open file descriptors have not changed for 1 s
#    (-S), it takes CLOCK_MONOTONIC (T1) and sends SIGINT, as Ctrl-C would,
#    and takes it again (T2) when the recorder has exited;
#  - the file is read back by the recorder's own reader (gtrace report -t,
#    perf script --ns, trace-cmd report -t), which must succeed; its events
#    are counted and, for gtrace and perf, compared with the count the
#    recorder printed at exit, and its lost events are read (what gtrace
#    printed at exit, lost and missed; perf's LOST records; trace-cmd's
#    per-CPU overruns).
# The columns:
#  - first event: the first event of the file, less T0;
#  - attached: the latest of the first events of each marker event of the
#    set (those listed above that belong to it), less T0: by then every
#    sampled event of the set is being recorded, also when a recorder
#    attaches its events one after another. It must lie before T1: a
#    recorder that was still attaching at SIGINT fails the run;
#  - set up: when the recorder last opened or closed a file descriptor
#    before SIGINT, less T0: when it had attached all of its events;
#  - back at the shell: T2 - T1.
# Every step has a time limit (-k, 120 s): the recorder is sent SIGINT if
# it has not settled by then and killed if it has not exited that long
# after SIGINT; readers are killed after it too. A recorder that fails
# (trace-cmd record on a kernel that refuses it the function tracer, perf
# record on events it may not open) gets a note with its error.
#
# Targets: gtrace's sched:* attached no later than perf's; *:* attached in
# at most 10 s; back at the shell at most 2 s after SIGINT, for every set,
# with a complete file in which nothing was lost. See docs/performance.md.
#
# Usage: sudo bench/record-startup.sh [-r ROUNDS] [-e SETS] [-t TOOLS]
#                                     [-k SECONDS] [-S SECONDS]
# Exit status: 0 all targets met, 1 a target missed or could not be
# measured (a gtrace run that failed, lost events or left an incomplete
# file misses its targets), 2 bad usage or not root.
set -euo pipefail

prog=${0##*/}
usage() {
	cat >&2 <<EOF
usage: $prog [-r ROUNDS] [-e SETS] [-t TOOLS] [-k SECONDS] [-S SECONDS]

Measures, per event set and recorder, the time from starting the recorder
until it records the set's events and from SIGINT until it has exited
with a complete file, and prints a markdown table with PASS/FAIL per
target.

  -r ROUNDS   rounds; each runs every recorder on every set (default 1)
  -e SETS     semicolon-separated event sets (default: 'syscalls:*;sched:*;*:*')
  -t TOOLS    comma-separated subset of gtrace,perf,trace-cmd (default:
              those installed)
  -k SECONDS  time limit of each step (default 120)
  -S SECONDS  how long a recorder's open files must not change before it
              is sent SIGINT (default 1)

Needs root. Builds gtrace and the helpers with the go command on PATH.
EOF
}

rounds=1 sets='syscalls:*;sched:*;*:*' tools=gtrace,perf,trace-cmd limit=120 settle=1
while getopts r:e:t:k:S:h opt; do
	case $opt in
	r) rounds=$OPTARG ;;
	e) sets=$OPTARG ;;
	t) tools=$OPTARG ;;
	k) limit=$OPTARG ;;
	S) settle=$OPTARG ;;
	h) usage; exit 0 ;;
	*) usage; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
(($# == 0)) || { usage; exit 2; }
for v in "$rounds" "$limit" "$settle"; do
	[[ $v =~ ^[1-9][0-9]*$ ]] || { echo "$prog: not a positive number: $v" >&2; usage; exit 2; }
done
for t in ${tools//,/ }; do
	[[ $t =~ ^(gtrace|perf|trace-cmd)$ ]] || { echo "$prog: unknown tool: $t" >&2; exit 2; }
done
if ((EUID != 0)); then
	echo "$prog: needs root to load BPF programs and use tracefs (run: sudo bench/record-startup.sh)" >&2
	exit 2
fi
if ! command -v go >/dev/null; then
	echo "$prog: no go command on PATH (sudo may reset PATH: sudo env PATH=\"\$PATH\" bench/record-startup.sh)" >&2
	exit 1
fi


repo=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM
echo "$prog: building in a temporary directory" >&2
(
	cd "$repo"
	export CGO_ENABLED=0
	go build -o "$tmp/gtrace" .
	go build -o "$tmp/startstop" ./bench/cmd/startstop
)
"$tmp/gtrace" list >/dev/null # mounts tracefs if it is not

notes=()
run_tools=()
for t in gtrace perf trace-cmd; do
	[[ ",$tools," == *",$t,"* ]] || continue
	if [[ $t != gtrace ]] && ! command -v "$t" >/dev/null; then
		notes+=("$t is not installed: its rows are skipped.")
		continue
	fi
	# trace-cmd record sets up the function tracer even for events only
	# (it writes 1 to /proc/sys/kernel/ftrace_enabled): a kernel that
	# refuses that cannot run it at all.
	if [[ $t == trace-cmd ]] &&
		! (cd "$tmp" && timeout 30 trace-cmd record -C mono -e sched:sched_switch -o "$tmp/check.dat" sleep 0.1 >"$tmp/check.log" 2>&1); then
		notes+=("trace-cmd record does not run on this machine, its rows are skipped: $(grep -v '^CPU\|bytes in size' "$tmp/check.log" | tr -s ' \n' ' ' | head -c 200)")
		continue
	fi
	run_tools+=("$t")
done
IFS=';' read -r -a run_sets <<<"$sets"

# markers SET: the marker events (NAME, without the system) of SET that
# the marker thread makes happen every millisecond.
markers() {
	local m=()
	case $1 in
	'*:*' | 'sched:*') m+=(sched_switch sched_waking sched_wakeup) ;;&
	'*:*' | 'syscalls:*') m+=(sys_enter_nanosleep sys_exit_nanosleep sys_enter_getppid sys_exit_getppid) ;;&
	'*:*' | 'raw_syscalls:*') m+=(sys_enter sys_exit) ;;&
	'*:*' | 'timer:*') m+=(hrtimer_start hrtimer_expire_entry) ;;&
	*) ;;
	esac
	echo "${m[*]}"
}

# scan MARKERS: read a report, one event a line with its timestamp
# (seconds, a dot and the fraction, then a colon) followed by its name and
# a colon, and print the number of events, the first and last timestamps
# and the first timestamp of each marker event, in nanoseconds.
scan() {
	awk -v markers="$1" '
	BEGIN { k = split(markers, mk, " "); for (i = 1; i <= k; i++) want[mk[i]] = 1 }
	{
		for (i = 1; i < NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) break
		if (i >= NF) next
		split(substr($i, 1, length($i) - 1), p, ".")
		ts = p[1] * 1000000000 + substr(p[2] "000000000", 1, 9)
		ev = $(i + 1); sub(/:$/, "", ev); sub(/^.*:/, "", ev)
		n++
		if (n == 1 || ts < first) first = ts
		if (ts > last) last = ts
		if ((ev in want) && !(ev in seen)) seen[ev] = ts
		else if ((ev in want) && ts < seen[ev]) seen[ev] = ts
	}
	END {
		printf "events %d first %.0f last %.0f\n", n, first, last
		for (e in want) printf "marker %s %s\n", e, (e in seen) ? sprintf("%.0f", seen[e]) : "-"
	}'
}

# measure TOOL SET: record SET with TOOL under startstop and print one
# result line: TOOL SET first attached setup back events lost ok why...
# (seconds; "-" where unknown; ok is 1 when the file was complete and
# read without error, all marker events were recorded before SIGINT and
# nothing was lost or failed; why says what was not so).
measure() {
	local tool=$1 set=$2 file=$tmp/rec.$1 log=$tmp/log.$1 report=$tmp/report.$1
	local -a cmd
	case $tool in
	gtrace) cmd=("$tmp/gtrace" record -C mono -e "$set" -o "$file") ;;
	perf) cmd=(perf record -a -k mono -e "$set" -o "$file") ;;
	trace-cmd) cmd=(trace-cmd record -C mono -e "$set" -o "$file") ;;
	esac
	rm -rf "$file" "$file".*
	local ok=1 why=() times t0 ts t1 t2 status
	if ! times=$(cd "$tmp" && timeout $((3 * limit)) "$tmp/startstop" -marker \
		-settle "${settle}s" -timeout "${limit}s" -kill-after "${limit}s" -- "${cmd[@]}" 2>"$log"); then
		why+=("it failed: $(grep -v '^ *$' "$log" | tail -n 3 | tr -s ' \n' ' ')")
		echo "$tool $set - - - - - - 0 ${why[*]}"
		return
	fi
	read -r _ t0 _ ts _ t1 _ t2 _ status <<<"$times"
	# perf record ends itself with the SIGINT it got: 130.
	((status == 0 || status == 130)) || { ok=0; why+=("exit status $status"); }
	grep -q 'did not settle' "$log" && { ok=0; why+=("did not settle within ${limit}s"); }
	grep -q 'killed' "$log" && { ok=0; why+=("killed ${limit}s after SIGINT"); }

	# Read the file back with the recorder's own reader.
	local rc=0 lost=- want=-
	case $tool in
	gtrace)
		timeout "$limit" "$tmp/gtrace" report -t -i "$file" 2>"$report.err" | scan "$(markers "$set")" >"$report" || rc=$?
		# "FILE: N events (X MB of records), M lost" and "N events were
		# missed: ..." (another BPF program was running on their CPU)
		want=$(sed -n 's/.*: \([0-9]*\) events (.*, [0-9]* lost$/\1/p' "$log" | tail -n 1)
		lost=$(awk '/ events \(.*, [0-9]+ lost$/ { n += $(NF - 1); seen = 1 }
			/ events were missed/ { n += $1 } END { print seen ? n : "-" }' "$log")
		;;
	perf)
		timeout "$limit" perf script -i "$file" -F time,event --ns 2>"$report.err" | scan "$(markers "$set")" >"$report" || rc=$?
		# "[ perf record: Captured and wrote X MB FILE (N samples) ]"
		want=$(sed -n 's/.*(\([0-9]*\) samples).*/\1/p' "$log" | tail -n 1)
		lost=$(timeout "$limit" perf report -i "$file" --stats 2>/dev/null |
			awk '/^ *LOST events:/ { n += $3 } /^ *LOST_SAMPLES events:/ { n += $3 } END { print n + 0 }') || lost=-
		;;
	trace-cmd)
		timeout "$limit" trace-cmd report -t -i "$file" 2>"$report.err" | scan "$(markers "$set")" >"$report" || rc=$?
		lost=$(timeout "$limit" trace-cmd report --stat -i "$file" 2>/dev/null |
			awk '/overrun:/ { n += $2 } END { print n + 0 }') || lost=-
		;;
	esac
	if ((rc != 0)); then
		ok=0
		why+=("reading the file failed ($rc): $(head -c 200 "$report.err" | tr '\n' ' ')")
	fi
	local events first last
	read -r _ events _ first _ last <"$report"
	if ((events == 0)); then
		ok=0
		why+=("no events in the file")
	elif [[ -n $want && $want != - && $want != "$events" ]]; then
		ok=0
		why+=("the file has $events events, the recorder wrote $want")
	elif ((last < t1 - 500000000)); then
		# The marker makes events every millisecond until the exit.
		ok=0
		why+=("the file ends $(((t1 - last) / 1000000)) ms before SIGINT")
	fi
	[[ -z $lost ]] && lost=-
	if [[ $lost != - ]] && ((lost > 0)); then
		ok=0
		local missed
		missed=$(awk '/ events were missed/ { n += $1 } END { print n + 0 }' "$log")
		if ((missed > 0)); then
			why+=("$lost events lost, of which $missed missed because another BPF program was running on their CPU")
		else
			why+=("$lost events lost")
		fi
	fi
	local att=0 name at
	while read -r _ name at; do
		if [[ $at == - ]]; then
			ok=0
			why+=("no $name event")
			att=-
		elif [[ $att != - ]] && ((at > att)); then
			att=$at
		fi
	done < <(grep '^marker ' "$report")
	if [[ $att != - ]] && ((att > t1)); then
		ok=0
		why+=("still attaching at SIGINT (raise -S)")
	fi
	if ((events > 0)) && ((first < t0)); then
		why+=("events before the start: not the mono clock?")
	fi
	sec() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'; }
	local f=- a=- b
	((events > 0)) && f=$(sec "$t0" "$first")
	[[ $att == - ]] || ((att == 0)) || a=$(sec "$t0" "$att")
	b=$(sec "$t1" "$t2")
	echo "$tool $set $f $a $(sec "$t0" "$ts") $b $events $lost $ok ${why[*]}"
}

results=$tmp/results
: >"$results"
for ((r = 0; r < rounds; r++)); do
	for set in "${run_sets[@]}"; do
		for ((i = 0; i < ${#run_tools[@]}; i++)); do
			tool=${run_tools[(i + r) % ${#run_tools[@]}]}
			echo "$prog: round $((r + 1))/$rounds: $tool -e '$set'" >&2
			res=$(measure "$tool" "$set")
			echo "$res" >>"$results"
			echo "$prog:   first event, attached, set up, back at shell (s), events, lost, ok: ${res#* * }" >&2
		done
	done
done

# version CMD...: the first line CMD prints, or "no CMD".
version() {
	local v
	v=$("$@" 2>&1 | awk 'NF { print; exit }') || true
	echo "${v:-no $1}"
}
echo "gtrace $(git -C "$repo" describe --always --dirty 2>/dev/null || echo unknown)," \
	"$(version perf --version), $(version trace-cmd --version)," \
	"Linux $(uname -r), $(nproc) CPUs; $(date +%F); $rounds rounds (medians); seconds."
echo
status=0
awk -v sets="$sets" -v tools="${run_tools[*]}" '
function median(list,    a, k, i, j, t) {
	k = split(list, a, " ")
	if (k == 0) return "-"
	for (i = 2; i <= k; i++)
		for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
}
function add(arr, key, v) { if (v != "-") arr[key] = arr[key] " " v }
{
	key = $1 SUBSEP $2
	add(F, key, $3); add(A, key, $4); add(U, key, $5); add(B, key, $6); add(E, key, $7)
	if ($8 == "-") L[key] = "-"
	else if (L[key] != "-") L[key] += $8
	if (!(key in ok)) ok[key] = 1
	if ($9 != 1) {
		ok[key] = 0
		w = $0
		for (i = 1; i <= 9; i++) sub(/^[^ ]+ /, "", w)
		if (!index(why[key], w)) why[key] = why[key] (why[key] ? "; " : "") w
	}
}
function fmt(v) { return v == "-" ? "-" : sprintf("%.3f", v) }
END {
	ns = split(sets, S, ";"); nt = split(tools, T, " ")
	print "| events | recorder | first event s | attached s | set up s | back at shell s | events in file | lost, all rounds | complete, nothing lost |"
	print "|---|---|---:|---:|---:|---:|---:|---:|---|"
	for (i = 1; i <= ns; i++) for (j = 1; j <= nt; j++) {
		key = T[j] SUBSEP S[i]
		if (!(key in ok)) continue
		att[key] = median(A[key]); back[key] = median(B[key])
		printf "| `%s` | %s | %s | %s | %s | %s | %s | %s | %s |\n", S[i], T[j], fmt(median(F[key])), fmt(att[key]),
			fmt(median(U[key])), fmt(back[key]), (E[key] == "" ? "-" : median(E[key])), (L[key] == "" ? 0 : L[key]),
			ok[key] ? "yes" : "NO"
	}
	fail = 0
	for (key in ok) if (index(key, "gtrace" SUBSEP) == 1) gtrace = 1
	if (gtrace) {
		print ""
		print "| target | measured | result |"
		print "|---|---:|---|"
	}
	g = "gtrace" SUBSEP "sched:*"; p = "perf" SUBSEP "sched:*"
	if ((g in ok) && (p in ok))
		fail += target("`sched:*` attached: gtrace <= perf", att[g] != "-" && att[p] != "-" ? sprintf("%.3f <= %.3f", att[g], att[p]) : "-",
			att[g] != "-" && att[p] != "-" && att[g] <= att[p], ok[g])
	g = "gtrace" SUBSEP "*:*"
	if (g in ok)
		fail += target("`*:*` attached <= 10 s", fmt(att[g]), att[g] != "-" && att[g] <= 10, ok[g])
	for (i = 1; i <= ns; i++) {
		g = "gtrace" SUBSEP S[i]
		if (!(g in ok)) continue
		fail += target("`" S[i] "` back at the shell <= 2 s, complete file, nothing lost", fmt(back[g]),
			back[g] != "-" && back[g] <= 2, ok[g])
	}
	for (i = 1; i <= ns; i++) for (j = 1; j <= nt; j++) {
		key = T[j] SUBSEP S[i]
		if ((key in ok) && !ok[key]) printf "\nNote: %s -e %s: %s.\n", T[j], S[i], why[key]
	}
	exit fail > 0
}
# target prints a target row: PASS when met is true and the runs it is
# measured from were whole (ok), FAIL with the reason otherwise.
function target(name, measured, met, ok) {
	printf "| %s | %s | %s |\n", name, measured, !met ? "FAIL" : ok ? "PASS" : "FAIL (see the note)"
	return !(met && ok)
}' "$results" || status=$?
for n in "${notes[@]}"; do
	echo
	echo "Note: $n"
done
exit "$status"

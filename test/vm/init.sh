#!/bin/busybox sh
# /init of the oracle guest: mounts what gtrace needs, runs the cases of
# /cases (those named in gtrace.cases= on the kernel command line, or all)
# through the kernel's tracefs and through gtrace, prints both outputs in
# base64 between markers on the console, and powers off. See doc.go.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
mount -t tracefs tracefs /sys/kernel/tracing
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
dmesg -n 1
T=/sys/kernel/tracing
PID=5000 # the workload's process id (vmload -pid), so keys on common_pid match

up() { read -r u _ </proc/uptime; echo "$u"; }
trim() { echo "$1" | sed 's/^ *//; s/ *$//'; }
# write_defs DEFS FILE: appends each line of the file DEFS to the tracefs
# FILE (synthetic_events, kprobe_events) as a kernel user would; each
# refused one sets krc=1 and adds the error_log to /tmp/k.err.
write_defs() {
	krc=0
	while read -r d; do
		if ! echo "$d" >>"$2" 2>>/tmp/k.err; then
			krc=1
			cat $T/error_log >>/tmp/k.err
		fi
	done <"$1"
}
emit() { # emit WHAT RC FILE
	echo "=== $1 rc=$2"
	base64 <"$3"
	echo "=== ."
}

echo "=== BOOT uptime=$(up) kernel=$(uname -r)"
want=$(sed -n 's/.*gtrace\.cases=\([^ ]*\).*/\1/p' /proc/cmdline | tr , ' ')

# older A B: whether kernel release A (6.1.0-56-amd64) is older than B (6.12).
older() {
	echo "$1 $2" | awk '{ split($1, a, /[.-]/); split($2, b, /[.-]/)
		exit !(a[1] < b[1] || (a[1] == b[1] && a[2] < b[2])) }'
}

# plan ARGS: gtrace ARGS --dry-run, which says where each program runs, as
# PLAN: its comment lines and the names and types of its programs, not
# their instructions; of the events of syscalls:*, only the first.
plan() {
	gtrace "$@" --dry-run >/tmp/p.all 2>/tmp/p.err
	prc=$?
	grep -E '^(#|gtrace_[a-z0-9_]* \()' /tmp/p.all | awk '
		/^# gtrace_[a-z0-9_]*: syscalls:/ { if (n++) next }
		{ print }
		END { if (n > 1) printf "# (and %d more events of syscalls)\n", n - 1 }' >/tmp/p.out
	emit PLAN $prc /tmp/p.out
	emit PLAN-STDERR 0 /tmp/p.err
	rm -f /tmp/p.all
}

# plan_case: TRIGGER is "plan SUBCOMMAND ARGS", run as gtrace SUBCOMMAND
# -e EVENT... ARGS --dry-run, with an -e for each word of EVENT.
plan_case() {
	set -f # syscalls:* is a pattern of gtrace's
	set -- ${trig#plan}
	sub=$1
	shift
	evs=
	for e in $event; do evs="$evs -e $e"; done
	# shellcheck disable=SC2086 # evs are words
	plan "$sub" $evs "$@"
	set +f
}

# hist_case: the trigger through the kernel's tracefs, then through gtrace.
hist_case() {
	# The kernel: the trigger, the workload, the hist file.
	: >/tmp/k.out
	echo >$T/error_log 2>/dev/null
	if echo "$trig" >"$dir/trigger" 2>/tmp/k.err; then
		vmload -pid $PID $ops >>/tmp/k.err 2>&1
		krc=$?
		cat "$dir/hist" >/tmp/k.out
		echo "!$trig" >"$dir/trigger"
	else
		krc=$?
		cat $T/error_log >>/tmp/k.err
	fi
	echo "=== KERNEL-TIME uptime=$(up)"
	emit KERNEL $krc /tmp/k.out
	emit KERNEL-STDERR 0 /tmp/k.err

	# gtrace: the same trigger string and workload.
	# shellcheck disable=SC2086 # ops are words
	# vmload exits 75 when a thread of gtrace took $PID: run it again.
	for try in 1 2 3; do
		gtrace hist -e "$event" "$trig" -- vmload -pid $PID $ops >/tmp/g.out 2>/tmp/g.err
		grc=$?
		[ $grc = 75 ] || break
	done
	case $name in selftest-*)
		# A test of the test: one more space in one padded column.
		awk '!d && /hitcount: / { sub(/hitcount: /, "hitcount:  "); d = 1 } { print }' /tmp/g.out >/tmp/g.bad
		mv /tmp/g.bad /tmp/g.out
		;;
	esac
	echo "=== GTRACE-TIME uptime=$(up)"
	emit GTRACE $grc /tmp/g.out
	emit GTRACE-STDERR 0 /tmp/g.err
}

# read_hists DIR: the hist files of the events of /tmp/m.list ("EVENT
# TRIGGER" lines) under the tracefs (or instance) DIR, in order of first
# mention, two blank lines apart, to /tmp/k.out.
read_hists() {
	n=0
	for e in $(awk '!s[$1]++ { print $1 }' /tmp/m.list); do
		[ $n = 0 ] || printf '\n\n' >>/tmp/k.out
		cat "$1/events/${e%%:*}/${e#*:}/hist" >>/tmp/k.out
		n=1
	done
}

# remove_triggers DIR: the triggers of /tmp/m.list removed, newest first.
remove_triggers() {
	sed -n '1!G;h;$p' /tmp/m.list | while read -r e t; do
		echo "!$t" >>"$1/events/${e%%:*}/${e#*:}/trigger" 2>/dev/null
	done
}

# multi_case: several hist triggers, TRIGGER "T1 ;; T2 ...", the i-th on
# the i-th word of EVENT (an event may repeat): through the kernel, each
# written to its event's trigger file in order and the hist file of each
# event read once, in order of first mention, two newlines between files
# as between the hists of one file (appended: a write that truncates the
# trigger file removes the event's hist triggers); through gtrace, one run with an -e
# and its string for each, a trigger other than a hist (enable_hist...) as
# an -R after the -e before it, which must be of its event.
multi_case() {
	: >/tmp/k.out
	: >/tmp/k.err
	: >/tmp/m.list
	echo >$T/error_log 2>/dev/null
	rest="$trig ;;"
	for e in $event; do
		echo "$e $(trim "${rest%%;;*}")" >>/tmp/m.list
		rest=${rest#*;;}
	done
	krc=0
	while read -r e t; do
		if ! echo "$t" >>"$T/events/${e%%:*}/${e#*:}/trigger" 2>>/tmp/k.err; then
			krc=1
			cat $T/error_log >>/tmp/k.err
			break
		fi
	done </tmp/m.list
	if [ $krc = 0 ]; then
		vmload -pid $PID $ops >>/tmp/k.err 2>&1
		krc=$?
		read_hists $T
	fi
	remove_triggers $T
	echo "=== KERNEL-TIME uptime=$(up)"
	emit KERNEL $krc /tmp/k.out
	emit KERNEL-STDERR 0 /tmp/k.err

	set --
	while read -r e t; do
		case $t in
		hist*) set -- "$@" -e "$e" "$t" ;;
		*) set -- "$@" -R "$t" ;;
		esac
	done </tmp/m.list
	# shellcheck disable=SC2086 # ops are words
	for try in 1 2 3; do
		gtrace hist "$@" -- vmload -pid $PID $ops >/tmp/g.out 2>/tmp/g.err
		grc=$?
		[ $grc = 75 ] || break
	done
	echo "=== GTRACE-TIME uptime=$(up)"
	emit GTRACE $grc /tmp/g.out
	emit GTRACE-STDERR 0 /tmp/g.err
}

# record_gtrace ARGS...: gtrace record ARGS of vmload (again when another
# process took $PID: exit 75), trace-cmd report of its file (of its first
# snapshot when $snap is set) as GTRACE; then gtrace report of the
# kernel's /tmp/k.dat as REPORT, which must print what trace-cmd report
# prints.
record_gtrace() {
	: >/tmp/g.out
	# shellcheck disable=SC2086 # ops are words
	for try in 1 2 3; do
		gtrace record "$@" -o /tmp/g.dat -- vmload -pid $PID $ops >/tmp/g.err 2>&1
		grc=$?
		[ $grc = 75 ] || break
	done
	if [ $grc = 0 ]; then
		gfile=/tmp/g.dat
		[ -z "$snap" ] || gfile=/tmp/g.snapshot-1.dat
		trace-cmd report $gfile >/tmp/g.out 2>>/tmp/g.err
		grc=$?
	fi
	echo "=== GTRACE-TIME uptime=$(up)"
	emit GTRACE $grc /tmp/g.out
	emit GTRACE-STDERR 0 /tmp/g.err
	gtrace report /tmp/k.dat >/tmp/r.out 2>/tmp/r.err
	emit REPORT $? /tmp/r.out
	emit REPORT-STDERR 0 /tmp/r.err
	rm -f /tmp/k.dat /tmp/g.dat /tmp/g.snapshot-*.dat
}

# live_case: TRIGGER "session-live DEF ,, DEF ## T1 ;; T2 ...": a session
# case run live: the kernel's hists of the workload alone (no trace-cmd),
# against gtrace hist --synth DEF... -e EVENT -R Ti... -- vmload on the
# same workload. Its values must come from the workload's own events and
# fields: the two runs are not the same events, and their clocks differ.
live_case() {
	live=1
	session_case
	live=
}

# concurrent_case: TRIGGER "session-concurrent DEF ,, DEF ## T1 ;; T2 ...":
# a session case run live on both sides at once: the kernel's definitions
# and triggers are installed, and the workload runs once, under gtrace
# hist --synth DEF... -e EVENT -R Ti... -- vmload, which releases it once
# its programs are attached; the kernel's hists and gtrace's saw the same
# events. Both filter to the workload's pid: the kernel sees gtrace's
# threads too, and gtrace leaves itself out.
# gtrace refuses a --synth of a synthetic event the kernel has, so its
# synthetic events are g_NAME, and its output is given the kernel's names
# back (its trigger info lines name them).
concurrent_case() {
	concurrent=1
	session_case
	concurrent=
}

# gsynth SED: the sed script that names each synthetic event NAME of
# /tmp/s.defs g_NAME (SED to) or back (SED back).
gsynth() {
	while read -r d; do
		n=$(trim "$d")
		n=${n%% *}
		[ -n "$n" ] || continue
		if [ "$1" = to ]; then
			echo "s/^$n /g_$n /; s/^synthetic:$n /synthetic:g_$n /; s/\.$n(/.g_$n(/g; s/trace($n,/trace(g_$n,/g"
		else
			echo "s/\.g_$n(/.$n(/g; s/trace(g_$n,/trace($n,/g"
		fi
	done </tmp/s.defs
}

# session_gtrace ARGS...: gtrace hist -q ARGS with the session's --synth
# DEF (/tmp/s.defs) and -e EVENT -R Ti (/tmp/m.list), then -- $gcmd when
# gcmd is set (run again while it exits 75: a thread took $PID), to
# /tmp/g.out and /tmp/g.err, its status in grc.
session_gtrace() {
	defs=/tmp/s.defs list=/tmp/m.list
	if [ -n "$concurrent" ]; then
		gsynth to >/tmp/g.sed
		sed 's/^ *//' /tmp/s.defs | sed -f /tmp/g.sed >/tmp/g.defs
		sed -f /tmp/g.sed /tmp/m.list >/tmp/g.list
		defs=/tmp/g.defs list=/tmp/g.list
	fi
	while read -r d; do
		d=$(trim "$d")
		[ -n "$d" ] && set -- "$@" --synth "$d"
	done <$defs
	while read -r e t; do
		set -- "$@" -e "$e" -R "$t"
	done <$list
	if [ -z "$gcmd" ]; then
		gtrace hist -q "$@" >/tmp/g.out 2>/tmp/g.err
		grc=$?
		return
	fi
	for try in 1 2 3; do
		# shellcheck disable=SC2086 # gcmd is words
		gtrace hist -q "$@" -- $gcmd >/tmp/g.out 2>/tmp/g.err
		grc=$?
		[ $grc = 75 ] || break
	done
	if [ -n "$concurrent" ]; then
		gsynth back >/tmp/g.sed
		sed -f /tmp/g.sed /tmp/g.out >/tmp/g.back
		mv /tmp/g.back /tmp/g.out
	fi
}

# session_case: TRIGGER "session DEF ,, DEF ## T1 ;; T2 ...": inter-event
# hists. The kernel: the definitions appended to synthetic_events, the
# i-th Ti to the trigger file of the i-th word of EVENT (synthetic:NAME
# for a synthetic event), in order; the workload runs once, recorded by
# trace-cmd record -C mono (the events of EVENT that are not synthetic);
# the hist files are read in order of first mention, then the triggers
# (newest first) and the definitions removed. A case with snapshot()
# puts its triggers in an instance, whose buffer the snapshot swaps, not
# the top one trace-cmd records (its time stamps are then the instance's:
# such a case compares none). gtrace: gtrace hist -i of
# that recording, with --synth DEF for each and -e EVENT -R Ti for each,
# must print the same hists: the same events, the same time stamps.
session_case() {
	rest=${trig#session}
	rest=${rest#-live}
	rest=${rest#-concurrent}
	echo "${rest%%##*}" | sed 's/ ,, /\n/g' >/tmp/s.defs
	rest="${rest#*##} ;;"
	: >/tmp/k.out
	: >/tmp/k.err
	: >/tmp/m.list
	echo >$T/error_log 2>/dev/null
	for e in $event; do
		echo "$e $(trim "${rest%%;;*}")" >>/tmp/m.list
		rest=${rest#*;;}
	done
	# A snapshot() swaps the buffer it is in: its hists go to an instance,
	# so that the top buffer trace-cmd records keeps every record.
	tdir=$T
	case $trig in *'snapshot()'*)
		mkdir $T/instances/session
		tdir=$T/instances/session
		;;
	esac
	sed -i 's/^ *//; s/ *$//; /^$/d' /tmp/s.defs
	write_defs /tmp/s.defs $T/synthetic_events
	if [ $krc = 0 ]; then
		while read -r e t; do
			if ! echo "$t" >>"$tdir/events/${e%%:*}/${e#*:}/trigger" 2>>/tmp/k.err; then
				krc=1
				cat $T/error_log >>/tmp/k.err
				break
			fi
		done </tmp/m.list
	fi
	set --
	for e in $(awk '!s[$1]++ { print $1 }' /tmp/m.list); do
		case $e in synthetic:*) ;; *) set -- "$@" -e "$e" ;; esac
	done
	if [ $krc = 0 ]; then
		# shellcheck disable=SC2086 # ops are words
		for try in 1 2 3; do
			if [ -n "$concurrent" ]; then
				gcmd="vmload -pid $PID $ops"
				session_gtrace
				krc=$grc # the workload's status: gtrace exits with it
				break
			elif [ -n "$live" ]; then
				vmload -pid $PID $ops >>/tmp/k.err 2>&1
			else
				trace-cmd record -q -C mono "$@" -o /tmp/k.dat vmload -pid $PID $ops >>/tmp/k.err 2>&1
			fi
			krc=$?
			[ $krc = 75 ] || break
		done
		read_hists $tdir
	fi
	remove_triggers $tdir
	[ $tdir = $T ] || rmdir $tdir
	while read -r d; do
		d=$(trim "$d")
		[ -n "$d" ] && echo "!${d%% *}" >>$T/synthetic_events 2>/dev/null
	done </tmp/s.defs
	echo "=== KERNEL-TIME uptime=$(up)"
	emit KERNEL $krc /tmp/k.out
	emit KERNEL-STDERR 0 /tmp/k.err

	if [ -n "$live" ]; then
		gcmd="vmload -pid $PID $ops"
		session_gtrace
	elif [ -z "$concurrent" ]; then
		gcmd=
		session_gtrace -i /tmp/k.dat
	fi
	echo "=== GTRACE-TIME uptime=$(up)"
	emit GTRACE $grc /tmp/g.out
	emit GTRACE-STDERR 0 /tmp/g.err
}

# record_case: the events recorded by trace-cmd and by gtrace record, both
# printed by trace-cmd report (KERNEL, GTRACE); and trace-cmd's recording
# printed by gtrace report (REPORT), which must equal KERNEL.
record_case() {
	filter=$(trim "${trig#record}")
	# "record FILTER ... -K DEF [,, DEF...]": a probe event, the
	# kernel's from each DEF written to kprobe_events (a multi-probe
	# event: one name at several places), gtrace's from --probe DEF...
	pdef=
	case $filter in *" -K "*)
		pdef=${filter#* -K }
		filter=${filter%% -K *}
		;;
	esac
	: >/tmp/k.defs
	rest=
	[ -z "$pdef" ] || rest="$pdef ,,"
	while [ -n "$(trim "$rest")" ]; do
		trim "${rest%%,,*}" >>/tmp/k.defs
		rest=${rest#*,,}
	done
	while IFS= read -r d; do
		echo "$d" >>$T/kprobe_events
	done </tmp/k.defs
	# "record FILTER -P PROTO": a kernel function event, which the kernel
	# does not have (docs/funcevent.md): gtrace records it on the
	# function's kprobe, the kernel's BTF hidden, in the kernel's place,
	# and on its fentry. A "!" in PROTO stands for its "|", which
	# separates the columns of the cases file.
	case $filter in *" -P "*)
		proto=$(echo "${filter#* -P }" | tr '!' '|')
		filter=${filter%% -P *}
		funcevent_case
		return
		;;
	esac
	# "record FILTER -R TRIGGER": the trigger too, on both sides.
	rtrig=
	case $filter in *" -R "*)
		rtrig=${filter#* -R }
		filter=${filter%% -R *}
		;;
	esac
	set --
	[ -n "$rtrig" ] && set -- -R "$rtrig"
	: >/tmp/k.out
	# shellcheck disable=SC2086 # ops are words
	for try in 1 2 3; do
		trace-cmd record -q -e "$event" -f "$filter" "$@" -o /tmp/k.dat vmload -pid $PID $ops >/tmp/k.err 2>&1
		krc=$?
		[ $krc = 75 ] || break
	done
	if [ $krc = 0 ]; then
		trace-cmd report /tmp/k.dat >/tmp/k.out 2>>/tmp/k.err
		krc=$?
	fi
	echo "=== KERNEL-TIME uptime=$(up)"
	emit KERNEL $krc /tmp/k.out
	emit KERNEL-STDERR 0 /tmp/k.err
	snap=
	if [ -n "$pdef" ]; then
		# gtrace defines the event itself: the kernel's goes first.
		: >$T/kprobe_events
		while IFS= read -r d; do
			set -- "$@" --probe "$d"
		done </tmp/k.defs
		# Where gtrace puts the probe: fentry, fexit or kprobe, and why.
		plan record -e "$event" -f "$filter" "$@"
	fi
	record_gtrace -e "$event" -f "$filter" "$@"
}

# funcevent_case: record_case's "-P PROTO": gtrace record --funcevent
# PROTO on the kprobe (BTF hidden: KERNEL, its plan's lines in
# KERNEL-STDERR) and on fentry (GTRACE, with its PLAN).
funcevent_case() {
	mount -t tmpfs nobtf /sys/kernel/btf
	gtrace record --funcevent "$proto" -e "$event" -f "$filter" --dry-run 2>&1 | grep '^# gtrace_rec' >/tmp/k.plan
	# shellcheck disable=SC2086 # ops are words
	for try in 1 2 3; do
		gtrace record --funcevent "$proto" -e "$event" -f "$filter" -o /tmp/k.dat -- vmload -pid $PID $ops >/tmp/k.err 2>&1
		krc=$?
		[ $krc = 75 ] || break
	done
	umount /sys/kernel/btf
	cat /tmp/k.plan >>/tmp/k.err
	: >/tmp/k.out
	if [ $krc = 0 ]; then
		trace-cmd report /tmp/k.dat >/tmp/k.out 2>>/tmp/k.err
		krc=$?
	fi
	echo "=== KERNEL-TIME uptime=$(up)"
	emit KERNEL $krc /tmp/k.out
	emit KERNEL-STDERR 0 /tmp/k.err
	snap=
	plan record --funcevent "$proto" -e "$event" -f "$filter"
	record_gtrace --funcevent "$proto" -e "$event" -f "$filter"
}

# list_case: TRIGGER is "list T1 ;; T2 ...", writes to the trigger file
# of EVENT in order. The kernel: each appended (echo 'T' >>trigger), a
# refused write noted as "write N refused", then the trigger file. gtrace:
# each write tried as gtrace trigger --list -e EVENT with the writes taken
# so far and this one, noted the same way when refused (exit 2), then the
# listing of the writes taken. Both print those lines; they must be equal.
list_case() {
	: >/tmp/k.out
	: >/tmp/k.err
	rest="${trig#list} ;;"
	: >/tmp/l.list
	while [ -n "$(trim "$rest")" ]; do
		trim "${rest%%;;*}" >>/tmp/l.list
		rest=${rest#*;;}
	done
	i=0
	while IFS= read -r t; do
		i=$((i + 1))
		echo >$T/error_log 2>/dev/null
		if ! echo "$t" >>"$dir/trigger" 2>>/tmp/k.err; then
			echo "write $i refused" >>/tmp/k.out
			cat $T/error_log >>/tmp/k.err
		fi
	done </tmp/l.list
	cat "$dir/trigger" >>/tmp/k.out
	krc=$?
	# Remove what is left: each write undone, newest first, and the hists
	# by a truncating write; an event that fired a traceoff leaves
	# tracing off.
	sed -n '1!G;h;$p' /tmp/l.list | while IFS= read -r t; do
		echo "!$t" >>"$dir/trigger" 2>/dev/null
	done
	: >"$dir/trigger"
	echo 1 >$T/tracing_on
	: >$T/trace
	if [ "$(grep -vc '^#' "$dir/trigger")" != 0 ]; then
		echo "triggers left after the case:" >>/tmp/k.err
		cat "$dir/trigger" >>/tmp/k.err
	fi
	echo "=== KERNEL-TIME uptime=$(up)"
	emit KERNEL $krc /tmp/k.out
	emit KERNEL-STDERR 0 /tmp/k.err

	: >/tmp/g.out
	: >/tmp/g.err
	grc=0
	set --
	i=0
	while IFS= read -r t; do
		i=$((i + 1))
		gtrace trigger --list -e "$event" "$@" "$t" >/dev/null 2>>/tmp/g.err
		case $? in
		0) set -- "$@" "$t" ;;
		2) echo "write $i refused" >>/tmp/g.out ;;
		*) grc=1 ;;
		esac
	done </tmp/l.list
	if [ $# -gt 0 ]; then
		gtrace trigger --list -e "$event" "$@" >>/tmp/g.out 2>>/tmp/g.err || grc=$?
	else
		cat "$dir/trigger" >>/tmp/g.out # nothing taken: the empty file
	fi
	echo "=== GTRACE-TIME uptime=$(up)"
	emit GTRACE $grc /tmp/g.out
	emit GTRACE-STDERR 0 /tmp/g.err
}

# effect_case: TRIGGER is "effect FILTER ;; T1 ;; T2 ..." (or effect-off:
# tracing starts off). The first word of EVENT carries the triggers;
# every word of EVENT is enabled with FILTER; the target of an
# enable_event that EVENT does not name is left to the trigger (soft
# disabled, no filter). The kernel: the triggers written straight to the
# trigger file, the events enabled, tracing_on set (or not), vmload, then
# trace-cmd extract and trace-cmd report. gtrace: gtrace record -e EVENT
# -f FILTER -R T... [--start-off], then trace-cmd report; as a record case,
# gtrace report of the kernel's file too.
effect_case() {
	rest="${trig#effect} ;;"
	startoff=
	case $rest in -off*)
		startoff=--start-off
		rest=${rest#-off}
		;;
	esac
	filter=$(trim "${rest%%;;*}")
	rest=${rest#*;;}
	: >/tmp/l.list
	while [ -n "$(trim "$rest")" ]; do
		trim "${rest%%;;*}" >>/tmp/l.list
		rest=${rest#*;;}
	done
	first=${event%% *}
	fdir=$T/events/${first%%:*}/${first#*:}
	: >/tmp/k.out
	: >/tmp/k.err
	echo 0 >$T/tracing_on
	: >$T/trace
	krc=0
	for e in $event; do
		echo "$filter" >"$T/events/${e%%:*}/${e#*:}/filter" || krc=1
	done
	while IFS= read -r t; do
		echo "$t" >>"$fdir/trigger" 2>>/tmp/k.err || krc=1
	done </tmp/l.list
	for e in $event; do
		echo 1 >"$T/events/${e%%:*}/${e#*:}/enable" || krc=1
	done
	[ -n "$startoff" ] || echo 1 >$T/tracing_on
	if [ $krc = 0 ]; then
		# shellcheck disable=SC2086 # ops are words
		vmload -pid $PID $ops >>/tmp/k.err 2>&1
		krc=$?
	fi
	echo 0 >$T/tracing_on
	for e in $event; do
		echo 0 >"$T/events/${e%%:*}/${e#*:}/enable"
	done
	# The triggers go first: a hist's snapshot() holds the snapshot
	# buffer (the kernel refuses a write to snapshot while it is there).
	sed -n '1!G;h;$p' /tmp/l.list | while IFS= read -r t; do
		echo "!$t" >>"$fdir/trigger" 2>/dev/null
	done
	# With a snapshot trigger (or a hist's snapshot()), what is compared
	# is the snapshot: the kernel's snapshot buffer against gtrace's
	# first snapshot file (the kernel's main buffer lost what the swap
	# took; gtrace's file did not). A second swap (echo 1 >snapshot)
	# brings the snapshot back into the main buffer, which trace-cmd
	# extract reads (its -s takes a new snapshot first).
	snap=
	if grep -q -e '^snapshot' -e 'snapshot()' /tmp/l.list; then
		snap=1
		echo 1 >$T/snapshot 2>>/tmp/k.err || krc=1
	fi
	if [ $krc = 0 ]; then
		trace-cmd extract -o /tmp/k.dat >>/tmp/k.err 2>&1 &&
			trace-cmd report /tmp/k.dat >/tmp/k.out 2>>/tmp/k.err
		krc=$?
	fi
	[ -z "$snap" ] || echo 0 >$T/snapshot
	for e in $event; do
		echo 0 >"$T/events/${e%%:*}/${e#*:}/filter"
	done
	echo 1 >$T/tracing_on
	: >$T/trace
	echo "=== KERNEL-TIME uptime=$(up)"
	emit KERNEL $krc /tmp/k.out
	emit KERNEL-STDERR 0 /tmp/k.err

	set -- -e "$first" -f "$filter"
	while IFS= read -r t; do set -- "$@" -R "$t"; done </tmp/l.list
	for e in ${event#"$first"}; do set -- "$@" -e "$e" -f "$filter"; done
	[ -z "$startoff" ] || set -- "$@" $startoff
	record_gtrace "$@"
}

# synth_case: TRIGGER "synth DEF ,, DEF ...": the definitions written to
# synthetic_events (appended), which is then listed, then each event's
# format file without its ID line (the kernel numbers events as it makes
# them); through gtrace, gtrace synth DEF... and gtrace synth -F DEF...
# the same way. The kernel's events are removed after.
synth_case() {
	: >/tmp/k.out
	: >/tmp/k.err
	echo >$T/error_log 2>/dev/null
	echo "${trig#synth}" | sed 's/ ,, /\n/g' | while read -r d; do echo "$d"; done >/tmp/s.defs
	write_defs /tmp/s.defs $T/synthetic_events
	cat $T/synthetic_events >>/tmp/k.out
	for n in $(awk '{ print $1 }' $T/synthetic_events); do
		sed '/^ID: /d' "$T/events/synthetic/$n/format" >>/tmp/k.out
	done
	for n in $(awk '{ print $1 }' $T/synthetic_events); do
		echo "!$n" >>$T/synthetic_events
	done
	echo "=== KERNEL-TIME uptime=$(up)"
	emit KERNEL $krc /tmp/k.out
	emit KERNEL-STDERR 0 /tmp/k.err
	set --
	while read -r d; do set -- "$@" "$d"; done </tmp/s.defs
	gtrace synth "$@" >/tmp/g.out 2>/tmp/g.err
	grc=$?
	gtrace synth -F "$@" 2>>/tmp/g.err | sed '/^ID: /d' >>/tmp/g.out
	echo "=== GTRACE-TIME uptime=$(up)"
	emit GTRACE $grc /tmp/g.out
	emit GTRACE-STDERR 0 /tmp/g.err
}

# sql_case: TRIGGER "sql OPTIONS ;; STATEMENT": the kernel runs the
# commands gtrace sql --dry-run prints for the statement (the synthetic
# event and the hist triggers), which must all be taken: no write fails,
# nothing in error_log; its synthetic_events listing and the number of
# triggers each event got are printed. gtrace prints the listing of the
# same definition (gtrace synth) and the triggers it wrote. The commands
# are removed after (the triggers, then the event).
sql_case() {
	rest=${trig#sql}
	opts=$(trim "${rest%%;;*}")
	stmt=$(trim "${rest#*;;}")
	: >/tmp/k.out
	: >/tmp/k.err
	krc=0
	# shellcheck disable=SC2086 # opts are words
	gtrace sql --dry-run $opts "$stmt" >/tmp/sql.sh 2>/tmp/k.err || krc=1
	echo >$T/error_log 2>/dev/null
	sh -e /tmp/sql.sh 2>>/tmp/k.err || krc=1
	cat $T/error_log >>/tmp/k.err
	[ -s $T/error_log ] && krc=1
	cat $T/synthetic_events >>/tmp/k.out
	grep -o "events/[a-z_0-9]*/[a-z_0-9]*/trigger" /tmp/sql.sh | sort -u | while read -r f; do
		echo "$f: $(grep -vc '^#' "$T/$f") triggers" >>/tmp/k.out
	done
	# The triggers removed as written, newest first (a hist whose
	# variables another one reads cannot go before it).
	sed -n '1!G;h;$p' /tmp/sql.sh | sed -n "s/^echo '\(hist:[^']*\)' >> .*\/\(events\/[a-z_0-9]*\/[a-z_0-9]*\/trigger\)$/\2 \1/p" |
		while read -r f t; do
			echo "!$t" >>"$T/$f" 2>>/tmp/k.err
		done
	for n in $(awk '{ print $1 }' $T/synthetic_events); do
		echo "!$n" >>$T/synthetic_events
	done
	echo "=== KERNEL-TIME uptime=$(up)"
	emit KERNEL $krc /tmp/k.out
	emit KERNEL-STDERR 0 /tmp/k.err
	: >/tmp/g.out
	: >/tmp/g.err
	def=$(sed -n "s/^echo 's:\([^']*\)' >>.*dynamic_events$/\1/p" /tmp/sql.sh)
	gtrace synth "$def" >/tmp/g.out 2>/tmp/g.err
	grc=$?
	grep -o "events/[a-z_0-9]*/[a-z_0-9]*/trigger" /tmp/sql.sh | sort | uniq -c | while read -r n f; do
		echo "$f: $n triggers" >>/tmp/g.out
	done
	echo "=== GTRACE-TIME uptime=$(up)"
	emit GTRACE $grc /tmp/g.out
	emit GTRACE-STDERR 0 /tmp/g.err
}

# kprobe_case: TRIGGER "kprobe DEF ,, DEF ...": the definitions appended
# to kprobe_events, which is then listed, then each event's format file
# without its ID line; through gtrace, gtrace kprobe --list DEF... and
# gtrace kprobe -F DEF... the same way. The kernel's events are removed
# after.
kprobe_case() {
	: >/tmp/k.out
	: >/tmp/k.err
	echo "${trig#kprobe}" | sed 's/ ,, /\n/g' | while read -r d; do echo "$d"; done >/tmp/p.defs
	echo >$T/error_log 2>/dev/null
	write_defs /tmp/p.defs $T/kprobe_events
	cat $T/kprobe_events >>/tmp/k.out
	for ev in $(sed 's/^[pr][0-9]*:\([^ ]*\) .*/\1/' $T/kprobe_events); do
		sed '/^ID: /d' "$T/events/$ev/format" >>/tmp/k.out
	done
	for ev in $(sed 's/^[pr][0-9]*:\([^ ]*\) .*/\1/' $T/kprobe_events); do
		echo "-:$ev" >>$T/kprobe_events
	done
	echo "=== KERNEL-TIME uptime=$(up)"
	emit KERNEL $krc /tmp/k.out
	emit KERNEL-STDERR 0 /tmp/k.err
	set --
	while read -r d; do set -- "$@" "$d"; done </tmp/p.defs
	gtrace kprobe --list "$@" >/tmp/g.out 2>/tmp/g.err
	grc=$?
	gtrace kprobe -F "$@" 2>>/tmp/g.err | sed '/^ID: /d' >>/tmp/g.out
	echo "=== GTRACE-TIME uptime=$(up)"
	emit GTRACE $grc /tmp/g.out
	emit GTRACE-STDERR 0 /tmp/g.err
}

while IFS='|' read -r name event trig ops min; do
	name=$(trim "$name")
	case $name in '' | '#'*) continue ;; esac
	if [ -n "$want" ]; then
		case " $want " in *" $name "*) ;; *) continue ;; esac
	fi
	event=$(trim "$event") trig=$(trim "$trig") ops=$(trim "$ops") min=$(trim "$min")
	if [ -n "$min" ] && older "$(uname -r)" "$min"; then
		echo "=== SKIP $name needs kernel $min"
		continue
	fi
	trig=$(echo "$trig" | sed "s/\\\$PID/$PID/g")
	kind=hist
	case $trig in record*) kind=record ;; plan*) kind=plan ;; synth*) kind=synth ;; kprobe*) kind=kprobe ;; sql*) kind=sql ;; session-live*) kind=live ;; session-concurrent*) kind=concurrent ;; session*) kind=session ;; list*) kind=list ;; effect*) kind=effect ;; *';;'*) kind=multi ;; esac
	echo "=== CASE $name uptime=$(up) kind=$kind"
	dir=$T/events/${event%%:*}/${event#*:}
	case $name in nobtf-*)
		# A kernel without CONFIG_DEBUG_INFO_BTF: no /sys/kernel/btf/vmlinux.
		mount -t tmpfs nobtf /sys/kernel/btf
		case $kind in
		hist) plan hist -e "$event" "$trig" ;;
		record) plan record -e "$event" -f "$(trim "${trig#record}")" ;;
		esac
		;;
	esac
	${kind}_case
	case $name in nobtf-*) umount /sys/kernel/btf ;; esac
	echo "=== END $name uptime=$(up)"
done </cases

echo "=== DONE uptime=$(up)"
sync
poweroff -f

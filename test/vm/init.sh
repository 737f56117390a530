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
emit() { # emit WHAT RC FILE
	echo "=== $1 rc=$2"
	base64 <"$3"
	echo "=== ."
}

echo "=== BOOT uptime=$(up) kernel=$(uname -r)"
# How gtrace attaches on this kernel (its fallbacks say so here).
for ev in raw_syscalls:sys_enter syscalls:sys_enter_lseek; do
	gtrace hist -e $ev -k common_pid --dry-run 2>&1 | grep '^# on ' | sed "s/^/=== PLAN $ev /"
done
want=$(sed -n 's/.*gtrace\.cases=\([^ ]*\).*/\1/p' /proc/cmdline | tr , ' ')

# older A B: whether kernel release A (6.1.0-56-amd64) is older than B (6.12).
older() {
	echo "$1 $2" | awk '{ split($1, a, /[.-]/); split($2, b, /[.-]/)
		exit !(a[1] < b[1] || (a[1] == b[1] && a[2] < b[2])) }'
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

# record_case: the events recorded by trace-cmd and by gtrace record, both
# printed by trace-cmd report (KERNEL, GTRACE); and trace-cmd's recording
# printed by gtrace report (REPORT), which must equal KERNEL.
record_case() {
	filter=$(trim "${trig#record}")
	: >/tmp/k.out
	# shellcheck disable=SC2086 # ops are words
	for try in 1 2 3; do
		trace-cmd record -q -e "$event" -f "$filter" -o /tmp/k.dat vmload -pid $PID $ops >/tmp/k.err 2>&1
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
	: >/tmp/g.out
	# shellcheck disable=SC2086 # ops are words
	for try in 1 2 3; do
		gtrace record -e "$event" -f "$filter" -o /tmp/g.dat -- vmload -pid $PID $ops >/tmp/g.err 2>&1
		grc=$?
		[ $grc = 75 ] || break
	done
	if [ $grc = 0 ]; then
		trace-cmd report /tmp/g.dat >/tmp/g.out 2>>/tmp/g.err
		grc=$?
	fi
	echo "=== GTRACE-TIME uptime=$(up)"
	emit GTRACE $grc /tmp/g.out
	emit GTRACE-STDERR 0 /tmp/g.err
	gtrace report /tmp/k.dat >/tmp/r.out 2>/tmp/r.err
	emit REPORT $? /tmp/r.out
	emit REPORT-STDERR 0 /tmp/r.err
	rm -f /tmp/k.dat /tmp/g.dat
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
	case $trig in record*) kind=record ;; esac
	echo "=== CASE $name uptime=$(up) kind=$kind"
	dir=$T/events/${event%%:*}/${event#*:}
	${kind}_case
	echo "=== END $name uptime=$(up)"
done </cases

echo "=== DONE uptime=$(up)"
sync
poweroff -f

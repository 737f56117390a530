#!/usr/bin/env bash
# Boots a Debian kernel in QEMU with gtrace and runs the oracle cases in it.
#
#   test/vm/run.sh [-k KERNEL] [-c CASE,...] [-l LOG]
#
# KERNEL is a series (6.1, 6.12: the newest linux-image-SERIES.*-amd64 the
# apt sources have) or a package name (linux-image-6.1.0-56-amd64); 6.1 by
# default. CASE names cases of test/vm/cases (all by default). The console
# goes to LOG; test/vm's Go test parses and compares it.
# Installs qemu-system-x86, busybox-static and trace-cmd with apt-get when
# missing.
# Caches the kernels and images in ${XDG_CACHE_HOME:-$HOME/.cache}/gtrace-vm
# (GTRACE_VM_CACHE); the image is rebuilt only when its inputs change.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cache=${GTRACE_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gtrace-vm}
kernel=6.1 cases= log=
while getopts k:c:l: o; do
	case $o in
	k) kernel=$OPTARG ;;
	c) cases=$OPTARG ;;
	l) log=$OPTARG ;;
	*) exit 2 ;;
	esac
done
mkdir -p "$cache"
[ -n "$log" ] || log=$cache/console.log
now() { date +%s.%N; }
took() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }

# Tools.
need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
dpkg -s busybox-static >/dev/null 2>&1 || need+=(busybox-static)
command -v trace-cmd >/dev/null || need+=(trace-cmd)
if [ ${#need[@]} -gt 0 ]; then
	echo "run.sh: installing ${need[*]}" >&2
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# The kernel: Debian's package, unpacked into the cache, never installed.
case $kernel in
linux-image-*) pkg=$kernel ;;
*)
	# linux-image-6.1.0-56-amd64, linux-image-6.12.117+deb12-amd64; not -rt-, -cloud-
	re="^linux-image-${kernel//./\\.}\\.[0-9][^-]*(-[0-9]+)?-amd64\$"
	pkg=$(apt-cache search --names-only "$re" | awk '{ print $1 }' | sort -V | tail -n 1)
	if [ -z "$pkg" ]; then # offline: the newest one in the cache
		pkg=$(find "$cache/kernels" -maxdepth 1 -name "linux-image-$kernel.*" -printf '%f\n' 2>/dev/null | sort -V | tail -n 1)
	fi
	[ -n "$pkg" ] || { echo "run.sh: no package matches $re (apt-get update?)" >&2; exit 1; }
	;;
esac
kdir=$cache/kernels/$pkg
if [ ! -s "$kdir/vmlinuz" ]; then
	t=$(now)
	tmp=$(mktemp -d "$cache/dl.XXXXXX")
	(cd "$tmp" && apt-get download -q "$pkg" >&2)
	dpkg -x "$tmp"/*.deb "$tmp/x"
	mkdir -p "$kdir"
	cp "$tmp"/x/boot/vmlinuz-* "$kdir/vmlinuz"
	cp "$tmp"/x/boot/config-* "$kdir/config"
	rm -rf "$tmp"
	echo "run.sh: fetched $pkg ($(took "$t"))" >&2
fi

# The image: busybox, gtrace, vmload, trace-cmd and its libraries and
# plugins, /init and the cases.
t=$(now)
b=$cache/build
rm -rf "$b/root"
mkdir -p "$b/root"/{bin,proc,sys,dev,tmp}
(cd "$root" && CGO_ENABLED=0 go build -o "$b/root/bin/gtrace" . && CGO_ENABLED=0 go build -o "$b/root/bin/vmload" ./test/vm/vmload)
cp /bin/busybox "$b/root/bin/busybox"
tc=$(command -v trace-cmd)
for f in "$tc" $(ldd "$tc" | grep -o '/[^ ]*'); do
	mkdir -p "$b/root$(dirname "$f")"
	cp -L "$f" "$b/root$f"
done
for d in /usr/lib/x86_64-linux-gnu/traceevent /usr/lib/x86_64-linux-gnu/trace-cmd; do
	[ ! -d "$d" ] || { mkdir -p "$b/root$d" && cp -rL "$d/." "$b/root$d/"; }
done
ln -sf "$tc" "$b/root/bin/trace-cmd"
cp "$here/init.sh" "$b/root/init"
cp "$here/cases" "$b/root/cases"
chmod 755 "$b/root/init"
sum=$(cd "$b/root" && find . -type f | sort | xargs sha256sum | sha256sum | cut -c1-16)
img=$cache/images/initramfs-$sum.cpio
if [ ! -s "$img" ]; then
	mkdir -p "$cache/images"
	find "$cache/images" -name 'initramfs-*.cpio' -mmin +1440 -delete
	(cd "$b/root" && find . | busybox cpio -o -H newc -R 0:0 >"$img.tmp" 2>/dev/null)
	mv "$img.tmp" "$img"
	echo "run.sh: built $(basename "$img") ($(took "$t"))" >&2
else
	echo "run.sh: image $(basename "$img") is up to date ($(took "$t"))" >&2
fi

# Boot. -smp 1: TCG is slow and the cases need one CPU.
append="console=ttyS0 quiet loglevel=1 panic=-1 rdinit=/init"
[ -z "$cases" ] || append+=" gtrace.cases=$cases"
echo "run.sh: booting $pkg" >&2
t=$(now)
rc=0
: >"$log"
timeout "${GTRACE_VM_TIMEOUT:-900}" qemu-system-x86_64 -display none -monitor none -serial stdio \
	-no-reboot -m 1G -smp 1 -kernel "$kdir/vmlinuz" -initrd "$img" -append "$append" </dev/null |
	while IFS= read -r line; do
		line=${line%$'\r'}
		printf '%s\n' "$line" >>"$log"
		case $line in "=== BOOT "*) echo "run.sh: /init started $(took "$t") after qemu started" >&2 ;; esac
	done || rc=$?
echo "run.sh: qemu exited ($(took "$t"), status $rc); console in $log" >&2

# Times, from the guest's uptime.
awk '
	/^=== BOOT / { split($3, u, "="); printf "run.sh: %s: /init started at uptime %.1f s\n", $4, u[2]; last = u[2] }
	/^=== CASE / { split($4, u, "="); start[$3] = k = u[2] }
	/^=== KERNEL-TIME / { split($3, u, "="); k = u[2] }
	/^=== END / { split($4, u, "="); n = $3
		printf "run.sh: case %-24s %.1f s (kernel %.1f s, gtrace %.1f s)\n", n, u[2] - start[n], k - start[n], u[2] - k }
	/^=== SKIP / { $1 = $2 = ""; printf "run.sh: skip %s\n", substr($0, 3) }
	/^=== DONE / { done = 1 }
	END { if (!done) { print "run.sh: the guest did not finish"; exit 1 } }
' "$log" >&2

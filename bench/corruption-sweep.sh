#!/usr/bin/env bash
# corruption-sweep.sh: the corruption sweep of internal/corrupt with more
# mutations than the test suite runs (200): truncations and byte flips of
# a gtrace and a trace-cmd recording, each read by gtrace report and
# gtrace hist -i (no panic, no hang, bounded memory, at least as much as
# trace-cmd prints). Failing mutations are kept in KEEP_DIR if given.
#
# Usage: bench/corruption-sweep.sh [-n MUTATIONS] [-s SEED] [-k KEEP_DIR]
# Exit status: 0 every mutation passed, 1 one failed, 2 bad usage.
set -euo pipefail

n=5000
seed=$(date +%s)
keep=
while getopts "n:s:k:h" opt; do
	case $opt in
	n) n=$OPTARG ;;
	s) seed=$OPTARG ;;
	k) keep=$OPTARG ;;
	*)
		echo "usage: ${0##*/} [-n MUTATIONS] [-s SEED] [-k KEEP_DIR]" >&2
		exit 2
		;;
	esac
done
cd "$(dirname "$0")/.."
echo "corruption sweep: $n mutations, seed $seed" >&2
GTRACE_SWEEP_MUTATIONS=$n GTRACE_SWEEP_SEED=$seed GTRACE_SWEEP_KEEP=$keep \
	go test -count=1 -timeout 0 -v -run '^TestCorruptionSweep$' ./internal/corrupt

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# An nbdkit server holding the corpus: resident memory before and after
# nbdcopy writes it, and a read back checked against the corpus
# (--no-extents: Debian's nbdkit 1.32 crashed when asked for extents with
# allocator=zstd).  By default nbdkit's memory plugin with allocator=zstd
# (it compresses 32 KiB at a time); bench/nbd.sh passes the others.
# VmRSS growth counts the shared libraries' pages that the first requests
# fault in (libzstd, libc: 0.3 to 1 MiB, varying from run to run and server
# to server); RssAnon growth, the process's own memory, does not.  Both are
# printed.  Prints CSV: key,value, each key starting with NAME.  With
# SETTLE=SECONDS, also the growth that many seconds after the copy, before
# the read back (NAME_rss_anon_settled_delta): what a server that
# recompresses or writes back idle pages holds once they went idle.
#
#   bench/nbdkit_memory.sh CORPUS [NAME PLUGIN [PARAMS...]]
#   (default: nbdkit_zstd memory allocator=zstd; size= is always the corpus's)
set -euo pipefail
CORPUS=${1:?usage: nbdkit_memory.sh CORPUS [NAME PLUGIN [PARAMS...]]}
NAME=${2:-nbdkit_zstd}
if (($# > 2)); then
	server=("${@:3}")
else
	server=(memory allocator=zstd)
fi
command -v nbdkit >/dev/null && command -v nbdcopy >/dev/null ||
	{ echo "skip: needs nbdkit and nbdcopy (Debian: nbdkit libnbd-bin)" >&2; exit 77; }
[ -f "$CORPUS" ] || { echo "skip: no corpus" >&2; exit 77; }
SIZE=$(stat -c %s "$CORPUS")
dir=$(mktemp -d /tmp/nbdkit-bench.XXXXXX)
trap '[ -f "$dir/pid" ] && kill "$(cat "$dir/pid")" 2>/dev/null; rm -rf "$dir"' EXIT
nbdkit -U "$dir/sock" -P "$dir/pid" "${server[@]}" size="$SIZE"
for _ in $(seq 50); do [ -S "$dir/sock" ] && [ -f "$dir/pid" ] && break; sleep 0.1; done
rss() { awk -v k="$1:" '$1 == k {print $2 * 1024}' "/proc/$(cat "$dir/pid")/status"; }
before=$(rss VmRSS)
anon_before=$(rss RssAnon)
start=$(date +%s.%N)
nbdcopy "$CORPUS" "nbd+unix:///?socket=$dir/sock"
end=$(date +%s.%N)
after=$(rss VmRSS)
anon_after=$(rss RssAnon)
if [ -n "${SETTLE:-}" ]; then
	sleep "$SETTLE"
	settled=$(rss VmRSS)
	anon_settled=$(rss RssAnon)
fi
nbdcopy --no-extents "nbd+unix:///?socket=$dir/sock" "$dir/back"
cmp -s "$CORPUS" "$dir/back" || { echo "nbdkit returned different data" >&2; exit 1; }
echo "${NAME}_rss_delta,$((after - before))"
echo "${NAME}_rss_anon_delta,$((anon_after - anon_before))"
if [ -n "${SETTLE:-}" ]; then
	echo "${NAME}_rss_settled_delta,$((settled - before))"
	echo "${NAME}_rss_anon_settled_delta,$((anon_settled - anon_before))"
fi
echo "${NAME}_bytes_per_page,$(( (after - before) / (SIZE / 4096) ))"
echo "${NAME}_write_gbs,$(awk -v s="$SIZE" -v a="$start" -v b="$end" 'BEGIN {printf "%.3f", s / (b - a) / 1e9}')"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What each FUSE setting buys zblk: sequential 1 MiB dd and 4 KiB random
# fio (two jobs, direct I/O) on the corpus, for zblk's default and one
# change at a time, with "null" (FUSE alone), nbdkit's memory plugin with
# allocator=zstd through nbdfuse, and the kernel's zram on the same jobs
# for reference.  One run, side by side; compare rows.  Where the kernel
# has FUSE over io_uring, the io_uring rows set its enable_uring parameter
# for the run and put it back.
#
#   bench/fuse_tuning.sh ZBLK CORPUS
set -euo pipefail
ZBLK=${1:?usage: fuse_tuning.sh ZBLK CORPUS}
CORPUS=${2:?usage: fuse_tuning.sh ZBLK CORPUS}
[ "$(id -u)" = 0 ] || { echo "skip: needs root"; exit 77; }
[ -c /dev/fuse ] && [ -f "$CORPUS" ] || { echo "skip: no /dev/fuse or corpus"; exit 77; }
command -v fio >/dev/null || { echo "skip: no fio"; exit 77; }
SIZE=$(stat -c %s "$CORPUS")
MNT=$(mktemp -d /tmp/zblk-tune.XXXXXX)
URING=/sys/module/fuse/parameters/enable_uring
uring_old=$(cat $URING 2>/dev/null || true)
trap 'mountpoint -q "$MNT" && fusermount3 -u "$MNT"; rmdir "$MNT"
	[ -n "$uring_old" ] && echo "$uring_old" >$URING' EXIT

gbs() { dd "$@" bs=1M 2>&1 | awk '/copied/ {printf "%.2f", $1 / $(NF-3) / 1e9}'; }
fio_mbs() { # FILE RW -> MB/s
	fio --name=r --filename="$1" --rw="$2" --bs=4k --numjobs=2 --size="$SIZE" \
		--ioengine=psync --direct=1 --time_based --runtime=2 --group_reporting \
		--output-format=json 2>/dev/null |
		python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; print("%.0f" % ((j["read"]["bw_bytes"] + j["write"]["bw_bytes"]) / 1e6))'
}
row() { printf '%-34s %10s %10s %12s %12s\n' "$@"; }

row "configuration" "seq write" "seq read" "4k randread" "4k randwrite"
row "" "GB/s" "GB/s" "MB/s" "MB/s"
measure() { # LABEL FILE: the four jobs on a mounted block file
	local w r rr rw
	w=$(gbs if="$CORPUS" of="$2" oflag=direct conv=notrunc)
	r=$(gbs if="$2" of=/dev/null iflag=direct)
	rr=$(fio_mbs "$2" randread)
	rw=$(fio_mbs "$2" randwrite)
	fusermount3 -u "$MNT"
	row "$1" "$w" "$r" "$rr" "$rw"
}
run() { # LABEL ZBLK-ARGS...
	local label=$1
	shift
	"$ZBLK" "$@" "$MNT"
	measure "$label" "$MNT/disk"
}
base="disksize=$SIZE"
run "zblk default (1M, direct I/O)" -o "$base"
run "page_cache (disk not direct I/O)" -o "$base,page_cache"
run "clone_fd (an fd per thread)" -o "$base,clone_fd"
run "max_threads=2" -o "$base,max_threads=2"
run "max_write=128K" -o "$base,max_write=128K"
run "max_write=256K" -o "$base,max_write=256K"
run "single-threaded (-s)" -s -o "$base"
run "writeback cache" -o "$base,writeback"
run "splice" -o "$base,splice"
run "zstd (against nbdkit below)" -o "$base,algorithm=zstd"
run "null: FUSE alone, no store" -o "$base,null"
if [ -n "$uring_old" ] && "$ZBLK" -h 2>/dev/null | grep io_uring >/dev/null; then
	echo Y >$URING
	run "io_uring (FUSE over io_uring)" -o "$base,io_uring"
	run "io_uring, page_cache" -o "$base,io_uring,page_cache"
	run "null, io_uring" -o "$base,null,io_uring"
	echo "$uring_old" >$URING
fi
if command -v nbdfuse >/dev/null && command -v nbdkit >/dev/null; then
	nbdfuse "$MNT" --command nbdkit -s memory size="$SIZE" allocator=zstd >/dev/null 2>&1 &
	for _ in $(seq 50); do [ -f "$MNT/nbd" ] && break; sleep 0.1; done
	measure "nbdkit allocator=zstd (nbdfuse)" "$MNT/nbd"
	wait
fi
if [ -d /sys/block/zram0 ] && grep -qw lz4 /sys/block/zram0/comp_algorithm; then
	echo 1 >/sys/block/zram0/reset
	echo lz4 >/sys/block/zram0/comp_algorithm
	echo "$SIZE" >/sys/block/zram0/disksize
	w=$(gbs if="$CORPUS" of=/dev/zram0 oflag=direct)
	r=$(gbs if=/dev/zram0 of=/dev/null iflag=direct)
	rr=$(fio_mbs /dev/zram0 randread)
	rw=$(fio_mbs /dev/zram0 randwrite)
	echo 1 >/sys/block/zram0/reset
	row "kernel zram (reference)" "$w" "$r" "$rr" "$rw"
fi

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A backing file on a filesystem that fills up: the file is sparse at the
# disk's size, so writes past the filesystem's room fail (ENOSPC from the
# file, EIO to zram).  Writeback says EIO, every page it could not move stays
# in memory and reads back whole, io_stat counts each failed write, and a
# failed write ends neither its range nor the ranges after it.
. "$(dirname "$0")/lib.sh"
[ "$STRIPES" = 1 ] || skip "backing_dev needs stripes=1"
SMALL=$WORK/small
mkdir -p "$SMALL"
cleanup_hook() { mountpoint -q "$SMALL" && umount "$SMALL"; }
mount -t tmpfs -o size=1M tmpfs "$SMALL" || skip "cannot mount a tmpfs"

zblk_start -o "disksize=16M,backing_dev=$SMALL/backing"
# 4 MiB of random pages: 1024 pages stored raw, four times the room.
dd if=/dev/urandom of="$WORK/rand" bs=4096 count=1024 status=none
dd if="$WORK/rand" of="$MNT/disk" bs=4096 conv=notrunc,fsync status=none
read -r _ _ _ _ _ _ _ huge _ <"$MNT/mm_stat"
[ "$huge" = 1024 ] || fail "$huge huge pages, not 1024"

# io_stat: failed_reads failed_writes invalid_io notify_free
failed() { awk '{print $2}' "$MNT/io_stat"; }
f0=$(failed)
! echo huge >"$MNT/writeback" 2>"$WORK/err" || fail "writeback to a full filesystem succeeded"
grep -q "Input/output error" "$WORK/err" || fail "writeback failed otherwise: $(cat "$WORK/err")"
read -r count _ writes <"$MNT/bd_stat"
f1=$(failed)
cat "$MNT/bd_stat" "$MNT/io_stat"
# Some pages went (the first MiB), the rest were each tried and failed.
[ "$count" -gt 0 ] && [ "$count" = "$writes" ] || fail "bd_stat $count $writes"
[ $((count + f1 - f0)) = 1024 ] ||
	fail "$count pages moved and $((f1 - f0)) failed: not all 1024 tried"

# Two ranges of pages still in memory: every page of both is tried.
in_mem=$(awk '$3 !~ /^.w/ {n++} END {print n + 0}' "$MNT/block_state")
[ "$in_mem" = $((1024 - count)) ] || fail "block_state shows $in_mem pages in memory"
! echo "page_indexes=768-895 page_indexes=896-1023" >"$MNT/writeback" 2>/dev/null ||
	fail "writeback of two ranges to a full filesystem succeeded"
f2=$(failed)
read -r count2 _ _ <"$MNT/bd_stat"
[ "$count2" = "$count" ] || fail "bd_count changed: $count -> $count2"
[ $((f2 - f1)) = 256 ] || fail "$((f2 - f1)) of the two ranges' 256 pages tried"

# Nothing lost: from memory and from the backing file alike.
echo 3 >/proc/sys/vm/drop_caches
cmp "$WORK/rand" <(dd if="$MNT/disk" bs=4096 count=1024 status=none) ||
	fail "the pages read back differently"
echo "1 passed, 0 failed"

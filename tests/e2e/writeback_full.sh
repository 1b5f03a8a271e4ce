#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A backing file on a filesystem that fills up: the file is sparse at the
# disk's size, so writes past the filesystem's room fail (ENOSPC from the
# file, EIO to zram).  Writeback says EIO, every page it could not move stays
# in memory and reads back whole, io_stat counts each failed write, and a
# failed write ends neither its range nor the ranges after it.
. "$(dirname "$0")/lib.sh"
[ "$STRIPES" = 1 ] || skip "backing_dev needs stripes=1"
P=${PAGE_SIZE:-4096}
U=$((P / 4096)) # bd_stat's 4 KiB units a page
N=256           # pages written, four times the backing filesystem's room
SMALL=$WORK/small
mkdir -p "$SMALL"
cleanup_hook() { mountpoint -q "$SMALL" && umount "$SMALL"; }
mount -t tmpfs -o size=$((N / 4 * P)) tmpfs "$SMALL" || skip "cannot mount a tmpfs"

zblk_start -o "disksize=$((4 * N * P)),backing_dev=$SMALL/backing"
# Random pages: each stored raw.
dd if=/dev/urandom of="$WORK/rand" bs="$P" count=$N status=none
dd if="$WORK/rand" of="$MNT/disk" bs="$P" conv=notrunc,fsync status=none
read -r _ _ _ _ _ _ _ huge _ <"$MNT/mm_stat"
[ "$huge" = $N ] || fail "$huge huge pages, not $N"

# io_stat: failed_reads failed_writes invalid_io notify_free
failed() { awk '{print $2}' "$MNT/io_stat"; }
f0=$(failed)
! echo huge >"$MNT/writeback" 2>"$WORK/err" || fail "writeback to a full filesystem succeeded"
grep -q "Input/output error" "$WORK/err" || fail "writeback failed otherwise: $(cat "$WORK/err")"
read -r count _ writes <"$MNT/bd_stat"
f1=$(failed)
cat "$MNT/bd_stat" "$MNT/io_stat"
moved=$((count / U))
# Some pages went (the room's worth), the rest were each tried and failed.
[ "$moved" -gt 0 ] && [ "$moved" -le $((N / 4)) ] && [ "$count" = "$writes" ] ||
	fail "bd_stat $count $writes"
[ $((moved + f1 - f0)) = $N ] ||
	fail "$moved pages moved and $((f1 - f0)) failed: not all $N tried"

# Two ranges of pages still in memory: every page of both is tried.
in_mem=$(awk '$3 !~ /^.w/ {n++} END {print n + 0}' "$MNT/block_state")
[ "$in_mem" = $((N - moved)) ] || fail "block_state shows $in_mem pages in memory"
! echo "page_indexes=$((N * 3 / 4))-$((N * 7 / 8 - 1)) page_indexes=$((N * 7 / 8))-$((N - 1))" \
	>"$MNT/writeback" 2>/dev/null || fail "writeback of two ranges to a full filesystem succeeded"
f2=$(failed)
read -r count2 _ _ <"$MNT/bd_stat"
[ "$count2" = "$count" ] || fail "bd_count changed: $count -> $count2"
[ $((f2 - f1)) = $((N / 4)) ] || fail "$((f2 - f1)) of the two ranges' $((N / 4)) pages tried"

# Nothing lost: from memory and from the backing file alike.
echo 3 >/proc/sys/vm/drop_caches
cmp "$WORK/rand" <(dd if="$MNT/disk" bs="$P" count=$N status=none) ||
	fail "the pages read back differently"
echo "1 passed, 0 failed"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# zram's writeback tier through zblk: ext4 with real data on a zblk with a
# backing file, every page marked idle and written back, then e2fsck clean
# and diff -r identical with the data read from the backing file; bd_stat,
# mm_stat and block_state as expected; the budget and bad input.
. "$(dirname "$0")/lib.sh"
[ "$STRIPES" = 1 ] || skip "backing_dev needs stripes=1"
SRC=${SRC:-/usr/include}
BACK=$WORK/backing

zblk_start -o "disksize=256M,backing_dev=$BACK"
[ "$(cat "$MNT/backing_dev")" = "$BACK" ] || fail "backing_dev reads $(cat "$MNT/backing_dev"), not $BACK"
[ "$(stat -c %s "$BACK")" = $((256 << 20)) ] || fail "the backing file was not made at disksize"
mkfs.ext4 -q -F "$MNT/disk"
mount -o loop "$MNT/disk" "$FS"
cp -a "$SRC" "$FS/tree"
umount "$FS"
read -r orig compr used _ <"$MNT/mm_stat"
read -r count reads writes <"$MNT/bd_stat"
[ "$count $reads $writes" = "0 0 0" ] || fail "bd_stat before writeback: $count $reads $writes"

echo all >"$MNT/idle"
echo idle >"$MNT/writeback"
read -r count reads writes <"$MNT/bd_stat"
read -r orig2 compr2 used2 _ <"$MNT/mm_stat"
cat "$MNT/mm_stat" "$MNT/bd_stat"
# Every page but the same-filled ones went out; they still count as stored.
[ "$orig2" = "$orig" ] || fail "orig_data_size changed: $orig -> $orig2"
[ "$compr2" = 0 ] || fail "compr_data_size $compr2 after writing every page back"
[ "$count" -gt 0 ] && [ "$writes" = "$count" ] && [ "$reads" = 0 ] ||
	fail "bd_stat after writeback: $count $reads $writes"
[ "$used2" -lt $((used / 2)) ] || fail "mem_used_total only fell from $used to $used2"
wlines=$(awk '$3 ~ /^.w/' "$MNT/block_state" | wc -l)
[ "$wlines" -gt 0 ] && [ $((count % wlines)) = 0 ] ||
	fail "block_state shows $wlines written-back pages for bd_count $count"
units=$((count / wlines)) # 4 KiB units a page
[ $((orig2 / 4096 / units - wlines)) -ge 0 ] || fail "more pages written back than stored"

# Read everything back from the backing file, not from a cache.
sync
echo 3 >/proc/sys/vm/drop_caches
e2fsck -fn "$MNT/disk" || fail "e2fsck found errors after writeback"
mount -o loop,ro "$MNT/disk" "$FS"
diff -r --no-dereference "$SRC" "$FS/tree" || fail "the tree differs after writeback"
umount "$FS"
read -r count2 reads2 writes2 <"$MNT/bd_stat"
[ "$reads2" -gt 0 ] && [ "$count2" = "$count" ] && [ "$writes2" = "$writes" ] ||
	fail "bd_stat after reading back: $count2 $reads2 $writes2"

# The budget: enabled with none, nothing is written; then exactly two pages.
dd if=/dev/urandom of="$WORK/rand" bs=4096 count=64 status=none
dd if="$WORK/rand" of="$MNT/disk" bs=4096 seek=1000 conv=notrunc,fsync status=none
echo 1 >"$MNT/writeback_limit_enable"
[ "$(cat "$MNT/writeback_limit")" = 0 ] || fail "writeback_limit starts at $(cat "$MNT/writeback_limit")"
! echo huge >"$MNT/writeback" 2>/dev/null || fail "writeback with no budget succeeded"
echo $((2 * units)) >"$MNT/writeback_limit"
! echo huge >"$MNT/writeback" 2>/dev/null || fail "writeback past the budget succeeded"
read -r _ _ writes3 <"$MNT/bd_stat"
[ "$writes3" = $((writes + 2 * units)) ] || fail "budget of 2 pages wrote $((writes3 - writes)) units"
[ "$(cat "$MNT/writeback_limit")" = 0 ] || fail "budget left: $(cat "$MNT/writeback_limit")"
echo 0 >"$MNT/writeback_limit_enable"
# Linux 6.19's writeback_batch_size: 32 at first, any 32-bit number but 0
# (above 256 taken as 256), bad values refused without a change; the
# writeback below runs one write at a time.
[ "$(cat "$MNT/writeback_batch_size")" = 32 ] ||
	fail "writeback_batch_size starts at $(cat "$MNT/writeback_batch_size")"
echo 100000 >"$MNT/writeback_batch_size" || fail "writeback_batch_size 100000 refused"
[ "$(cat "$MNT/writeback_batch_size")" = 256 ] ||
	fail "writeback_batch_size reads $(cat "$MNT/writeback_batch_size") after 100000"
for bad in 0 4294967296 -1 x ""; do
	! echo "$bad" >"$MNT/writeback_batch_size" 2>/dev/null || fail "writeback_batch_size '$bad' accepted"
done
[ "$(cat "$MNT/writeback_batch_size")" = 256 ] ||
	fail "a refused value changed writeback_batch_size to $(cat "$MNT/writeback_batch_size")"
echo 1 >"$MNT/writeback_batch_size"
[ "$(cat "$MNT/writeback_batch_size")" = 1 ] ||
	fail "writeback_batch_size reads $(cat "$MNT/writeback_batch_size") after 1"
echo "type=huge page_indexes=1000-1063" >"$MNT/writeback"
echo "page_index=5" >"$MNT/writeback"
! echo bogus >"$MNT/writeback" 2>/dev/null || fail "bogus writeback mode accepted"
! echo "page_index=99999999" >"$MNT/writeback" 2>/dev/null || fail "page_index past the end accepted"
echo 3 >/proc/sys/vm/drop_caches
cmp "$WORK/rand" <(dd if="$MNT/disk" bs=4096 skip=1000 count=64 status=none) ||
	fail "the written-back random pages read back differently"
cat "$MNT/bd_stat"
echo "1 passed, 0 failed"

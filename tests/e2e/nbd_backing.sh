#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# nbdkit-zram-plugin with backing_dev=: a missing backing file is created at
# the disk's size; with idle_secs=1 the writeback thread moves every idle
# page that is not same-filled to it (bd_stat counts them, mm_stat's
# compressed size drops to 0, orig_data_size still counts them); the corpus
# reads back identical from the backing file through nbdcopy, and pages
# written again after writeback read back new; writeback=none writes nothing.
. "$(dirname "$0")/nbd_lib.sh"
LD_PRELOAD=$SAN_PRELOAD nbdkit "$PLUGIN" --dump-plugin >"$WORK/dump"
PAGE=$(awk -F= '$1 == "zram_page_size" {print $2}' "$WORK/dump")
[ -n "$PAGE" ] || fail "--dump-plugin gives no zram_page_size"

corpus "$WORK/corpus"
SIZE=$(stat -c %s "$WORK/corpus")
MiB=$((1 << 20))
BACKING=$WORK/backing
nbd_start size="$SIZE" algorithm=lz4 backing_dev="$BACKING" idle_secs=1 stripes=1
[ "$(stat -c %s "$BACKING")" = "$SIZE" ] || fail "backing file not created at the disk's size"

nbdcopy -C 4 "$WORK/corpus" "$URI"

# Every stored page that is not same-filled ends up on the backing file, in
# 4 KiB units whatever the page size.
wait_stats mm_stat 1 "$(nbdinfo --map "$URI" | awk '$3 != 3 {n += $2} END {print n + 0}')"
orig=$(stat_field mm_stat 1)
same=$(stat_field mm_stat 6)
want=$(((orig - same * PAGE) / 4096))
[ "$want" -gt 0 ] || fail "the corpus stored no data pages"
for i in $(seq 100); do
	[ "$(stat_field bd_stat 1)" = "$want" ] && [ "$(stat_field mm_stat 2)" = 0 ] && break
	sleep 0.2
done
[ "$(stat_field bd_stat 1)" = "$want" ] ||
	fail "bd_stat bd_count is '$(stat_field bd_stat 1)', not $want: $(cat "$STATS")"
[ "$(stat_field mm_stat 2)" = 0 ] || fail "compr_data_size is not 0 after writeback: $(cat "$STATS")"
[ "$(stat_field mm_stat 1)" = "$orig" ] || fail "orig_data_size changed with writeback"
[ "$(stat_field bd_stat 3)" -ge "$want" ] || fail "bd_writes below bd_count"
used=$(($(stat -c %b "$BACKING") * $(stat -c %B "$BACKING")))
[ "$used" -ge $((want * 4096)) ] || fail "backing file holds $used bytes, less than $((want * 4096))"
echo "writeback: $want 4 KiB units on the backing file, compr_data_size 0"

nbdcopy -C 4 "$URI" "$WORK/out"
cmp "$WORK/corpus" "$WORK/out" || fail "the corpus came back different from the backing file"
sleep 1.5
[ "$(stat_field bd_stat 2)" -gt 0 ] || fail "bd_stat counts no reads from the backing file"
echo "read back: identical, $(stat_field bd_stat 2) units read from the backing file"

rewrite_check "$WORK/corpus" written-back
nbd_stop || fail "nbdkit did not stop cleanly"

# writeback=none: the backing disk is set, nothing goes to it.
rm -f "$BACKING"
nbd_start size=16M algorithm=lz4 backing_dev="$BACKING" writeback=none idle_secs=1 stripes=1
nbdcopy <(head -c 16M "$WORK/corpus") "$URI"
sleep 3
[ "$(stat_field bd_stat 3)" = 0 ] || fail "writeback=none wrote back: $(cat "$STATS")"
echo "writeback=none: nothing written back"

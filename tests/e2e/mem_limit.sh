#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# With a small mem_limit, writes past it fail with EIO while the data
# written before reads back intact, and zeroes still go in; raising the
# limit lets writes through.
# The limit leaves room for more than 1 MiB of data in every build: at
# 64 KiB pages each of 4 stripes' pools holds 5 pages of tables empty and 8
# more once it stores its first page (tables are page-granular), 3.3 MiB.
. "$(dirname "$0")/lib.sh"
zblk_start -o disksize=64M,mem_limit=6M
head -c 16M /dev/urandom >"$WORK/src"
if dd if="$WORK/src" of="$MNT/disk" bs=64k oflag=direct conv=notrunc \
	2>"$WORK/dd.err"; then
	fail "16 MiB of random data fit in a 4 MiB limit"
fi
grep -q "Input/output error" "$WORK/dd.err" || fail "not EIO: $(cat "$WORK/dd.err")"
written=$(grep -o '^[0-9]* bytes' "$WORK/dd.err" | cut -d' ' -f1)
[ "$written" -gt 1048576 ] || fail "only $written bytes before the limit"
cmp -n "$written" "$WORK/src" "$MNT/disk" || fail "data before the limit changed"
[ "$(awk '{print $2}' "$MNT/io_stat")" -gt 0 ] || fail "failed_writes did not move"
echo "$written bytes written before EIO; they read back intact"
# Zeroes still go in at the limit, over pages never written and over data:
# a zero page is a mark in its slot, as in the kernel's zram.
same0=$(awk '{print $6}' "$MNT/mm_stat")
for seek in 512 0; do # 32 MiB in, then the first 4 MiB of data
	dd if=/dev/zero of="$MNT/disk" bs=64k count=64 seek=$seek oflag=direct conv=notrunc \
		2>"$WORK/dd0.err" || fail "zeroes refused at the limit: $(cat "$WORK/dd0.err")"
done
cmp -n 4194304 /dev/zero "$MNT/disk" || fail "the zeroed data does not read as zeroes"
cmp -i 4194304 -n $((written > 4194304 ? written - 4194304 : 0)) "$WORK/src" "$MNT/disk" ||
	fail "data after the zeroes changed"
same=$(awk '{print $6}' "$MNT/mm_stat")
[ "$same" -ge $((same0 + 128)) ] || fail "same_pages went from $same0 to $same, not up by 8 MiB"
echo "8 MiB of zeroes written at the limit; same_pages $same0 -> $same"
echo 0 >"$MNT/mem_limit"
dd if="$WORK/src" of="$MNT/disk" bs=64k oflag=direct conv=notrunc 2>/dev/null ||
	fail "writes still fail with the limit lifted"
cmp -n 16777216 "$WORK/src" "$MNT/disk" || fail "data differs after lifting the limit"
# A limit of fewer bytes than there are stripes is still a limit: each
# stripe's share was the limit divided by the stripes, rounded down to 0,
# which zram takes for none, and 1 MiB went in.  It reads back as set.
echo 3 >"$MNT/mem_limit"
[ "$(cat "$MNT/mem_limit")" = 3 ] || fail "mem_limit 3 reads back as $(cat "$MNT/mem_limit")"
[ "$(mm_stat 4)" = 3 ] || fail "mm_stat's mem_limit says $(mm_stat 4) for 3"
if dd if="$WORK/src" of="$MNT/disk" bs=1M count=1 seek=32 oflag=direct conv=notrunc \
	2>/dev/null; then
	fail "1 MiB of random data went in under a 3-byte limit (stripes=$STRIPES)"
fi
echo 0 >"$MNT/mem_limit"
echo "a 3-byte mem_limit refuses 1 MiB with $STRIPES stripes; reads back as 3"
# mem_used_max keeps the peak after the data goes; writing 0 restarts it
# from the memory used now (Linux's only accepted value), anything else
# fails and changes nothing.
fallocate -p -o 0 -l 16M "$MNT/disk" || fail "punching the data out failed"
echo 1 >"$MNT/compact"
read -r _ _ total _ max _ <"$MNT/mm_stat"
[ "$max" -gt $((total + 8388608)) ] || fail "mem_used_max $max fell with the data (total $total)"
for bad in 1 x ""; do
	! echo "$bad" >"$MNT/mem_used_max" 2>/dev/null || fail "mem_used_max '$bad' accepted"
done
[ "$(mm_stat 5)" = "$max" ] || fail "a refused write moved mem_used_max: $(mm_stat 5), was $max"
echo 0 >"$MNT/mem_used_max" || fail "echo 0 > mem_used_max failed"
read -r _ _ total _ max2 _ <"$MNT/mm_stat"
[ "$max2" = "$total" ] || fail "mem_used_max $max2 after the reset, mem_used_total $total"
echo "mem_used_max $max -> $max2 (mem_used_total) after echo 0"
echo "1 passed, 0 failed"

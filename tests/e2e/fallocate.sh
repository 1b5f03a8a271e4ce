#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fallocate -z (ZERO_RANGE) and -p (PUNCH_HOLE) at odd offsets and lengths
# zero exactly the bytes asked and no others: inside one sector, straddling
# sectors, pages and stripe chunks, whole-page middles with ragged edges.
# The disk is compared byte for byte with a model zeroed the same way.
# Past the end it does what a block device does (zblk.1).
. "$(dirname "$0")/lib.sh"
command -v fallocate >/dev/null || skip "no fallocate"
command -v python3 >/dev/null || skip "no python3"
SIZE=$((1024 * 1024))
zblk_start -o disksize=$SIZE
# A pattern with no zero byte, so that every wrongly zeroed byte shows.
python3 -c 'import sys; sys.stdout.buffer.write(bytes(1 + i % 251 for i in range(int(sys.argv[1]))))' \
	$SIZE >"$WORK/model"
dd if="$WORK/model" of="$MNT/disk" bs=64k conv=notrunc status=none
cmp "$WORK/model" "$MNT/disk" || fail "the pattern did not read back"
# OFFSET LENGTH pairs, in bytes.
ranges="1 1022  1 1  511 2  100 300  2047 1  510 1030  4000 200  4095 2
	8193 8190  12800 12288  20480 512  65535 65538  131071 4098
	200000 70000  $((SIZE - 1)) 1  $((SIZE - 700)) 699"
set -- $ranges
n=0
while [ $# -ge 2 ]; do
	mode=-z
	[ $((n % 2)) = 1 ] && mode=-p
	fallocate $mode -o "$1" -l "$2" "$MNT/disk" || fail "fallocate $mode -o $1 -l $2 failed"
	dd if=/dev/zero of="$WORK/model" bs=1 seek="$1" count="$2" conv=notrunc status=none
	# Each call is checked alone, so a failure names the range.
	cmp "$WORK/model" "$MNT/disk" || fail "fallocate $mode -o $1 -l $2: the disk differs"
	shift 2
	n=$((n + 1))
done
# Past the end, as Linux's block devices do: a range that would grow the
# disk (no KEEP_SIZE) or starts at or past the end is refused and changes
# nothing; a KEEP_SIZE range that starts inside is clipped at the end.
! fallocate -z -o $((SIZE - 1)) -l 2 "$MNT/disk" 2>/dev/null || fail "zeroing past the end worked"
! fallocate -p -o $SIZE -l 1 "$MNT/disk" 2>/dev/null || fail "punching past the end worked"
! fallocate -z -n -o $SIZE -l 4096 "$MNT/disk" 2>/dev/null || fail "zeroing (KEEP_SIZE) at the end worked"
[ "$(stat -c %s "$MNT/disk")" = $SIZE ] || fail "the size changed"
cmp "$WORK/model" "$MNT/disk" || fail "the disk differs after refused calls"
python3 -c 'import sys; sys.stdout.buffer.write(bytes(1 + i % 251 for i in range(int(sys.argv[1]))))' \
	$SIZE >"$WORK/model"
dd if="$WORK/model" of="$MNT/disk" bs=64k conv=notrunc status=none
# OFFSET LENGTH MODE: each crosses the end from inside.
set -- $((SIZE - 5000)) 10000 -p  $((SIZE - 70001)) 140000 "-z -n"  \
	$((SIZE - 1)) 2 -p  $((SIZE - 12288)) $((1 << 40)) "-n"
while [ $# -ge 3 ]; do
	fallocate $3 -o "$1" -l "$2" "$MNT/disk" ||
		fail "fallocate $3 -o $1 -l $2 (KEEP_SIZE, crossing the end) failed"
	[ "$3" = -n ] ||
		dd if=/dev/zero of="$WORK/model" bs=1 seek="$1" count=$((SIZE - $1)) conv=notrunc status=none
	cmp "$WORK/model" "$MNT/disk" || fail "fallocate $3 -o $1 -l $2: the disk differs"
	[ "$(stat -c %s "$MNT/disk")" = $SIZE ] || fail "fallocate $3 -o $1 -l $2: the size changed"
	shift 3
	n=$((n + 1))
done
echo "$n zero and punch calls matched the model"
echo "1 passed, 0 failed"

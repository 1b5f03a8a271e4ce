#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# nbdkit-zram-plugin with nbdcopy and nbdinfo: the corpus in and out over 4
# connections (multi-conn), read back with extents and without; trim shows
# holes in nbdinfo --map and reads as zeroes; zeroes written as data show as
# allocated zeroes; the stats file follows and is final after exit.
. "$(dirname "$0")/nbd_lib.sh"

corpus "$WORK/corpus"
SIZE=$(stat -c %s "$WORK/corpus")
MiB=$((1 << 20))
nbd_start size="$SIZE" algorithm=lz4

nbdcopy -C 4 "$WORK/corpus" "$URI"
nbdcopy -C 4 "$URI" "$WORK/out"
cmp "$WORK/corpus" "$WORK/out" || fail "the corpus came back different (extents, 4 connections)"
nbdcopy --no-extents "$URI" "$WORK/out"
cmp "$WORK/corpus" "$WORK/out" || fail "the corpus came back different (no extents)"
echo "corpus: $SIZE bytes in and out, with and without extents"

# Statistics: mm_stat counts every page that is not a hole, and compresses.
stored=$(nbdinfo --map "$URI" | awk '$3 != 3 {n += $2} END {print n + 0}')
wait_stats mm_stat 1 "$stored"
used=$(stat_field mm_stat 3)
[ "$used" -lt "$stored" ] || fail "mm_stat: $stored bytes stored in $used"
echo "mm_stat: $stored bytes stored in $used bytes"

# Trim 8M..24M: holes that read as zeroes, nothing else changed.
qemu-io -f raw -c "discard $((8 * MiB)) $((16 * MiB))" "$URI" >/dev/null
nbdinfo --map "$URI" >"$WORK/map"
awk -v a=$((8 * MiB)) -v b=$((24 * MiB)) '$1 <= a && $1 + $2 >= b && $3 == 3 {ok = 1}
	END {exit !ok}' "$WORK/map" || { cat "$WORK/map"; fail "no hole over the trimmed range"; }
cp "$WORK/corpus" "$WORK/want"
dd if=/dev/zero of="$WORK/want" bs=1M seek=8 count=16 conv=notrunc status=none
nbdcopy "$URI" "$WORK/out"
cmp "$WORK/want" "$WORK/out" || fail "trimmed range does not read as zeroes, or more changed"
sleep 1.5
[ "$(stat_field io_stat 4)" -gt 0 ] || fail "io_stat: no pages freed by the trim"
echo "trim: 16 MiB of holes, read back as zeroes"

# Zeroes as data and zeroes with NO_HOLE: allocated zeroes, type 2.
qemu-io -f raw -c "write -P 0 $((8 * MiB)) $MiB" -c "write -z $((10 * MiB)) $MiB" "$URI" >/dev/null
nbdinfo --map "$URI" >"$WORK/map"
for at in 8 10; do
	awk -v a=$((at * MiB)) -v b=$(((at + 1) * MiB)) '$1 <= a && $1 + $2 >= b && $3 == 2 {ok = 1}
		END {exit !ok}' "$WORK/map" || { cat "$WORK/map"; fail "no zero extent at ${at}M"; }
done
# ... and zeroes that may be holes (qemu-io -u) are holes.
qemu-io -f raw -c "write -z -u $((8 * MiB)) $MiB" "$URI" >/dev/null
nbdinfo --map "$URI" | awk -v a=$((8 * MiB)) '$1 <= a && $1 + $2 > a && $3 == 3 {ok = 1}
	END {exit !ok}' || fail "write -z -u left no hole"
echo "zero: allocated zeroes without MAY_TRIM, holes with it"

# Fresh stats after exit: nbdkit writes them once more when it stops.
rm -f "$STATS"
nbd_stop || fail "nbdkit did not stop cleanly"
[ "$(stat_field mm_stat 1)" -gt 0 ] || fail "no final statistics after exit"
echo "stats: final file written at exit"

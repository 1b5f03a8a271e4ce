#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# zram's recompression through zblk's control files: ext4 with real memory
# pages on an lz4 zblk, every page marked idle and recompressed with zstd,
# then compr_data_size smaller, e2fsck clean and the data identical; a
# dictionary trained through train_dict, more data written with it and read
# back; algorithm_params with a dictionary file; bad input refused with
# nothing changed.  Without zstd, lz4hc recompresses and training is skipped.
. "$(dirname "$0")/lib.sh"

# Real anonymous memory: $CORPUS, /tmp or the xz beside the checkout; else
# files of the system, so that the test still runs.
corpus() {
	local xz
	xz=$(cd "$(dirname "$0")/../.." && pwd)/../shared/corpus/anon-64m.bin.xz
	if [ -f "${CORPUS:-/tmp/anon-64m.bin}" ]; then
		cp "${CORPUS:-/tmp/anon-64m.bin}" "$1"
	elif [ -f "$xz" ] && command -v xz >/dev/null; then
		xz -dc "$xz" >"$1"
	else
		tar cf - /usr/include /usr/share/doc /usr/bin 2>/dev/null | head -c 64M >"$1" || true
	fi
}
corpus "$WORK/corpus"
head -c 32M "$WORK/corpus" >"$WORK/first"
tail -c +$((32 * 1048576 + 1)) "$WORK/corpus" | head -c 32M >"$WORK/second"

zblk_start -o "disksize=256M,algorithm=lz4"
mkfs.ext4 -q -F "$MNT/disk"
mount -o loop "$MNT/disk" "$FS"
cp "$WORK/first" "$FS/first"
umount "$FS"

# The secondary algorithm: zstd where built, else lz4hc.
[ -z "$(cat "$MNT/recomp_algorithm")" ] || fail "recomp_algorithm set before any write"
if echo "algo=zstd priority=1" >"$MNT/recomp_algorithm" 2>/dev/null; then
	ZSTD=1 ALGO=zstd
else
	ZSTD=0 ALGO=lz4hc
	echo "no zstd: lz4hc recompresses, no dictionary training"
	echo "algo=lz4hc priority=1" >"$MNT/recomp_algorithm"
fi
grep -qx "#1: .*\[$ALGO\].*" "$MNT/recomp_algorithm" ||
	fail "recomp_algorithm reads '$(cat "$MNT/recomp_algorithm")'"
settings=$(cat "$MNT/recomp_algorithm")

# Refused, and nothing changed.
for bad in "algo=nope" "priority=1" "algo=lz4 priority=0" "algo=lz4 priority=4" \
	"algo=lz4 level=1" "algo=lz4 priority=1x" "algo="; do
	! echo "$bad" >"$MNT/recomp_algorithm" 2>/dev/null || fail "recomp_algorithm took '$bad'"
done
[ "$(cat "$MNT/recomp_algorithm")" = "$settings" ] || fail "a refused write changed recomp_algorithm"
read -r _ compr _ <"$MNT/mm_stat"
for bad in "type=all" "type=idle bogus=1" "idle" "threshold=99999999" "max_pages=-1" \
	"priority=3" "algo=lz4" "algo=nope"; do
	! echo "$bad" >"$MNT/recompress" 2>/dev/null || fail "recompress took '$bad'"
done
for bad in "priority=3 level=1" "priority=1 level=99" "priority=1 level=x" \
	"priority=1 dict=$WORK/none" "priority=1 dict=$WORK" "algo=lz4 priority=1"; do
	! echo "$bad" >"$MNT/algorithm_params" 2>/dev/null || fail "algorithm_params took '$bad'"
done
for bad in "size=100" "size=2M" "priority=2" "priority=0 size=64K extra"; do
	! echo "$bad" >"$MNT/train_dict" 2>/dev/null || fail "train_dict took '$bad'"
done
read -r _ compr2 _ <"$MNT/mm_stat"
[ "$compr2" = "$compr" ] || fail "refused writes changed compr_data_size: $compr -> $compr2"

# Recompress every idle page: compr_data_size must fall, the data stay.
echo all >"$MNT/idle"
echo "type=idle" >"$MNT/recompress"
read -r orig2 compr2 used2 _ <"$MNT/mm_stat"
cat "$MNT/mm_stat"
echo "compr_data_size $compr -> $compr2 with $ALGO"
[ "$compr2" -lt $((compr * 95 / 100)) ] || fail "compr_data_size only fell from $compr to $compr2"
if [ "$STRIPES" = 1 ]; then
	r=$(awk '$3 ~ /^....r/' "$MNT/block_state" | wc -l)
	[ "$r" -gt 0 ] || fail "block_state shows no recompressed page"
	# Linux 6.13: every page recompression read has lost its idle mark.
	i=$(awk '$3 ~ /^...i/' "$MNT/block_state" | wc -l)
	[ "$i" = 0 ] || fail "$i pages kept their idle marks through recompression"
fi
# A second pass finds nothing more to do with the same algorithm.
echo "type=idle max_pages=100" >"$MNT/recompress"
read -r _ compr3 _ <"$MNT/mm_stat"
[ "$compr3" -le "$compr2" ] || fail "a second pass grew compr_data_size: $compr2 -> $compr3"

sync
echo 3 >/proc/sys/vm/drop_caches
e2fsck -fn "$MNT/disk" || fail "e2fsck found errors after recompression"
mount -o loop "$MNT/disk" "$FS"
cmp "$WORK/first" "$FS/first" || fail "the data differ after recompression"

# A dictionary trained on the stored pages for new writes, then more data.
if [ "$ZSTD" = 1 ]; then
	echo "priority=0 size=64K" >"$MNT/train_dict"
	echo "algo=zstd size=128K" >"$MNT/train_dict"
fi
# A dictionary file for the secondary algorithm, with a level.
head -c 64K "$WORK/corpus" >"$WORK/dict"
echo "priority=1 level=5 dict=$WORK/dict" >"$MNT/algorithm_params"
cp "$WORK/second" "$FS/second"
umount "$FS"
echo "type=huge" >"$MNT/recompress"
echo all >"$MNT/idle"
echo "type=idle threshold=1024 priority=1" >"$MNT/recompress"
cat "$MNT/mm_stat"

sync
echo 3 >/proc/sys/vm/drop_caches
e2fsck -fn "$MNT/disk" || fail "e2fsck found errors after the dictionaries"
mount -o loop,ro "$MNT/disk" "$FS"
cmp "$WORK/first" "$FS/first" || fail "the first data differ after the dictionaries"
cmp "$WORK/second" "$FS/second" || fail "the data written with a dictionary differ"
umount "$FS"
echo "1 passed, 0 failed"

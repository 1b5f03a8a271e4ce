#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# nbdkit-zram-plugin with multi_page=on: the corpus in and out, stored in
# less than page by page; writes that cut groups (part of a page, pages
# across a group's edge, single pages), a trim inside a group, all checked
# against the same changes made to a copy; fio's random writes of 4 KiB to
# 64 KiB verified with crc32c from 4 connections; compaction giving back
# groups left half in use; and the statistics back to nothing once
# everything is trimmed.
. "$(dirname "$0")/nbd_lib.sh"
LD_PRELOAD=$SAN_PRELOAD nbdkit "$PLUGIN" --dump-plugin >"$WORK/dump"
alg=lz4
grep -q 'zram_algorithms=.*zstd' "$WORK/dump" && alg=zstd
# Pages of 32 KiB or more are a group each: the option changes nothing there.
PAGE=$(awk -F= '$1 == "zram_page_size" {print $2}' "$WORK/dump")
grouped=1
[ "$PAGE" -lt 32768 ] || grouped=0
corpus "$WORK/corpus"
SIZE=$(stat -c %s "$WORK/corpus")
MiB=$((1 << 20))

# compressed MULTI: the corpus written; mm_stat's compr_data_size in $COMPR.
compressed() {
	nbd_start size="$SIZE" algorithm=$alg multi_page="$1"
	nbdcopy "$WORK/corpus" "$URI"
	wait_stats mm_stat 1 "$(nbdinfo --map "$URI" | awk '$3 != 3 {n += $2} END {print n + 0}')"
	COMPR=$(stat_field mm_stat 2)
}
compressed off
per_page=$COMPR
nbd_stop || fail "nbdkit did not stop cleanly"
compressed on
if [ "$grouped" = 1 ]; then
	[ "$COMPR" -lt "$per_page" ] ||
		fail "$alg: $COMPR bytes in groups, not less than $per_page page by page"
else
	[ "$COMPR" = "$per_page" ] ||
		fail "$alg, $PAGE-byte pages: $COMPR bytes with multi_page, $per_page without"
fi
echo "$alg: corpus compressed to $COMPR bytes with multi_page, $per_page page by page"
nbdcopy -C 4 "$URI" "$WORK/out"
cmp "$WORK/corpus" "$WORK/out" || fail "the corpus came back different (extents, 4 connections)"
nbdcopy --no-extents "$URI" "$WORK/out"
cmp "$WORK/corpus" "$WORK/out" || fail "the corpus came back different (no extents)"

# Writes into groups, mirrored onto a copy.
cp "$WORK/corpus" "$WORK/want"
put "$WORK/want" $((1 * MiB + 100)) 1000 171       # part of one page of a group
put "$WORK/want" $((2 * MiB + 28672)) 12288 172    # three pages across a group's edge
put "$WORK/want" $((3 * MiB + 8192)) 4096 173      # one whole page of a group
put "$WORK/want" $((4 * MiB)) 32768 0              # a whole group, as zeroes
put "$WORK/want" $((5 * MiB + 512)) 65024 174      # sector-aligned, not page-aligned
discard "$WORK/want" $((6 * MiB + PAGE / 2)) $((2 * PAGE)) # a whole page, parts of two
nbdcopy "$URI" "$WORK/out"
cmp "$WORK/want" "$WORK/out" || fail "writes into groups read back different"
echo "writes that cut groups and a trim inside one: read back as written"

# fio: random writes of 4 KiB to 64 KiB from 4 connections, verified.
if command -v fio >/dev/null && fio --enghelp 2>/dev/null | grep -qw nbd; then
	fio --name=verify --ioengine=nbd --uri="$URI" --numjobs=4 --offset_increment=8M \
		--size=8M --rw=randwrite --bs=4k-64k --bs_unaligned=0 --iodepth=16 \
		--buffer_compress_percentage=60 --refill_buffers --verify=crc32c --verify_fatal=1 \
		--verify_state_save=0 --group_reporting --output="$WORK/fio.out" ||
		{ cat "$WORK/fio.out"; fail "fio verify failed"; }
	grep -q "err= 0" "$WORK/fio.out" || { cat "$WORK/fio.out"; fail "fio reported errors"; }
	echo "fio: 4 connections, 32 MiB of random 4k-64k writes verified with crc32c"
else
	echo "(fio with its nbd engine not found: random writes not run)"
fi

# Compaction: every other page of the first 16 MiB overwritten leaves each
# group there half in use; with compact_secs=1 what is left of them is
# stored again alone, which gives their memory back (against the same
# writes with compact_secs=0), and everything reads back.
# half_used SECS: the corpus, then the writes; mm_stat's compr in $COMPR.
half_used() {
	local half=(--name=half --ioengine=nbd --uri="$URI" --size=16M --rw=write:"$PAGE" --bs="$PAGE"
		--buffer_compress_percentage=50 --verify=crc32c --verify_state_save=0)
	nbd_stop || fail "nbdkit did not stop cleanly"
	nbd_start size="$SIZE" algorithm=$alg multi_page=on compact_secs="$1"
	nbdcopy "$WORK/corpus" "$URI"
	fio "${half[@]}" --do_verify=0 --output="$WORK/fio.out" ||
		{ cat "$WORK/fio.out"; fail "fio write failed"; }
	sleep 3 # a compaction pass, and the statistics after it
	COMPR=$(stat_field mm_stat 2)
	fio "${half[@]}" --verify_only --output="$WORK/fio.out" ||
		{ cat "$WORK/fio.out"; fail "fio verify failed (compact_secs=$1)"; }
	nbdcopy "$URI" - | tail -c +$((16 * MiB + 1)) | cmp - "$WORK/want" ||
		fail "the pages past the overwritten range changed (compact_secs=$1)"
}
if [ "$grouped" = 1 ] && command -v fio >/dev/null && fio --enghelp 2>/dev/null | grep -qw nbd
then
	tail -c +$((16 * MiB + 1)) "$WORK/corpus" >"$WORK/want"
	half_used 0
	held=$COMPR
	half_used 1
	[ "$COMPR" -lt "$held" ] ||
		fail "compaction gave nothing back: $COMPR bytes compressed, $held without it"
	echo "compaction: half-used groups stored again alone, $held -> $COMPR bytes compressed"
fi

# Everything trimmed: no page stored, no memory held by groups.
qemu-io -f raw -c "discard 0 $SIZE" "$URI" >/dev/null
wait_stats mm_stat 1 0
wait_stats mm_stat 2 0
echo "trim of the whole disk: orig and compressed data back to 0"
nbd_stop || fail "nbdkit did not stop cleanly"

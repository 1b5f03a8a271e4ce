#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# nbdkit-zram-plugin's recompression tier.  recompress=none first: the
# algorithm is set, nothing changes, and lz4 alone gives the figures to
# beat.  Then the corpus written with lz4 and recomp_algorithm=zstd (lz4hc
# where zstd is not built) shrinks once its pages have been idle for
# idle_secs=1 (compressed size and memory used both fall, as after Linux's
# recompress type=idle), reads back identical, and pages written again over
# recompressed ones read back new.  With multi_page=on, idle neighbours are
# recompressed as groups: smaller than page by page (where pages are below
# 32 KiB), and the corpus, part-group rewrites and trims inside groups read
# back right.  Last, the chain zram users script,
# recompress=huge then writeback=incompressible, moves random pages (huge,
# which no algorithm shrinks) to the backing file.
. "$(dirname "$0")/nbd_lib.sh"
LD_PRELOAD=$SAN_PRELOAD nbdkit "$PLUGIN" --dump-plugin >"$WORK/dump"
RECOMP=lz4hc
grep -q 'zram_algorithms=.*zstd' "$WORK/dump" && RECOMP=zstd
MiB=$((1 << 20))

corpus "$WORK/corpus"
SIZE=$(stat -c %s "$WORK/corpus")

# wait_below LINE N LIMIT: until field N of LINE is below LIMIT (30 s).
wait_below() {
	local i
	for i in $(seq 300); do
		[ "$(stat_field "$1" "$2")" -lt "$3" ] && return 0
		sleep 0.1
	done
	fail "$1 field $2 stayed at $(stat_field "$1" "$2"), not below $3: $(cat "$STATS")"
}

# recompress=none: the algorithm is set, nothing is recompressed; what lz4
# alone stores is the figure the recompressed disk must beat.
nbd_start size="$SIZE" algorithm=lz4 recomp_algorithm="$RECOMP" recompress=none idle_secs=1
nbdcopy -C 4 "$WORK/corpus" "$URI"
orig=$(nbdinfo --map "$URI" | awk '$3 != 3 {n += $2} END {print n + 0}')
wait_stats mm_stat 1 "$orig"
compr=$(stat_field mm_stat 2)
mem=$(stat_field mm_stat 3)
sleep 3
[ "$(stat_field mm_stat 2)" = "$compr" ] || fail "recompress=none recompressed: $(cat "$STATS")"
echo "recompress=none: compr_data_size stays $compr"
nbd_stop || fail "nbdkit did not stop cleanly"

nbd_start size="$SIZE" algorithm=lz4 recomp_algorithm="$RECOMP" idle_secs=1
nbdcopy -C 4 "$WORK/corpus" "$URI"
wait_stats mm_stat 1 "$orig"
# zstd stores anon-64m.bin in 55% of lz4's bytes, lz4hc in 90%: ask for 95%.
wait_below mm_stat 2 $((compr * 95 / 100))
wait_below mm_stat 3 "$mem"
echo "recompressed with $RECOMP: compr_data_size $compr -> $(stat_field mm_stat 2)," \
	"mem_used_total $mem -> $(stat_field mm_stat 3)"
nbdcopy -C 4 "$URI" "$WORK/out"
cmp "$WORK/corpus" "$WORK/out" || fail "the corpus read back different after recompression"
per_page=$(stat_field mm_stat 2)

rewrite_check "$WORK/corpus" recompressed
nbd_stop || fail "nbdkit did not stop cleanly"

# multi_page=on: pages written in groups with lz4 are recompressed with
# their neighbours, so the corpus ends smaller than page by page above.
PAGE=$(awk -F= '$1 == "zram_page_size" {print $2}' "$WORK/dump")
nbd_start size="$SIZE" algorithm=lz4 recomp_algorithm="$RECOMP" multi_page=on idle_secs=1
nbdcopy -C 4 "$WORK/corpus" "$URI"
wait_stats mm_stat 1 "$orig"
wait_below mm_stat 2 $((compr * 95 / 100))
wait_below mm_stat 3 "$mem"
if [ "$PAGE" -lt 32768 ]; then
	wait_below mm_stat 2 "$per_page"
fi
echo "multi_page=on, recompressed in groups: compr_data_size $compr -> $(stat_field mm_stat 2)" \
	"($per_page page by page), mem_used_total $mem -> $(stat_field mm_stat 3)"
nbdcopy -C 4 "$URI" "$WORK/out"
cmp "$WORK/corpus" "$WORK/out" || fail "the corpus read back different after recompression in groups"
# Within recompressed groups: part of a page, a run across a group's edge,
# a trimmed page, each mirrored onto a copy; read back while the pages
# written are recompressed again.
cp "$WORK/corpus" "$WORK/model"
put "$WORK/model" $((1 * MiB + 100)) 1000 171
put "$WORK/model" $((2 * MiB + 28672)) 12288 172
discard "$WORK/model" $((3 * MiB)) "$PAGE"
sleep 2
nbdcopy "$URI" "$WORK/out"
cmp "$WORK/model" "$WORK/out" || fail "edits inside recompressed groups read back wrong"
nbd_stop || fail "nbdkit did not stop cleanly"

# recompress=huge, writeback=incompressible: 1 MiB of random bytes is stored
# raw (huge), the recompression cannot shrink it and marks it incompressible,
# and writeback moves exactly it to the backing file, in 4 KiB units.
head -c "$MiB" /dev/urandom >"$WORK/random"
nbd_start size=16M algorithm=lz4 recomp_algorithm="$RECOMP" recompress=huge \
	backing_dev="$WORK/backing" writeback=incompressible idle_secs=1 stripes=1
nbdcopy "$WORK/random" "$URI"
for i in $(seq 300); do
	[ "$(stat_field bd_stat 1)" = $((MiB / 4096)) ] && break
	sleep 0.1
done
[ "$(stat_field bd_stat 1)" = $((MiB / 4096)) ] ||
	fail "bd_count is '$(stat_field bd_stat 1)', not $((MiB / 4096)): $(cat "$STATS")"
[ "$(stat_field mm_stat 8)" = 0 ] || fail "huge pages left in memory: $(cat "$STATS")"
nbdcopy "$URI" "$WORK/out"
head -c "$MiB" "$WORK/out" | cmp - "$WORK/random" || fail "random pages read back wrong"
echo "recompress=huge, writeback=incompressible: $((MiB / 4096)) units on the backing file"
nbd_stop || fail "nbdkit did not stop cleanly"

# The tiers alongside I/O: recompress=all and compaction every second
# (with one stripe, writeback=all to a backing file too) while fio's nbd
# engine overwrites and verifies (crc32c, also during the writes) from 4
# connections for 4 s, so that at least three passes run during the writes.
if ! command -v fio >/dev/null || ! fio --enghelp 2>/dev/null | grep -qw nbd; then
	echo "no fio with its nbd engine: the last part is not run"
	exit 0
fi
tiers=(recomp_algorithm="$RECOMP" recompress=all idle_secs=1 compact_secs=1)
[ "$STRIPES" = 1 ] && tiers+=(backing_dev="$WORK/backing2" writeback=all)
nbd_start size=32M algorithm=lz4 "${tiers[@]}"
fio --name=verify --ioengine=nbd --uri="$URI" --numjobs=4 --offset_increment=8M \
	--size=8M --time_based --runtime=4 --rw=randwrite --bs=4k,64k --iodepth=16 \
	--buffer_compress_percentage=60 --refill_buffers --verify=crc32c --verify_fatal=1 \
	--verify_backlog=512 --verify_state_save=0 --group_reporting --output="$WORK/fio.out" ||
	{ cat "$WORK/fio.out"; fail "fio verify failed with the tiers running"; }
grep -q "err= 0" "$WORK/fio.out" || { cat "$WORK/fio.out"; fail "fio reported errors"; }
# The passes ran: compaction moved pages, and with a backing file pages went there.
for i in $(seq 50); do
	[ "$(stat_field mm_stat 7)" -gt 0 ] && break
	sleep 0.1
done
[ "$(stat_field mm_stat 7)" -gt 0 ] || fail "no compaction moved a page: $(cat "$STATS")"
if [ "$STRIPES" = 1 ]; then
	[ "$(stat_field bd_stat 3)" -gt 0 ] || fail "nothing was written back: $(cat "$STATS")"
fi
echo "fio: 4 connections, 4 s of random writes verified with the tiers running;" \
	"$(tr '\n' ' ' <"$STATS")"

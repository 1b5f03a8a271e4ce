#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# nbdkit-zram-plugin's level=, dict=, recomp_level= and recomp_dict=, zram's
# algorithm_params: each reaches its compressor.  The corpus written with
# lz4 at acceleration 65537 (its fastest) stores larger than at lz4's
# default, and with zstd (lz4hc where zstd is not built) at level 12 smaller
# than at its lowest (the higher ones only cost time); the recompression
# tier at recomp_level=12 ends smaller than at the lowest.  Then pages cut
# from 64 KiB of random bytes, stored raw without a dictionary, shrink to
# under a quarter with those bytes as dict= (every algorithm, page by page
# and in groups) or as recomp_dict= once recompressed.  Every disk reads
# back identical.
. "$(dirname "$0")/nbd_lib.sh"
LD_PRELOAD=$SAN_PRELOAD nbdkit "$PLUGIN" --dump-plugin >"$WORK/dump"
STRONG=lz4hc LOW=1 HIGH=12
grep -q 'zram_algorithms=.*zstd' "$WORK/dump" && STRONG=zstd LOW=-7 HIGH=12

# 16 MiB of the corpus: zstd and lz4hc at high levels are slow under the
# sanitizers.
corpus "$WORK/full"
head -c 16M "$WORK/full" >"$WORK/corpus"
SIZE=$(stat -c %s "$WORK/corpus")
orig=

# stored PARAMS...: the corpus written on a disk with PARAMS, checked, and
# its compr_data_size (once the tier, if any, has nothing left to do) on
# stdout.
stored() {
	local compr i
	nbd_start size="$SIZE" "$@" >&2
	nbdcopy -C 4 "$WORK/corpus" "$URI"
	if [ -z "$orig" ]; then
		orig=$(nbdinfo --map "$URI" | awk '$3 != 3 {n += $2} END {print n + 0}')
	fi
	wait_stats mm_stat 1 "$orig"
	# Recompression (idle_secs=1) runs until two passes a second apart
	# change nothing.
	compr=$(stat_field mm_stat 2)
	for i in $(seq 60); do
		sleep 1.5
		[ "$(stat_field mm_stat 2)" = "$compr" ] && break
		compr=$(stat_field mm_stat 2)
	done
	nbdcopy -C 4 "$URI" "$WORK/out"
	cmp "$WORK/corpus" "$WORK/out" >&2 || fail "the corpus read back different with $*"
	nbd_stop >&2 || fail "nbdkit did not stop cleanly"
	echo "$* -> compr_data_size $compr" >&2
	echo "$compr"
}

# smaller A B WHAT: A < B, or fail.
smaller() { [ "$1" -lt "$2" ] || fail "$3: $1 is not below $2"; }

# Levels.
lz4_default=$(stored algorithm=lz4)
lz4_fastest=$(stored algorithm=lz4 level=65537)
smaller "$lz4_default" "$lz4_fastest" "lz4 level=65537 against the default"
low=$(stored algorithm="$STRONG" level="$LOW")
high=$(stored algorithm="$STRONG" level="$HIGH")
smaller "$high" "$low" "$STRONG level=$HIGH against level=$LOW"
tier=(algorithm=lz4 recomp_algorithm="$STRONG" recompress=all idle_secs=1)
tier_low=$(stored "${tier[@]}" recomp_level="$LOW")
tier_high=$(stored "${tier[@]}" recomp_level="$HIGH")
smaller "$tier_high" "$tier_low" "recomp_level=$HIGH against recomp_level=$LOW"

# Dictionaries: 4 MiB of 4 KiB slices of the dictionary's 64 KiB of random
# bytes.  What no algorithm can shrink alone, each stores in under a
# quarter with the dictionary.  lz4 and lz4hc reach back at most 65,535
# bytes, so a slice deeper into a page (with 16 and 64 KiB pages) is cut
# from far enough into the dictionary to be within reach.
PAGE=$(awk -F= '$1 == "zram_page_size" {print $2}' "$WORK/dump")
python3 -c 'import os, random, sys
r, rng, page = os.urandom(65536), random.Random(1), int(sys.argv[3])
open(sys.argv[1], "wb").write(r)
with open(sys.argv[2], "wb") as f:
    for i in range(1024):
        lo = min(4096 * (i % (page // 4096)) + 1, 65536 - 4096)
        o = rng.randrange(lo, 65536 - 4096 + 1)
        f.write(r[o:o + 4096])' "$WORK/dict" "$WORK/cut" "$PAGE"
mv "$WORK/cut" "$WORK/corpus"
SIZE=$(stat -c %s "$WORK/corpus")
orig=
raw=$(stored algorithm=lz4)
for algorithm in lz4 lz4hc $(grep -q 'zram_algorithms=.*zstd' "$WORK/dump" && echo zstd); do
	for mp in off on; do
		smaller "$(stored algorithm="$algorithm" dict="$WORK/dict" multi_page=$mp)" \
			$((raw / 4)) "$algorithm with the dictionary, multi_page=$mp"
	done
done
smaller "$(stored algorithm=lz4 recomp_algorithm="$STRONG" recomp_dict="$WORK/dict" \
	recompress=all idle_secs=1)" $((raw / 4)) "recompressed with $STRONG and recomp_dict="

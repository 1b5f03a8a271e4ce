#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# nbdkit-zram-plugin's level= and recomp_level=, zram's algorithm_params:
# the level reaches the compressor.  The corpus written with lz4 at
# acceleration 65537 (its fastest) stores larger than at lz4's default, and
# with zstd (lz4hc where zstd is not built) at its highest level smaller
# than at its lowest (12: the higher ones only cost time); the recompression tier at recomp_level= its highest
# ends smaller than at its lowest.  Every disk reads back identical.
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

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# nbdkit-zram-plugin's parameters: each bad one is a single "nbdkit: error:"
# line naming what is wrong and a non-zero exit before anything is served;
# good edge cases serve a disk of the documented size.
. "$(dirname "$0")/nbd_lib.sh"
LD_PRELOAD=$SAN_PRELOAD nbdkit "$PLUGIN" --dump-plugin >"$WORK/dump"
PAGE=$(awk -F= '$1 == "zram_page_size" {print $2}' "$WORK/dump")
[ -n "$PAGE" ] || fail "--dump-plugin gives no zram_page_size"

# refused MESSAGE PARAMS...: nbdkit exits non-zero, printing only MESSAGE.
refused() {
	local want=$1 status
	shift
	set +e
	LD_PRELOAD=$SAN_PRELOAD timeout 20 nbdkit -U - --run "touch '$WORK/served'" "$PLUGIN" "$@" \
		>"$WORK/out" 2>"$WORK/err"
	status=$?
	set -e
	[ "$status" != 0 ] || fail "'$*' was accepted"
	[ ! -e "$WORK/served" ] || fail "'$*' served"
	[ "$(wc -l <"$WORK/err")" = 1 ] || fail "'$*' printed: $(cat "$WORK/err")"
	[ "$(cat "$WORK/err")" = "nbdkit: error: $want" ] ||
		fail "'$*' said '$(cat "$WORK/err")', not '$want'"
	echo "$* -> $want"
}
refused "size= is required"
refused "size= is required" algorithm=lz4
refused "could not parse size string (abc)" size=abc
refused "size must not be 0" size=0
refused "size cannot be negative (-1)" size=-1
refused "algorithm: 'lzo' is not built in (lz4, lz4hc$(grep -q 'zram_algorithms=.*zstd' \
	"$WORK/dump" && echo ', zstd'))" size=64M algorithm=lzo
refused "could not parse size string (lots)" size=64M mem_limit=lots
RANGES="(lz4: 1 to 65537, lz4hc: 1 to 12, zstd: -7 to 22)"
refused "level: 65538 is out of lz4's range $RANGES" size=64M level=65538
refused "level: -1 is out of lz4's range $RANGES" size=64M level=-1
refused "level: 13 is out of lz4hc's range $RANGES" size=64M algorithm=lz4hc level=13
refused "level: could not parse number: \"3x\": trailing garbage" size=64M level=3x
refused "recomp_level= needs recomp_algorithm=" size=64M recomp_level=9
: >"$WORK/empty"
head -c $((1024 * 1024 + 1)) /dev/zero >"$WORK/big"
head -c 4096 /dev/urandom >"$WORK/dict"
refused "dict: cannot open $WORK/none: No such file or directory" size=64M dict="$WORK/none"
refused "dict: $WORK/empty must be a file of 1 byte to 1 MiB" size=64M dict="$WORK/empty"
refused "dict: $WORK/big must be a file of 1 byte to 1 MiB" size=64M dict="$WORK/big"
refused "dict: $WORK must be a file of 1 byte to 1 MiB" size=64M dict="$WORK"
refused "recomp_dict= needs recomp_algorithm=" size=64M recomp_dict="$WORK/dict"
refused "recomp_dict: $WORK/empty must be a file of 1 byte to 1 MiB" \
	size=64M recomp_algorithm=lz4hc recomp_dict="$WORK/empty"
refused "recomp_level: 13 is out of lz4hc's range $RANGES" \
	size=64M recomp_algorithm=lz4hc recomp_level=13
refused "stripes must be 1 to 64, not 0" size=64M stripes=0
refused "stripes must be 1 to 64, not 65" size=64M stripes=65
refused "chunk must be a power of two from $PAGE to 1099511627776 bytes, not 3000" \
	size=64M stripes=2 chunk=3000
refused "size 67108864 is less than one chunk (67108864) a stripe" size=64M stripes=2 chunk=64M
refused "could not decipher boolean (maybe)" size=64M checksum=maybe
refused "could not decipher boolean (often)" size=64M multi_page=often
refused "compact_secs must be 0 to 86400, not 86401" size=64M compact_secs=86401
refused "unknown parameter 'disksize'" disksize=64M
MAX=$((((1 << 32) - 1) * PAGE))
refused "size too large: zram takes at most $MAX bytes" size=$((MAX + PAGE))
refused "backing_dev needs stripes=1" size=64M stripes=2 backing_dev="$WORK/backing"
refused "writeback= needs backing_dev=" size=64M writeback=idle
refused "idle_secs= needs backing_dev= or recomp_algorithm=" size=64M idle_secs=5
refused "recompress= needs recomp_algorithm=" size=64M recompress=idle
refused "recomp_algorithm: 'lzo' is not built in (lz4, lz4hc$(grep -q 'zram_algorithms=.*zstd' \
	"$WORK/dump" && echo ', zstd'))" size=64M recomp_algorithm=lzo
refused "recompress must be idle, huge, huge_idle, all or none, not 'often'" \
	size=64M recomp_algorithm=lz4hc recompress=often
refused "idle_secs must be 1 to 86400, not 0" size=64M recomp_algorithm=lz4hc idle_secs=0
refused "writeback must be idle, huge, huge_idle, incompressible, all or none, not 'old'" \
	size=64M backing_dev="$WORK/backing" writeback=old
refused "idle_secs must be 1 to 86400, not 0" size=64M backing_dev="$WORK/backing" idle_secs=0
refused "backing_dev: cannot open $WORK: Is a directory" size=64M backing_dev="$WORK"
refused "backing_dev: /dev/null is neither a file nor a block device" size=64M backing_dev=/dev/null
refused "backing_dev: cannot open $WORK/none/backing: No such file or directory" \
	size=64M backing_dev="$WORK/none/backing"
head -c 100 /dev/zero >"$WORK/small"
refused "backing_dev: cannot use $WORK/small: smaller than a page" \
	size=64M backing_dev="$WORK/small"

# size_is BYTES PARAMS...: served, with an export of BYTES.
size_is() {
	local want=$1 got
	shift
	got=$(LD_PRELOAD=$SAN_PRELOAD timeout 20 nbdkit -U - --run 'nbdinfo --size "$uri"' \
		"$PLUGIN" "$@") || fail "'$*' was refused"
	[ "$got" = "$want" ] || fail "'$*' serves $got bytes, not $want"
	echo "$* -> $got bytes"
}
size_is "$PAGE" size=1
size_is $((2 * PAGE)) size=$((PAGE + 1))
size_is $((6 * 65536)) size=$((3 * 65536 + 1)) stripes=3
size_is $((64 << 20)) size=64M stripes=4 chunk=1M mem_limit=1M checksum=on multi_page=on compact_secs=0
size_is $((64 << 20)) size=64M level=65537 recomp_algorithm=lz4hc recomp_level=12
size_is $((64 << 20)) size=64M dict="$WORK/dict" recomp_algorithm=lz4hc recomp_dict="$WORK/dict"
size_is $((64 << 20)) size=64M stripes=2 algorithm=lz4hc level=1 recomp_algorithm=lz4hc recomp_level=1
if grep -q 'zram_algorithms=.*zstd' "$WORK/dump"; then
	refused "level: 23 is out of zstd's range $RANGES" size=64M algorithm=zstd level=23
	refused "level: -8 is out of zstd's range $RANGES" size=64M algorithm=zstd level=-8
	size_is $((64 << 20)) size=64M algorithm=zstd level=-7 recomp_algorithm=zstd recomp_level=22
	# zstd's dictionary magic before bytes that are no dictionary.
	{ printf '\067\244\060\354'; head -c 2000 /dev/urandom; } >"$WORK/baddict"
	refused "dict: zstd refuses $WORK/baddict as a dictionary" \
		size=64M algorithm=zstd dict="$WORK/baddict"
	refused "recomp_dict: zstd refuses $WORK/baddict as a dictionary" \
		size=64M recomp_algorithm=zstd recomp_dict="$WORK/baddict"
fi

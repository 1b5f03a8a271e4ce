#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# nbdkit-zram-plugin with QEMU's tools: qemu-img convert to and from
# nbd+unix://, qemu-img map, and qemu-io writes and reads of patterns,
# including ones that are not whole sectors (QEMU aligns them itself) and
# zeroes; then nbdsh sends what QEMU would not: requests of odd bytes,
# FUA, flush, fast zero and trim of partial sectors.
. "$(dirname "$0")/nbd_lib.sh"
MiB=$((1 << 20))

corpus "$WORK/corpus"
head -c $((16 * MiB)) "$WORK/corpus" >"$WORK/img"
nbd_start size=64M algorithm=lz4 checksum=on

# To NBD (the disk is bigger: -n, no creation) and back.
qemu-img convert -n -f raw -O raw "$WORK/img" "$URI"
qemu-img convert -f raw -O raw "$URI" "$WORK/back"
[ "$(stat -c %s "$WORK/back")" = $((64 * MiB)) ] || fail "qemu-img read $(stat -c %s "$WORK/back") bytes"
cmp -n $((16 * MiB)) "$WORK/img" "$WORK/back" || fail "qemu-img convert round trip differs"
cmp <(tail -c $((48 * MiB)) "$WORK/back") <(head -c $((48 * MiB)) /dev/zero) ||
	fail "past the image the disk is not zeroes"
# qemu-img map sees the never-written rest as zero holes.
qemu-img map -f raw --output=json "$URI" >"$WORK/map"
grep -q "\"start\": $((16 * MiB)), \"length\": $((48 * MiB)), .*\"zero\": true, \"data\": false" \
	"$WORK/map" || { cat "$WORK/map"; fail "qemu-img map shows no hole past the image"; }
echo "qemu-img: convert to and from $URI, map"

# qemu-io: patterns at pages, at odd bytes, zeroes, discard.
qemu-io -f raw "$URI" \
	-c "write -P 0xab 0 1M" -c "read -P 0xab 0 1M" \
	-c "write -P 0xcd 1000 3000" -c "read -P 0xcd 1000 3000" \
	-c "read -P 0xab 0 1000" -c "read -P 0xab 4000 1044576" \
	-c "write -P 0x11 $((40 * MiB - 7)) 77777" -c "read -P 0x11 $((40 * MiB - 7)) 77777" \
	-c "write -z 4096 8192" -c "read -P 0 4096 8192" -c "read -P 0xab 12288 4096" \
	-c "discard 1M 1M" -c "read -P 0 1M 1M" -c "read -P 0xab 0 1000" >"$WORK/qio" 2>&1 ||
	{ cat "$WORK/qio"; fail "qemu-io failed"; }
! grep -qi "pattern verification failed\|error" "$WORK/qio" || { cat "$WORK/qio"; fail "qemu-io"; }
echo "qemu-io: $(grep -c '^read' "$WORK/qio") reads checked"

# nbdsh, with libnbd's alignment checks off: the plugin's bounce path.
# nbdsh is "python3 -m nbd", run with the python3 that has the module.
[ -n "$PY" ] ||
	skip "no nbdsh with its python module (Debian: python3-libnbd) for the unaligned requests"
"$PY" -m nbd -u "$URI" -c '
import os
h.set_strict_mode(0)
base = 48 << 20
data = os.urandom(70000)
h.pwrite(b"\x5a" * 8192, base)
h.pwrite(data[:3], base + 1)                   # inside one sector
h.pwrite(data, base + 511, nbd.CMD_FLAG_FUA)    # both ends partial, FUA
want = b"\x5a" + data[:3] + b"\x5a" * 507 + data
got = h.pread(len(want), base)
assert got == want, "unaligned writes read back wrong"
assert h.pread(5, base + 2) == want[2:7], "unaligned read wrong"
h.pwrite(b"\x77" * 8192, 0)
h.flush()
assert h.pread(8192, 0) == b"\x77" * 8192, "flush changed data"
h.zero(1000, base + 100, nbd.CMD_FLAG_FAST_ZERO)    # partial sectors, fast
want = want[:100] + bytes(1000) + want[1100:]
assert h.pread(len(want), base) == want, "unaligned zero wrong"
h.trim(100, base + 3)                          # no whole sector: changes nothing
assert h.pread(len(want), base) == want, "a trim of part of a sector changed data"
h.trim(1 << 20, base)
assert h.pread(1 << 20, base) == bytes(1 << 20), "trim did not read back zeroes"
' || fail "nbdsh: unaligned requests"
echo "nbdsh: unaligned reads, writes, zero and trim; FUA, flush, fast zero"

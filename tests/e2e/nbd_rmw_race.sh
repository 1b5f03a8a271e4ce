#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A write of part of a sector is a read-modify-write in the plugin; an
# aligned write of that sector racing it must not be undone by it.  Pairs
# of writes to one sector go out together on one connection (nbdkit serves
# them on parallel threads): 512 bytes of 0xAA, and 10 bytes of 0xBB at
# byte 100 of the same sector.  Afterwards each sector must read as one
# order or the other: all 0xAA with the ten 0xBB bytes, or all 0xAA.  A
# sector of zeroes around the 0xBB bytes is the aligned write lost.
. "$(dirname "$0")/nbd_lib.sh"

[ -n "$PY" ] || skip "no Python libnbd bindings (Debian: python3-libnbd)"

nbd_start size=64M
"$PY" - "$URI" "$(cd "$(dirname "$0")" && pwd)" <<'PY'
import nbd, sys

sys.dont_write_bytecode = True  # nothing left in the source tree
sys.path.insert(0, sys.argv[2])
import sector_orders

SECTOR, PAIRS, INFLIGHT = sector_orders.SECTOR, 100000, 64
h = nbd.NBD()
# The plugin advertises 512-byte blocks; NBD still lets a client send less.
h.set_strict_mode(h.get_strict_mode() & ~nbd.STRICT_ALIGN)
h.connect_uri(sys.argv[1])
whole = nbd.Buffer.from_bytearray(bytearray(b"\xaa" * SECTOR))
part = nbd.Buffer.from_bytearray(bytearray(b"\xbb" * 10))
for first in range(0, PAIRS, INFLIGHT):
    cookies = []
    for i in range(first, min(first + INFLIGHT, PAIRS)):
        off = i * SECTOR
        pair = [(whole, off), (part, off + 100)]
        for buf, at in pair if i % 2 else pair[::-1]:
            cookies.append(h.aio_pwrite(buf, at))
    while h.aio_in_flight() > 0:
        h.poll(-1)
    for c in cookies:
        h.aio_command_completed(c)  # raises if the write failed
total = PAIRS * SECTOR
got = b"".join(h.pread(min(1 << 20, total - o), o) for o in range(0, total, 1 << 20))
if not sector_orders.check(got, PAIRS):
    sys.exit(1)
h.shutdown()
PY
nbd_stop || fail "nbdkit did not stop cleanly"

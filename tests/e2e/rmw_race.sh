#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A write of part of a sector is a read-modify-write in zblk; an aligned
# write of that sector racing it must not be undone by it.  The disk is
# direct I/O with parallel direct writes, so two threads' writes of one
# sector reach zblk together: 512 bytes of 0xAA, and 10 bytes of 0xBB at
# byte 100 of the same sector, started together for each sector.  Each
# sector must then read as one order or the other: all 0xAA with the ten
# 0xBB bytes, or all 0xAA.  Zeroes around the 0xBB bytes are the aligned
# write lost; before zblk held aligned writes off a read-modify-write,
# about 1 pair in 1000 lost it.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip "no python3"
PAIRS=${RMW_RACE_PAIRS:-20000}
zblk_start -o "disksize=64M" >/dev/null
python3 - "$MNT/disk" "$PAIRS" "$(cd "$(dirname "$0")" && pwd)" <<'PY' || fail "see above"
import os, sys, threading

sys.dont_write_bytecode = True  # nothing left in the source tree
sys.path.insert(0, sys.argv[3])
import sector_orders

disk, pairs = sys.argv[1], int(sys.argv[2])
SECTOR = sector_orders.SECTOR
fd = os.open(disk, os.O_RDWR)
start = threading.Barrier(2)   # each pair's two writes go out together
errors = []

def writer(data, at):
    try:
        for i in range(pairs):
            start.wait()
            os.pwrite(fd, data, i * SECTOR + at)   # releases the GIL
    except Exception as e:
        errors.append(e)
        start.abort()

threads = [threading.Thread(target=writer, args=a)
           for a in ((b"\xaa" * SECTOR, 0), (b"\xbb" * 10, 100))]
for t in threads:
    t.start()
for t in threads:
    t.join()
if errors:
    print(f"FAIL a write failed: {errors[0]}")
    sys.exit(1)
got = os.pread(fd, pairs * SECTOR, 0)
if not sector_orders.check(got, pairs):
    sys.exit(1)
PY
zblk_stop rmw_race
echo "1 passed, 0 failed"

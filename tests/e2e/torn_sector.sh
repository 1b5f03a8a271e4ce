#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A sector of the disk is never half one write and half another, as on a
# block device, even when a large read or write comes from memory that
# does not start a page.  The kernel cuts such a request into FUSE
# requests; zblk once let the first end max_pages pages into the buffer,
# 1 MiB less the buffer's offset in its page, inside a sector, whose two
# halves were then two separate read-modify-writes.  A whole-sector write
# of that sector landing between them was half undone, and a read of it
# could return half of each.  Here a 2 MiB write and a 2 MiB read, each
# at 100 bytes into a page, race a 512-byte write of the sector that held
# the old cut; each round's sector must be one writer's.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip "no python3"
ROUNDS=${TORN_SECTOR_ROUNDS:-1000}
zblk_start -o "disksize=4M" >/dev/null
max_read=$(sed -n "s|.* $MNT fuse.*max_read=\([0-9]*\).*|\1|p" /proc/mounts)
[ -n "$max_read" ] && [ $((max_read % 512)) = 0 ] ||
	fail "the mount's max_read is '$max_read', not a whole number of sectors"
echo "mounted with max_read=$max_read"
python3 - "$MNT/disk" "$ROUNDS" <<'PY' || fail "see above"
import mmap, os, random, sys, threading, time

disk, rounds = sys.argv[1], int(sys.argv[2])
S, MIB, AT = 512, 1 << 20, 100
fd = os.open(disk, os.O_RDWR)
mem = mmap.mmap(-1, 2 * MIB + 4096)     # page aligned; the I/O starts AT bytes in
buf = memoryview(mem)[AT:AT + 2 * MIB]
sec = (MIB - AT) // S * S                # the sector the old cut fell in

def timed(f):
    t = time.monotonic()
    f()
    return time.monotonic() - t

def race(big, small):
    # The small write starts at a random moment of the large request, so
    # that it lands now before, now inside, now after the sector's part.
    delay = random.uniform(0, span)
    ts = [threading.Thread(target=big),
          threading.Thread(target=lambda: (time.sleep(delay), small()))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()

def judge(what, got, a, b, seen):
    if got == a * S:
        seen[0] += 1
    elif got == b * S:
        seen[1] += 1
    else:
        cut = next(j for j in range(1, S) if got[j] != got[0])
        print(f"FAIL {what}: sector {sec // S} holds {got[0]:02x} to byte {cut}, "
              f"then {got[cut]:02x}: half of each write")
        sys.exit(1)

mem[:] = b"\x11" * len(mem)
span = min(timed(lambda: os.pwrite(fd, buf, 0)) for _ in range(5))
seen = [0, 0]
for _ in range(rounds):
    os.pwrite(fd, bytes(S), sec)
    race(lambda: os.pwrite(fd, buf, 0), lambda: os.pwrite(fd, b"\x22" * S, sec))
    judge("write", os.pread(fd, S, sec), b"\x11", b"\x22", seen)
print(f"ok   {rounds} 2 MiB writes from byte {AT} of a page against a sector write: "
      f"{seen[0]} large last, {seen[1]} small last")
seen = [0, 0]
for _ in range(rounds):
    os.pwrite(fd, b"\x33" * S, sec)
    race(lambda: os.preadv(fd, [buf], 0), lambda: os.pwrite(fd, b"\x44" * S, sec))
    judge("read", bytes(buf[sec:sec + S]), b"\x33", b"\x44", seen)
print(f"ok   {rounds} 2 MiB reads into byte {AT} of a page against a sector write: "
      f"{seen[0]} read first, {seen[1]} write first")
PY
zblk_stop torn_sector
echo "1 passed, 0 failed"

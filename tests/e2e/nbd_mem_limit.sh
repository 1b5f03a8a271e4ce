#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# At mem_limit, data is refused with EIO and what was stored stays intact,
# while zeroes still go in however the client sends them: WRITE_ZEROES with
# NBD_CMD_FLAG_NO_HOLE (allocated zeroes), or zeroes sent as data, over
# pages never written and over pages of data.  A zero page is a mark in its
# slot, as in the kernel's zram; extents report it as allocated zeroes and
# mm_stat counts it in same_pages.  A zero whose ends fall inside sectors of
# data pages zeroes the whole pages between even when an end is refused.
. "$(dirname "$0")/nbd_lib.sh"

[ -n "$PY" ] || skip "no Python libnbd bindings (Debian: python3-libnbd)"

MiB=$((1 << 20))
nbd_start size=64M mem_limit=4M
page=$("$PY" - "$URI" <<'PY'
import errno, nbd, os, sys

MiB = 1 << 20
h = nbd.NBD()
h.connect_uri(sys.argv[1])
data = os.urandom(16 * MiB)
written = 0
for off in range(0, len(data), MiB):
    try:
        h.pwrite(data[off:off + MiB], off)
    except nbd.Error as e:
        if e.errnum != errno.EIO:
            sys.exit(f"FAIL: a refused write is {e}, not EIO")
        break
    written += MiB
if written == len(data):
    sys.exit("FAIL: 16 MiB of random data fit in a 4 MiB limit")
if written < MiB:
    sys.exit(f"FAIL: only {written} bytes before the limit")
try:
    h.zero(8 * MiB, 32 * MiB, nbd.CMD_FLAG_NO_HOLE)  # never written
    h.pwrite(bytes(4 * MiB), 40 * MiB)               # zeroes as data
    h.zero(MiB, 0, nbd.CMD_FLAG_NO_HOLE)             # over stored data
    # (libnbd's zero() and pread() take the length first, then the offset)
except nbd.Error as e:
    sys.exit(f"FAIL: zeroes refused at mem_limit: {e}")
if h.pread(MiB, 0) != bytes(MiB) or h.pread(12 * MiB, 32 * MiB) != bytes(12 * MiB):
    sys.exit("FAIL: zeroed ranges do not read as zeroes")
if h.pread(written - MiB, MiB) != data[MiB:written]:
    sys.exit("FAIL: data stored before the limit changed")
page = h.get_block_size(nbd.SIZE_PREFERRED)
if written < MiB + 24 * page:
    sys.exit(f"FAIL: only {written} bytes before the limit, too few for the next checks")

# Full again before each, zeroes whose ends lie inside sectors of data
# pages: the whole pages between are zeroed even where an end, which must
# store a page that keeps data, is refused.  Each end is one or two stores
# (a partial sector, then whole sectors up to the page's end), each all
# zero or, refused, all old.
fill_at = 48 * MiB
def fill():
    global fill_at
    while fill_at < 64 * MiB:
        try:
            h.pwrite(data[:MiB], fill_at)
        except nbd.Error:
            return
        fill_at += MiB
    sys.exit("FAIL: the limit was not reached again")
u = nbd.NBD()
u.set_strict_mode(u.get_strict_mode() & ~nbd.STRICT_ALIGN)  # NBD allows any bytes
u.connect_uri(sys.argv[1])
for first, flags in ((4, 0), (16, nbd.CMD_FLAG_NO_HOLE), (20, nbd.CMD_FLAG_NO_HOLE)):
    fill()
    start, count = MiB + first * page + 17, 3 * page   # pages first+1 and first+2 whole
    try:
        u.zero(count, start, flags)
        refused = False
    except nbd.Error as e:
        if e.errnum != errno.EIO:
            sys.exit(f"FAIL: a refused zero is {e}, not EIO")
        refused = True
    if u.pread(2 * page, MiB + (first + 1) * page) != bytes(2 * page):
        sys.exit(f"FAIL: zero at {start} (flags {flags}): the whole pages inside kept data")
    got, old = u.pread(count, start), data[start:start + count]
    for lo, hi in ((0, 512 - 17), (512 - 17, page - 17), (count - 17, count)):
        if got[lo:hi] != bytes(hi - lo) and (not refused or got[lo:hi] != old[lo:hi]):
            sys.exit(f"FAIL: zero at {start} (flags {flags}): bytes {lo}-{hi} are neither "
                     "old nor zero")
u.shutdown()
print(page)
print(f"{written // MiB} MiB of random data before EIO, then 13 MiB of zeroes at the limit, "
      "and zeroes with unaligned ends", file=sys.stderr)
h.shutdown()
PY
)
nbdinfo --map "$URI" >"$WORK/map"
# Type 2 is "zero" (allocated), 3 "hole,zero", 0 "data".
awk -v M=$MiB '($1 < M || ($1 < 44 * M && $1 + $2 > 32 * M)) && $3 != 2 {print; bad = 1}
	END {exit bad}' "$WORK/map" || fail "zeroed ranges are not allocated zeroes (above)"
nbd_stop
same=$(stat_field mm_stat 6)
# 13 MiB of zero pages, and the two whole pages of each NO_HOLE zero above.
[ "$same" = $((13 * MiB / page + 4)) ] ||
	fail "same_pages is $same pages of $page bytes, not 13 MiB of zero pages and 4"
echo "zero pages at mem_limit: 13 MiB written, read back, mapped as allocated zeroes"
echo "1 passed, 0 failed"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# With -o page_cache, a write reads back as written while other processes
# open the disk and read the same page.  The kernel writes through: it
# copies a write into the cached page, unlocks it and only then sends the
# WRITE.  An open that empties the disk's cache in that window lets a
# reader fetch the old bytes from zblk and cache them over the new ones,
# where the writer's read back finds them (and a shared mapping's
# writeback of the page would send them to the device).  zblk opens the
# disk keeping its cache; before it did, this failed within 300 writes.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip "no python3"
WRITES=${PAGE_CACHE_WRITES:-4000}
zblk_start -o "disksize=8M,page_cache" >/dev/null
python3 - "$MNT/disk" "$WRITES" <<'PY' || fail "see above"
import mmap, os, sys

disk, writes = sys.argv[1], int(sys.argv[2])
AT = 5 * 4096 + 1000   # 79 bytes inside one page, off its sectors' edges
done = mmap.mmap(-1, 16)   # shared: what each helper has done
kids = []
for k, role in enumerate(("opener", "reader")):
    pid = os.fork()
    if pid == 0:
        fd = os.open(disk, os.O_RDONLY)
        for n in range(1, 1 << 62):   # until the writer kills it
            if role == "opener":
                os.close(os.open(disk, os.O_RDONLY))
            else:
                os.pread(fd, 200, AT - 60)
            done[8 * k:8 * k + 8] = n.to_bytes(8, "little")
    kids.append(pid)

fd = os.open(disk, os.O_RDWR)
bad = None
for i in range(writes):
    data = bytes([i % 255 + 1]) * 79
    os.pwrite(fd, data, AT)
    got = os.pread(fd, 79, AT)
    if got != data:
        bad = f"write {i + 1} of {writes}: its read back gives {got[:8].hex()}, not {data[:8].hex()}"
        break
for pid in kids:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
opens, reads = (int.from_bytes(done[i:i + 8], "little") for i in (0, 8))
if not bad and not (opens and reads):
    bad = f"the helpers did not run beside the writes ({opens} opens, {reads} reads)"
if bad:
    print("FAIL " + bad)
    sys.exit(1)
print(f"ok   {writes} writes of 79 bytes read back as written beside {opens} opens "
      f"and {reads} reads")
PY
zblk_stop page_cache
echo "1 passed, 0 failed"

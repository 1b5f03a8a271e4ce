#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The disk never grows, with the writeback cache or without, buffered or
# O_DIRECT: a write at or past the end fails at write() (ENOSPC), one that
# runs past it writes the bytes inside and is cut short (EIO with O_DIRECT),
# truncation to another size fails, open(O_TRUNC) changes nothing, the size
# stays disksize, fsync reports nothing late, and the data inside is intact.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip "no python3"
SIZE=$((1024 * 1024))
for mode in "" ",writeback"; do
	zblk_start -o "disksize=$SIZE$mode"
	head -c $SIZE /dev/urandom >"$WORK/model"
	dd if="$WORK/model" of="$MNT/disk" bs=64k conv=notrunc status=none
	python3 - "$MNT/disk" "$WORK/model" $SIZE <<'PY' || fail "mode '$mode': see above"
import errno, mmap, os, sys
disk, model, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
bad = 0
def check(what, ok):
    global bad
    print(("ok   " if ok else "FAIL ") + what)
    bad += not ok
for direct in (False, True):
    name = "O_DIRECT" if direct else "buffered"
    fd = os.open(disk, os.O_RDWR | (os.O_DIRECT if direct else 0))
    buf = mmap.mmap(-1, 8192)            # page aligned, as O_DIRECT wants
    buf.write(b"\xa5" * 8192)
    for off, length in ((size, 4096), (2 * size, 4096), (size + 512, 512)):
        try:
            n = os.pwritev(fd, [memoryview(buf)[:length]], off)
            check(f"{name} write of {length} at {off}: refused", False)
        except OSError as e:
            check(f"{name} write of {length} at {off}: {e.strerror}", e.errno == errno.ENOSPC)
        check(f"{name} size after it: {os.fstat(fd).st_size}", os.fstat(fd).st_size == size)
    # Starts inside, runs past the end: only the bytes inside are written.
    try:
        n = os.pwritev(fd, [buf], size - 4096)
        check(f"{name} write across the end: {n} bytes", n == 4096)
    except OSError as e:
        # Asynchronous direct I/O turns any short write into EIO.
        check(f"{name} write across the end: {e.strerror}", e.errno in (errno.ENOSPC, errno.EIO))
    check(f"{name} size: {os.fstat(fd).st_size}", os.fstat(fd).st_size == size)
    try:
        os.fsync(fd)
        check(f"{name} fsync", True)
    except OSError as e:
        check(f"{name} fsync: {e.strerror}", False)
    for new in (size * 2, size // 2, size + 1):
        try:
            os.ftruncate(fd, new)
            check(f"{name} ftruncate to {new}: refused", False)
        except OSError as e:
            check(f"{name} ftruncate to {new}: {e.strerror}", True)
    check(f"{name} size: {os.fstat(fd).st_size}", os.fstat(fd).st_size == size)
    os.close(fd)
print("bad", bad)
sys.exit(1 if bad else 0)
PY
	for s in 2M 512K 1048577; do
		! truncate -s "$s" "$MNT/disk" 2>/dev/null || fail "mode '$mode': truncate -s $s worked"
	done
	[ "$(stat -c %s "$MNT/disk")" = $SIZE ] || fail "mode '$mode': size $(stat -c %s "$MNT/disk")"
	: >"$MNT/disk" # O_TRUNC, as "dd of=" without conv=notrunc
	[ "$(stat -c %s "$MNT/disk")" = $SIZE ] ||
		fail "mode '$mode': size $(stat -c %s "$MNT/disk") after O_TRUNC"
	# What the writes across the end put inside: 0xa5 in the last 4 KiB.
	printf '\245%.0s' $(seq 4096) | dd of="$WORK/model" bs=4096 seek=$((SIZE / 4096 - 1)) \
		conv=notrunc status=none
	cmp "$WORK/model" "$MNT/disk" || fail "mode '$mode': the data inside changed"
	dd if="$MNT/disk" iflag=direct bs=64k status=none | cmp - "$WORK/model" ||
		fail "mode '$mode': the device holds other data than the page cache"
	zblk_stop "mode '$mode'"
	echo "mode '$mode': the disk kept its size and data"
done
echo "1 passed, 0 failed"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A large read or write of the disk is cut into pieces that helper threads
# take from a queue of 32 (transport.c); a request that finds the queue
# full must still do all of its bytes.  To fill the queue without counting
# on timing, the pieces are made to wait: the disk's pages are written back
# to a backing_dev on a second zblk, which is then stopped (SIGSTOP), so a
# piece that reads a page waits in the kernel.  Ten 1 MiB reads off 64 KiB
# boundaries each queue four pieces and wait in their first; once every
# reading thread and helper waits, the queue holds more than it can.  Then
# the second zblk goes on and each read must return its bytes.  Before the
# fix, a request whose queue was full read its first piece too long and
# never read its last bytes: the reader got what the thread's buffer held
# from before.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip "no python3"
[ "$STRIPES" = 1 ] || skip "backing_dev needs stripes=1"
CPUS=$(getconf _NPROCESSORS_ONLN)
[ "$CPUS" -gt 1 ] || skip "one processor: zblk runs no helpers and splits nothing"
HELPERS=$((2 * CPUS - 1 > 8 ? 8 : 2 * CPUS - 1)) # transport.c's start_helpers()
READS=10
BACK=$WORK/back
mkdir -p "$BACK"
back_pid=
# The second zblk goes on before anything waits for the first to stop.
trap 's=$?; [ -n "$back_pid" ] && kill -CONT "$back_pid" 2>/dev/null; (exit $s); cleanup' EXIT
cleanup_hook() {
	fusermount3 -u "$BACK" 2>/dev/null || fusermount3 -uz "$BACK" 2>/dev/null
}

"$ZBLK" -o disksize=64M "$BACK" || fail "the backing zblk did not start"
back_pid=$(pgrep -f -- " $BACK\$") || fail "cannot find the backing zblk"
zblk_start -o "disksize=$((READS + 1))M,backing_dev=$BACK/disk,max_threads=$((READS + 6))" >/dev/null
pid=$(zblk_pid) || fail "cannot find the zblk daemon"
head -c $(((READS + 1) << 20)) /dev/urandom >"$WORK/data"
dd if="$WORK/data" of="$MNT/disk" bs=1M conv=notrunc status=none
echo all >"$MNT/idle"
echo idle >"$MNT/writeback"
read -r count _ <"$MNT/bd_stat"
[ "$count" -ge $(((READS + 1) * 256)) ] || fail "only $count pages went to the backing_dev"

# Threads of zblk waiting for a request of their own: on the backing zblk.
waiting() {
	local t n=0
	for t in /proc/"$pid"/task/*; do
		[ "$(cat "$t/wchan" 2>/dev/null)" = request_wait_answer ] && n=$((n + 1))
	done
	echo "$n"
}

kill -STOP "$back_pid"
python3 - "$MNT/disk" "$WORK/data" "$READS" >"$WORK/reads" 2>&1 <<'PY' &
import mmap, os, sys, threading

disk, data, reads = sys.argv[1], sys.argv[2], int(sys.argv[3])
MIB = 1 << 20
fd = os.open(disk, os.O_RDONLY)
want = open(data, "rb").read()
bad = []

def read(i):
    buf = mmap.mmap(-1, MIB)   # page aligned: one request of 1 MiB
    off = i * MIB + 512        # off a 64 KiB boundary: four pieces queued
    n = os.preadv(fd, [buf], off)
    if n != MIB:
        bad.append(f"read {i}: {n} bytes, not {MIB}")
    elif buf[:] != want[off:off + MIB]:
        j = next(j for j in range(MIB) if buf[j] != want[off + j])
        bad.append(f"read {i} at {off}: wrong bytes from byte {j} of the read on")

threads = [threading.Thread(target=read, args=(i,)) for i in range(reads)]
for t in threads:
    t.start()
for t in threads:
    t.join()
for b in bad:
    print("FAIL " + b)
if bad:
    sys.exit(1)
print(f"ok   {reads} reads of 1 MiB read their bytes with the piece queue full")
PY
reader=$!
for _ in $(seq 3000); do
	[ "$(waiting)" -ge $((READS + HELPERS)) ] && break
	kill -0 "$reader" 2>/dev/null || break
	sleep 0.1
done
n=$(waiting)
kill -CONT "$back_pid"
wait "$reader" || { cat "$WORK/reads"; fail "see above"; }
cat "$WORK/reads"
[ "$n" -ge $((READS + HELPERS)) ] ||
	fail "only $n of zblk's threads waited for the backing_dev, not $((READS + HELPERS))"
zblk_stop split_queue
echo "1 passed, 0 failed"

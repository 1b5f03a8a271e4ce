#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# FUSE over io_uring (-o io_uring): without the kernel's offer zblk says so
# and serves /dev/fuse; with it (enable_uring, set here and put back) the
# requests really travel through the ring (zblk's count of ring requests
# and the ring's completion counter in fdinfo), ext4 on it checks clean,
# the corpus reads back, fio verifies with 2 jobs, the unmount is clean,
# a kill -9 while busy leaves a mountpoint that mounts again, a SIGTERM
# while busy exits cleanly with every ring command accepted; then every
# other e2e script passes with the ring in use.
. "$(dirname "$0")/lib.sh"
PARAM=/sys/module/fuse/parameters/enable_uring
[ -e "$PARAM" ] || skip "this kernel has no FUSE over io_uring"
command -v fio >/dev/null || skip "no fio"
[ "${URING:-1}" = 1 ] || skip "zblk built without liburing"
DIR=$(dirname "$0")
LOG=$WORK/log
CORPUS=$WORK/corpus
old=$(cat "$PARAM")
# A read-only /sys (some containers) or io_uring switched off for everyone.
echo "$old" 2>/dev/null >"$PARAM" || skip "cannot set $PARAM"
[ "$(cat /proc/sys/kernel/io_uring_disabled 2>/dev/null || echo 0)" = 0 ] ||
	skip "io_uring is disabled (kernel.io_uring_disabled)"
trap 'st=$?; echo "$old" >"$PARAM"; (exit $st); cleanup' EXIT

start() { # OPTIONS: zblk in the foreground, its messages in $LOG
	"$ZBLK" -f -o "$1" "$MNT" 2>"$LOG" &
	for _ in $(seq 100); do [ -f "$MNT/disk" ] && break; sleep 0.1; done
	[ -f "$MNT/disk" ] || fail "zblk -o $1 did not start: $(cat "$LOG")"
	echo "zblk -o $1"
}
stop() {
	local rc=0
	fusermount3 -u "$MNT" || fail "fusermount3 -u"
	wait || rc=$?
	[ "$rc" = 0 ] || fail "zblk exited $rc: $(cat "$LOG")"
}
# ring_completions PID: completions on the process's io_uring rings
ring_completions() {
	local fd n=0 t
	for fd in /proc/"$1"/fd/*; do
		[ "$(readlink "$fd")" = "anon_inode:[io_uring]" ] || continue
		t=$(awk '/^CqTail:/ {print $2}' /proc/"$1"/fdinfo/"${fd##*/}")
		n=$((n + ${t:-0}))
	done
	echo "$n"
}

# 1. Not offered: one line, and /dev/fuse serves.
echo N >"$PARAM"
start disksize=16M,io_uring
grep -q "does not offer FUSE over io_uring" "$LOG" || fail "no fallback message: $(cat "$LOG")"
head -c 1M /dev/urandom >"$WORK/src"
dd if="$WORK/src" of="$MNT/disk" bs=64k conv=notrunc,fsync status=none
cmp -n 1048576 "$WORK/src" "$MNT/disk" || fail "data lost over /dev/fuse"
stop
! grep -q "io_uring carried" "$LOG" || fail "a ring ran without the offer"

# 2. Offered: the ring carries the requests.
echo Y >"$PARAM"
start disksize=256M,io_uring
grep -q "serving over io_uring" "$LOG" || fail "the ring did not start: $(cat "$LOG")"
pid=$!
mkfs.ext4 -q -F "$MNT/disk"
e2fsck -fn "$MNT/disk" >"$WORK/fsck" 2>&1 || fail "e2fsck: $(cat "$WORK/fsck")"
xz -dc "$DIR/../../../shared/corpus/anon-64m.bin.xz" >"$CORPUS" 2>/dev/null ||
	head -c 64M /dev/urandom >"$CORPUS"
dd if="$CORPUS" of="$MNT/disk" bs=1M seek=128 conv=notrunc,fsync status=none
cmp -i 0:$((128 << 20)) -n $((64 << 20)) "$CORPUS" "$MNT/disk" || fail "corpus read back differs"
fio --name=verify --filename="$MNT/disk" --rw=randwrite --bsrange=512-128k \
	--blockalign=512 --numjobs=2 --size=48M --offset_increment=64M \
	--ioengine=psync --direct=1 --verify=crc32c --verify_fatal=1 \
	--do_verify=1 --group_reporting --output-format=terse >"$WORK/fio.out" ||
	fail "fio verification failed: $(tail -5 "$WORK/fio.out")"
done_ring=$(ring_completions "$pid")
echo "ring completions: $done_ring"
# fio alone made over 1,000 requests; all of them must have used the ring.
[ "$done_ring" -gt 1000 ] || fail "the ring carried only $done_ring requests"
stop
carried=$(sed -n 's/.*io_uring carried \([0-9]*\) requests.*/\1/p' "$LOG")
echo "zblk: ${carried:-no} requests through the ring"
[ "${carried:-0}" -gt 1000 ] || fail "zblk counted ${carried:-no} ring requests: $(cat "$LOG")"

# 3. kill -9 while busy, then the mountpoint mounts again.
start disksize=64M,io_uring
pid=$!
( while dd if=/dev/urandom of="$MNT/disk" bs=64k count=64 conv=notrunc,fsync \
	status=none 2>/dev/null; do :; done ) &
writer=$!
sleep 1
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
for _ in $(seq 300); do kill -0 "$writer" 2>/dev/null || break; sleep 0.1; done
kill -0 "$writer" 2>/dev/null && { kill -9 "$writer"; fail "the writer hangs on a dead zblk"; }
wait "$writer" 2>/dev/null || true
timeout 30 fusermount3 -u "$MNT" || fail "fusermount3 -u after kill -9"
start disksize=64M,io_uring
dd if="$WORK/src" of="$MNT/disk" bs=64k conv=notrunc,fsync status=none
cmp -n 1048576 "$WORK/src" "$MNT/disk" || fail "data lost after the remount"
stop

# 3b. SIGTERM while clients keep the disk busy: libfuse's unmount is lazy,
# so their requests still come through the ring until zblk stops it; each
# must be answered on a live descriptor (no "io_uring entry" error), zblk
# exits 0 and the clients end.
start disksize=64M,io_uring
pid=$!
# Each writer keeps one descriptor: after the lazy unmount a new open of
# $MNT/disk would make a file in the bare directory.
writers=
for i in 0 1 2 3; do
	python3 - "$MNT/disk" "$i" "$WORK/open.$i" <<'PY' &
import os, sys, time
fd, i = os.open(sys.argv[1], os.O_WRONLY), int(sys.argv[2])
open(sys.argv[3], "w").close()
buf, end = os.urandom(256 << 10), time.monotonic() + 60
try:
    while time.monotonic() < end:
        for k in range(16):
            os.pwrite(fd, buf, ((i * 16 + k) << 18) + 512 * k)
except OSError:
    pass
PY
	writers="$writers $!"
done
for _ in $(seq 100); do [ "$(ls "$WORK" | grep -c '^open\.')" = 4 ] && break; sleep 0.1; done
sleep 1
kill -TERM "$pid"
rc=0
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$pid" 2>/dev/null && fail "zblk still runs 10 s after SIGTERM"
wait "$pid" || rc=$?
for w in $writers; do
	for _ in $(seq 300); do kill -0 "$w" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$w" 2>/dev/null && { kill -9 $writers; fail "a writer hangs after SIGTERM"; }
	wait "$w" 2>/dev/null || true
done
[ "$rc" = 0 ] || fail "SIGTERM under load: zblk exited $rc: $(cat "$LOG")"
! grep "io_uring entry" "$LOG" ||
	fail "SIGTERM under load: ring commands failed (above)"
grep -q "io_uring carried" "$LOG" || fail "SIGTERM under load: no ring: $(cat "$LOG")"
mountpoint -q "$MNT" && fail "SIGTERM under load: $MNT still mounted"
echo "SIGTERM under load: exit 0, every ring command accepted"

# 4. Every other e2e script through the ring (zblk_start adds ZBLK_OPTS).
for s in mkfs_fsck copy_tree fio_verify fstrim mem_limit fallocate past_end kill9 fio_control rmw_race torn_sector; do
	ZBLK_OPTS=io_uring bash "$DIR/$s.sh" >"$WORK/$s.out" 2>&1 ||
		fail "$s.sh with -o io_uring: $(tail -5 "$WORK/$s.out")"
	echo "$s.sh with -o io_uring: passed"
done
echo "1 passed, 0 failed"

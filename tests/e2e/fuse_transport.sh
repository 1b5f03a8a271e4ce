#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What zblk's FUSE transport promises the kernel, read from zblk's own
# request log (-d): the disk's attributes are cached, so direct 4 KiB
# reads of it come without a GETATTR each; by default the disk is direct
# I/O with parallel writes, so two writers have two WRITEs in flight at
# once, while with page_cache the kernel sends them one at a time and a
# shared mmap works; the statistics files stay current; max_write is
# whole sectors and stops a page short of the kernel's request pages.
. "$(dirname "$0")/lib.sh"
command -v fio >/dev/null || skip "no fio"
SIZE=$((16 * 1024 * 1024))
LOG=$WORK/requests

# start MODE: zblk in the foreground with its request log, in the background
start() {
	local opts="disksize=$SIZE$1"
	[ "$STRIPES" -gt 1 ] && opts="$opts,stripes=$STRIPES,chunk=64K"
	"$ZBLK" -f -d -o "$opts" "$MNT" 2>"$LOG" &
	for _ in $(seq 100); do [ -f "$MNT/disk" ] && break; sleep 0.1; done
	[ -f "$MNT/disk" ] || fail "zblk -o $opts did not start"
	echo "zblk -o $opts"
}
stop() {
	fusermount3 -u "$MNT"
	wait
}
# count OPCODE: requests of that kind logged since the log was emptied
count() { grep -ac "opcode: $1 " "$LOG" || true; }
# most WRITE requests in flight at once: received, not yet answered
in_flight() {
	awk '/opcode: WRITE / { sub(",", "", $2); w[$2] = 1; if (++n > max) max = n }
	     /success, outsize|error: / { sub(",", "", $2); if ($2 in w) { delete w[$2]; n-- } }
	     END { print max + 0 }' "$LOG"
}
fio_run() { # RW COUNT
	fio --name=t --filename="$MNT/disk" --rw="$1" --bs=4k --numjobs=2 --size=$SIZE \
		--ioengine=psync --direct=1 --number_ios="$2" --group_reporting >/dev/null ||
		fail "fio $1 failed"
}

for mode in "" ",page_cache"; do
	start "$mode"
	dd if=/dev/urandom of="$MNT/disk" bs=1M count=4 oflag=direct conv=notrunc status=none
	before=$(awk '{print $1}' "$MNT/mm_stat")
	[ "$before" = $((4 * 1024 * 1024)) ] || fail "mode '$mode': mm_stat says $before bytes"
	: >"$LOG"
	fio_run randread 500
	getattrs=$(count GETATTR) reads=$(count READ)
	echo "mode '$mode': $reads READs, $getattrs GETATTRs"
	[ "$reads" -ge 1000 ] || fail "mode '$mode': $reads READs logged for 1000 reads"
	# fio itself stats the file a few times; a GETATTR per read is 1000.
	[ "$getattrs" -le 20 ] || fail "mode '$mode': $getattrs GETATTRs for 1000 reads"
	: >"$LOG"
	fio_run randwrite 2000
	most=$(in_flight)
	echo "mode '$mode': at most $most WRITEs in flight"
	if [ -z "$mode" ]; then
		[ "$most" -ge 2 ] || fail "direct I/O: writes to the disk never ran in parallel"
	else
		[ "$most" = 1 ] || fail "page_cache: $most writes in flight under the inode lock"
	fi
	after=$(awk '{print $1}' "$MNT/mm_stat")
	[ "$after" -gt "$before" ] || fail "mode '$mode': mm_stat stale ($before, then $after)"
	python3 - "$MNT/disk" "$mode" <<'PY' || fail "mode '$mode': shared mmap, see above"
import errno, mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    m = mmap.mmap(fd, 4096, flags=mmap.MAP_SHARED)
    m.close()
    ok = sys.argv[2] == ",page_cache"
    print("shared mmap works", "" if ok else "on a direct I/O disk?")
except OSError as e:
    # A direct I/O FUSE file refuses shared mappings (ENODEV).
    ok = sys.argv[2] == "" and e.errno == errno.ENODEV
    print("shared mmap:", e.strerror)
sys.exit(0 if ok else 1)
PY
	stop
done

# max_write is whole sectors, and a page less than the kernel's 256-page
# requests: one more page than max_write fills lets a request from memory
# that does not start a page carry all of it (torn_sector.sh).  Past
# libfuse's 256-page buffers it once mounted, then failed every read of
# /dev/fuse (EINVAL), leaving a dead mount.  Each bad value is refused with
# a message; the largest allowed one works.
max=$((255 * $(getconf PAGESIZE)))
for bad in $((max + 512)) $((2 * max)) 5000; do
	if "$ZBLK" -o "disksize=4M,max_write=$bad" "$MNT" 2>"$WORK/err"; then
		fusermount3 -uz "$MNT" 2>/dev/null
		fail "max_write=$bad was accepted"
	fi
	grep -q "^zblk: max_write must be a multiple of 512 from 4K to " "$WORK/err" ||
		fail "max_write=$bad said: $(cat "$WORK/err")"
	echo "max_write=$bad -> $(cat "$WORK/err")"
done
"$ZBLK" -o "disksize=4M,max_write=$max" "$MNT" || fail "max_write=$max refused"
head -c $((2 * max)) /dev/urandom >"$WORK/data"
dd if="$WORK/data" of="$MNT/disk" bs=$((2 * max)) oflag=direct conv=notrunc status=none ||
	fail "a $((2 * max))-byte write with max_write=$max failed"
cmp -n $((2 * max)) "$WORK/data" "$MNT/disk" || fail "max_write=$max: data differ"
zblk_stop "max_write=$max"

# A stop asked for with SIGTERM unmounts and exits 0, as service managers
# expect of a daemon; it used to exit 1.  (SIGINT and SIGHUP are the same
# in zblk, but a test cannot count on them: a script's background job starts
# with SIGINT ignored, and under nohup SIGHUP is too, so libfuse leaves them.)
"$ZBLK" -f -o "disksize=4M" "$MNT" 2>"$WORK/err" &
pid=$!
for _ in $(seq 100); do [ -f "$MNT/disk" ] && break; sleep 0.1; done
[ -f "$MNT/disk" ] || fail "zblk did not start: $(cat "$WORK/err")"
kill -TERM "$pid"
for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then
	kill -9 "$pid"
	fail "zblk still running 10 s after SIGTERM"
fi
rc=0
wait "$pid" || rc=$?
[ "$rc" = 0 ] || fail "SIGTERM: zblk exited $rc: $(cat "$WORK/err")"
! grep -q " $MNT fuse" /proc/mounts || fail "SIGTERM: $MNT still mounted"
echo "SIGTERM: unmounted, exit 0"
echo "PASS"

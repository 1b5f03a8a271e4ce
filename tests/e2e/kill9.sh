#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# kill -9 of zblk while a loop-mounted ext4 on it is being written: the
# writer gets errors and ends, and the recovery README.md documents
# (umount, losetup -d, fusermount3 -u) returns and frees the mountpoint.
# Every step runs under timeout(1): a hang is a failure, never a stuck CI.
. "$(dirname "$0")/lib.sh"
T=30
zblk_start -o disksize=256M
pid=$(zblk_pid) || fail "cannot find the zblk daemon"
mkfs.ext4 -q -F "$MNT/disk"
timeout $T mount -o loop "$MNT/disk" "$FS" || fail "loop mount"
loop=$(findmnt -n -o SOURCE "$FS")
[ -b "$loop" ] || fail "no loop device behind $FS"

# fsync after each file so the writer meets the dead device, not just
# the page cache; bounded so that it cannot run forever either.
(
	for i in $(seq 100000); do
		dd if=/dev/urandom of="$FS/f$((i % 8))" bs=64k count=32 \
			conv=fsync status=none 2>/dev/null || exit 3
	done
	exit 0
) &
writer=$!
sleep 2
kill -0 "$writer" 2>/dev/null || fail "the writer ended before the kill"
kill -9 "$pid"
echo "killed zblk $pid while writing through $loop"

for i in $(seq $((T * 10))); do
	kill -0 "$writer" 2>/dev/null || break
	sleep 0.1
done
if kill -0 "$writer" 2>/dev/null; then
	kill -9 "$writer"
	fail "the writer still runs ${T}s after zblk died"
fi
rc=0
wait "$writer" || rc=$?
[ "$rc" = 3 ] || fail "the writer ended with $rc, not with a write error"

timeout $T umount "$FS" || fail "umount $FS: rc $?"
# mount -o loop sets autoclear, so the loop device is usually gone by now;
# losetup -d then says "No such device or address".  It must not hang,
# and afterwards no loop device may still hold the dead file.
rc=0
timeout $T losetup -d "$loop" 2>/dev/null || rc=$?
[ "$rc" != 124 ] || fail "losetup -d $loop hung"
if losetup -n -l -O BACK-FILE | grep -qF "$MNT/disk"; then
	fail "a loop device still holds $MNT/disk"
fi
timeout $T fusermount3 -u "$MNT" || fail "fusermount3 -u $MNT: rc $?"
! grep -qF " $MNT " /proc/mounts || fail "$MNT is still mounted"

# The mountpoint is reusable: a new zblk mounts on it and stores data.
zblk_start -o disksize=64M
head -c 1M /dev/urandom >"$WORK/src"
dd if="$WORK/src" of="$MNT/disk" bs=64k conv=notrunc,fsync status=none
cmp -n 1048576 "$WORK/src" "$MNT/disk" || fail "the new zblk lost data"
echo "1 passed, 0 failed"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Deleting files and running fstrim on the loop-mounted filesystem frees
# pages in zram: orig_data_size goes down and notify_free up.
. "$(dirname "$0")/lib.sh"
command -v fstrim >/dev/null || skip "no fstrim"
zblk_start -o disksize=256M
mkfs.ext4 -q -F -E nodiscard "$MNT/disk"
mount -o loop "$MNT/disk" "$FS"
head -c 40M /dev/urandom >"$FS/data"
sync
before=$(mm_stat 1)
rm "$FS/data"
sync
fstrim "$FS"
umount "$FS"
after=$(mm_stat 1)
echo "orig_data_size: $before before, $after after fstrim"
[ "$after" -lt $((before - 30 * 1048576)) ] || fail "fstrim freed too little"
[ "$(awk '{print $4}' "$MNT/io_stat")" -gt 0 ] || fail "notify_free did not move"
e2fsck -fn "$MNT/disk" || fail "e2fsck found errors after fstrim"
echo "1 passed, 0 failed"

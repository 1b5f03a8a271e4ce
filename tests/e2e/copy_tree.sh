#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Loop-mount a filesystem on the block file, copy a real tree, unmount,
# fsck, remount, and compare every file.
. "$(dirname "$0")/lib.sh"
SRC=${SRC:-/usr/include}
zblk_start -o disksize=512M
mkfs.ext4 -q -F "$MNT/disk"
mount -o loop "$MNT/disk" "$FS"
cp -a "$SRC" "$FS/tree"
umount "$FS"
e2fsck -fn "$MNT/disk" || fail "e2fsck found errors after the copy"
mount -o loop "$MNT/disk" "$FS"
diff -r --no-dereference "$SRC" "$FS/tree" || fail "the copy differs"
umount "$FS"
cat "$MNT/mm_stat"
echo "1 passed, 0 failed"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# mkfs.ext4 on the block file, then a forced read-only fsck finds it clean.
. "$(dirname "$0")/lib.sh"
zblk_start -o disksize=128M
mkfs.ext4 -q -F "$MNT/disk"
e2fsck -fn "$MNT/disk" || fail "e2fsck found errors"
[ "$(mm_stat 1)" -gt 0 ] || fail "mkfs stored nothing"
cat "$MNT/mm_stat"
echo "1 passed, 0 failed"

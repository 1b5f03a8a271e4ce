# SPDX-License-Identifier: MIT
# Shared by the e2e scripts: skip (77) where FUSE or root is missing, start
# zblk on a fresh mountpoint, and always clean up.
# Usage in a script: . "$(dirname "$0")/lib.sh"; zblk_start -o disksize=64M
set -euo pipefail

ZBLK=${ZBLK:?set ZBLK to the zblk binary}
STRIPES=${STRIPES:-1}
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || skip "needs root"
[ -c /dev/fuse ] || skip "no /dev/fuse"
for tool in fusermount3 mkfs.ext4 e2fsck losetup mount; do
	command -v "$tool" >/dev/null || skip "no $tool"
done

WORK=$(mktemp -d /tmp/zblk-e2e.XXXXXX)
MNT=$WORK/zblk
FS=$WORK/fs
mkdir -p "$MNT" "$FS"

cleanup() {
	set +e
	mountpoint -q "$FS" && umount "$FS"
	mountpoint -q "$MNT" && fusermount3 -u "$MNT"
	rm -rf "$WORK"
}
trap cleanup EXIT

# zblk_start OPTIONS...: mount zblk (daemonized) with stripes=$STRIPES added.
zblk_start() {
	local opts=$2
	[ "$STRIPES" -gt 1 ] && opts="$opts,stripes=$STRIPES,chunk=64K"
	"$ZBLK" -o "$opts" "$MNT" || fail "zblk did not start"
	[ -f "$MNT/disk" ] || fail "no $MNT/disk"
	echo "zblk -o $opts"
}

# field N of mm_stat (1 = orig_data_size ...)
mm_stat() { awk -v n="$1" '{print $n}' "$MNT/mm_stat"; }

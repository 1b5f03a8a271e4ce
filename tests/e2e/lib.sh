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

# A sanitized zblk daemonizes with stderr on /dev/null: its reports go to
# files instead, and any report fails the script.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$WORK/sanitizer"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$WORK/sanitizer"

cleanup() {
	local status=$? i
	set +e
	mountpoint -q "$FS" && umount "$FS"
	# A zblk that died leaves a mount that mountpoint(1) cannot stat.
	fusermount3 -u "$MNT" 2>/dev/null || fusermount3 -uz "$MNT" 2>/dev/null
	# Leaks are reported when zblk exits, after the unmount.
	for i in $(seq 100); do
		pgrep -f -- "$MNT" >/dev/null || break
		sleep 0.1
	done
	# A script's own teardown, once zblk is gone (a mount under $WORK).
	declare -F cleanup_hook >/dev/null && cleanup_hook
	if compgen -G "$WORK/sanitizer.*" >/dev/null; then
		cat "$WORK"/sanitizer.* >&2
		echo "FAIL: zblk's sanitizer reports above" >&2
		status=1
	fi
	rm -rf "$WORK"
	exit "$status"
}
trap cleanup EXIT

# zblk_start OPTIONS...: mount zblk (daemonized) with stripes=$STRIPES added.
zblk_start() {
	local opts=$2
	[ "$STRIPES" -gt 1 ] && opts="$opts,stripes=$STRIPES,chunk=64K"
	# ZBLK_OPTS: options added to every mount (fuse_uring.sh: io_uring).
	[ -n "${ZBLK_OPTS:-}" ] && opts="$opts,$ZBLK_OPTS"
	"$ZBLK" -o "$opts" "$MNT" || fail "zblk did not start"
	[ -f "$MNT/disk" ] || fail "no $MNT/disk"
	# With ZBLK_OPTS=io_uring the daemon must really hold its rings.
	if [[ ",${ZBLK_OPTS:-}," == *,io_uring,* ]]; then
		local pid i fd ring=
		pid=$(zblk_pid) || fail "cannot find the zblk daemon"
		for i in $(seq 50); do
			for fd in /proc/"$pid"/fd/*; do
				[ "$(readlink "$fd")" = "anon_inode:[io_uring]" ] && ring=$fd
			done
			[ -n "$ring" ] && break
			sleep 0.1
		done
		[ -n "$ring" ] || fail "zblk -o $opts serves without io_uring"
	fi
	echo "zblk -o $opts"
}

# zblk_stop NAME: zblk_start's counterpart: unmount and wait until the
# daemon is gone (a crash shows here, NAME in the message); a zombie waiting
# for its reaper has no command line for pgrep.
zblk_stop() {
	zblk_pid >/dev/null || fail "[$1] zblk is gone: it crashed"
	fusermount3 -u "$MNT" || fail "[$1] fusermount3 -u"
	for _ in $(seq 100); do pgrep -f -- " $MNT\$" >/dev/null || return 0; sleep 0.1; done
	fail "[$1] zblk did not exit after the unmount"
}

# field N of mm_stat (1 = orig_data_size ...)
mm_stat() { awk -v n="$1" '{print $n}' "$MNT/mm_stat"; }

# zblk_pid: the pid of the zblk daemon serving $MNT (it daemonizes, so $!
# is not it); fails unless exactly one process matches.
zblk_pid() {
	local pids
	pids=$(pgrep -f -- " $MNT\$") || return 1
	[ "$(wc -w <<<"$pids")" = 1 ] || return 1
	echo "$pids"
}

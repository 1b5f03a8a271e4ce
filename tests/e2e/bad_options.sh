#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Bad options and mountpoints: a one-line message saying what is wrong on
# stderr and exit status 2, nothing mounted.  Overflowing numbers are
# errors, in options and control files.  -h, -V and bare zblk.
. "$(dirname "$0")/lib.sh"
PAGE_SIZE=${PAGE_SIZE:-4096}

# refused MESSAGE ARGS...: zblk ARGS exits 2 with "zblk: MESSAGE" on stderr.
refused() {
	local want=$1 status
	shift
	set +e
	"$ZBLK" "$@" >"$WORK/out" 2>"$WORK/err"
	status=$?
	set -e
	[ "$status" = 2 ] || fail "'$*' exited $status, not 2: $(cat "$WORK/err")"
	[ "$(wc -l <"$WORK/err")" = 1 ] || fail "'$*' printed: $(cat "$WORK/err")"
	[ "$(cat "$WORK/err")" = "zblk: $want" ] ||
		fail "'$*' said '$(cat "$WORK/err")', not 'zblk: $want'"
	! mountpoint -q "$MNT" || fail "'$*' mounted anyway"
	echo "$* -> $(cat "$WORK/err")"
}
refused "-o disksize=SIZE is required" "$MNT"
refused "bad disksize: abc" -o disksize=abc "$MNT"
refused "bad disksize: 0" -o disksize=0 "$MNT"
refused "bad disksize: -1" -o disksize=-1 "$MNT"
refused "bad disksize: 64Q" -o disksize=64Q "$MNT"
refused "stripes must be 1 to 16: 99" -o disksize=64M,stripes=99 "$MNT"
refused "unknown algorithm: lzo" -o disksize=64M,algorithm=lzo "$MNT"
refused "chunk must be a power of two of at least a page: 3000" \
	-o disksize=64M,chunk=3000 "$MNT"
refused "bad mem_limit: lots" -o disksize=64M,mem_limit=lots "$MNT"
# Overflow: each of these used to wrap to a small value and mount.
refused "disksize too large: 16777217T" -o disksize=16777217T "$MNT"
refused "disksize too large: 18446744073709551617" -o disksize=18446744073709551617 "$MNT"
refused "bad disksize: 18446744073709551617Q" -o disksize=18446744073709551617Q "$MNT"
refused "mem_limit too large: 16777216T" -o disksize=64M,mem_limit=16777216T "$MNT"
refused "stripes must be 1 to 16: 4294967297" -o disksize=64M,stripes=4294967297 "$MNT"
# Limits of the devices, named instead of "bad algorithm" and the like:
# zram counts pages in 32 bits (2^32 pages: 16T with 4 KiB pages), the
# stripe driver a chunk's sectors.
max=$(((1 << 32) - 1))
case $PAGE_SIZE in
4096) max=17179869180K ;; 16384) max=68719476720K ;; 65536) max=274877906880K ;;
esac
refused "disksize too large: zram takes at most $max: $((PAGE_SIZE * 4))G" \
	-o disksize=$((PAGE_SIZE * 4))G "$MNT"
refused "disksize too large: zram takes at most $max per stripe: $((PAGE_SIZE * 8))G" \
	-o disksize=$((PAGE_SIZE * 8))G,stripes=2 "$MNT"
refused "chunk too large for the stripe driver: at most 1T: 4T" \
	-o disksize=8T,stripes=2,chunk=4T "$MNT"
# Mountpoints: not a directory; a directory with something mounted on it.
touch "$WORK/file"
refused "MOUNTPOINT is not a directory: $WORK/file" -o disksize=64M "$WORK/file"
refused "cannot use MOUNTPOINT: No such file or directory: $WORK/none" \
	-o disksize=64M "$WORK/none"
"$ZBLK" -o disksize=64M "$MNT" || fail "zblk did not start"
dd if=/dev/urandom of="$WORK/data" bs=64k count=4 status=none
dd if="$WORK/data" of="$MNT/disk" conv=notrunc status=none
set +e
"$ZBLK" -o disksize=1M "$MNT" 2>"$WORK/err"
status=$?
set -e
[ "$status" = 2 ] || fail "a second zblk on $MNT exited $status"
[ "$(cat "$WORK/err")" = "zblk: MOUNTPOINT is already a mount point: $MNT" ] ||
	fail "a second zblk on $MNT said: $(cat "$WORK/err")"
[ "$(stat -c %s "$MNT/disk")" = 67108864 ] || fail "the first zblk's disk is gone"
cmp -n 262144 "$WORK/data" "$MNT/disk" || fail "the first zblk's data changed"
echo "second zblk on $MNT -> $(cat "$WORK/err")"
# Bind mounts keep the device number; the mount table still shows them.
mkdir "$WORK/bind"
mount --bind "$WORK/bind" "$WORK/bind"
set +e
"$ZBLK" -o disksize=1M "$WORK/bind" 2>"$WORK/err"
status=$?
set -e
umount "$WORK/bind"
[ "$status" = 2 ] && grep -q "already a mount point" "$WORK/err" ||
	fail "zblk on a bind mount exited $status: $(cat "$WORK/err")"

# Control files: an overflowing or malformed limit fails with EINVAL and
# leaves the limit as it was.
echo 1G >"$MNT/mem_limit" || fail "echo 1G > mem_limit failed"
[ "$(cat "$MNT/mem_limit")" = 1073741824 ] || fail "mem_limit reads $(cat "$MNT/mem_limit")"
for bad in 16777217T 18446744073709551616 -1 1X " 1" lots; do
	if (echo "$bad" >"$MNT/mem_limit") 2>"$WORK/err"; then
		fail "echo '$bad' > mem_limit worked"
	fi
	grep -q "Invalid argument" "$WORK/err" || fail "'$bad' > mem_limit: $(cat "$WORK/err")"
	[ "$(cat "$MNT/mem_limit")" = 1073741824 ] ||
		fail "'$bad' > mem_limit changed it to $(cat "$MNT/mem_limit")"
done
# A value longer than zblk's buffer must be refused whole: parsing the
# first 63 bytes of 62 zeroes and "1G" made a 1-byte limit, and of 62
# zeroes and "01" a 0 that mem_used_max accepted.
zeros=$(printf '%062d' 0)
for f in mem_limit:1G mem_used_max:01 idle:10; do
	if printf '%s%s' "$zeros" "${f#*:}" >"$MNT/${f%%:*}" 2>/dev/null; then
		fail "62 zeroes and '${f#*:}' > ${f%%:*} worked"
	fi
done
[ "$(cat "$MNT/mem_limit")" = 1073741824 ] || fail "a long value set mem_limit to $(cat "$MNT/mem_limit")"
for bad in 4294967296 0 -5 1K; do
	if (echo "$bad" >"$MNT/idle") 2>/dev/null; then fail "echo '$bad' > idle worked"; fi
done
echo all >"$MNT/idle" || fail "echo all > idle failed"
# What Linux sets before a device starts reads back, and refuses a change
# with EBUSY, as Linux does once the device is initialised.
[ "$(cat "$MNT/disksize")" = 67108864 ] || fail "disksize reads $(cat "$MNT/disksize")"
[ "$(cat "$MNT/backing_dev")" = none ] || fail "backing_dev reads $(cat "$MNT/backing_dev")"
grep -qx '\[lz4\]\( lz4hc\)\?\( zstd\)\?' "$MNT/comp_algorithm" ||
	fail "comp_algorithm reads '$(cat "$MNT/comp_algorithm")'"
for f in disksize:1G comp_algorithm:zstd backing_dev:/dev/null; do
	if (echo "${f#*:}" >"$MNT/${f%%:*}") 2>"$WORK/err"; then fail "echo ${f#*:} > ${f%%:*} worked"; fi
	grep -q "Device or resource busy" "$WORK/err" || fail "${f%%:*}: $(cat "$WORK/err")"
done
[ "$(cat "$MNT/disksize")" = 67108864 ] || fail "disksize changed to $(cat "$MNT/disksize")"
# The files carry the mount time, not 1970.
now=$(date +%s)
for f in "$MNT" "$MNT/disk" "$MNT/mm_stat"; do
	t=$(stat -c %Y "$f")
	[ $((now - t)) -lt 600 ] && [ "$t" -le "$now" ] || fail "$f has mtime $t, now is $now"
done
zblk_stop "disksize=64M"

# disksize is rounded up to whole pages, as zram's is.
"$ZBLK" -o disksize=4097 "$MNT" || fail "zblk -o disksize=4097 did not start"
want=$(((4097 + PAGE_SIZE - 1) / PAGE_SIZE * PAGE_SIZE))
[ "$(stat -c %s "$MNT/disk")" = "$want" ] ||
	fail "disksize=4097 gave $(stat -c %s "$MNT/disk") bytes, not $want"
zblk_stop "disksize=4097"
echo "disksize=4097 -> $want bytes"

# null mode stores nothing, but its setup files still say what the options
# set and refuse changes, as in every other mode.
"$ZBLK" -o disksize=1M,null,algorithm=lz4hc "$MNT" || fail "zblk -o null did not start"
grep -qx 'lz4 \[lz4hc\]\( zstd\)\?' "$MNT/comp_algorithm" ||
	fail "null: comp_algorithm reads '$(cat "$MNT/comp_algorithm")'"
if (echo 2M >"$MNT/disksize") 2>/dev/null; then fail "null: echo 2M > disksize worked"; fi
[ "$(cat "$MNT/disksize")" = 1048576 ] || fail "null: disksize reads $(cat "$MNT/disksize")"
zblk_stop "null"

# backing_dev reads back the file's absolute path, as Linux's does: the
# daemon's working directory is /, so a relative one would name another file.
(cd "$WORK" && "$ZBLK" -o disksize=1M,backing_dev=rel_backing "$MNT") ||
	fail "zblk -o backing_dev=rel_backing did not start"
[ -f "$WORK/rel_backing" ] || fail "the backing file was not made in the working directory"
[ "$(cat "$MNT/backing_dev")" = "$(realpath "$WORK/rel_backing")" ] ||
	fail "backing_dev=rel_backing reads $(cat "$MNT/backing_dev")"
[ "$(stat -c %s "$MNT/backing_dev")" = "$(wc -c <"$MNT/backing_dev")" ] ||
	fail "backing_dev's size $(stat -c %s "$MNT/backing_dev") is not what it reads"
zblk_stop "backing_dev=rel_backing"

# Help and version on stdout with status 0; bare zblk: usage on stderr, 2.
for h in -h --help; do
	"$ZBLK" "$h" >"$WORK/out" 2>"$WORK/err" || fail "zblk $h exited $?"
	grep -q "disksize=SIZE" "$WORK/out" && grep -q "FUSE options" "$WORK/out" &&
		grep -q -- "-o max_threads" "$WORK/out" || fail "zblk $h printed: $(cat "$WORK/out")"
done
for v in -V --version; do
	"$ZBLK" "$v" >"$WORK/out" 2>"$WORK/err" || fail "zblk $v exited $?"
	grep -Eq "^zblk \(libbvec\) [0-9]+\.[0-9]+\.[0-9]+$" "$WORK/out" &&
		grep -q "^FUSE library version" "$WORK/out" || fail "zblk $v printed: $(cat "$WORK/out")"
done
set +e
"$ZBLK" >"$WORK/out" 2>"$WORK/err"
status=$?
set -e
[ "$status" = 2 ] && [ ! -s "$WORK/out" ] && grep -q "^usage: zblk" "$WORK/err" ||
	fail "bare zblk exited $status: $(cat "$WORK/out" "$WORK/err")"
echo "1 passed, 0 failed"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# stats=FILE that cannot be written is a bad parameter like any other: one
# "nbdkit: error:" line and a non-zero exit before anything is served, not
# a disk served with an error logged every second from the background.
# FILE is replaced by renaming FILE.tmp over it, so its directory must
# take a new file and FILE must not be a directory.
. "$(dirname "$0")/nbd_lib.sh"

# refused MESSAGE PARAMS...: nbdkit exits non-zero, printing only MESSAGE.
refused() {
	local want=$1 status
	shift
	rm -f "$WORK/served"
	set +e
	LD_PRELOAD=$SAN_PRELOAD timeout 20 nbdkit -U - --run "touch '$WORK/served'; sleep 2" \
		"$PLUGIN" "$@" >"$WORK/out" 2>"$WORK/err"
	status=$?
	set -e
	[ "$status" != 0 ] || fail "'$*' was accepted ($(wc -l <"$WORK/err") lines of errors)"
	[ ! -e "$WORK/served" ] || fail "'$*' served"
	[ "$(wc -l <"$WORK/err")" = 1 ] || fail "'$*' printed: $(cat "$WORK/err")"
	[ "$(cat "$WORK/err")" = "nbdkit: error: $want" ] ||
		fail "'$*' said '$(cat "$WORK/err")', not '$want'"
	echo "$* -> $want"
}
refused "stats: cannot write $WORK/none/stats: No such file or directory" \
	size=64M stats="$WORK/none/stats"
mkdir "$WORK/dir"
refused "stats: cannot write $WORK/dir: Is a directory" size=64M stats="$WORK/dir"
if [ "$(id -u)" != 0 ]; then
	mkdir "$WORK/ro" && chmod 555 "$WORK/ro"
	refused "stats: cannot write $WORK/ro/stats: Permission denied" \
		size=64M stats="$WORK/ro/stats"
fi

# A writable path is served, and the file holds the statistics by the end;
# no FILE.tmp is left behind by the check at start.
nbd_start size=64M stats="$WORK/ok"
nbdinfo --size "$URI" >/dev/null || fail "stats=$WORK/ok was not served"
nbd_stop || fail "nbdkit did not stop cleanly"
grep -q '^mm_stat ' "$WORK/ok" || fail "stats=$WORK/ok holds no mm_stat line"
[ ! -e "$WORK/ok.tmp" ] || fail "$WORK/ok.tmp was left behind"
echo "stats=$WORK/ok served, and written"

# A FILE that stops being writable while nbdkit serves (its directory
# removed, a full disk) is reported once, not every second for as long as
# it lasts; the file is written again once it can be.
mkdir "$WORK/sub"
nbd_start size=64M stats="$WORK/sub/stats" 2>"$WORK/log"
for i in $(seq 40); do [ -f "$WORK/sub/stats" ] && break; sleep 0.1; done
[ -f "$WORK/sub/stats" ] || fail "$WORK/sub/stats was not written"
rm -rf "$WORK/sub"
# A change each half second for 4 s: the statistics differ at every pass.
for i in $(seq 8); do
	qemu-io -f raw -c "write -P $i $((i * 1048576)) 1M" "$URI" >/dev/null
	sleep 0.5
done
n=$(grep -c "stats: cannot write" "$WORK/log" || true)
[ "$n" = 1 ] || fail "a stats file that could not be written was reported $n times in 4 s: $(cat "$WORK/log")"
mkdir "$WORK/sub"
qemu-io -f raw -c "write -P 9 0 1M" "$URI" >/dev/null
for i in $(seq 40); do [ -f "$WORK/sub/stats" ] && break; sleep 0.1; done
[ -f "$WORK/sub/stats" ] || fail "$WORK/sub/stats was not written again once it could be"
nbd_stop || fail "nbdkit did not stop cleanly"
echo "a stats file that went away was reported once, and written again when it could be"

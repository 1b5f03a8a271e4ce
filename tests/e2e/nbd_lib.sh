# SPDX-License-Identifier: MIT
# Shared by the nbd_*.sh scripts: skip (77) without nbdkit and its clients,
# start nbdkit with the zram plugin on a Unix socket, always clean up.
# Usage: . "$(dirname "$0")/nbd_lib.sh"; nbd_start size=64M; ... "$URI" ...
set -euo pipefail

PLUGIN=${PLUGIN:?set PLUGIN to nbdkit-zram-plugin.so}
STRIPES=${STRIPES:-1}
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }

for tool in nbdkit nbdcopy nbdinfo qemu-img qemu-io; do
	command -v "$tool" >/dev/null || skip "no $tool (Debian: nbdkit libnbd-bin qemu-utils)"
done

# PY: a python3 with libnbd's bindings (for nbdsh-style requests QEMU will
# not send), or empty.  The first python3 on PATH may lack them (a pyenv
# one); Debian's has them with python3-libnbd.
PY=
for p in python3 /usr/bin/python3; do
	"$p" -c "import nbd" 2>/dev/null && { PY=$p; break; }
done

WORK=$(mktemp -d /tmp/nbd-e2e.XXXXXX)
SOCK=$WORK/sock
URI="nbd+unix:///?socket=$SOCK"
STATS=$WORK/stats
NBDKIT_PID=

# A plugin built with a sanitizer needs its runtime loaded first into
# nbdkit, which is not built with it; reports go to files.  nbd_start
# preloads the plugin too: nbdkit 1.32 dlcloses it, and libzpool and libbvec
# with it, before LeakSanitizer looks (no option stops that), which left the
# plugin's leaks with frames of no module, passed over below as nbdkit's
# own; preloaded, it stays mapped and its frames are named.  Any report
# fails the script, except a leak of nbdkit's own with none of our code
# (libzpool, libbvec, the plugin) on its stack: nbdkit 1.32 leaks a little
# when a client vanishes mid-request.  Leaks do not change nbdkit's exit
# status, which is checked on its own.
SAN_PRELOAD=$(ldd "$PLUGIN" | awk '/lib(asan|tsan|ubsan)\.so/ {print $3}' | paste -sd: -)
# LD_PRELOAD splits at spaces and colons, which a build directory may hold:
# the plugin is loaded through a link in $WORK, whose name has neither.  The
# link is to its directory, so that $ORIGIN in its run path still finds the
# build tree's libraries.
if [ -n "$SAN_PRELOAD" ]; then
	ln -s "$(dirname "$(realpath "$PLUGIN")")" "$WORK/plugin"
	PLUGIN=$WORK/plugin/$(basename "$PLUGIN")
	# ld.so only warns when it cannot preload, and the leaks would pass
	# unseen: make that a failure.
	! env LD_PRELOAD="$SAN_PRELOAD:$PLUGIN" true 2>&1 | grep . ||
		fail "the sanitizer runtime and the plugin cannot be preloaded"
fi
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}log_path=$WORK/sanitizer"
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}exitcode=0"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}log_path=$WORK/sanitizer"
export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}log_path=$WORK/sanitizer"

# nbd_stop [SECONDS]: stop nbdkit and wait for it, so its final statistics
# are written; fails if it needs more than SIGTERM and SECONDS (30: a
# sanitized nbdkit checks its heap for leaks on the way out), or exits
# non-zero.
nbd_stop() {
	local pid=$NBDKIT_PID i status=0
	[ -n "$pid" ] || return 0
	NBDKIT_PID=
	kill "$pid" 2>/dev/null || true
	for i in $(seq $((${1:-30} * 10))); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -9 "$pid" 2>/dev/null; then
		echo "nbdkit did not stop within ${1:-30} s of SIGTERM" >&2
		return 1
	fi
	wait "$pid" || status=$?
	[ "$status" = 0 ] || echo "nbdkit exited $status" >&2
	return "$status"
}

cleanup() {
	local status=$?
	set +e
	nbd_stop
	for f in "$WORK"/sanitizer.*; do
		[ -f "$f" ] || continue
		if grep -q "ERROR: LeakSanitizer" "$f" && ! grep -q "ERROR: AddressSanitizer\|runtime error\|ThreadSanitizer" "$f" &&
			! grep -q "nbdkit-zram-plugin\|libzpool\|libbvec\|src/zpool\|src/bvec\|drivers/" "$f"; then
			echo "(ignored: a leak in nbdkit itself: $(grep -m1 SUMMARY "$f"))"
			continue
		fi
		cat "$f" >&2
		echo "FAIL: sanitizer report above" >&2
		status=1
	done
	rm -rf "$WORK"
	exit "$status"
}
trap cleanup EXIT

# nbd_start PARAMS...: serve the plugin on $SOCK (stripes=$STRIPES added
# unless PARAMS name stripes), in the background, with stats in $STATS;
# with $NBDKIT_THREADS worker threads a connection if set.
nbd_start() {
	local params=("$@") i
	[[ " $* " == *" stripes="* ]] || [ "$STRIPES" = 1 ] ||
		params+=("stripes=$STRIPES" "chunk=64K")
	rm -f "$SOCK" "$WORK/pid"
	LD_PRELOAD=$SAN_PRELOAD${SAN_PRELOAD:+:$PLUGIN} \
		nbdkit -U "$SOCK" -P "$WORK/pid" -f --exit-with-parent \
		${NBDKIT_THREADS:+--threads="$NBDKIT_THREADS"} "$PLUGIN" stats="$STATS" "${params[@]}" &
	NBDKIT_PID=$!
	for i in $(seq 100); do
		[ -S "$SOCK" ] && [ -s "$WORK/pid" ] && break
		kill -0 "$NBDKIT_PID" 2>/dev/null || fail "nbdkit did not start: ${params[*]}"
		sleep 0.1
	done
	[ -S "$SOCK" ] || fail "nbdkit did not open $SOCK"
	echo "nbdkit zram ${params[*]}"
}

# stat_field LINE N: field N (1 = first number) of the mm_stat or io_stat line.
stat_field() { awk -v l="$1" -v n="$2" '$1 == l {print $(n + 1)}' "$STATS"; }

# wait_stats LINE N VALUE: until the stats file shows VALUE there (it is
# rewritten within a second of a change).
wait_stats() {
	local i
	for i in $(seq 40); do
		[ -f "$STATS" ] && [ "$(stat_field "$1" "$2")" = "$3" ] && return 0
		sleep 0.1
	done
	fail "$1 field $2 is '$(stat_field "$1" "$2" 2>/dev/null)', not $3"
}

# corpus FILE: real anonymous memory, 64 MiB, from $CORPUS, /tmp or the xz
# beside the checkout; without any, 16 MiB of mixed zero, text and random
# pages padded with zeroes to the corpus's 64 MiB, so that the tests (which
# place their checks in those 64 MiB) still run.
corpus() {
	local root xz
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	xz=$root/../shared/corpus/anon-64m.bin.xz
	if [ -f "${CORPUS:-/tmp/anon-64m.bin}" ]; then
		cp "${CORPUS:-/tmp/anon-64m.bin}" "$1"
	elif [ -f "$xz" ] && command -v xz >/dev/null; then
		xz -dc "$xz" >"$1"
	else
		# Without pipefail: head stops reading early, and xargs reports
		# its zcat's SIGPIPE as 125, which set -e would take for a failure.
		(
			set +o pipefail
			head -c 4M /dev/zero
			find /usr/share/doc -name '*.gz' -print0 2>/dev/null | head -z -n 400 |
				xargs -0 zcat 2>/dev/null | head -c 8M
			head -c 4M /dev/urandom
		) >"$1"
		truncate -s 64M "$1"
	fi
}

# put MODEL OFFSET LENGTH BYTE: LENGTH bytes of BYTE (decimal) written at
# OFFSET on the disk and onto the file MODEL alike.
put() {
	qemu-io -f raw -c "write -P $4 $2 $3" "$URI" >/dev/null
	head -c "$3" /dev/zero | tr '\0' "\\$(printf '%03o' "$4")" |
		dd of="$1" oflag=seek_bytes seek="$2" conv=notrunc status=none
}

# discard MODEL OFFSET LENGTH: the range trimmed on the disk, and its whole
# pages ($PAGE bytes, which the caller sets) zeroed in MODEL: the plugin
# frees whole pages and leaves parts of pages as they were, as zram does.
discard() {
	local a=$((($2 + ${PAGE:?} - 1) / PAGE * PAGE)) b=$((($2 + $3) / PAGE * PAGE))
	qemu-io -f raw -c "discard $2 $3" "$URI" >/dev/null
	[ "$a" -lt "$b" ] || return 0
	head -c $((b - a)) /dev/zero | dd of="$1" oflag=seek_bytes seek="$a" conv=notrunc status=none
}

# rewrite_check BASE WHAT: writes 1 MiB of 0xa5 at 0 and 3000 bytes of 0x5a
# at 2 MiB + 1000 (whole pages and a partial one) over the disk, which held
# the file BASE; it must read back as BASE with those bytes.  WHAT names the
# pages written over, for the messages.
rewrite_check() {
	local MiB=$((1 << 20))
	qemu-io -f raw -c "write -P 0xa5 0 $MiB" -c "write -P 0x5a $((2 * MiB + 1000)) 3000" \
		"$URI" >/dev/null
	cp "$1" "$WORK/want"
	head -c "$MiB" /dev/zero | tr '\0' '\245' | dd of="$WORK/want" conv=notrunc status=none
	head -c 3000 /dev/zero | tr '\0' '\132' |
		dd of="$WORK/want" oflag=seek_bytes seek=$((2 * MiB + 1000)) conv=notrunc status=none
	nbdcopy "$URI" "$WORK/out"
	cmp "$WORK/want" "$WORK/out" || fail "pages written over $2 ones read back wrong"
	echo "rewrite: whole and partial pages over $2 ones read back new"
}

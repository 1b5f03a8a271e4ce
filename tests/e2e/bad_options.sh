#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Bad options: a one-line message on stderr and exit status 2, nothing mounted.
. "$(dirname "$0")/lib.sh"
for opts in "" "-o disksize=abc" "-o disksize=64M,stripes=99" \
	"-o disksize=64M,algorithm=lzo" "-o disksize=64M,chunk=3000" \
	"-o disksize=64M,mem_limit=lots"; do
	set +e
	# shellcheck disable=SC2086
	"$ZBLK" $opts "$MNT" 2>"$WORK/err"
	status=$?
	set -e
	[ "$status" = 2 ] || fail "'$opts' exited $status, not 2"
	[ "$(wc -l <"$WORK/err")" = 1 ] || fail "'$opts' printed: $(cat "$WORK/err")"
	! mountpoint -q "$MNT" || fail "'$opts' mounted anyway"
	echo "$opts -> $(cat "$WORK/err")"
done
echo "1 passed, 0 failed"

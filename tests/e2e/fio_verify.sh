#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fio: random writes of mixed sizes (512 B to 128 KiB, sector aligned) from
# four jobs, each on its own region, verified with crc32c.
. "$(dirname "$0")/lib.sh"
command -v fio >/dev/null || skip "no fio"
zblk_start -o disksize=256M
fio --name=verify --filename="$MNT/disk" --rw=randwrite --bsrange=512-128k \
	--blockalign=512 --numjobs=4 --size=48M --offset_increment=64M \
	--ioengine=psync --direct=1 --verify=crc32c --verify_fatal=1 \
	--do_verify=1 --group_reporting --output-format=terse >"$WORK/fio.out" ||
	fail "fio verification failed: $(tail -5 "$WORK/fio.out")"
[ "$(awk '{print $2}' "$MNT/io_stat")" = 0 ] || fail "failed writes"
cat "$MNT/mm_stat"
echo "1 passed, 0 failed"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fio verifies (crc32c, with a backlog so reads race the writes) random
# writes of 4k-64k from four jobs while a loop writes compact, mem_limit
# (up, down to twice the most the data can take, and 0) and idle (all and
# seconds) in the control files.  No verify error, no failed write, and
# every control write succeeds.  (fio warns that several writers share the
# file; offset_increment keeps their regions apart.)
. "$(dirname "$0")/lib.sh"
command -v fio >/dev/null || skip "no fio"
JOB=32 # MiB per job; 4 jobs on disjoint regions
zblk_start -o disksize=256M

# Even all data stored raw fits JOB*4 MiB plus metadata, in every stripe's
# share of the limit: the low limit cannot fail a write.
low=$((JOB * 4 * 2))M
control() {
	local n=0 used
	while [ ! -e "$WORK/stop" ]; do
		used=$(mm_stat 3)
		[ "$used" -le $((JOB * 4 * 2 * 1048576)) ] ||
			{ echo "mem_used_total $used over the low limit" >&2; exit 1; }
		echo 1 >"$MNT/compact" || exit 1
		echo 1G >"$MNT/mem_limit" || exit 1
		echo all >"$MNT/idle" || exit 1
		echo "$low" >"$MNT/mem_limit" || exit 1
		echo 1 >"$MNT/compact" || exit 1
		echo 1 >"$MNT/idle" || exit 1
		echo 0 >"$MNT/mem_limit" || exit 1
		n=$((n + 1))
		sleep 0.05
	done
	echo "$n" >"$WORK/rounds"
}
control &
ctl=$!

rc=0
timeout 300 fio --name=control --filename="$MNT/disk" --rw=randwrite \
	--bsrange=4k-64k --blockalign=4k --numjobs=4 --size=${JOB}M \
	--offset_increment=${JOB}M --loops=8 --ioengine=psync --direct=1 \
	--verify=crc32c --verify_backlog=16 --verify_fatal=1 --do_verify=1 --verify_state_save=0 \
	--group_reporting --output-format=terse >"$WORK/fio.out" 2>&1 || rc=$?
touch "$WORK/stop"
crc=0
timeout 30 bash -c "while kill -0 $ctl 2>/dev/null; do sleep 0.1; done" || true
wait "$ctl" || crc=$?
[ "$rc" = 0 ] || fail "fio failed ($rc): $(tail -5 "$WORK/fio.out")"
[ "$crc" = 0 ] || fail "a control write failed ($crc)"
rounds=$(cat "$WORK/rounds")
[ "$rounds" -gt 0 ] || fail "the control loop never ran"
[ "$(awk '{print $2}' "$MNT/io_stat")" = 0 ] || fail "failed writes"
echo "$rounds control rounds during fio"
cat "$MNT/mm_stat"
echo "1 passed, 0 failed"

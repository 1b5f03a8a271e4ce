#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The io_uring disk against fio's io_uring engine on the same 1 GiB file on
# the machine's real disk, opened O_DIRECT, point by point in one run:
# 4 KiB random read and write at queue depth 1, 8, 32, and 1 MiB sequential
# read and write at depth 4; plus the synchronous file disk (one thread, so
# depth 1 whatever is asked) for 4 KiB random I/O.  A virtual disk shared
# with other tenants swings by 50% from run to run, so each point is the
# best of 3 runs of SECONDS, the two sides taking turns.  CSV on stdout:
#   workload,qd,bios_iops,fio_iops,bios/fio
# and "name,value" rows for the file disk and the ratios bench/plots.sh uses.
# With BEFORE=another bench_uring (an older build, to judge a change), its
# IOPS are measured in the same turns and the 4 KiB and 1 MiB rows gain
# "before_iops,before/fio" columns.
# Last, the 5x target's ceiling, the four in turns: fio io_uring at QD 32
# against fio psync (one job, depth 1), which is what the device gives for
# the step from one synchronous I/O at a time to 32 in flight, beside the
# io_uring disk at QD 32 against the file disk on one thread and on 32
# threads ("name,value" rows).  Then registered buffers against none (4 KiB
# random at QD 1 and 32), and QD 1 random reads waited for with
# submit_bio_wait(), polled (REQ_POLLED) and not, beside fio's io_uring at
# QD 1 (submit and wait in one io_uring_enter()) and psync.  ONLY=qd32,
# ONLY=fixed or ONLY=poll runs one of these three parts alone.
#
#   [BEFORE=OLD_BENCH_URING] [ONLY=qd32|fixed|poll] bench/uring_vs_fio.sh BENCH_URING [FILE] [SECONDS]
set -euo pipefail
BIN=${1:?usage: uring_vs_fio.sh BENCH_URING [FILE] [SECONDS]}
FILE=${2:-${TMPDIR:-/var/tmp}/bvec-uring-bench.bin}
SECS=${3:-3}
REPS=3
[ -x "$BIN" ] || { echo "skip: no $BIN (built without liburing)"; exit 77; }
command -v fio >/dev/null || { echo "skip: no fio"; exit 77; }
fio --enghelp 2>/dev/null | grep -qw io_uring || { echo "skip: fio without io_uring"; exit 77; }

# Real blocks, not a hole: a read of an unwritten extent never reaches the disk.
if [ "$(stat -c %s "$FILE" 2>/dev/null || echo 0)" != 1073741824 ]; then
	dd if=/dev/zero of="$FILE" bs=1M count=1024 oflag=direct status=none
fi

# fio_iops RW BS QD [ENGINE]: IOPS of fio's io_uring (or ENGINE), one job, direct I/O
fio_iops() {
	fio --name=u --filename="$FILE" --rw="$1" --bs="$2" --iodepth="$3" \
		--ioengine="${4:-io_uring}" --direct=1 --time_based --runtime="$SECS" \
		--randrepeat=0 --norandommap --output-format=json 2>/dev/null |
		python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; print("%.0f" % (j["read"]["iops"] + j["write"]["iops"]))'
}

# bios_iops RW BS QD [MODE]: IOPS through bios on the disk (bench_uring's MODE)
bios_iops() {
	"$BIN" "$FILE" "$1" "$2" "$3" "$SECS" "${4:-uring}" | cut -d, -f1
}

# before_iops RW BS QD: the same through $BEFORE, or 0 without it
before_iops() {
	[ -n "${BEFORE:-}" ] || { echo 0; return; }
	"$BEFORE" "$FILE" "$1" "$2" "$3" "$SECS" | cut -d, -f1
}

# before_cols B F: the extra columns of a row when BEFORE is set
before_cols() {
	[ -n "${BEFORE:-}" ] && echo ",$1,$(ratio "$1" "$2")" || true
}

max() { [ "$1" -ge "$2" ] && echo "$1" || echo "$2"; }

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", b ? a / b : 0}'; }

# qd32_ceiling RW: the four sides of the 5x target in turns, best of $REPS
qd32_ceiling() {
	local fu=0 fp=0 bu=0 bf=0 bn=0
	for _ in $(seq $REPS); do
		fu=$(max "$fu" "$(fio_iops "$1" 4k 32)")
		fp=$(max "$fp" "$(fio_iops "$1" 4k 1 psync)")
		bu=$(max "$bu" "$(bios_iops "$1" 4096 32)")
		bf=$(max "$bf" "$(bios_iops "$1" 4096 1 file)")
		bn=$(max "$bn" "$(bios_iops "$1" 4096 32 fileN)")
	done
	echo "fio io_uring qd32 $1 4k,$fu"
	echo "fio psync qd1 $1 4k,$fp"
	echo "fio io_uring qd32 / fio psync $1,$(ratio "$fu" "$fp")"
	echo "uring qd32 $1 4k,$bu"
	echo "file disk 1 thread $1 4k,$bf"
	echo "file disk 32 threads $1 4k,$bn"
	echo "uring qd32 / file disk 1 thread $1,$(ratio "$bu" "$bf")"
	echo "uring qd32 / file disk 32 threads $1,$(ratio "$bu" "$bn")"
}

# fixed_rows: registered buffers against none, in turns, best of $REPS
fixed_rows() {
	local rw qd u x
	for rw in randread randwrite; do
		for qd in 1 32; do
			u=0 x=0
			for _ in $(seq $REPS); do
				u=$(max "$u" "$(bios_iops $rw 4096 $qd)")
				x=$(max "$x" "$(bios_iops $rw 4096 $qd fixed)")
			done
			echo "uring $rw 4k qd$qd,$u"
			echo "uring fixed $rw 4k qd$qd,$x"
			echo "fixed / not $rw qd$qd,$(ratio "$x" "$u")"
		done
	done
}

# poll_rows: QD 1 random reads, each waited for, in turns, best of $REPS;
# the mean latency is 1e6 / IOPS microseconds.
poll_rows() {
	local w=0 p=0 a=0 f=0 s=0
	for _ in $(seq $REPS); do
		w=$(max "$w" "$(bios_iops randread 4096 1 wait)")
		p=$(max "$p" "$(bios_iops randread 4096 1 poll)")
		a=$(max "$a" "$(bios_iops randread 4096 1)")
		f=$(max "$f" "$(fio_iops randread 4k 1)")
		s=$(max "$s" "$(fio_iops randread 4k 1 psync)")
	done
	echo "qd1 randread submit_bio_wait,$w"
	echo "qd1 randread submit_bio_wait REQ_POLLED,$p"
	echo "qd1 randread bi_end_io resubmits,$a"
	echo "qd1 randread fio io_uring,$f"
	echo "qd1 randread fio psync,$s"
	echo "polled / not,$(ratio "$p" "$w")"
	echo "polled / fio io_uring,$(ratio "$p" "$f")"
}

case "${ONLY:-}" in
qd32)
	for rw in randread randwrite; do
		qd32_ceiling $rw
	done
	exit 0;;
fixed) fixed_rows; exit 0;;
poll) poll_rows; exit 0;;
esac

echo "workload,qd,bios_iops,fio_iops,bios/fio${BEFORE:+,before_iops,before/fio}"
for rw in randread randwrite; do
	for qd in 1 8 32; do
		b=0 f=0 o=0
		for _ in $(seq $REPS); do
			b=$(max "$b" "$(bios_iops $rw 4096 $qd)")
			f=$(max "$f" "$(fio_iops $rw 4k $qd)")
			o=$(max "$o" "$(before_iops $rw 4096 $qd)")
		done
		echo "$rw 4k,$qd,$b,$f,$(ratio "$b" "$f")$(before_cols "$o" "$f")"
		[ $qd = 32 ] && eval "${rw}_qd32=$b"
	done
done
for rw in read write; do
	b=0 f=0 o=0
	for _ in $(seq $REPS); do
		b=$(max "$b" "$(bios_iops $rw 1048576 4)")
		f=$(max "$f" "$(fio_iops $rw 1m 4)")
		o=$(max "$o" "$(before_iops $rw 1048576 4)")
	done
	echo "$rw 1m,4,$b,$f,$(ratio "$b" "$f")$(before_cols "$o" "$f")"
done
for rw in randread randwrite; do
	s=0
	for _ in $(seq $REPS); do
		s=$(max "$s" "$(bios_iops $rw 4096 1 file)")
	done
	q=${rw}_qd32
	echo "file disk $rw 4k,$s"
	echo "uring qd32 / file disk $rw,$(ratio "${!q}" "$s")"
done
for rw in randread randwrite; do
	qd32_ceiling $rw
done
fixed_rows
poll_rows

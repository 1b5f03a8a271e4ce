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
#
#   [BEFORE=OLD_BENCH_URING] bench/uring_vs_fio.sh BENCH_URING [FILE] [SECONDS]
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

# fio_iops RW BS QD: IOPS of fio's io_uring engine, one job, direct I/O
fio_iops() {
	fio --name=u --filename="$FILE" --rw="$1" --bs="$2" --iodepth="$3" \
		--ioengine=io_uring --direct=1 --time_based --runtime="$SECS" \
		--randrepeat=0 --norandommap --output-format=json 2>/dev/null |
		python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; print("%.0f" % (j["read"]["iops"] + j["write"]["iops"]))'
}

# bios_iops RW BS QD [file]: IOPS through bios on the disk
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

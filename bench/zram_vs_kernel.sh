#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# zblk against the kernel's zram on the same pages, the same dd and the
# same compressor, in one run: both mm_stats, the memory ratio, and
# sequential 1 MiB direct-I/O throughput and 4 KiB random reads and
# writes (fio, 2 jobs, psync, direct I/O: the FUSE round trip's cost), each
# the best of 3,
# plus zblk's "null" mode, which stores nothing, to show what FUSE itself
# costs; where the kernel has FUSE over io_uring (enable_uring, set for the
# run and put back), zblk and null again with -o io_uring.
#
#   bench/zram_vs_kernel.sh ZBLK CORPUS [ALGORITHM]
#
# Needs root and /sys/block/zram0; exits 77 (skip) without them.
set -euo pipefail
ZBLK=${1:?usage: zram_vs_kernel.sh ZBLK CORPUS [ALGORITHM]}
CORPUS=${2:?usage: zram_vs_kernel.sh ZBLK CORPUS [ALGORITHM]}
ALG=${3:-lz4}
SYS=/sys/block/zram0
[ "$(id -u)" = 0 ] || { echo "skip: needs root"; exit 77; }
[ -d $SYS ] || { echo "skip: no /sys/block/zram0"; exit 77; }
[ -f "$CORPUS" ] || { echo "skip: no corpus at $CORPUS"; exit 77; }
grep -qw "$ALG" $SYS/comp_algorithm || { echo "skip: kernel zram lacks $ALG"; exit 77; }
SIZE=$(stat -c %s "$CORPUS")
MNT=$(mktemp -d /tmp/zblk-bench.XXXXXX)
URING=/sys/module/fuse/parameters/enable_uring
uring_old=$(cat $URING 2>/dev/null || true)
cleanup() {
	set +e
	mountpoint -q "$MNT" && fusermount3 -u "$MNT"
	rmdir "$MNT"
	echo 1 >$SYS/reset
	[ -n "$uring_old" ] && echo "$uring_old" >$URING
}
trap cleanup EXIT

command -v fio >/dev/null || { echo "skip: no fio"; exit 77; }

# MB/s of 4 KiB random I/O, 2 jobs, psync, direct: FILE RW
fio_mbs() {
	fio --name=r --filename="$1" --rw="$2" --bs=4k --numjobs=2 --size="$SIZE" \
		--ioengine=psync --direct=1 --time_based --runtime=3 --group_reporting \
		--output-format=json 2>/dev/null |
		python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; print("%.0f" % ((j["read"]["bw_bytes"] + j["write"]["bw_bytes"]) / 1e6))'
}

# seconds dd took, from its last line
dd_secs() { dd "$@" bs=1M 2>&1 | awk '/copied/ {print $(NF-3)}'; }

kernel_reset() {
	echo 1 >$SYS/reset
	echo "$ALG" >$SYS/comp_algorithm
	echo "$SIZE" >$SYS/disksize
}

max() { echo "$1 $2" | awk '{print ($1>$2)?$1:$2}'; }

best_write_k=1e9 best_read_k=1e9 rr_k=0 rw_k=0
for i in 1 2 3; do
	kernel_reset
	w=$(dd_secs if="$CORPUS" of=/dev/zram0 oflag=direct)
	r=$(dd_secs if=/dev/zram0 of=/dev/null iflag=direct)
	best_write_k=$(echo "$w $best_write_k" | awk '{print ($1<$2)?$1:$2}')
	best_read_k=$(echo "$r $best_read_k" | awk '{print ($1<$2)?$1:$2}')
	[ "$i" = 1 ] && kernel_mm=$(cat $SYS/mm_stat)
	rr_k=$(max "$rr_k" "$(fio_mbs /dev/zram0 randread)")
	rw_k=$(max "$rw_k" "$(fio_mbs /dev/zram0 randwrite)")
done
echo 1 >$SYS/reset

zblk_run() { # OPTIONS -> "write_secs read_secs randread randwrite mm_stat..."
	local bw=1e9 br=1e9 w r mm rr=0 rw=0
	for i in 1 2 3; do
		"$ZBLK" -o "$1" "$MNT"
		w=$(dd_secs if="$CORPUS" of="$MNT/disk" oflag=direct conv=notrunc)
		r=$(dd_secs if="$MNT/disk" of=/dev/null iflag=direct)
		mm=$(cat "$MNT/mm_stat")
		cmp -s -n "$SIZE" "$CORPUS" "$MNT/disk" || [[ "$1" == *null* ]] ||
			{ echo "zblk returned wrong data" >&2; exit 1; }
		# on the corpus, as the kernel's were
		rr=$(max "$rr" "$(fio_mbs "$MNT/disk" randread)")
		rw=$(max "$rw" "$(fio_mbs "$MNT/disk" randwrite)")
		fusermount3 -u "$MNT"
		bw=$(echo "$w $bw" | awk '{print ($1<$2)?$1:$2}')
		br=$(echo "$r $br" | awk '{print ($1<$2)?$1:$2}')
	done
	echo "$bw $br $rr $rw $mm"
}
read -r zw zr rr_z rw_z zmm <<<"$(zblk_run "disksize=$SIZE,algorithm=$ALG")"
read -r nw nr rr_n rw_n _ <<<"$(zblk_run "disksize=$SIZE,null")"
uring=
if [ -n "$uring_old" ] && "$ZBLK" -h 2>/dev/null | grep io_uring >/dev/null; then
	echo Y >$URING
	read -r uw ur rr_u rw_u _ <<<"$(zblk_run "disksize=$SIZE,algorithm=$ALG,io_uring")"
	read -r unw unr rr_un rw_un _ <<<"$(zblk_run "disksize=$SIZE,null,io_uring")"
	echo "$uring_old" >$URING
	uring=1
fi

gbs() { awk -v b="$SIZE" -v s="$1" 'BEGIN {printf "%.2f GB/s", b / s / 1e9}'; }
field() { echo "$1" | awk -v n="$2" '{print $n}'; }
printf 'corpus %s (%s bytes), %s, dd bs=1M direct I/O, best of 3\n\n' "$CORPUS" "$SIZE" "$ALG"
printf '%-28s %16s %16s %10s\n' "" "kernel zram" "zblk" "zblk/kernel"
for n in 1 2 3 6 8; do
	name=$(echo "orig_data_size compr_data_size mem_used_total x x same_pages x huge_pages" |
		cut -d' ' -f$n)
	printf '%-28s %16s %16s %10.3f\n' "$name" "$(field "$kernel_mm" $n)" "$(field "$zmm" $n)" \
		"$(awk -v a="$(field "$zmm" $n)" -v b="$(field "$kernel_mm" $n)" 'BEGIN {print b ? a / b : 0}')"
done
printf '%-28s %16s %16s %10.3f\n' "write 1 MiB" "$(gbs "$best_write_k")" "$(gbs "$zw")" \
	"$(awk -v a="$zw" -v b="$best_write_k" 'BEGIN {print b / a}')"
printf '%-28s %16s %16s %10.3f\n' "read 1 MiB" "$(gbs "$best_read_k")" "$(gbs "$zr")" \
	"$(awk -v a="$zr" -v b="$best_read_k" 'BEGIN {print b / a}')"
printf '%-28s %16s %16s %10.3f\n' "4k randread, 2 jobs" "$rr_k MB/s" "$rr_z MB/s" \
	"$(awk -v a="$rr_z" -v b="$rr_k" 'BEGIN {print b ? a / b : 0}')"
printf '%-28s %16s %16s %10.3f\n' "4k randwrite, 2 jobs" "$rw_k MB/s" "$rw_z MB/s" \
	"$(awk -v a="$rw_z" -v b="$rw_k" 'BEGIN {print b ? a / b : 0}')"
printf '%-28s %16s %16s\n' "zblk null mode (FUSE only)" "write $(gbs "$nw")" "read $(gbs "$nr")"
printf '%-28s %16s %16s\n' "" "4k rand $rr_n MB/s" "4k randw $rw_n MB/s"
if [ -n "$uring" ]; then
	printf '%-28s %16s %16s %10.3f\n' "write 1 MiB, io_uring" "" "$(gbs "$uw")" \
		"$(awk -v a="$uw" -v b="$best_write_k" 'BEGIN {print b / a}')"
	printf '%-28s %16s %16s %10.3f\n' "read 1 MiB, io_uring" "" "$(gbs "$ur")" \
		"$(awk -v a="$ur" -v b="$best_read_k" 'BEGIN {print b / a}')"
	printf '%-28s %16s %16s %10.3f\n' "4k randread, io_uring" "" "$rr_u MB/s" \
		"$(awk -v a="$rr_u" -v b="$rr_k" 'BEGIN {print b ? a / b : 0}')"
	printf '%-28s %16s %16s %10.3f\n' "4k randwrite, io_uring" "" "$rw_u MB/s" \
		"$(awk -v a="$rw_u" -v b="$rw_k" 'BEGIN {print b ? a / b : 0}')"
	printf '%-28s %16s %16s\n' "null mode, io_uring" "write $(gbs "$unw")" "read $(gbs "$unr")"
	printf '%-28s %16s %16s\n' "" "4k rand $rr_un MB/s" "4k randw $rw_un MB/s"
fi
printf '\nkernel mm_stat: %s\nzblk   mm_stat: %s\n' "$kernel_mm" "$zmm"
# Machine-readable copy for bench/run's plots.
if [ -n "${CSV_OUT:-}" ]; then
	{
		echo "kernel_mem_used,$(field "$kernel_mm" 3)"
		echo "zblk_mem_used,$(field "$zmm" 3)"
		echo "kernel_compr,$(field "$kernel_mm" 2)"
		echo "zblk_compr,$(field "$zmm" 2)"
		echo "kernel_write_gbs,$(awk -v s="$SIZE" -v t="$best_write_k" 'BEGIN {print s / t / 1e9}')"
		echo "zblk_write_gbs,$(awk -v s="$SIZE" -v t="$zw" 'BEGIN {print s / t / 1e9}')"
		echo "null_write_gbs,$(awk -v s="$SIZE" -v t="$nw" 'BEGIN {print s / t / 1e9}')"
		echo "kernel_read_gbs,$(awk -v s="$SIZE" -v t="$best_read_k" 'BEGIN {print s / t / 1e9}')"
		echo "zblk_read_gbs,$(awk -v s="$SIZE" -v t="$zr" 'BEGIN {print s / t / 1e9}')"
		echo "null_read_gbs,$(awk -v s="$SIZE" -v t="$nr" 'BEGIN {print s / t / 1e9}')"
		echo "kernel_randread_mbs,$rr_k"
		echo "zblk_randread_mbs,$rr_z"
		echo "null_randread_mbs,$rr_n"
		echo "kernel_randwrite_mbs,$rw_k"
		echo "zblk_randwrite_mbs,$rw_z"
		echo "null_randwrite_mbs,$rw_n"
		echo "pages,$((SIZE / 4096))"
		if [ -n "$uring" ]; then
			echo "uring_write_gbs,$(awk -v s="$SIZE" -v t="$uw" 'BEGIN {print s / t / 1e9}')"
			echo "uring_read_gbs,$(awk -v s="$SIZE" -v t="$ur" 'BEGIN {print s / t / 1e9}')"
			echo "uring_randread_mbs,$rr_u"
			echo "uring_randwrite_mbs,$rw_u"
			echo "uring_null_randread_mbs,$rr_un"
			echo "uring_null_randwrite_mbs,$rw_un"
		fi
	} >"$CSV_OUT"
fi

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Draws bench/run's results (CSV in DIR) as PNGs with gnuplot.
#   bench/plots.sh DIR
set -euo pipefail
OUT=${1:?usage: plots.sh DIR}
cd "$OUT"
val() { grep -m1 "^$2," "$1" 2>/dev/null | cut -d, -f2; }

# gp SCRIPT: run gnuplot on a script, after the settings every plot shares.
gp() {
	{
		echo 'set terminal png size 900,540 font ",11"'
		echo 'set grid; set key top left; set datafile separator ","'
		cat
	} | gnuplot
}

if [ -s split.csv ]; then
	gp <<'GP'
set output 'split.png'
set termoption noenhanced
set title 'Splitting a 64 KiB front off a bio: split vs copies'
set logscale xy; set xlabel 'segments in the bio'; set ylabel 'ns per operation'
plot 'split.csv' every ::1 using 1:3 with linespoints lw 2 title 'bio_split (shares the table)', \
     '' every ::1 using 1:4 with linespoints lw 2 title 'copy the vector', \
     '' every ::1 using 1:5 with linespoints lw 2 title 'copy the data'
GP
	gp <<'GP'
set output 'iteration.png'
set termoption noenhanced
set title 'Cost per segment of walking a bio'
set logscale x; set xlabel 'segments in the bio'; set ylabel 'ns per segment'
plot 'split.csv' every ::1 using 1:6 with linespoints lw 2 title 'bio_for_each_segment', \
     '' every ::1 using 1:7 with linespoints lw 2 title 'bio_for_each_bvec', \
     '' every ::1 using 1:8 with linespoints lw 2 title 'plain struct iovec loop'
GP
fi

bars() { # FILE TITLE YLABEL OUTPUT: FILE has "label,value" rows
	gp <<GP
set output '$4'; set title '$2'; set ylabel '$3'; unset key; set termoption noenhanced
set style fill solid 0.7; set boxwidth 0.6; set yrange [0:*]; set xtics rotate by -25
plot '$1' using 0:2:xtic(1) with boxes, '' using 0:2:(sprintf('%.4g', \$2)) with labels offset 0,1
GP
}

if [ -s zpool.csv ]; then
	{
		echo "raw lz4 compress,$(val zpool.csv 'raw LZ4_compress_default 1 thread')"
		echo "zpool_store (fresh memory),$(val zpool.csv 'zpool_store lz4 1 thread')"
		echo "zpool_store (pre-faulted),$(val zpool.csv 'zpool_store lz4 pre-faulted arena')"
		echo "raw lz4 decompress,$(val zpool.csv 'raw LZ4_decompress_safe 1 thread')"
		echo "zpool_load,$(val zpool.csv 'zpool_load lz4 1 thread')"
		z=$(val zpool.csv 'zpool_store zstd 1 thread')
		[ -n "$z" ] && echo "zpool_store zstd,$z" && echo "zpool_load zstd,$(val zpool.csv 'zpool_load zstd 1 thread')"
	} >throughput.dat
	bars throughput.dat 'libzpool vs raw lz4 on the corpus, one thread' 'GB/s of pages' throughput.png
	{
		echo "store 2 threads / 1,$(val zpool.csv 'store 2 threads / 1 thread')"
		echo "load 2 threads / 1,$(val zpool.csv 'load 2 threads / 1 thread')"
		echo "raw compress 2 / 1,$(val zpool.csv 'raw compress 2 threads / 1 thread')"
		echo "raw decompress 2 / 1,$(val zpool.csv 'raw decompress 2 threads / 1 thread')"
	} >scaling.dat
	bars scaling.dat 'Two threads against one' 'speed-up' scaling.png
	pages=$(val kernel.csv pages)
	pages=${pages:-16384}
	{
		echo "zpool lz4,$(awk -v m="$(val zpool.csv 'lz4 chain 64: mem_used_total')" -v p="$pages" 'BEGIN {print m / p}')"
		echo "malloc per object lz4,$(awk -v m="$(val zpool.csv 'malloc per object: footprint')" -v p="$pages" 'BEGIN {print m / p}')"
		[ -s kernel.csv ] && echo "kernel zram lz4,$(awk -v m="$(val kernel.csv kernel_mem_used)" -v p="$pages" 'BEGIN {print m / p}')"
		[ -s kernel.csv ] && echo "zblk lz4 (with slot table),$(awk -v m="$(val kernel.csv zblk_mem_used)" -v p="$pages" 'BEGIN {print m / p}')"
		z=$(val zpool.csv 'zstd chain 64: mem_used_total')
		[ -n "$z" ] && echo "zpool zstd,$(awk -v m="$z" -v p="$pages" 'BEGIN {print m / p}')"
		[ -s nbdkit.csv ] && echo "nbdkit allocator=zstd,$(val nbdkit.csv nbdkit_zstd_bytes_per_page)"
	} >memory.dat
	bars memory.dat 'Memory per stored 4 KiB page, the corpus, everything counted' 'bytes per page' memory.png
	{
		echo "zpool lz4 full,$(val zpool.csv 'lz4 chain 64: mem_used/compr')"
		echo "zpool lz4 after free 1/3,$(val zpool.csv 'lz4 chain 64: after free 1/3 + compact')"
		echo "malloc full,$(val zpool.csv 'malloc per object: footprint/compr')"
		echo "malloc after free 1/3,$(val zpool.csv 'malloc per object: after free 1/3 + trim')"
	} >overhead.dat
	bars overhead.dat 'Memory over the compressed payload (1.0 = no overhead)' 'x payload' overhead.png
fi

if [ -s kernel.csv ]; then
	{
		echo "kernel zram write,$(val kernel.csv kernel_write_gbs)"
		echo "zblk write,$(val kernel.csv zblk_write_gbs)"
		echo "zblk null write,$(val kernel.csv null_write_gbs)"
		echo "kernel zram read,$(val kernel.csv kernel_read_gbs)"
		echo "zblk read,$(val kernel.csv zblk_read_gbs)"
		echo "zblk null read,$(val kernel.csv null_read_gbs)"
	} >zblk.dat
	bars zblk.dat 'Sequential 1 MiB direct I/O: zblk vs the kernel zram (null = FUSE alone)' 'GB/s' zblk.png
fi
if [ -s uring.csv ]; then
	# The io_uring disk against fio, the same workloads side by side.
	grep -E '^(rand|read |write )' uring.csv | awk -F, '{print $1 " qd" $2 "," $3 "," $4}' >uring.dat
	gp <<'GP'
set output 'uring.png'
set termoption noenhanced
set title 'Bios on the io_uring disk vs fio io_uring, 1 GiB O_DIRECT file'
set style data histograms; set style histogram clustered gap 1
set style fill solid 0.7; set ylabel 'IOPS'; set yrange [0:*]; set xtics rotate by -25
plot 'uring.dat' using 2:xtic(1) title 'bios (bvec_uring_disk)', '' using 3 title 'fio --ioengine=io_uring'
GP
fi
ls ./*.png

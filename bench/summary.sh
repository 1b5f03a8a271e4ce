#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Markdown summary of bench/run's results in DIR.
#   bench/summary.sh DIR
set -euo pipefail
OUT=${1:?usage: summary.sh DIR}
cd "$OUT"
echo "# libbvec benchmark results"
echo
echo "$(date -u +%F), $(nproc) cores, $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')."
echo "Each table was measured side by side in one run; compare within a table."
echo
if [ -s split.csv ]; then
	echo "## Split versus copy, and iteration"
	echo
	echo '| segments | bio bytes | split ns | copy vector ns | copy data ns | segment loop ns/seg | bvec loop ns/seg | iovec loop ns/seg |'
	echo '|---:|---:|---:|---:|---:|---:|---:|---:|'
	tail -n +2 split.csv | tr ',' '|' | sed 's/^/| /; s/$/ |/'
	echo
	echo '![split](split.png) ![iteration](iteration.png)'
	echo
fi
if [ -s zpool.csv ]; then
	echo "## libzpool on the corpus"
	echo
	echo '| figure | value |'
	echo '|---|---:|'
	tr ',' '|' <zpool.csv | sed 's/^/| /; s/$/ |/'
	echo
	echo '![throughput](throughput.png) ![scaling](scaling.png) ![memory](memory.png) ![overhead](overhead.png)'
	echo
fi
for f in zram.txt kernel.txt fuse.txt; do
	[ -s "$f" ] || continue
	case $f in
	zram.txt) echo "## The zram device on the corpus and on zero pages" ;;
	kernel.txt) echo "## zblk against the kernel's zram" ;;
	fuse.txt) echo "## What each FUSE setting buys zblk" ;;
	esac
	echo
	echo '```'
	cat "$f"
	echo '```'
	echo
done
[ -s kernel.csv ] && { echo '![zblk](zblk.png)'; echo; }
if [ -s nbdkit.csv ]; then
	echo "## nbdkit memory plugin, allocator=zstd"
	echo
	tr ',' ' ' <nbdkit.csv | sed 's/^/    /'
fi

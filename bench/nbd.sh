#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# nbdkit-zram-plugin against nbdkit's memory plugin (allocator=sparse:
# uncompressed; allocator=zstd), all serving a disk the corpus's size over a
# Unix socket.  For each: the memory that holding the corpus costs (VmRSS
# growth, by bench/nbdkit_memory.sh); then, with the four servers up at once
# and each holding the corpus, fio's nbd engine on each in turn: 4 KiB
# random reads and writes at queue depth 1 and 16, 1 MiB sequential reads
# and writes (queue depth 4).  Each job runs $RUNTIME seconds (3) after a
# 1 s ramp, $ROUNDS times (2) a server, taking turns, and the best run
# counts: on a shared machine the load moves by the minute, and taking
# turns exposes every server to it alike.  Reads come first, on the corpus;
# fio writes 60%-compressible buffers (the corpus compresses about as much
# with lz4).  Prints CSV: server,metric,value (metric: rss_delta bytes, or a
# job's IOPS).  With PLOT=FILE.png and gnuplot, also draws them.
#
#   bench/nbd.sh PLUGIN CORPUS
set -euo pipefail
PLUGIN=${1:?usage: nbd.sh PLUGIN CORPUS}
CORPUS=${2:?usage: nbd.sh PLUGIN CORPUS}
RUNTIME=${RUNTIME:-3}
ROUNDS=${ROUNDS:-2}
HERE=$(cd "$(dirname "$0")" && pwd)
for tool in nbdkit nbdcopy fio; do
	command -v "$tool" >/dev/null || { echo "skip: no $tool" >&2; exit 77; }
done
fio --enghelp 2>/dev/null | grep -qw nbd || { echo "skip: fio without its nbd engine" >&2; exit 77; }
[ -f "$PLUGIN" ] || { echo "skip: no plugin at $PLUGIN (needs nbdkit-plugin-dev)" >&2; exit 77; }
[ -f "$CORPUS" ] || { echo "skip: no corpus" >&2; exit 77; }
SIZE=$(stat -c %s "$CORPUS")
dir=$(mktemp -d /tmp/nbd-bench.XXXXXX)
trap 'for p in "$dir"/pid*; do [ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null; done; rm -rf "$dir"' EXIT

servers=(
	"zram_lz4 $PLUGIN algorithm=lz4"
	"zram_zstd $PLUGIN algorithm=zstd"
	"memory_sparse memory allocator=sparse"
	"memory_zstd memory allocator=zstd"
)
jobs=(
	"randread_4k_qd1 --rw=randread --bs=4k --iodepth=1"
	"randread_4k_qd16 --rw=randread --bs=4k --iodepth=16"
	"read_1m --rw=read --bs=1m --iodepth=4"
	"randwrite_4k_qd1 --rw=randwrite --bs=4k --iodepth=1"
	"randwrite_4k_qd16 --rw=randwrite --bs=4k --iodepth=16"
	"write_1m --rw=write --bs=1m --iodepth=4"
)

bench() {
	local i=0 s name iops r j
	for s in "${servers[@]}"; do
		read -r -a srv <<<"$s"
		name=${srv[0]}
		"$HERE/nbdkit_memory.sh" "$CORPUS" "$name" "${srv[@]:1}" |
			sed -n "s/^${name}_rss_delta,/$name,rss_delta,/p"
	done
	for s in "${servers[@]}"; do
		read -r -a srv <<<"$s"
		nbdkit -U "$dir/s$i" -P "$dir/pid$i" "${srv[@]:1}" size="$SIZE"
		for _ in $(seq 50); do [ -S "$dir/s$i" ] && [ -f "$dir/pid$i" ] && break; sleep 0.1; done
		nbdcopy "$CORPUS" "nbd+unix:///?socket=$dir/s$i"
		i=$((i + 1))
	done
	for j in "${jobs[@]}"; do
		read -r -a job <<<"$j"
		declare -A best=()
		for r in $(seq "$ROUNDS"); do
			for i in "${!servers[@]}"; do
				fio --name="${job[0]}" --ioengine=nbd --uri="nbd+unix:///?socket=$dir/s$i" \
					--size="$SIZE" "${job[@]:1}" --time_based --runtime="$RUNTIME" \
					--ramp_time=1 --buffer_compress_percentage=60 --refill_buffers \
					--output-format=json --output="$dir/fio.json" >/dev/null
				iops=$(python3 -c 'import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
print("%.0f" % (j["read"]["iops"] + j["write"]["iops"]))' "$dir/fio.json")
				((iops > ${best[$i]:-0})) && best[$i]=$iops
			done
		done
		for i in "${!servers[@]}"; do
			echo "${servers[$i]%% *},${job[0]},${best[$i]}"
		done
		unset best
	done
	for i in "${!servers[@]}"; do
		kill "$(cat "$dir/pid$i")" 2>/dev/null || true
	done
}
bench | tee "$dir/all.csv"

[ -n "${PLOT:-}" ] && command -v gnuplot >/dev/null || exit 0
# One row a job, one column a server; memory in MiB as the last row.
awk -F, '{v[$2, $1] = $3; if (!($2 in seen)) {seen[$2] = 1; jobs[++nj] = $2}
	if (!($1 in sseen)) {sseen[$1] = 1; srv[++ns] = $1}}
	END {printf "job"; for (i = 1; i <= ns; i++) printf ",%s", srv[i]; print ""
	for (j = 1; j <= nj; j++) {printf "%s", jobs[j]
		for (i = 1; i <= ns; i++) {x = v[jobs[j], srv[i]]
			printf ",%s", jobs[j] == "rss_delta" ? x / 1048576 : x}
		print ""}}' "$dir/all.csv" >"$dir/table.csv"
gnuplot <<GP
set terminal png size 1000,560 font ",11"; set output '$PLOT'
set datafile separator ","; set termoption noenhanced
set multiplot layout 1,2 title 'nbdkit-zram-plugin vs nbdkit memory, the 64 MiB corpus, fio nbd engine'
set style data histograms; set style histogram clustered gap 1; set style fill solid 0.8
set grid ytics; set key top right; set xtics rotate by -30
set title 'IOPS'; set logscale y; set yrange [10:*]
plot for [i=2:5] '$dir/table.csv' every ::1 using i:xtic(1) title columnhead(i)
unset logscale y; set yrange [0:*]; set offsets 0,0,graph 0.35,0; set key top left; set title 'VmRSS growth holding the corpus (MiB)'
plot for [i=2:5] '$dir/table.csv' every ::0::0 using i:xtic(1) title columnhead(i)
unset multiplot
GP

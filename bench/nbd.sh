#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# nbdkit-zram-plugin against nbdkit's memory plugin (allocator=sparse:
# uncompressed; allocator=zstd), all serving a disk the corpus's size over a
# Unix socket (zram_zstd_mp: zstd with multi_page=on; zram_tier: lz4 for
# writes, with pages idle for 2 s recompressed with zstd at level 9 in
# groups, the memory counted 8 s after the copy, once they went idle), and
# nbdkit's null plugin as the floor: it stores nothing and reads zeros, so
# its IOPS are what nbdkit, the socket and fio allow on this machine with no
# data work at all, the most any server here could reach.  For each (but the floor): the
# memory that holding the corpus costs (VmRSS growth, by
# bench/nbdkit_memory.sh); then, with all the servers up at once
# and each holding the corpus, fio's nbd engine on each in turn: 4 KiB
# random reads and writes at queue depth 1 and 16, 1 MiB sequential reads
# and writes (queue depth 4).  Each job runs $RUNTIME seconds (3) after a
# 1 s ramp, $ROUNDS times (2) a server, taking turns, and the best run
# counts: on a shared machine the load moves by the minute, and taking
# turns exposes every server to it alike.  Reads come first, on the corpus;
# fio writes 60%-compressible buffers (the corpus compresses about as much
# with lz4).  Prints CSV: server,metric,value (metric: rss_delta and
# rss_anon_delta bytes, or a job's IOPS).  With PLOT=FILE.png and gnuplot,
# also draws them.
#
# Then the cells the targets compare closely, as A/B pairs: zram_lz4 against
# memory_sparse at queue depth 1, zram_zstd against memory_zstd for random
# writes.  Each pair runs the two servers back to back (A then B, the next
# pair B then A; zram_zstd_mp and zram_tier against memory_zstd too),
# $AB_PAIRS times (5), so that both see the same minute's
# load; rows "A/B,JOB_ab,MEDIAN" give the median of the pairs' IOPS ratios,
# "A/B,JOB_ab_pairs,A:B A:B ..." the raw IOPS, and "A/B,JOB_ab_cpu_us,..."
# the CPU time each server's process spent a request (user and system, from
# /proc/PID/stat), which the machine's load moves far less than the IOPS.
#
#   bench/nbd.sh PLUGIN CORPUS
set -euo pipefail
PLUGIN=${1:?usage: nbd.sh PLUGIN CORPUS}
CORPUS=${2:?usage: nbd.sh PLUGIN CORPUS}
RUNTIME=${RUNTIME:-3}
ROUNDS=${ROUNDS:-2}
AB_PAIRS=${AB_PAIRS:-5}
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
	"zram_zstd_mp $PLUGIN algorithm=zstd multi_page=on"
	"zram_tier $PLUGIN algorithm=lz4 recomp_algorithm=zstd recomp_level=9 multi_page=on idle_secs=2"
	"memory_sparse memory allocator=sparse"
	"memory_zstd memory allocator=zstd"
	"floor null"
)
jobs=(
	"randread_4k_qd1 --rw=randread --bs=4k --iodepth=1"
	"randread_4k_qd16 --rw=randread --bs=4k --iodepth=16"
	"read_1m --rw=read --bs=1m --iodepth=4"
	"randwrite_4k_qd1 --rw=randwrite --bs=4k --iodepth=1"
	"randwrite_4k_qd16 --rw=randwrite --bs=4k --iodepth=16"
	"write_1m --rw=write --bs=1m --iodepth=4"
)

# Pairs for the A/B rows: A B JOB, names from servers and jobs above.  The
# floor's pairs say how far the targets are from what the transport allows.
ab=(
	"zram_lz4 memory_sparse randread_4k_qd1"
	"zram_lz4 memory_sparse randwrite_4k_qd1"
	"zram_lz4 memory_sparse read_1m"
	"zram_lz4 memory_sparse write_1m"
	"floor memory_sparse read_1m"
	"floor memory_sparse write_1m"
	"floor memory_zstd randwrite_4k_qd1"
	"zram_zstd memory_zstd randwrite_4k_qd1"
	"zram_zstd memory_zstd randwrite_4k_qd16"
	"zram_zstd_mp memory_zstd randwrite_4k_qd1"
	"zram_zstd_mp memory_zstd randwrite_4k_qd16"
	"zram_tier memory_zstd randwrite_4k_qd1"
	"zram_tier memory_zstd randwrite_4k_qd16"
)

# fio_iops I JOB_ARGS...: one fio run on server I, its IOPS on stdout.
fio_iops() {
	local i=$1
	shift
	fio --name=nbd --ioengine=nbd --uri="nbd+unix:///?socket=$dir/s$i" \
		--size="$SIZE" "$@" --time_based --runtime="$RUNTIME" \
		--ramp_time=1 --buffer_compress_percentage=60 --refill_buffers \
		--output-format=json --output="$dir/fio.json" >/dev/null
	python3 -c 'import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
print("%.0f" % (j["read"]["iops"] + j["write"]["iops"]))' "$dir/fio.json"
}

# ab_run I JOB_ARGS...: fio_iops on server I, as "IOPS CPU": CPU the
# server's process spent a request, in microseconds, over the whole run
# (ramp included, so the requests are the IOPS times runtime plus ramp).
ab_run() {
	local i=$1 t0 t1 iops
	shift
	t0=$(cpu_ticks "$i")
	iops=$(fio_iops "$i" "$@")
	t1=$(cpu_ticks "$i")
	echo "$iops $(awk -v t=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" -v n="$iops" -v s=$((RUNTIME + 1)) \
		'BEGIN {printf "%.1f", n ? t / hz * 1e6 / (n * s) : 0}')"
}

# cpu_ticks I: user and system clock ticks of server I so far.
cpu_ticks() {
	awk '{print $14 + $15}' "/proc/$(cat "$dir/pid$1")/stat"
}

# index NAME ENTRY...: the position of the entry whose first word is NAME.
index() {
	local name=$1 k=0 e
	shift
	for e in "$@"; do
		[ "${e%% *}" = "$name" ] && { echo "$k"; return; }
		k=$((k + 1))
	done
	echo "nbd.sh: no $name" >&2
	return 1
}

bench() {
	local i=0 s name iops r j
	for s in "${servers[@]}"; do
		read -r -a srv <<<"$s"
		name=${srv[0]}
		[ "$name" = floor ] && continue
		if [ "$name" = zram_tier ]; then
			SETTLE=8 "$HERE/nbdkit_memory.sh" "$CORPUS" "$name" "${srv[@]:1}" |
				sed -n "s/^${name}_rss\(_anon\)\?_settled_delta,/$name,rss\1_delta,/p"
		else
			"$HERE/nbdkit_memory.sh" "$CORPUS" "$name" "${srv[@]:1}" |
				sed -n "s/^${name}_\(rss_delta\|rss_anon_delta\),/$name,\1,/p"
		fi
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
				iops=$(fio_iops "$i" "${job[@]:1}")
				((iops > ${best[$i]:-0})) && best[$i]=$iops
			done
		done
		for i in "${!servers[@]}"; do
			echo "${servers[$i]%% *},${job[0]},${best[$i]}"
		done
		unset best
	done
	for j in "${ab[@]}"; do
		read -r a b name <<<"$j"
		local ia ib ja raw="" cpu="" ratios=()
		ia=$(index "$a" "${servers[@]}")
		ib=$(index "$b" "${servers[@]}")
		ja=$(index "$name" "${jobs[@]}")
		read -r -a job <<<"${jobs[$ja]}"
		for r in $(seq "$AB_PAIRS"); do
			local x y cx cy
			if ((r % 2)); then
				read -r x cx < <(ab_run "$ia" "${job[@]:1}")
				read -r y cy < <(ab_run "$ib" "${job[@]:1}")
			else
				read -r y cy < <(ab_run "$ib" "${job[@]:1}")
				read -r x cx < <(ab_run "$ia" "${job[@]:1}")
			fi
			raw+="${raw:+ }$x:$y"
			cpu+="${cpu:+ }$cx:$cy"
			ratios+=("$(awk -v x="$x" -v y="$y" 'BEGIN {printf "%.3f", y ? x / y : 0}')")
		done
		echo "$a/$b,${name}_ab,$(printf '%s\n' "${ratios[@]}" | sort -g |
			awk '{v[NR] = $1} END {printf "%.3f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}')"
		echo "$a/$b,${name}_ab_pairs,$raw"
		echo "$a/$b,${name}_ab_cpu_us,$cpu"
	done
	for i in "${!servers[@]}"; do
		kill "$(cat "$dir/pid$i")" 2>/dev/null || true
	done
}
bench | tee "$dir/all.csv"

[ -n "${PLOT:-}" ] && command -v gnuplot >/dev/null || exit 0
# One row a job, one column a server; memory in MiB as the last row.
awk -F, '$1 ~ /\// || $2 == "rss_anon_delta" {next} {v[$2, $1] = $3; if (!($2 in seen)) {seen[$2] = 1; jobs[++nj] = $2}
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
set grid ytics; set key below horizontal; set xtics rotate by -30
set title 'IOPS'; set logscale y; set yrange [10:*]
plot for [i=2:$((${#servers[@]} + 1))] '$dir/table.csv' every ::1 using i:xtic(1) title columnhead(i)
unset logscale y; set yrange [0:*]; set offsets 0,0,graph 0.35,0; set title 'VmRSS growth holding the corpus (MiB)'
plot for [i=2:${#servers[@]}] '$dir/table.csv' every ::0::0 using i:xtic(1) title columnhead(i)
unset multiplot
GP

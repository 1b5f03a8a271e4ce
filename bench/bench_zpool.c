// SPDX-License-Identifier: MIT
/*
 * bench_zpool: libzpool against raw lz4 (and zstd), and against a store that
 * mallocs each compressed page, on the same pages in the same run.
 *
 *   bench_zpool CORPUS [--csv] [--compact-max MIB] [--compact-only] [--memory-only]
 *               [--throughput-only]
 *
 * The last part times zpool_compact() on pools of 64 MiB of stored pages
 * up to --compact-max (1024 by default; 4096 for the 4 GiB case, 0 to
 * skip it); --compact-only runs that part alone, --memory-only the memory
 * figures alone (every zspage length, old and new defaults), --throughput-only
 * the lz4 throughput and thread-scaling figures alone.
 * CORPUS is a file of whole pages (e.g. ../shared/corpus/anon-64m.bin.xz
 * unpacked).  Exits 77 (skip) if it is absent.  Every page loaded back is
 * compared with the original, so the throughput figures are of correct work.
 * Figures are ratios of runs made side by side; absolute speeds drift.
 */
#include <errno.h>
#include <lz4.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#ifdef ZPOOL_HAVE_ZSTD
#include <zstd.h>
#endif

#include <libbvec/zpool.h>

#include "../tests/unit/rss.h"

#define PS ((size_t)BVEC_PAGE_SIZE)

static unsigned char *corpus;
static size_t npages;
static int csv;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what)
{
	fprintf(stderr, "bench_zpool: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void report(const char *key, double value, const char *unit)
{
	if (csv)
		printf("%s,%.4f\n", key, value);
	else
		printf("  %-44s %12.3f %s\n", key, value, unit);
}

/* ---- raw lz4 reference ------------------------------------------------ */

struct raw {
	unsigned char *buf;	/* compressed pages, PS + PS/8 apart */
	int *len;
};

struct job {
	struct zpool *pool;
	zpool_handle_t *handles;
	struct raw *raw;
	size_t first, step;	/* pages first, first + step, ... */
	int op; /* 0 raw compress, 1 raw decompress, 2 store, 3 load */
	long bad;
};

#define RAW_STRIDE (PS + PS / 8 + 64)
#define REPS 5

static void *run_job(void *arg)
{
	struct job *j = arg;
	unsigned char *page = aligned_alloc(PS, PS);
	size_t i;

	if (!page)
		die("aligned_alloc");
	for (i = j->first; i < npages; i += j->step) {
		const unsigned char *src = corpus + i * PS;

		switch (j->op) {
		case 0:
			j->raw->len[i] = LZ4_compress_default((const char *)src,
				(char *)j->raw->buf + i * RAW_STRIDE, (int)PS, (int)RAW_STRIDE);
			break;
		case 1:
			if (LZ4_decompress_safe((const char *)j->raw->buf + i * RAW_STRIDE,
						(char *)page, j->raw->len[i], (int)PS) != (int)PS ||
			    memcmp(page, src, PS))
				j->bad++;
			break;
		case 2:
			if (zpool_store(j->pool, src, &j->handles[i]))
				j->bad++;
			break;
		case 3:
			if (zpool_load(j->pool, j->handles[i], page) || memcmp(page, src, PS))
				j->bad++;
			break;
		}
	}
	free(page);
	return NULL;
}

/* Times a thread of the last timed() run went to sleep: lock waits, mostly. */
static long last_sleeps;

static long sleeps_so_far(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_nvcsw;
}

/*
 * Seconds to run @op over all pages on @threads threads.  The threads take
 * the pages in turn, as concurrent writers of one device mix their data,
 * so that they meet in the same size classes.
 */
static double timed(int op, int threads, struct zpool *pool, zpool_handle_t *handles,
		    struct raw *raw)
{
	pthread_t t[2];
	struct job j[2];
	double t0;
	long bad = 0, s0;
	int i;

	for (i = 0; i < threads; i++) {
		j[i].pool = pool;
		j[i].handles = handles;
		j[i].raw = raw;
		j[i].first = (size_t)i;
		j[i].step = (size_t)threads;
		j[i].op = op;
		j[i].bad = 0;
	}
	s0 = sleeps_so_far();
	t0 = now();
	for (i = 0; i < threads; i++)
		if (pthread_create(&t[i], NULL, run_job, &j[i]))
			die("pthread_create");
	for (i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		bad += j[i].bad;
	}
	/* The joining thread's own sleeps (one per join at most) count too. */
	last_sleeps = sleeps_so_far() - s0;
	if (bad) {
		fprintf(stderr, "bench_zpool: %ld pages failed (op %d)\n", bad, op);
		exit(1);
	}
	return now() - t0;
}

/* Pre-faulted memory for the arena runs, which leave page faults out. */
static unsigned char *arena_mem;
static size_t arena_bytes;

/* Sleeps of the fastest run of the last best() call. */
static long best_sleeps;

/* Best of @reps runs: the least disturbed by the other tenants.  With
 * @arena the pool lives in pre-faulted memory. */
static double best(int reps, int op, int threads, const char *compressor,
		   struct raw *raw, zpool_handle_t *handles, bool arena)
{
	double b = 1e30;
	int r;

	for (r = 0; r < reps; r++) {
		struct zpool_config cfg = ZPOOL_CONFIG_INIT;
		struct zpool_page_source src;
		struct zpool *pool = NULL;
		double t;

		if (op >= 2) {
			cfg.compressor = compressor;
			if (arena) {
				if (zpool_arena_init(arena_mem, arena_bytes, &src))
					die("zpool_arena_init");
				cfg.page_source = &src;
			}
			pool = zpool_create(&cfg);
			if (!pool)
				die("zpool_create");
			if (op == 3)
				timed(2, threads, pool, handles, raw);
		}
		t = timed(op, threads, pool, handles, raw);
		if (t < b) {
			b = t;
			best_sleeps = last_sleeps;
		}
		zpool_destroy(pool);
	}
	return b;
}

static bool page_same_filled(const unsigned char *p)
{
	unsigned long w, first;
	size_t i;

	memcpy(&first, p, sizeof(first));
	for (i = 0; i < PS; i += sizeof(w)) {
		memcpy(&w, p + i, sizeof(w));
		if (w != first)
			return false;
	}
	return true;
}

/*
 * What a malloc-per-object store costs glibc: its heap and mmap footprint,
 * plus the pointer table it needs to find objects (our handles' twin), when
 * full and after freeing every third page (malloc cannot compact).
 */
static void malloc_baseline(struct raw *raw, uint64_t *payload, uint64_t *footprint,
			    uint64_t *payload_after, uint64_t *footprint_after)
{
	struct mallinfo2 before = mallinfo2(), after;
	void **obj = calloc(npages, sizeof(*obj));
	size_t i;

	*payload = 0;
	for (i = 0; i < npages; i++) {
		if (page_same_filled(corpus + i * PS))
			continue;
		obj[i] = malloc((size_t)raw->len[i]);
		if (!obj[i])
			die("malloc");
		memcpy(obj[i], raw->buf + i * RAW_STRIDE, (size_t)raw->len[i]);
		*payload += (uint64_t)raw->len[i];
	}
	after = mallinfo2();
	*footprint = (after.arena + after.hblkhd) - (before.arena + before.hblkhd) +
		     npages * sizeof(*obj);
	*payload_after = *payload;
	for (i = 0; i < npages; i += 3) {
		if (obj[i])
			*payload_after -= (uint64_t)raw->len[i];
		free(obj[i]);
		obj[i] = NULL;
	}
	malloc_trim(0);
	after = mallinfo2();
	*footprint_after = (after.arena + after.hblkhd) - (before.arena + before.hblkhd) +
			   npages * sizeof(*obj);
	for (i = 0; i < npages; i++)
		free(obj[i]);
	free(obj);
}

/*
 * How far mem_used_total is from what the process really gained: resident
 * anonymous growth since just before the pool was made, over mem_used_total
 * (1.0 is honest; the compression context and the source's bookkeeping add
 * a fixed few tens of KiB, which shows once everything is freed).
 */
static void rss_figure(struct zpool *pool, long long base, const char *compressor,
		       unsigned int chain, const char *phase)
{
	struct zpool_stats st;
	long long now = rss_anon();
	char key[96];

	if (base < 0 || now < 0)
		return;
	zpool_stats(pool, &st);
	snprintf(key, sizeof(key), "%s chain %u: RSS/mem_used %s", compressor, chain, phase);
	report(key, (double)(now - base) / (double)st.mem_used_total, "x");
}

/*
 * Where the memory above the payload goes, in % of the payload; the four
 * add up to mem_used_total exactly: objects rounded up to 16 bytes, then
 * up to their (merged) class's size, the slack in the class's pages (each
 * class's partly used last page, zspage tails), and the metadata.
 */
static void overhead_figures(struct zpool *pool, const zpool_handle_t *h,
			     const char *compressor, unsigned int chain)
{
	size_t n = zpool_class_stats(pool, NULL, 0), i, k;
	struct zpool_class_stats *cs = calloc(n ? n : 1, sizeof(*cs));
	double rounded = 0, merged = 0, slack = 0, payload;
	struct zpool_stats st;
	char key[96];

	if (!cs)
		die("calloc");
	n = zpool_class_stats(pool, cs, n);
	zpool_stats(pool, &st);
	payload = (double)st.compr_data_size;
	for (i = 0; i < npages; i++) {
		size_t len = zpool_obj_size(pool, h[i]), r;

		if (!len)
			continue;
		r = len < 32 ? 32 : (len + 15) / 16 * 16;
		for (k = 0; k < n && cs[k].size < r; k++)
			;
		rounded += (double)(r - len);
		if (k < n)
			merged += (double)(cs[k].size - r);
	}
	for (k = 0; k < n; k++)
		slack += (double)cs[k].pages_used * (double)PS -
			 (double)cs[k].objs_used * (double)cs[k].size;
	free(cs);
	snprintf(key, sizeof(key), "%s chain %u: overhead, rounding to 16 bytes", compressor, chain);
	report(key, 100 * rounded / payload, "%");
	snprintf(key, sizeof(key), "%s chain %u: overhead, merged class sizes", compressor, chain);
	report(key, 100 * merged / payload, "%");
	snprintf(key, sizeof(key), "%s chain %u: overhead, slack in class pages", compressor, chain);
	report(key, 100 * slack / payload, "%");
	snprintf(key, sizeof(key), "%s chain %u: overhead, metadata", compressor, chain);
	report(key, 100 * (double)st.metadata_bytes / payload, "%");
}

#ifdef ZPOOL_HAVE_ZSTD
/*
 * zstd at @level: store speed (best of 3) and compressed bytes.  On 4 KiB
 * pages the levels do not order as on large inputs, so the default (3,
 * as zram's) is worth checking against its neighbours on real data.
 */
static void zstd_level_figure(int level)
{
	struct zpool_config cfg = ZPOOL_CONFIG_INIT;
	zpool_handle_t *h = malloc(npages * sizeof(*h));
	struct zpool_stats st;
	double b = 1e30;
	char key[96];
	int r;

	if (!h)
		die("malloc");
	cfg.compressor = "zstd";
	cfg.level = level;
	for (r = 0; r < 3; r++) {
		struct zpool *pool = zpool_create(&cfg);
		double t0;
		size_t i;

		if (!pool)
			die("zpool_create");
		t0 = now();
		for (i = 0; i < npages; i++)
			if (zpool_store(pool, corpus + i * PS, &h[i]))
				die("zpool_store");
		if (now() - t0 < b)
			b = now() - t0;
		zpool_stats(pool, &st);
		zpool_destroy(pool);
	}
	snprintf(key, sizeof(key), "zstd level %d: store 1 thread", level);
	report(key, (double)(npages * PS) / b / 1e9, "GB/s");
	snprintf(key, sizeof(key), "zstd level %d: compr_data_size", level);
	report(key, (double)st.compr_data_size, "bytes");
	free(h);
}
#endif

/*
 * ZPOOL_F_MULTI_PAGE against page by page, side by side, best of 3: the
 * corpus stored 64 pages a call (zpool_store_pages), loaded back 64 pages a
 * call (zpool_load_pages) and one page at a time in a scattered order
 * (every 7th page, wrapping, as random 4 KiB reads would), and the memory.
 */
static void multi_page_figure(const char *compressor)
{
	zpool_handle_t *h = malloc(npages * sizeof(*h));
	unsigned char *out = malloc(64 * PS);
	double t[2][3];
	struct zpool_stats st[2];
	char key[96];
	int m, r, k;

	if (!h || !out)
		die("malloc");
	for (m = 0; m < 2; m++) {
		struct zpool_config cfg = ZPOOL_CONFIG_INIT;

		cfg.compressor = compressor;
		cfg.flags = m ? ZPOOL_F_MULTI_PAGE : 0;
		for (k = 0; k < 3; k++)
			t[m][k] = 1e30;
		for (r = 0; r < 3; r++) {
			struct zpool *pool = zpool_create(&cfg);
			double t0, d[3];
			size_t i, n, j;

			if (!pool)
				die("zpool_create");
			t0 = now();
			for (i = 0; i < npages; i += n) {
				n = npages - i < 64 ? npages - i : 64;
				if (zpool_store_pages(pool, corpus + i * PS, (unsigned int)n, h + i))
					die("zpool_store_pages");
			}
			d[0] = now() - t0;
			t0 = now();
			for (i = 0; i < npages; i += n) {
				n = npages - i < 64 ? npages - i : 64;
				if (zpool_load_pages(pool, h + i, (unsigned int)n, out) ||
				    memcmp(out, corpus + i * PS, n * PS))
					die("zpool_load_pages");
			}
			d[1] = now() - t0;
			t0 = now();
			for (i = 0, j = 0; i < npages; i++, j = (j + 7) % npages)
				if (zpool_load(pool, h[j], out) || memcmp(out, corpus + j * PS, PS))
					die("zpool_load");
			d[2] = now() - t0;
			for (k = 0; k < 3; k++)
				if (d[k] < t[m][k])
					t[m][k] = d[k];
			zpool_stats(pool, &st[m]);
			zpool_destroy(pool);
		}
	}
	snprintf(key, sizeof(key), "%s multi_page: compr_data_size / page by page", compressor);
	report(key, (double)st[1].compr_data_size / (double)st[0].compr_data_size, "x");
	snprintf(key, sizeof(key), "%s multi_page: mem_used_total / page by page", compressor);
	report(key, (double)st[1].mem_used_total / (double)st[0].mem_used_total, "x");
	snprintf(key, sizeof(key), "%s multi_page: mem_used_total", compressor);
	report(key, (double)st[1].mem_used_total, "bytes");
	snprintf(key, sizeof(key), "%s multi_page: store 64 pages, speed / page by page", compressor);
	report(key, t[0][0] / t[1][0], "x");
	snprintf(key, sizeof(key), "%s multi_page: load 64 pages, speed / page by page", compressor);
	report(key, t[0][1] / t[1][1], "x");
	snprintf(key, sizeof(key), "%s multi_page: scattered page loads, speed / page by page",
		 compressor);
	report(key, t[0][2] / t[1][2], "x");
	free(h);
	free(out);
}

static void memory_figures(const char *compressor, unsigned int chain)
{
	struct zpool_config cfg = ZPOOL_CONFIG_INIT;
	zpool_handle_t *h = malloc(npages * sizeof(*h));
	struct zpool_stats st;
	struct zpool *pool;
	long long base;
	char key[96];
	size_t i;

	if (!h)
		die("malloc");
	memset(h, 0, npages * sizeof(*h)); /* resident before the baseline */
	cfg.compressor = compressor;
	cfg.max_pages_per_zspage = chain;
	base = rss_anon();
	pool = zpool_create(&cfg);
	if (!pool)
		die("zpool_create");
	for (i = 0; i < npages; i++)
		if (zpool_store(pool, corpus + i * PS, &h[i]))
			die("zpool_store");
	rss_figure(pool, base, compressor, chain, "stored");
	zpool_stats(pool, &st);
	snprintf(key, sizeof(key), "%s chain %u: mem_used/compr", compressor, chain);
	report(key, (double)st.mem_used_total / (double)st.compr_data_size, "x");
	snprintf(key, sizeof(key), "%s chain %u: orig/mem_used", compressor, chain);
	report(key, (double)st.orig_data_size / (double)st.mem_used_total, "x");
	snprintf(key, sizeof(key), "%s chain %u: mem_used_total", compressor, chain);
	report(key, (double)st.mem_used_total, "bytes");
	snprintf(key, sizeof(key), "%s chain %u: metadata", compressor, chain);
	report(key, (double)st.metadata_bytes, "bytes");
	overhead_figures(pool, h, compressor, chain);
	/* Free every third page, then compact. */
	for (i = 0; i < npages; i += 3) {
		zpool_free(pool, h[i]);
		h[i] = 0;
	}
	rss_figure(pool, base, compressor, chain, "freed 1/3");
	zpool_compact(pool);
	zpool_stats(pool, &st);
	snprintf(key, sizeof(key), "%s chain %u: after free 1/3 + compact", compressor, chain);
	report(key, (double)st.mem_used_total / (double)st.compr_data_size, "x");
	rss_figure(pool, base, compressor, chain, "compacted");
	for (i = 0; i < npages; i++)
		zpool_free(pool, h[i]);
	rss_figure(pool, base, compressor, chain, "freed all");
	zpool_stats(pool, &st);
	snprintf(key, sizeof(key), "%s chain %u: mem_used_total freed all", compressor, chain);
	report(key, (double)st.mem_used_total, "bytes");
	zpool_destroy(pool);
	free(h);
}

/*
 * Compaction time against pool size: @mib MiB of pages, the corpus repeated
 * with one word of each copy varied so no two copies are alike (same-filled
 * pages are left as they are), every third page freed, then one timed
 * zpool_compact().  Its cost should follow what it moves, a third of the
 * pool here, so the time per stored page should stay flat as the pool grows.
 */
static void compact_figure(size_t mib)
{
	size_t n = (size_t)(((uint64_t)mib << 20) / PS), i;
	zpool_handle_t *h = malloc(n * sizeof(*h));
	unsigned char *page = aligned_alloc(PS, PS);
	struct zpool_stats st;
	struct zpool *pool;
	size_t moved;
	char key[96];
	double t;

	if (!h || !page)
		die("malloc");
	pool = zpool_create(NULL);
	if (!pool)
		die("zpool_create");
	for (i = 0; i < n; i++) {
		const unsigned char *src = corpus + i % npages * PS;
		uint64_t copy = i / npages, w;

		if (copy && !page_same_filled(src)) {
			memcpy(page, src, PS);
			memcpy(&w, page + PS / 2, sizeof(w));
			w ^= copy * 0x9e3779b97f4a7c15ull;
			memcpy(page + PS / 2, &w, sizeof(w));
			src = page;
		}
		if (zpool_store(pool, src, &h[i]))
			die("zpool_store");
	}
	for (i = 0; i < n; i += 3)
		zpool_free(pool, h[i]);
	t = now();
	moved = zpool_compact(pool);
	t = now() - t;
	zpool_stats(pool, &st);
	snprintf(key, sizeof(key), "compact %zu MiB: seconds", mib);
	report(key, t, "s");
	snprintf(key, sizeof(key), "compact %zu MiB: ns per stored page", mib);
	report(key, t * 1e9 / (double)n, "ns");
	snprintf(key, sizeof(key), "compact %zu MiB: pages freed", mib);
	report(key, (double)moved, "pages");
	snprintf(key, sizeof(key), "compact %zu MiB: mem_used/compr after", mib);
	report(key, (double)st.mem_used_total / (double)st.compr_data_size, "x");
	zpool_destroy(pool);
	free(page);
	free(h);
}

int main(int argc, char **argv)
{
	struct raw raw;
	zpool_handle_t *handles;
	uint64_t payload, footprint, payload_after, footprint_after;
	double c1, d1, c2, d2, s1, sa, sa2, l1, s2, l2;
	long s2_sleeps;
	size_t compact_max = 1024, mib;
	bool compact_only = false, memory_only = false, throughput_only = false;
	FILE *f;
	long size;
	int a;

	for (a = 2; a < argc; a++) {
		if (!strcmp(argv[a], "--csv"))
			csv = 1;
		else if (!strcmp(argv[a], "--compact-max") && a + 1 < argc)
			compact_max = strtoul(argv[++a], NULL, 10);
		else if (!strcmp(argv[a], "--compact-only"))
			compact_only = true;
		else if (!strcmp(argv[a], "--memory-only"))
			memory_only = true;
		else if (!strcmp(argv[a], "--throughput-only"))
			throughput_only = true;
		else
			argc = 0;
	}
	if (argc < 2) {
		fprintf(stderr, "usage: bench_zpool CORPUS [--csv] [--compact-max MIB] "
			"[--compact-only] [--memory-only] [--throughput-only]\n");
		return 2;
	}
	f = fopen(argv[1], "rb");
	if (!f) {
		printf("bench_zpool: %s: not found, skipping\n", argv[1]);
		return 77;
	}
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	rewind(f);
	npages = (size_t)size / PS;
	corpus = aligned_alloc(PS, npages * PS);
	raw.buf = malloc(npages * RAW_STRIDE);
	raw.len = calloc(npages, sizeof(int));
	handles = calloc(npages, sizeof(*handles));
	if (!corpus || !raw.buf || !raw.len || !handles ||
	    fread(corpus, PS, npages, f) != npages)
		die("reading the corpus");
	fclose(f);
	if (!csv)
		printf("bench_zpool: %zu pages of %zu bytes from %s\n", npages, PS, argv[1]);
	if (compact_only)
		goto compaction;
	if (memory_only)
		goto memory;

	arena_bytes = npages * PS * 11 / 10 + (64u << 20) / 16;
	arena_mem = malloc(arena_bytes);
	if (!arena_mem)
		die("malloc");
	memset(arena_mem, 1, arena_bytes);

	c1 = best(REPS, 0, 1, NULL, &raw, handles, false);
	d1 = best(REPS, 1, 1, NULL, &raw, handles, false);
	s1 = best(REPS, 2, 1, "lz4", &raw, handles, false);
	sa = best(REPS, 2, 1, "lz4", &raw, handles, true);
	l1 = best(REPS, 3, 1, "lz4", &raw, handles, false);
	c2 = best(REPS, 0, 2, NULL, &raw, handles, false);
	d2 = best(REPS, 1, 2, NULL, &raw, handles, false);
	s2 = best(REPS, 2, 2, "lz4", &raw, handles, false);
	s2_sleeps = best_sleeps;
	sa2 = best(REPS, 2, 2, "lz4", &raw, handles, true);
	l2 = best(REPS, 3, 2, "lz4", &raw, handles, false);

	if (!csv)
		printf("throughput (GB/s of pages), one run, best of %d:\n", REPS);
	report("raw LZ4_compress_default 1 thread", (double)(npages * PS) / c1 / 1e9, "GB/s");
	report("zpool_store lz4 1 thread", (double)(npages * PS) / s1 / 1e9, "GB/s");
	report("zpool_store lz4 pre-faulted arena", (double)(npages * PS) / sa / 1e9, "GB/s");
	report("raw LZ4_decompress_safe 1 thread", (double)(npages * PS) / d1 / 1e9, "GB/s");
	report("zpool_load lz4 1 thread", (double)(npages * PS) / l1 / 1e9, "GB/s");
	report("store / raw compress 1 thread", c1 / s1, "x");
	report("store (pre-faulted) / raw compress", c1 / sa, "x");
	report("load / raw decompress 1 thread", d1 / l1, "x");
	report("store 2 threads / 1 thread", s1 / s2, "x");
	/* A store that waits for a class lock sleeps; few sleeps, few waits. */
	report("store 2 threads: sleeps per 1000 pages", (double)s2_sleeps * 1000 / (double)npages,
	       "");
	report("store (pre-faulted) 2 threads / 1 thread", sa / sa2, "x");
	report("load 2 threads / 1 thread", l1 / l2, "x");
	report("raw compress 2 threads / 1 thread", c1 / c2, "x");
	report("raw decompress 2 threads / 1 thread", d1 / d2, "x");
	if (throughput_only)
		goto out;

memory:
	if (!csv)
		printf("memory (everything the pool holds, over the compressed payload):\n");
	/* 64 is the default (0) with the default source; 8 was, until 16 was the most. */
	memory_figures("lz4", 64);
	memory_figures("lz4", 8);
	memory_figures("lz4", 16);
	memory_figures("lz4", 32);
	memory_figures("lz4", 4);
	if (memory_only)
		goto out;
	malloc_baseline(&raw, &payload, &footprint, &payload_after, &footprint_after);
	report("malloc per object: footprint/compr", (double)footprint / (double)payload, "x");
	report("malloc per object: footprint", (double)footprint, "bytes");
	report("malloc per object: after free 1/3 + trim", (double)footprint_after /
	       (double)payload_after, "x");
	multi_page_figure("lz4");
#ifdef ZPOOL_HAVE_ZSTD
	if (zpool_has_compressor("zstd")) {
		double zs = best(REPS, 2, 1, "zstd", &raw, handles, false);
		double zl = best(REPS, 3, 1, "zstd", &raw, handles, false);

		report("zpool_store zstd 1 thread", (double)(npages * PS) / zs / 1e9, "GB/s");
		report("zpool_load zstd 1 thread", (double)(npages * PS) / zl / 1e9, "GB/s");
		memory_figures("zstd", 64); /* the default */
		multi_page_figure("zstd");
		zstd_level_figure(-1);
		zstd_level_figure(1);
		zstd_level_figure(3);
	}
#endif
compaction:
	if (!csv && compact_max >= 64)
		printf("compaction after freeing every third page, by pool size:\n");
	/* A 32-bit process cannot hold the larger pools: it stops before them. */
	for (mib = 64; mib <= compact_max && ((uint64_t)mib << 20) / 2 < SIZE_MAX / 4; mib *= 2)
		compact_figure(mib);
out:
	free(arena_mem);
	free(corpus);
	free(raw.buf);
	free(raw.len);
	free(handles);
	return 0;
}

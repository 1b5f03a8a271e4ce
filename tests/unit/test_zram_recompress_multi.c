// SPDX-License-Identifier: MIT
/*
 * zram_recompress() on ZPOOL_F_MULTI_PAGE pools, where idle neighbours are
 * recompressed together as groups: no data is lost or torn (every read is
 * compared with a flat byte model), a group never spans two windows,
 * priorities only go up, max_pages and mem_limit are kept, corrupt groups
 * stay corrupt, random pages are marked incompressible rather than stored
 * huge, and memory does not grow.  That holds at window edges, for mixed
 * priorities, partly rewritten or partly idle groups, lone members, every
 * codec at every priority, and while writes, runs, partial writes,
 * discards, write-zeroes, reads, writeback, compaction, idle marks and
 * reset race with recompression.  After each test the pool's counters must
 * equal what its slots reference, and discarding everything must leave
 * only metadata.
 */
#include <pthread.h>

#include "pools.h"

#define GRP (ZP_GROUP_PAGES > 1 ? ZP_GROUP_PAGES : 2u)
#define MULTI (ZPOOL_F_CHECKSUM | ZPOOL_F_MULTI_PAGE)

static unsigned int prio_of(struct zram *z, uint64_t i)
{
	uint32_t f = flags_of(z, i);

	return f & ZRAM_RECOMP ? (f & ZRAM_PRIO_MASK) >> ZRAM_PRIO_SHIFT : 0;
}

/* Discard everything: the pool must be left with its metadata only. */
static void check_empties(struct zram *z, uint64_t pages)
{
	struct zpool_stats st;

	ck_assert_int_eq(zram_io(z, REQ_OP_DISCARD, 0, NULL, (unsigned int)(pages * PG)), 0);
	zram_compact(z);
	zram_mm_stat(z, &st);
	ck_assert_uint_eq(st.orig_data_size, 0);
	ck_assert_uint_eq(st.compr_data_size, 0);
	ck_assert_uint_eq(st.huge_pages, 0);
	ck_assert_uint_eq(st.objects, 0);
	ck_assert_uint_eq(st.mem_used_total, st.metadata_bytes);
}

/*
 * The single-threaded tests' model of the device and a buffer, as large
 * as the largest device they make: in a fixture, so that a failed
 * assertion (CK_FORK=no under valgrind) leaks nothing.
 */
#define EDGE_PAGES (16 * GRP)
static unsigned char *want, *buf;

static void bufs_alloc(void)
{
	want = test_pages(EDGE_PAGES);
	buf = test_pages(EDGE_PAGES);
}

static void bufs_free(void)
{
	free(want);
	free(buf);
}

/* Every test ends so: a reference leaked or freed twice anywhere shows in the counters. */
static void finish(struct zram *z, uint64_t pages, uint64_t stored)
{
	check_accounting(z, pages, stored);
	check_empties(z, pages);
	zram_destroy(z);
}

static void check_page(struct zram *z, uint64_t i, const unsigned char *expect)
{
	unsigned char got[PG];

	ck_assert_int_eq(zram_pages_io(z, REQ_OP_READ, i, got, 1), 0);
	ck_assert_msg(!memcmp(got, expect, PG), "page %llu differs", (unsigned long long)i);
}

static int64_t recompress(struct zram *z, enum zram_recomp_type type, unsigned int prio,
			  uint64_t max_pages)
{
	struct zram_recompress_params p = ZRAM_RECOMPRESS_PARAMS_INIT;

	p.type = type;
	p.priority = prio;
	p.max_pages = max_pages;
	return zram_recompress(z, &p);
}

/*
 * Pages written one at a time across a window's edge become two groups,
 * one on each side: a group never spans two windows.
 */
START_TEST(test_window_edge)
{
	const uint64_t n = 64, first = 2 * GRP - 3, last = 3 * GRP + 2;
	struct zram *z = new_zram_dev(n, "lz4", MULTI);
	unsigned char page[PG];
	struct zpool_stats before, after;
	uint64_t i;

	for (i = first; i <= last; i++) {
		text_page(page, i, 0);
		ck_assert_int_eq(zram_pages_io(z, REQ_OP_WRITE, i, page, 1), 0);
	}
	ck_assert_int_eq(zram_set_recomp_algorithm(z, strong(), 1), 0);
	zram_mm_stat(z, &before);
	ck_assert_int_eq(recompress(z, ZRAM_RECOMP_ALL, 0, 0), (int64_t)(last - first + 1));
	zram_mm_stat(z, &after);
	ck_assert_uint_lt(after.compr_data_size, before.compr_data_size);
	for (i = first; i <= last; i++) {
		text_page(page, i, 0);
		check_page(z, i, page);
		ck_assert_uint_eq(prio_of(z, i), 1);
		if (ZP_GROUP_PAGES > 1 && i > first && group_of_page(z, i) &&
		    group_of_page(z, i) == group_of_page(z, i - 1))
			ck_assert_msg(i % ZP_GROUP_PAGES, "group across window at %llu",
				      (unsigned long long)i);
	}
	finish(z, n, last - first + 1);
}
END_TEST

/* Pages of different priorities in one run go up together, above the highest. */
START_TEST(test_mixed_prio)
{
	const uint64_t n = 4 * GRP;
	struct zram *z = new_zram_dev(n, "lz4", MULTI);
	unsigned char page[PG];
	uint64_t i;
	int zstd;

	for (i = 0; i < n; i++) {
		text_page(page, i, 0);
		ck_assert_int_eq(zram_pages_io(z, REQ_OP_WRITE, i, page, 1), 0);
	}
	ck_assert_int_eq(zram_set_recomp_algorithm(z, "lz4hc", 1), 0);
	/* The climb needs zstd above lz4hc; it is refused only where not built. */
	zstd = zram_set_recomp_algorithm(z, "zstd", 2);
	ck_assert_int_eq(zstd, zpool_has_compressor("zstd") ? 0 : -EINVAL);
	if (zstd) {
		zram_destroy(z);
		return;
	}
	ck_assert_int_eq(zram_set_recomp_algorithm(z, "zstd", 3), 0);
	ck_assert_int_eq(zram_set_algorithm_params(z, 3, 19, NULL, 0), 0);
	/* Half of each window at priority 1 first, the other half left at 0. */
	zram_idle_mark(z, 0);
	for (i = 0; i < n; i++)
		if (i % GRP >= GRP / 2)
			ck_assert_int_eq(zram_pages_io(z, REQ_OP_READ, i, page, 1), 0);
	ck_assert_int_ge(recompress(z, ZRAM_RECOMP_IDLE, 1, 0), 1);
	for (i = 0; i < n; i++)
		ck_assert_uint_eq(prio_of(z, i), i % GRP < GRP / 2 ? 1u : 0u);
	ck_assert_int_ge(recompress(z, ZRAM_RECOMP_ALL, 0, 0), 1);
	for (i = 0; i < n; i++) {
		text_page(page, i, 0);
		check_page(z, i, page);
		ck_assert_uint_ge(prio_of(z, i) + !!(flags_of(z, i) & ZRAM_INCOMPRESSIBLE), 1);
		/* Grouped pages went up together, above the highest in their run. */
		if (ZP_GROUP_PAGES > 1 && group_of_page(z, i))
			ck_assert_uint_ge(prio_of(z, i), 2);
	}
	/* Each call moves a page up one priority at most: done within three. */
	for (i = 0; i < 3 && recompress(z, ZRAM_RECOMP_ALL, 0, 0) > 0; i++)
		;
	ck_assert_int_eq(recompress(z, ZRAM_RECOMP_ALL, 0, 0), 0);
	for (i = 0; i < n; i++)
		ck_assert(prio_of(z, i) == 3 || (flags_of(z, i) & ZRAM_INCOMPRESSIBLE));
	finish(z, n, n);
}
END_TEST

/*
 * Groups partly overwritten, and partly idle, before recompression: every
 * page reads back, and recompressing part of a group must not grow the
 * memory the device uses.
 */
START_TEST(test_partial_groups)
{
	const uint64_t n = 16 * GRP;
	struct zram *z = new_zram_dev(n, "lz4", MULTI);
	unsigned char page[PG];
	struct zpool_stats before, after;
	uint32_t gen[16 * 32] = { 0 };
	uint64_t i, k;
	int64_t ret;

	for (i = 0; i < n; i += GRP) {
		for (k = 0; k < GRP; k++)
			line_page(buf + k * PG, i + k, 0);
		ck_assert_int_eq(zram_pages_io(z, REQ_OP_WRITE, i, buf, GRP), 0);
	}
	/* Every other page of the second half rewritten alone. */
	for (i = n / 2; i < n; i += 2) {
		gen[i] = 1;
		line_page(page, i, 1);
		ck_assert_int_eq(zram_pages_io(z, REQ_OP_WRITE, i, page, 1), 0);
	}
	ck_assert_int_eq(zram_set_recomp_algorithm(z, strong(), 1), 0);
	zram_idle_mark(z, 0);
	/* One page in the middle of each window of the first half is not idle. */
	for (i = GRP / 2; i < n / 2; i += GRP)
		ck_assert_int_eq(zram_pages_io(z, REQ_OP_READ, i, page, 1), 0);
	zram_compact(z);
	zram_mm_stat(z, &before);
	ret = recompress(z, ZRAM_RECOMP_IDLE, 0, 0);
	ck_assert_int_ge(ret, 0);
	zram_mm_stat(z, &after);
	for (i = 0; i < n; i++) {
		line_page(page, i, gen[i]);
		check_page(z, i, page);
	}
	ck_assert_uint_le(after.compr_data_size, before.compr_data_size);
	ck_assert_uint_le(after.mem_used_total, before.mem_used_total);
	finish(z, n, n);
}
END_TEST

/*
 * mem_limit: a recompression that needs memory it may not have fails
 * with -ENOMEM or does what fits, and never loses a page.
 */
START_TEST(test_mem_limit)
{
	const uint64_t n = 8 * GRP;
	struct zram *z = new_zram_dev(n, "lz4", MULTI);
	struct zpool_stats before, after;
	uint64_t i;
	int64_t ret;

	for (i = 0; i < n; i++) {
		text_page(want + i * PG, i, 0);
		ck_assert_int_eq(zram_pages_io(z, REQ_OP_WRITE, i, want + i * PG, 1), 0);
	}
	ck_assert_int_eq(zram_set_recomp_algorithm(z, strong(), 1), 0);
	zram_compact(z);
	zram_mm_stat(z, &before);
	zram_set_mem_limit(z, before.mem_used_total);
	ret = recompress(z, ZRAM_RECOMP_ALL, 0, 0);
	zram_mm_stat(z, &after);
	ck_assert(ret == -ENOMEM || ret >= 0);
	ck_assert_uint_le(after.mem_used_total, before.mem_used_total);
	if (ret == -ENOMEM) {
		ck_assert_uint_eq(after.compr_data_size, before.compr_data_size);
		for (i = 0; i < n; i++)
			ck_assert_uint_eq(prio_of(z, i), 0);
	}
	for (i = 0; i < n; i++)
		check_page(z, i, want + i * PG);
	check_accounting(z, n, n);
	/* A limit of one byte: nothing fits. */
	zram_set_mem_limit(z, 1);
	for (i = 0; i < n; i++)
		ck_assert_int_eq(zram_pages_io(z, REQ_OP_WRITE, i, want + i * PG, 1) != 0, 1);
	for (i = 0; i < n; i++)
		check_page(z, i, want + i * PG);
	zram_set_mem_limit(z, 0);
	finish(z, n, n);
}
END_TEST

/*
 * Checksums on: a corrupt group and a corrupt page amid good neighbours
 * stay corrupt (their reads fail) and the good pages still recompress.
 */
START_TEST(test_corrupt)
{
	const uint64_t n = 4 * GRP;
	struct zram *z = new_zram_dev(n, "lz4", MULTI);
	unsigned char page[PG];
	uint64_t i, bad_single = 3 * GRP + GRP / 4;
	uint32_t bad_group_h, bad_group;
	bool bad[4 * 32];

	for (i = 0; i < n; i++)
		line_page(want + i * PG, i, 0);
	ck_assert_int_eq(zram_pages_io(z, REQ_OP_WRITE, 0, want, GRP), 0);
	ck_assert_int_eq(zram_pages_io(z, REQ_OP_WRITE, GRP, want + GRP * PG, GRP), 0);
	for (i = 2 * GRP; i < n; i++) {
		text_page(want + i * PG, i, 0);
		ck_assert_int_eq(zram_pages_io(z, REQ_OP_WRITE, i, want + i * PG, 1), 0);
	}
	bad_group_h = handle_of(z, GRP);
	bad_group = group_of_page(z, GRP);
	for (i = 0; i < n; i++)
		bad[i] = i == bad_single || i == GRP ||
			 (bad_group && group_of_page(z, i) == bad_group);
	ck_assert_int_eq(zpool__corrupt(z->pool, bad_group_h, 5, 0x40), 0);
	ck_assert_int_eq(zpool__corrupt(z->pool, handle_of(z, bad_single), 5, 0x40), 0);
	ck_assert_int_eq(zram_set_recomp_algorithm(z, strong(), 1), 0);
	ck_assert_int_ge(recompress(z, ZRAM_RECOMP_ALL, 0, 0), (int64_t)GRP);
	ck_assert_int_ge(recompress(z, ZRAM_RECOMP_ALL, 0, 0), 0);
	for (i = 0; i < n; i++) {
		int r = zram_pages_io(z, REQ_OP_READ, i, page, 1);
		if (bad[i]) {
			ck_assert_msg(r != 0, "corrupt page %llu read back", (unsigned long long)i);
		} else {
			ck_assert_int_eq(r, 0);
			ck_assert_msg(!memcmp(page, want + i * PG, PG), "page %llu",
				      (unsigned long long)i);
		}
	}
	finish(z, n, n);
}
END_TEST

/* max_pages: never more pages recompressed than the budget, on any layout. */
START_TEST(test_max_pages)
{
	const uint64_t n = 6 * GRP;
	unsigned char page[PG];
	uint64_t budget, i;

	for (budget = 1; budget <= 3 * GRP + 1; budget++) {
		struct zram *z = new_zram_dev(n, "lz4", MULTI);
		uint64_t changed = 0, k;
		int64_t ret;

		for (i = 0; i < n; i += GRP) {
			if (i / GRP % 2) {
				for (k = 0; k < GRP; k++)
					line_page(buf + k * PG, i + k, 0);
				ck_assert_int_eq(zram_pages_io(z, REQ_OP_WRITE, i, buf, GRP), 0);
			} else {
				for (k = 0; k < GRP; k++) {
					text_page(page, i + k, 0);
					ck_assert_int_eq(zram_pages_io(z, REQ_OP_WRITE, i + k, page, 1), 0);
				}
			}
		}
		ck_assert_int_eq(zram_set_recomp_algorithm(z, strong(), 1), 0);
		ret = recompress(z, ZRAM_RECOMP_ALL, 0, budget);
		ck_assert_int_ge(ret, 0);
		ck_assert_uint_le((uint64_t)ret, budget);
		for (i = 0; i < n; i++)
			changed += !!(flags_of(z, i) & ZRAM_RECOMP_FLAGS);
		ck_assert_uint_le(changed, budget);
		ck_assert_uint_eq(changed, (uint64_t)ret);
		check_accounting(z, n, n);
		zram_destroy(z);
	}
}
END_TEST

/* Every codec at every priority, every type, over a mixed device. */
START_TEST(test_codecs)
{
	const char *const comps[] = { "lz4", "lz4hc", strong() };
	const uint64_t n = 8 * GRP;
	unsigned int a, b, c, t;
	struct rng g = { 1234 };

	for (a = 0; a < 3; a++)
		for (b = 0; b < 3; b++)
			for (c = 0; c < 3; c++) {
				struct zram *z = new_zram_dev(n, a == 2 ? "lz4" : strong(), MULTI);
				struct zpool_stats st0, st1;
				uint64_t i;

				for (i = 0; i < n; i++) {
					unsigned int kind = (unsigned int)(rng_next(&g) % 10);

					if (kind == 0)
						make_page(want + i * PG, PAGE_RANDOM, i + a * 100, 0);
					else if (kind == 1)
						memset(want + i * PG, (int)kind, PG);
					else if (kind < 5)
						text_page(want + i * PG, i, a + b + c);
					else
						line_page(want + i * PG, i, a);
				}
				for (i = 0; i < n;) {
					unsigned int nr = rng_range(&g, 1, GRP - (unsigned int)(i % GRP));

					ck_assert_int_eq(zram_pages_io(z, REQ_OP_WRITE, i, want + i * PG, nr), 0);
					i += nr;
				}
				ck_assert_int_eq(zram_set_recomp_algorithm(z, comps[a], 1), 0);
				ck_assert_int_eq(zram_set_recomp_algorithm(z, comps[b], 2), 0);
				ck_assert_int_eq(zram_set_recomp_algorithm(z, comps[c], 3), 0);
				zram_mm_stat(z, &st0);
				for (t = 0; t < 8; t++) {
					struct zram_recompress_params p = ZRAM_RECOMPRESS_PARAMS_INIT;
					int64_t ret;

					p.type = (enum zram_recomp_type)(t % 4);
					p.priority = t % 4;
					if (t == 5)
						p.algo = comps[b];
					p.threshold = t == 6 ? PG / 3 : 0;
					p.max_pages = t == 7 ? GRP + 1 : 0;
					if (t % 3 == 0)
						zram_idle_mark(z, 0);
					ret = zram_recompress(z, &p);
					ck_assert_msg(ret >= 0 || ret == -EINVAL, "ret %lld",
						      (long long)ret);
					for (i = 0; i < n; i++)
						if (rng_next(&g) % 8 == 0)
							check_page(z, i, want + i * PG);
				}
				zram_mm_stat(z, &st1);
				ck_assert_uint_eq(st1.huge_pages_since, st0.huge_pages_since);
				ck_assert_uint_le(st1.huge_pages, st0.huge_pages);
				ck_assert_int_eq(zram_pages_io(z, REQ_OP_READ, 0, buf, (unsigned int)n), 0);
				ck_assert(!memcmp(buf, want, n * PG));
				finish(z, n, n);
			}
}
END_TEST

/*
 * A lone member (its group's other pages rewritten as zero pages, which
 * are never selected) is left alone; with selected neighbours it joins
 * them.  Same-filled pages cut runs; a random page in a run sends its
 * neighbours one by one and is marked incompressible, never made huge.
 * Its pages sit at offsets 1 to 5 of a window, so it runs only where a
 * window is 8 pages (4 KiB pages): with fewer it would test nothing.
 */
START_TEST(test_lone_same_random)
{
	const uint64_t n = 4 * GRP;
	struct zram *z = new_zram_dev(n, "lz4", MULTI);
	struct zpool_stats before, after;
	uint32_t lone;
	uint64_t i;

	for (i = 0; i < n; i++)
		line_page(want + i * PG, i, 0);
	for (i = 0; i < n; i += GRP)
		ck_assert_int_eq(zram_pages_io(z, REQ_OP_WRITE, i, want + i * PG, GRP), 0);
	/* Window 0: all but page 1 zero-filled. */
	for (i = 0; i < GRP; i++)
		if (i != 1) {
			memset(want + i * PG, 0, PG);
			ck_assert_int_eq(zram_pages_io(z, REQ_OP_WRITE, i, want + i * PG, 1), 0);
		}
	lone = handle_of(z, 1);
	ck_assert_uint_ne(group_of_page(z, 1), 0);
	/* Window 1: a same-filled page and a random page amid text pages. */
	for (i = GRP; i < 2 * GRP; i++) {
		if (i == GRP + 2)
			memset(want + i * PG, 0x5a, PG);
		else if (i == GRP + 5)
			make_page(want + i * PG, PAGE_RANDOM, i, 0);
		else
			text_page(want + i * PG, i, 0);
		ck_assert_int_eq(zram_pages_io(z, REQ_OP_WRITE, i, want + i * PG, 1), 0);
	}
	/* Window 2: the group, and a member rewritten with a random page. */
	make_page(want + (2 * GRP + 3) * PG, PAGE_RANDOM, 77, 0);
	ck_assert_int_eq(zram_pages_io(z, REQ_OP_WRITE, 2 * GRP + 3, want + (2 * GRP + 3) * PG, 1), 0);

	ck_assert_int_eq(zram_set_recomp_algorithm(z, "lz4hc", 1), 0);
	ck_assert_int_eq(zram_set_recomp_algorithm(z, strong(), 2), 0);
	zram_mm_stat(z, &before);
	ck_assert_int_ge(recompress(z, ZRAM_RECOMP_ALL, 0, 0), 1);
	ck_assert_int_ge(recompress(z, ZRAM_RECOMP_ALL, 0, 0), 0);
	zram_mm_stat(z, &after);
	ck_assert_uint_eq(handle_of(z, 1), lone);
	ck_assert_uint_eq(after.huge_pages_since, before.huge_pages_since);
	ck_assert_uint_le(after.huge_pages, before.huge_pages);
	ck_assert(flags_of(z, GRP + 5) & ZRAM_INCOMPRESSIBLE);
	ck_assert(flags_of(z, 2 * GRP + 3) & ZRAM_INCOMPRESSIBLE);
	ck_assert_uint_eq(group_of_page(z, GRP + 2), 0);
	for (i = 0; i < n; i++)
		check_page(z, i, want + i * PG);
	ck_assert_int_eq(zram_pages_io(z, REQ_OP_READ, 0, buf, (unsigned int)n), 0);
	ck_assert(!memcmp(buf, want, n * PG));
	finish(z, n, n);
}
END_TEST

/*
 * Racing.  Each writer owns alternate windows, so the flat model needs no
 * lock and every read can be checked at once, while a control thread
 * recompresses, marks idle, compacts, writes back and changes algorithms.
 */

#define RPAGES (16 * GRP)

struct racer {
	struct zram *z;
	unsigned int id;	/* owns windows w with w % 2 == id */
	unsigned char *model;	/* RPAGES pages, shared, each writer its windows */
	bool *stored;
	unsigned int rounds;
	uint64_t seed;
	bool limit;	/* a mem_limit may refuse writes: they change nothing then */
};

static uint64_t owned_page(struct racer *r, struct rng *g)
{
	uint64_t w = rng_range(g, 0, RPAGES / GRP / 2 - 1) * 2 + r->id;

	return w * GRP + rng_range(g, 0, GRP - 1);
}

static void fill(struct rng *g, unsigned char *p, uint64_t index)
{
	unsigned int kind = (unsigned int)(rng_next(g) % 16);
	uint32_t gen = (uint32_t)rng_next(g);

	if (kind == 0)
		make_page(p, PAGE_RANDOM, gen, 0);
	else if (kind == 1)
		memset(p, gen % 2 ? 0 : 0xa5, PG); /* same-filled */
	else if (kind < 6)
		text_page(p, index, gen);
	else
		line_page(p, index, gen % 4);
}

static void check_range(struct racer *r, uint64_t first, unsigned int nr, unsigned char *mem)
{
	ck_assert_int_eq(zram_pages_io(r->z, REQ_OP_READ, first, mem, nr), 0);
	for (unsigned int k = 0; k < nr; k++)
		ck_assert_msg(!memcmp(mem + (size_t)k * PG, r->model + (first + k) * PG, PG),
			      "racer %u: page %llu differs", r->id,
			      (unsigned long long)(first + k));
}

/* A write's result: true if refused (only allowed under a mem_limit). */
static bool wr(struct racer *r, int ret)
{
	if (ret && r->limit) {
		ck_assert_int_eq(ret, -EIO);
		return true;
	}
	ck_assert_int_eq(ret, 0);
	return false;
}

static void *racer_fn(void *arg)
{
	struct racer *r = arg;
	struct rng g = { r->seed };
	unsigned char *run = malloc((size_t)GRP * PG);
	unsigned int k;

	for (k = 0; k < r->rounds; k++) {
		uint64_t i = owned_page(r, &g);
		unsigned int room = GRP - (unsigned int)(i % GRP), nr = rng_range(&g, 1, room);
		unsigned int op = (unsigned int)(rng_next(&g) % 12), j;

		switch (op) {
		case 0: case 1: case 2: /* a run (or one page) */
			for (j = 0; j < nr; j++)
				fill(&g, run + (size_t)j * PG, i + j);
			if (wr(r, zram_pages_io(r->z, REQ_OP_WRITE, i, run, nr))) {
				/*
				 * Refused: the bio stops at the refused page, so
				 * the pages before it may be written (a zero page
				 * always is, and ends a group); each page is all
				 * old or all new, and no new page follows an old one.
				 */
				unsigned char got[PG];
				bool stopped = false;

				for (j = 0; j < nr; j++) {
					bool is_new;

					ck_assert_int_eq(zram_pages_io(r->z, REQ_OP_READ, i + j, got, 1), 0);
					is_new = !memcmp(got, run + (size_t)j * PG, PG);
					if (!memcmp(got, r->model + (i + j) * PG, PG)) {
						stopped |= !is_new;
						/* Old and new alike: the slot tells if it was written. */
						if (is_new && !stopped)
							r->stored[i + j] |= handle_of(r->z, i + j) ||
									    (flags_of(r->z, i + j) & ZRAM_ZERO);
						continue;
					}
					ck_assert_msg(is_new && !stopped, "refused run: page %llu torn",
						      (unsigned long long)(i + j));
					memcpy(r->model + (i + j) * PG, got, PG);
					r->stored[i + j] = true;
				}
				break;
			}
			memcpy(r->model + i * PG, run, (size_t)nr * PG);
			for (j = 0; j < nr; j++)
				r->stored[i + j] = true;
			break;
		case 3: { /* part of a page */
			unsigned int off = rng_range(&g, 0, PG / 512 - 1) * 512;
			unsigned int len = rng_range(&g, 1, (PG - off) / 512) * 512;

			text_page(run, i, (uint32_t)rng_next(&g));
			if (off == 0 && len == PG)
				len -= 512;
			if (!len)
				break;
			if (wr(r, zram_io(r->z, REQ_OP_WRITE, i * PG + off, run, len)))
				break;
			memcpy(r->model + i * PG + off, run, len);
			r->stored[i] = true;
			break;
		}
		case 4: /* discard whole pages */
			ck_assert_int_eq(zram_pages_io(r->z, REQ_OP_DISCARD, i, NULL, nr), 0);
			memset(r->model + i * PG, 0, (size_t)nr * PG);
			for (j = 0; j < nr; j++)
				r->stored[i + j] = false;
			break;
		case 5: { /* write-zeroes with partial edges inside the window */
			uint64_t start = i * PG + rng_range(&g, 0, PG / 512 - 1) * 512;
			uint64_t end = (i + nr) * PG - rng_range(&g, 0, PG / 512 - 1) * 512;
			uint64_t p;

			if (r->limit) { /* an edge refused leaves the model unknown */
				start = start / PG * PG;
				end = (end + PG - 1) / PG * PG;
			}
			if (end <= start)
				break;
			ck_assert_int_eq(zram_io(r->z, REQ_OP_WRITE_ZEROES, start, NULL,
					    (unsigned int)(end - start)), 0);
			memset(r->model + start, 0, end - start);
			for (p = start / PG; p * PG < end; p++) {
				bool whole = p * PG >= start && (p + 1) * PG <= end;

				if (whole)
					r->stored[p] = false;
			}
			break;
		}
		default: /* reads: one page, or a run */
			check_range(r, i, op % 2 ? nr : 1, run);
			break;
		}
	}
	free(run);
	return NULL;
}

struct control {
	struct zram *z;
	atomic_bool *stop;
	bool writeback, limit;
	uint64_t seed;
	uint64_t calls;	/* zram_recompress() calls made */
};

static void *control_fn(void *arg)
{
	const char *const comps[] = { "lz4", "lz4hc", strong() };
	struct control *c = arg;
	struct rng g = { c->seed };

	/* Until it has recompressed once at least, or nothing raced the writers. */
	while (!atomic_load(c->stop) || !c->calls) {
		struct zram_recompress_params p = ZRAM_RECOMPRESS_PARAMS_INIT;
		unsigned int what = (unsigned int)(rng_next(&g) % 16);
		int64_t ret;

		if (what < 9) {
			p.type = (enum zram_recomp_type)(rng_next(&g) % 4);
			if (rng_next(&g) % 3 == 0)
				p.priority = rng_range(&g, 1, 3);
			else if (rng_next(&g) % 4 == 0)
				p.algo = comps[rng_next(&g) % 3];
			if (rng_next(&g) % 3 == 0)
				p.threshold = rng_range(&g, 0, PG);
			if (rng_next(&g) % 3 == 0)
				p.max_pages = rng_range(&g, 1, 3 * GRP);
			ret = zram_recompress(c->z, &p);
			ck_assert_msg(ret >= 0 || ret == -EINVAL || ret == -ENOMEM, "ret %lld",
				      (long long)ret);
			if (p.max_pages && ret > 0)
				ck_assert_uint_le((uint64_t)ret, p.max_pages);
			c->calls++;
		} else if (what < 11) {
			zram_idle_mark(c->z, 0);
		} else if (what < 12) {
			zram_compact(c->z);
			if (c->limit) {
				struct zpool_stats st;

				zram_mm_stat(c->z, &st);
				zram_set_mem_limit(c->z, rng_next(&g) % 2 ? 0 :
						   st.mem_used_total + rng_range(&g, 0, 4) * PG);
			}
		} else if (what < 14 && c->writeback) {
			static const enum zram_wb_mode modes[] = {
				ZRAM_WB_ALL, ZRAM_WB_IDLE, ZRAM_WB_HUGE, ZRAM_WB_INCOMPRESSIBLE
			};
			uint64_t first = rng_range(&g, 0, RPAGES - 1);

			ret = zram_writeback(c->z, modes[rng_next(&g) % 4], first,
					     rng_range(&g, 1, 2 * GRP));
			ck_assert_msg(ret >= 0 || ret == -ENOSPC, "wb ret %lld", (long long)ret);
		} else {
			unsigned int prio = rng_range(&g, 1, 3);

			ck_assert_int_eq(zram_set_recomp_algorithm(c->z, comps[rng_next(&g) % 3],
								   prio), 0);
		}
	}
	return NULL;
}

/*
 * _i: 0 plain, 1 with a backing disk and writeback, 2 with a mem_limit
 * that refuses stores now and then (a refused write must change nothing),
 * 3 lz4hc primary without checksums.
 */
START_TEST(test_race)
{
	const bool wb = _i == 1;
	struct zram *z = new_zram_dev(RPAGES, _i == 3 ? "lz4hc" : "lz4",
				      _i == 3 ? ZPOOL_F_MULTI_PAGE : MULTI);
	struct tdisk *t = wb ? tdisk_new(RPAGES * 2, true) : NULL;
	unsigned char *model = calloc(RPAGES, PG), *back = malloc(RPAGES * PG);
	bool *stored = calloc(RPAGES, sizeof(bool));
	atomic_bool stop = false;
	struct racer r[2];
	struct control c = { .z = z, .stop = &stop, .writeback = wb, .limit = _i == 2,
			     .seed = 7055 + _i };
	pthread_t w[2], ct;
	/* A 64 KiB page moves 16 times the bytes of a 4 KiB one: fewer rounds, alike in time. */
	unsigned int rounds = test_scale(PG > 16384 ? 1000 : 4000), k;
	uint64_t i, nstored = 0;

	if (wb)
		ck_assert_int_eq(zram_set_backing(z, t->disk), 0);
	ck_assert_int_eq(zram_set_recomp_algorithm(z, strong(), 1), 0);
	for (k = 0; k < 2; k++) {
		r[k] = (struct racer){ .z = z, .id = k, .model = model, .stored = stored,
				       .rounds = rounds,
				       .seed = 7000 + _i * 10 + k + 1, .limit = _i == 2 };
		ck_assert_int_eq(pthread_create(&w[k], NULL, racer_fn, &r[k]), 0);
	}
	ck_assert_int_eq(pthread_create(&ct, NULL, control_fn, &c), 0);
	for (k = 0; k < 2; k++)
		pthread_join(w[k], NULL);
	atomic_store(&stop, true);
	pthread_join(ct, NULL);
	ck_assert_uint_gt(c.calls, 0);
	zram_set_mem_limit(z, 0);
	for (i = 0; i < RPAGES; i++) {
		unsigned char page[PG];

		ck_assert_int_eq(zram_pages_io(z, REQ_OP_READ, i, page, 1), 0);
		ck_assert_msg(!memcmp(page, model + i * PG, PG), "page %llu",
			      (unsigned long long)i);
		nstored += stored[i];
	}
	ck_assert_int_eq(zram_pages_io(z, REQ_OP_READ, 0, back, RPAGES), 0);
	ck_assert(!memcmp(back, model, RPAGES * PG));
	check_accounting(z, RPAGES, nstored);
	/* Once more, quiet: everything left goes to the top priority. */
	ck_assert_int_eq(zram_set_recomp_algorithm(z, strong(), 3), 0);
	zram_idle_mark(z, 0);
	ck_assert_int_ge(recompress(z, ZRAM_RECOMP_ALL, 0, 0), 0);
	ck_assert_int_eq(zram_pages_io(z, REQ_OP_READ, 0, back, RPAGES), 0);
	ck_assert(!memcmp(back, model, RPAGES * PG));
	finish(z, RPAGES, nstored);
	if (t)
		tdisk_free(t);
	free(model);
	free(back);
	free(stored);
}
END_TEST

/* Reset races recompression: the writer's model starts over at each reset. */
struct resetter {
	struct zram *z;
	atomic_bool stop;
	uint64_t resets;
};

static void *recomp_loop(void *arg)
{
	struct resetter *rs = arg;
	unsigned int k = 0;

	while (!atomic_load(&rs->stop)) {
		int64_t ret;

		zram_set_recomp_algorithm(rs->z, k % 2 ? "zstd" : "lz4hc", 1 + k % 3);
		zram_idle_mark(rs->z, 0);
		ret = recompress(rs->z, (enum zram_recomp_type)(k % 4), 0, 0);
		ck_assert_msg(ret >= 0 || ret == -EINVAL || ret == -ENODEV, "ret %lld",
			      (long long)ret);
		k++;
	}
	return NULL;
}

START_TEST(test_reset_race)
{
	const uint64_t n = 8 * GRP;
	struct zram *z = new_zram_dev(n, "lz4", MULTI);
	struct resetter rs = { .z = z };
	unsigned char *model = calloc(n, PG), *back = malloc(n * PG);
	struct rng g = { 4242 };
	pthread_t th;
	unsigned int k, rounds = test_scale(3000);

	ck_assert_int_eq(pthread_create(&th, NULL, recomp_loop, &rs), 0);
	for (k = 0; k < rounds; k++) {
		uint64_t i = rng_range(&g, 0, (unsigned int)n - 1);
		unsigned int nr = rng_range(&g, 1, GRP - (unsigned int)(i % GRP)), j;
		unsigned int op = (unsigned int)(rng_next(&g) % 10);

		if (op == 0 && k % 7 == 0) {
			ck_assert_int_eq(zram_reset(z), 0);
			memset(model, 0, n * PG);
			rs.resets++;
		} else if (op < 5) {
			for (j = 0; j < nr; j++)
				fill(&g, back + (size_t)j * PG, i + j);
			ck_assert_int_eq(zram_pages_io(z, REQ_OP_WRITE, i, back, nr), 0);
			memcpy(model + i * PG, back, (size_t)nr * PG);
		} else {
			ck_assert_int_eq(zram_pages_io(z, REQ_OP_READ, i, back, nr), 0);
			ck_assert_msg(!memcmp(back, model + i * PG, (size_t)nr * PG), "page %llu",
				      (unsigned long long)i);
		}
	}
	atomic_store(&rs.stop, true);
	pthread_join(th, NULL);
	ck_assert_int_eq(zram_pages_io(z, REQ_OP_READ, 0, back, (unsigned int)n), 0);
	ck_assert(!memcmp(back, model, n * PG));
	finish(z, n, UINT64_MAX);
	free(model);
	free(back);
}
END_TEST

/*
 * zram_compact() stores the pages left in a half-empty group again alone.
 * A group that recompression wrote must come out of it written by the
 * same algorithm, as its pages' priority says: stored with the primary
 * one, they grew back and, marked as recompressed at that priority, were
 * never tried again.
 */
START_TEST(test_regroup_keeps_codec)
{
	const uint64_t n = GRP;
	struct zram *z = new_zram_dev(n, "lz4", MULTI);
	unsigned int id;
	uint64_t i;

	if (ZP_GROUP_PAGES < 2) {
		zram_destroy(z); /* no groups at this page size */
		return;
	}
	for (i = 0; i < n; i++)
		text_page(want + i * PG, i, 0);
	ck_assert_int_eq(zram_pages_io(z, REQ_OP_WRITE, 0, want, (unsigned int)n), 0);
	ck_assert_int_eq(zram_set_recomp_algorithm(z, strong(), 1), 0);
	ck_assert_int_eq(recompress(z, ZRAM_RECOMP_ALL, 0, 0), (int64_t)n);
	id = z->pool->codecs->slot[1];
	ck_assert_uint_ne(id, 0);
	for (i = 0; i < n; i++) {
		ck_assert_uint_eq(prio_of(z, i), 1);
		ck_assert_uint_ne(group_of_page(z, i), 0);
		ck_assert_uint_eq(codec_of(z, i), id);
	}
	/* Every other page rewritten: each group, whatever its length, is half empty. */
	for (i = 0; i < n; i += 2) {
		text_page(want + i * PG, i, 1);
		ck_assert_int_eq(zram_pages_io(z, REQ_OP_WRITE, i, want + i * PG, 1), 0);
	}
	zram_compact(z);
	for (i = 1; i < n; i += 2) {
		ck_assert_uint_eq(group_of_page(z, i), 0); /* alone now */
		ck_assert_uint_eq(prio_of(z, i), 1);
		ck_assert_msg(codec_of(z, i) == id,
			      "page %llu, recompressed at priority 1, is stored by codec %u, not %u",
			      (unsigned long long)i, codec_of(z, i), id);
	}
	for (i = 0; i < n; i++)
		check_page(z, i, want + i * PG);
	finish(z, n, n);
}
END_TEST

int main(void)
{
	const TTest *const edges[] = { test_window_edge, test_mixed_prio, test_partial_groups,
				       test_mem_limit, test_corrupt, test_max_pages, test_codecs,
				       test_regroup_keeps_codec, NULL };
	const TTest *const windows[] = { test_lone_same_random, NULL };
	const TTest *const races[] = { test_race, NULL };
	const TTest *const resets[] = { test_reset_race, NULL };
	const struct test_group groups[] = {
		{ .name = "edges", .tests = edges, .timeout = 600, .setup = bufs_alloc,
		  .teardown = bufs_free },
		{ .name = "races", .tests = races, .timeout = 600, .loops = 4 },
		{ .name = "reset", .tests = resets, .timeout = 600 },
		/* Last: where windows are smaller, its NULL name ends the table. */
		{ .name = ZP_GROUP_PAGES >= 8 ? "windows" : NULL, .tests = windows, .timeout = 600,
		  .setup = bufs_alloc, .teardown = bufs_free },
		{ .name = NULL },
	};

	return test_main("zram_recompress_multi", groups);
}

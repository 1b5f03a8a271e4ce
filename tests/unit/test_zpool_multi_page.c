// SPDX-License-Identifier: MIT
/*
 * libzpool's ZPOOL_F_MULTI_PAGE: zpool_store_pages() and zpool_load_pages()
 * against every page kind, every run length, partial and reordered loads,
 * statistics through frees in every order, checksums, mem_limit, page
 * source failures, compaction and threads.  Each configuration test runs
 * once per compressor built, with and without ZPOOL_F_CHECKSUM.
 */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include <libbvec/zpool.h>

#include "../../src/zpool/internal.h" /* groups, corruption, codec slots */
#include "pages.h"

static const char *const comps[] = { "lz4", "lz4hc", "zstd" };

#define NCONFIGS 6 /* comps x {no checksum, checksum} */
#define MAX_RUN 20

/* Configuration @i of NCONFIGS; false if its compressor is not built. */
static bool config(int i, const char **comp, unsigned int *flags)
{
	*comp = comps[i / 2];
	*flags = i % 2 ? ZPOOL_F_CHECKSUM : 0;
	return zpool_has_compressor(*comp);
}

static struct zpool *new_pool(const char *comp, unsigned int flags,
			      const struct zpool_page_source *src)
{
	struct zpool_config cfg = ZPOOL_CONFIG_INIT;
	struct zpool *pool;

	cfg.compressor = comp;
	cfg.flags = flags;
	cfg.page_source = src;
	pool = zpool_create(&cfg);
	ck_assert_ptr_nonnull(pool);
	return pool;
}

enum pattern {
	PAT_CYCLE,	/* text, binary, random, sized, zero, same, in turn */
	PAT_SMALL,	/* small sized pages: full groups of ZP_GROUP_PAGES */
	PAT_ANY,	/* a kind drawn at random for each page */
	PATTERNS
};

/* Page @i of run @seed in @pat; the same arguments make the same bytes. */
static void pattern_page(unsigned char *p, enum pattern pat, unsigned int seed, unsigned int i)
{
	static const enum page_kind cycle[] = { PAGE_TEXT, PAGE_BINARY, PAGE_RANDOM,
						PAGE_SIZED, PAGE_ZERO, PAGE_SAME };
	uint64_t s = (uint64_t)seed * 1000 + i;
	struct rng r = { s * 31 + 7 };

	switch (pat) {
	case PAT_CYCLE:
		make_page(p, cycle[(seed + i) % 6], s, 64 + i * 97 % 1500);
		break;
	case PAT_SMALL:
		make_page(p, PAGE_SIZED, s, 40 + i * 13 % 200);
		break;
	default:
		make_page(p, (enum page_kind)rng_range(&r, 0, PAGE_KINDS - 1), s,
			  rng_range(&r, 16, (unsigned int)PG));
		break;
	}
}

static void make_run(unsigned char *in, enum pattern pat, unsigned int seed, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		pattern_page(in + (size_t)i * PG, pat, seed, i);
}

/* Under valgrind (BVEC_TEST_SCALE=small): loops shrink to what stays quick. */
static bool small_scale(void)
{
	return test_scale(20) == 1;
}

static void assert_page(struct zpool *pool, zpool_handle_t h, const unsigned char *want)
{
	unsigned char out[PG];

	memset(out, 0xa5, PG);
	ck_assert_int_eq(zpool_load(pool, h, out), 0);
	ck_assert_mem_eq(out, want, PG);
}

static void assert_empty(struct zpool *pool, const struct zpool_stats *base)
{
	struct zpool_stats st;

	zpool_stats(pool, &st);
	ck_assert_uint_eq(st.orig_data_size, 0);
	ck_assert_uint_eq(st.compr_data_size, 0);
	ck_assert_uint_eq(st.same_pages, 0);
	ck_assert_uint_eq(st.huge_pages, 0);
	ck_assert_uint_eq(st.objects, 0);
	ck_assert_uint_eq(st.mem_used_total, base->mem_used_total);
	ck_assert_uint_eq(st.metadata_bytes, base->metadata_bytes);
}

/* Every statistic of @b equal to @a's; @what names the call for the message. */
static void assert_same_stats(const struct zpool_stats *a, const struct zpool_stats *b,
			      const char *what, unsigned int k)
{
	ck_assert_msg(!memcmp(a, b, sizeof(*a)),
		      "%s %u changed the statistics: orig %llu -> %llu, compr %llu -> %llu, "
		      "used %llu -> %llu, max %llu -> %llu, same %llu -> %llu, huge %llu -> %llu, "
		      "huge_since %llu -> %llu, objects %llu -> %llu", what, k,
		      (unsigned long long)a->orig_data_size, (unsigned long long)b->orig_data_size,
		      (unsigned long long)a->compr_data_size, (unsigned long long)b->compr_data_size,
		      (unsigned long long)a->mem_used_total, (unsigned long long)b->mem_used_total,
		      (unsigned long long)a->mem_used_max, (unsigned long long)b->mem_used_max,
		      (unsigned long long)a->same_pages, (unsigned long long)b->same_pages,
		      (unsigned long long)a->huge_pages, (unsigned long long)b->huge_pages,
		      (unsigned long long)a->huge_pages_since, (unsigned long long)b->huge_pages_since,
		      (unsigned long long)a->objects, (unsigned long long)b->objects);
}

/*
 * mem_limit: a store_pages() that would pass it is refused whole, leaving
 * every statistic as it was (mem_used_max and huge_pages_since included)
 * and every earlier handle readable.  A run is a same-filled page, raw
 * pages that each need a page of their own, then small pages that group;
 * with a few pages of room many are refused after storing part of it.
 *
 * With a lazy source (the default) a part stored and taken back may leave
 * a zspage page touched, counted in mem_used_total until compaction trims
 * it (zsmalloc.c never untouches a page on free): that one counter is only
 * held to the limit there.  An eager source pays for a zspage whole, so
 * with the arena every counter must come back.
 */
START_TEST(test_mem_limit_all_or_nothing)
{
	const unsigned int keep_max = 40 * MAX_RUN;
	size_t arena_bytes = 4096 * PG;
	unsigned char *in = test_pages(keep_max), *out = test_pages(MAX_RUN);
	unsigned char *mem = malloc(arena_bytes), *all = test_pages(keep_max);
	zpool_handle_t *h = calloc(keep_max, sizeof(*h));
	unsigned int kept, refused = 0, partial = 0, raw_back = 0, room, k, i, lazy;
	struct zpool_page_source arena;
	struct zpool_stats st, st2;
	struct zpool *pool;
	const char *comp;
	unsigned int flags;

	ck_assert(h && mem);
	if (!config(_i, &comp, &flags))
		goto out;
	for (lazy = 0; lazy < 2; lazy++) {
		ck_assert_int_eq(zpool_arena_init(mem, arena_bytes, &arena), 0);
		pool = new_pool(comp, flags | ZPOOL_F_MULTI_PAGE, lazy ? NULL : &arena);
		/* Some data first, so the classes have partly used zspages. */
		make_run(in, PAT_CYCLE, 1, MAX_RUN);
		ck_assert_int_eq(zpool_store_pages(pool, in, MAX_RUN, h), 0);
		kept = MAX_RUN;
		for (k = 0; k < (small_scale() ? 18u : 40u) && kept + MAX_RUN <= keep_max; k++) {
			unsigned char *run = in + (size_t)kept * PG;
			unsigned int nraw = 1 + k / 2 % 4, n = MAX_RUN - k % 5;
			int ret;

			make_run(run, PAT_SMALL, 600 + k, n);
			make_page(run, PAGE_SAME, k, 0);
			for (i = 1; i <= nraw; i++)
				make_page(run + (size_t)i * PG, PAGE_RANDOM, 900 + k * 8 + i, 0);
			zpool_stats(pool, &st);
			/* An eager source pays a whole zspage (up to 8 pages) at once. */
			room = k % 6 * (lazy ? 3 : 8);
			zpool_set_mem_limit(pool, st.mem_used_total + room * PG);
			zpool_stats(pool, &st);
			memset(h + kept, 0, n * sizeof(*h));
			ret = zpool_store_pages(pool, run, n, h + kept);
			zpool_stats(pool, &st2);
			ck_assert_uint_le(st2.mem_used_total, st2.mem_limit);
			if (ret) {
				ck_assert_int_eq(ret, -ENOMEM);
				if (lazy)
					st2.mem_used_total = st.mem_used_total;
				assert_same_stats(&st, &st2, "refused store_pages", k);
				/* Handles written before the refusal were taken back. */
				for (i = 0; i < n; i++)
					if (h[kept + i]) {
						partial++;
						raw_back += i >= 1 && i <= nraw;
					}
				refused++;
			} else {
				ck_assert_uint_le(st2.mem_used_max, st2.mem_limit);
				ck_assert_int_eq(zpool_load_pages(pool, h + kept, n, out), 0);
				ck_assert_mem_eq(out, run, (size_t)n * PG);
				kept += n;
			}
			/* What was kept before still reads back: the first run here. */
			for (i = 0; i < MAX_RUN; i++)
				assert_page(pool, h[i], in + (size_t)i * PG);
		}
		/* ...and all of it at the end. */
		ck_assert_int_eq(zpool_load_pages(pool, h, kept, all), 0);
		ck_assert(!memcmp(all, in, (size_t)kept * PG));
		zpool_set_mem_limit(pool, 0);
		for (i = 0; i < kept; i++)
			zpool_free(pool, h[i]);
		zpool_stats(pool, &st);
		ck_assert_uint_eq(st.objects, 0);
		ck_assert_uint_eq(st.compr_data_size, 0);
		ck_assert_uint_eq(st.huge_pages, 0);
		zpool_destroy(pool);
	}
	ck_assert_uint_ge(refused, 8);
	/* Some refusals came after part of the run had been stored... */
	ck_assert_uint_gt(partial, 0);
	/* ...some after a raw page of it had been (huge_pages_since). */
	ck_assert_uint_gt(raw_back, 0);
out:
	free(h);
	free(in);
	free(out);
	free(mem);
	free(all);
}
END_TEST

/* A page source over an arena that fails exactly its @fail_at-th call. */
struct failing_source {
	struct zpool_page_source arena_src;
	long calls, fail_at, outstanding;
};

static void *failing_alloc(void *ctx, size_t bytes)
{
	struct failing_source *f = ctx;
	void *p;

	if (++f->calls == f->fail_at)
		return NULL;
	p = f->arena_src.alloc(f->arena_src.ctx, bytes);
	if (p)
		f->outstanding += (long)(bytes / PG);
	return p;
}

static void failing_free(void *ctx, void *mem, size_t bytes)
{
	struct failing_source *f = ctx;

	f->outstanding -= (long)(bytes / PG);
	f->arena_src.free(f->arena_src.ctx, mem, bytes);
}

#define FAIL_RUNS 12

/*
 * A fixed mix of store_pages() and frees; each refused store must change
 * nothing.  Returns the refusals.  @in holds FAIL_RUNS runs of MAX_RUN.
 */
static unsigned int fail_scenario(struct zpool *pool, const unsigned char *in,
				  zpool_handle_t *h, bool *live)
{
	unsigned int r, i, refused = 0;
	struct zpool_stats st, st2;

	for (r = 0; r < FAIL_RUNS; r++) {
		unsigned int n = 1 + r * 7 % MAX_RUN;
		zpool_handle_t *hr = h + r * MAX_RUN;
		int ret;

		zpool_stats(pool, &st);
		ret = zpool_store_pages(pool, in + (size_t)r * MAX_RUN * PG, n, hr);
		zpool_stats(pool, &st2);
		if (ret) {
			ck_assert_int_eq(ret, -ENOMEM);
			assert_same_stats(&st, &st2, "failed store_pages of run", r);
			refused++;
		}
		for (i = 0; i < n; i++)
			live[r * MAX_RUN + i] = !ret;
		/* Frees of part of an earlier run: groups lose members, pages go back. */
		if (r >= 2)
			for (i = 0; i < MAX_RUN; i += 2 + r % 3) {
				unsigned int k = (r - 2) * MAX_RUN + i;

				if (live[k]) {
					zpool_free(pool, h[k]);
					live[k] = false;
				}
			}
	}
	return refused;
}

/*
 * Page source failures at every allocation index of the scenario: the
 * failing store is refused whole, the pool stays consistent, and freeing
 * everything gives back every page (valgrind and ASan see the heap).
 */
START_TEST(test_page_source_failures)
{
	size_t arena_bytes = 1024 * PG;
	unsigned char *mem = malloc(arena_bytes), *in = test_pages(FAIL_RUNS * MAX_RUN);
	zpool_handle_t *h = calloc(FAIL_RUNS * MAX_RUN, sizeof(*h));
	bool *live = calloc(FAIL_RUNS * MAX_RUN, sizeof(*live));
	struct zpool_page_source src = { 0 };
	struct failing_source f;
	long total = 0, at, step, start;
	unsigned int r, i;
	const char *comp;
	unsigned int flags;

	ck_assert(mem && h && live);
	if (!config(_i, &comp, &flags))
		goto out;
	src.alloc = failing_alloc;
	src.free = failing_free;
	src.ctx = &f;
	for (r = 0; r < FAIL_RUNS; r++)
		make_run(in + (size_t)r * MAX_RUN * PG, (enum pattern)(r % PATTERNS), 700 + r,
			 MAX_RUN);
	/* at 0: the dry run that counts the calls; then each call fails once. */
	step = small_scale() ? 23 : 1;
	for (at = 0; at == 0 || at <= total; at += at ? step : 1) {
		struct zpool_stats base, st;
		struct zpool *pool;
		unsigned int refused;

		memset(&f, 0, sizeof(f));
		ck_assert_int_eq(zpool_arena_init(mem, arena_bytes, &f.arena_src), 0);
		pool = new_pool(comp, flags | ZPOOL_F_MULTI_PAGE, &src);
		zpool_stats(pool, &base);
		start = f.calls;
		f.fail_at = at ? start + at : 0;
		refused = fail_scenario(pool, in, h, live);
		if (!at) {
			total = f.calls - start;
			ck_assert_uint_eq(refused, 0);
			ck_assert_int_gt(total, 10);
		} else {
			/* Each allocation a store needs is one it cannot do without. */
			ck_assert_uint_eq(refused, 1);
		}
		zpool_compact(pool);
		zpool_stats(pool, &st);
		for (i = 0; i < FAIL_RUNS * MAX_RUN; i++)
			if (live[i])
				assert_page(pool, h[i], in + (size_t)i * PG);
		for (i = 0; i < FAIL_RUNS * MAX_RUN; i++)
			if (live[i])
				zpool_free(pool, h[i]);
		zpool_stats(pool, &st);
		ck_assert_uint_eq(st.objects, 0);
		ck_assert_uint_eq(st.compr_data_size, 0);
		ck_assert_uint_eq(st.mem_used_total, base.mem_used_total);
		zpool_destroy(pool);
		ck_assert_int_eq(f.outstanding, 0);
	}
out:
	free(mem);
	free(in);
	free(h);
	free(live);
}
END_TEST

/*
 * An object written with a dictionary starts with its codec's id.  A
 * corrupt id may name no codec at all: loads must fail with -EIO, with or
 * without checksums, never follow it.
 */
START_TEST(test_corrupt_codec_byte)
{
	const unsigned int n = 2 * ZP_GROUP_PAGES;
	unsigned char *in = test_pages(n + 1), *out = test_pages(n + 1), *dict = test_pages(2);
	zpool_handle_t *h = calloc(n + 1, sizeof(*h));
	struct zpool *pool;
	const char *comp;
	unsigned int flags, i;
	int level;

	ck_assert_ptr_nonnull(h);
	if (!config(_i, &comp, &flags))
		goto out;
	pool = new_pool(comp, flags | ZPOOL_F_MULTI_PAGE, NULL);
	make_page(dict, PAGE_TEXT, 1, 0);
	make_page(dict + PG, PAGE_BINARY, 2, 0);
	level = pool->comp == ZP_COMP_LZ4 ? 1 : pool->comp == ZP_COMP_LZ4HC ? 9 : 3;
	ck_assert_int_eq(zpool__codec_slot_set(pool, 0, pool->comp, level, dict, 2 * PG), 0);
	make_run(in, PAT_SMALL, 23, n);
	make_page(in + (size_t)n * PG, PAGE_TEXT, 24, 0);
	ck_assert_int_eq(zpool_store_pages(pool, in, n, h), 0);
	ck_assert_int_eq(zpool_store(pool, in + (size_t)n * PG, &h[n]), 0);
	/* The first group (or page) and the single page: id 1 becomes 0x81, no codec. */
	ck_assert_int_eq(zpool__corrupt(pool, h[0], 0, 0x80), 0);
	ck_assert_int_eq(zpool__corrupt(pool, h[n], 0, 0x80), 0);
	for (i = 0; i < n + 1; i++) {
		bool hit = i == n || i < ZP_GROUP_PAGES;

		if (hit)
			ck_assert_int_eq(zpool_load(pool, h[i], out), -EIO);
		else
			assert_page(pool, h[i], in + (size_t)i * PG);
	}
	ck_assert_int_eq(zpool_load_pages(pool, h, n, out), -EIO);
	ck_assert_int_eq(zpool_load_pages(pool, h + n, 1, out), -EIO);
	/* Put back, it reads again. */
	ck_assert_int_eq(zpool__corrupt(pool, h[0], 0, 0x80), 0);
	ck_assert_int_eq(zpool__corrupt(pool, h[n], 0, 0x80), 0);
	ck_assert_int_eq(zpool_load_pages(pool, h, n + 1, out), 0);
	ck_assert_mem_eq(out, in, (size_t)(n + 1) * PG);
	for (i = 0; i < n + 1; i++)
		zpool_free(pool, h[i]);
	zpool_destroy(pool);
out:
	free(h);
	free(in);
	free(out);
	free(dict);
}
END_TEST

/*
 * Two threads free the same handles at once, as zpool_free() allows ("not
 * in use" is ignored): each page is freed once whatever its kind (same-
 * filled, a group's member, alone), the counters go down once, and the
 * table's pages go back, even when a chunk empties under the second free.
 */
struct df_arg {
	struct zpool *pool;
	const zpool_handle_t *h;
	unsigned int n;
	pthread_barrier_t *barrier;
};

static void *df_free(void *arg)
{
	struct df_arg *a = arg;
	unsigned int i;

	pthread_barrier_wait(a->barrier);
	for (i = 0; i < a->n; i++)
		zpool_free(a->pool, a->h[i]);
	return NULL;
}

START_TEST(test_concurrent_double_free)
{
	const unsigned int n = 3 * MAX_RUN;
	unsigned char *in = test_pages(n);
	zpool_handle_t h[3 * MAX_RUN];
	unsigned int round, j;
	pthread_barrier_t barrier;
	struct zpool_stats base;
	struct df_arg a[2];
	pthread_t t[2];
	struct zpool *pool;
	const char *comp;
	unsigned int flags;

	if (!config(_i, &comp, &flags))
		goto out;
	pool = new_pool(comp, flags | ZPOOL_F_MULTI_PAGE, NULL);
	zpool_stats(pool, &base);
	for (j = 0; j < 3; j++)
		make_run(in + (size_t)j * MAX_RUN * PG, (enum pattern)j, 50 + j, MAX_RUN);
	ck_assert_int_eq(pthread_barrier_init(&barrier, NULL, 2), 0);
	for (round = 0; round < (small_scale() ? 3u : 100u); round++) {
		for (j = 0; j < 3; j++)
			ck_assert_int_eq(zpool_store_pages(pool, in + (size_t)j * MAX_RUN * PG,
							   MAX_RUN, h + j * MAX_RUN), 0);
		for (j = 0; j < 2; j++) {
			a[j].pool = pool;
			a[j].h = h;
			a[j].n = n;
			a[j].barrier = &barrier;
			pthread_create(&t[j], NULL, df_free, &a[j]);
		}
		for (j = 0; j < 2; j++)
			pthread_join(t[j], NULL);
		assert_empty(pool, &base);
	}
	pthread_barrier_destroy(&barrier);
	zpool_destroy(pool);
out:
	free(in);
}
END_TEST

int main(void)
{
	const TTest *const configs[] = {
		test_mem_limit_all_or_nothing,
		test_page_source_failures,
		test_corrupt_codec_byte,
		NULL
	};
	const TTest *const threads[] = { test_concurrent_double_free, NULL };
	const struct test_group groups[] = {
		{ .name = "configs", .tests = configs, .timeout = 300, .loops = NCONFIGS },
		{ .name = "threads", .tests = threads, .timeout = 300, .loops = NCONFIGS },
		{ .name = NULL },
	};

	return test_main("zpool_multi_page", groups);
}


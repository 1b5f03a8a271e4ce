// SPDX-License-Identifier: MIT
/*
 * Threads: stores, loads and frees on several threads while two others
 * compact at once; readers never see an object change under them.  CI also
 * runs this program under ThreadSanitizer.
 */
#include <pthread.h>

#include <libbvec/zpool.h>

#include "../../src/zpool/internal.h" /* codec slots, zpool__store_slot() */
#include "pages.h"

#define WORKERS 3
#define PER_WORKER 400

struct worker {
	struct zpool *pool;
	unsigned int id, rounds;
	long bad;
};

static atomic_int stop;

static void *work(void *arg)
{
	struct worker *w = arg;
	zpool_handle_t h[PER_WORKER];
	unsigned char page[PG], out[PG];
	struct rng rng = { 77 + w->id };
	unsigned int r, i;

	for (r = 0; r < w->rounds; r++) {
		for (i = 0; i < PER_WORKER; i++) {
			make_page(page, (enum page_kind)(i % PAGE_KINDS), w->id * 100000 + i, i * 9);
			if (zpool_store(w->pool, page, &h[i]))
				w->bad++;
		}
		/* Free a random half so compaction has work, then re-check the rest. */
		for (i = 0; i < PER_WORKER; i++)
			if (rng_range(&rng, 0, 1)) {
				zpool_free(w->pool, h[i]);
				h[i] = 0;
			}
		for (i = 0; i < PER_WORKER; i++) {
			if (!h[i])
				continue;
			make_page(page, (enum page_kind)(i % PAGE_KINDS), w->id * 100000 + i, i * 9);
			if (zpool_load(w->pool, h[i], out) || memcmp(out, page, PG))
				w->bad++;
			zpool_free(w->pool, h[i]);
		}
	}
	return NULL;
}

static void *compactor(void *arg)
{
	struct zpool *pool = arg;

	while (!atomic_load(&stop))
		zpool_compact(pool);
	return NULL;
}

/* A fixed set of objects loaded over and over while compaction moves them. */
struct reader {
	struct zpool *pool;
	zpool_handle_t *h;
	unsigned int n, loops;
	long bad;
};

static void *read_loop(void *arg)
{
	struct reader *rd = arg;
	unsigned char page[PG], out[PG];
	unsigned int l, i;

	for (l = 0; l < rd->loops; l++)
		for (i = 0; i < rd->n; i += 2) {
			make_page(page, PAGE_TEXT, i, 0);
			if (zpool_load(rd->pool, rd->h[i], out) || memcmp(out, page, PG))
				rd->bad++;
		}
	return NULL;
}

START_TEST(test_workers_and_compactor)
{
	struct zpool_config cfg = ZPOOL_CONFIG_INIT;
	struct worker w[WORKERS];
	pthread_t t[WORKERS], c[2];
	struct zpool_stats st;
	struct zpool *pool;
	unsigned int i;

	cfg.flags = ZPOOL_F_CHECKSUM;
	pool = zpool_create(&cfg);
	ck_assert_ptr_nonnull(pool);
	atomic_store(&stop, 0);
	/* Two compactors: each holds the classes it works on across a pass. */
	pthread_create(&c[0], NULL, compactor, pool);
	pthread_create(&c[1], NULL, compactor, pool);
	for (i = 0; i < WORKERS; i++) {
		w[i].pool = pool;
		w[i].id = i;
		w[i].rounds = test_scale(20);
		w[i].bad = 0;
		pthread_create(&t[i], NULL, work, &w[i]);
	}
	for (i = 0; i < WORKERS; i++) {
		pthread_join(t[i], NULL);
		ck_assert_int_eq(w[i].bad, 0);
	}
	atomic_store(&stop, 1);
	pthread_join(c[0], NULL);
	pthread_join(c[1], NULL);
	zpool_stats(pool, &st);
	ck_assert_uint_eq(st.objects, 0);
	ck_assert_uint_eq(st.compr_data_size, 0);
	zpool_destroy(pool);
}
END_TEST

START_TEST(test_loads_during_compaction)
{
	struct zpool *pool = zpool_create(NULL);
	unsigned int n = 3000, i, round;
	zpool_handle_t *h = calloc(n, sizeof(*h));
	unsigned char page[PG];
	struct reader rd[2];
	pthread_t t[2];
	size_t moved = 0;

	ck_assert_ptr_nonnull(pool);
	for (round = 0; round < test_scale(20); round++) {
		for (i = 0; i < n; i++) {
			make_page(page, PAGE_TEXT, i, 0);
			if (!h[i])
				ck_assert_int_eq(zpool_store(pool, page, &h[i]), 0);
		}
		/* Odd objects go: the even ones must move to free zspages. */
		for (i = 1; i < n; i += 2) {
			zpool_free(pool, h[i]);
			h[i] = 0;
		}
		for (i = 0; i < 2; i++) {
			rd[i].pool = pool;
			rd[i].h = h;
			rd[i].n = n;
			rd[i].loops = 3;
			rd[i].bad = 0;
			pthread_create(&t[i], NULL, read_loop, &rd[i]);
		}
		moved += zpool_compact(pool);
		for (i = 0; i < 2; i++) {
			pthread_join(t[i], NULL);
			ck_assert_int_eq(rd[i].bad, 0);
		}
	}
	ck_assert_uint_gt(moved, 0);
	zpool_destroy(pool);
	free(h);
}
END_TEST

/*
 * Stores copy their object into its slot after dropping the class lock;
 * compaction must keep off a zspage with such a copy in flight (its object
 * has no handle yet: trimming would discard or hand out its slot).  These
 * mixes race stores against two compactors in configurations the test
 * above does not reach: short zspages that trim and empty often, no
 * checksum, objects with a codec byte and recompression-style stores
 * through a second codec, and a mem_limit that refuses stores midway.
 */
struct race_cfg {
	unsigned int flags;	/* zpool_config.flags */
	unsigned int chain;	/* max_pages_per_zspage */
	bool codecs;		/* a primary codec, and recompression to slot 1 */
	unsigned int limit;	/* pages over the empty pool's use; 0 none */
	unsigned int rounds;	/* per worker, before test_scale() */
};

#define RACE_WORKERS 3
#define RACE_OBJS 240

struct racer {
	struct zpool *pool;
	const struct race_cfg *cfg;
	unsigned int id, rounds;
	long bad, refused, recompressed;
};

/*
 * Object @i of @round of racer @id: some raw, the rest across every class,
 * half of them small so that even two-page zspages hold many objects.
 */
static void race_page(unsigned char *page, unsigned int id, unsigned int round, unsigned int i)
{
	uint64_t seed = ((uint64_t)id << 40) + ((uint64_t)round << 20) + i;
	struct rng r = { seed + 1 };

	if (i % 16 == 5)
		make_page(page, PAGE_RANDOM, seed, 0);
	else
		make_page(page, PAGE_SIZED, seed,
			  (unsigned int)(rng_next(&r) % (i % 2 ? PG / 8 : PG - PG / 16)));
}

static bool race_check(struct zpool *pool, zpool_handle_t h, unsigned int id,
		       unsigned int round, unsigned int i)
{
	unsigned char page[PG], out[PG];

	race_page(page, id, round, i);
	return !zpool_load(pool, h, out) && !memcmp(out, page, PG);
}

static void *race_work(void *arg)
{
	struct racer *w = arg;
	zpool_handle_t h[RACE_OBJS];
	unsigned char page[PG];
	struct rng rng = { 991 + w->id };
	unsigned int r, i;

	for (r = 0; r < w->rounds; r++) {
		for (i = 0; i < RACE_OBJS; i++) {
			int ret;

			race_page(page, w->id, r, i);
			ret = zpool_store(w->pool, page, &h[i]);
			if (ret == -ENOMEM && w->cfg->limit) {
				w->refused++;
				h[i] = 0;
			} else if (ret) {
				w->bad++;
				h[i] = 0;
			}
		}
		/* Rewrite some through the second codec, as zram_recompress() does. */
		for (i = 0; w->cfg->codecs && i < RACE_OBJS; i += 3) {
			size_t cls = h[i] ? zpool__obj_class_size(w->pool, h[i]) : 0;
			zpool_handle_t nh;
			int ret;

			if (!cls)
				continue;
			race_page(page, w->id, r, i);
			ret = zpool__store_slot(w->pool, 1, page, cls, &nh);
			if (ret == 0) {
				zpool_free(w->pool, h[i]);
				h[i] = nh;
				w->recompressed++;
			} else if (ret < 0 && !(ret == -ENOMEM && w->cfg->limit)) {
				w->bad++;
			}
		}
		/* Holes everywhere, so both evacuation and trimming find work. */
		for (i = 0; i < RACE_OBJS; i++)
			if (h[i] && rng_range(&rng, 0, 2)) {
				if (!race_check(w->pool, h[i], w->id, r, i))
					w->bad++;
				zpool_free(w->pool, h[i]);
				h[i] = 0;
			}
		for (i = 0; i < RACE_OBJS; i++) {
			if (!h[i])
				continue;
			if (!race_check(w->pool, h[i], w->id, r, i))
				w->bad++;
			zpool_free(w->pool, h[i]);
		}
	}
	return NULL;
}

static void race_run(const struct race_cfg *cfg)
{
	struct zpool_config zc = ZPOOL_CONFIG_INIT;
	struct racer w[RACE_WORKERS];
	pthread_t t[RACE_WORKERS], c[2];
	struct zpool_stats empty, st;
	long refused = 0, recompressed = 0;
	unsigned int i, rounds;
	struct zpool *pool;

	zc.flags = cfg->flags;
	zc.max_pages_per_zspage = cfg->chain;
	pool = zpool_create(&zc);
	ck_assert_ptr_nonnull(pool);
	if (cfg->codecs) {
		int comp, level;

		/*
		 * A primary codec gives every object a codec byte.  A fast lz4
		 * (acceleration 64) leaves room for the second codec to land
		 * objects in smaller classes: lz4hc 12 over lz4hc 1, the pair
		 * used where zstd is not built (musl), never did on these pages.
		 */
		ck_assert_int_eq(zpool__comp_lookup("lz4", 64, &comp, &level), 0);
		ck_assert_int_eq(zpool__codec_slot_set(pool, 0, comp, level, NULL, 0), 0);
		ck_assert_int_eq(zpool__comp_lookup(zpool_has_compressor("zstd") ? "zstd" : "lz4hc",
						    zpool_has_compressor("zstd") ? 3 : 12,
						    &comp, &level), 0);
		ck_assert_int_eq(zpool__codec_slot_set(pool, 1, comp, level, NULL, 0), 0);
	}
	zpool_stats(pool, &empty);
	if (cfg->limit)
		zpool_set_mem_limit(pool, empty.mem_used_total + (uint64_t)cfg->limit * PG);
	atomic_store(&stop, 0);
	pthread_create(&c[0], NULL, compactor, pool);
	pthread_create(&c[1], NULL, compactor, pool);
	/* Pages over 16 KiB cost as many times more to make and compress. */
	rounds = test_scale(PG > 16384 ? cfg->rounds / 4 : cfg->rounds);
	for (i = 0; i < RACE_WORKERS; i++) {
		w[i] = (struct racer){ .pool = pool, .cfg = cfg, .id = i, .rounds = rounds };
		pthread_create(&t[i], NULL, race_work, &w[i]);
	}
	for (i = 0; i < RACE_WORKERS; i++) {
		pthread_join(t[i], NULL);
		ck_assert_msg(w[i].bad == 0, "worker %u: %ld objects lost or wrong", i, w[i].bad);
		refused += w[i].refused;
		recompressed += w[i].recompressed;
	}
	atomic_store(&stop, 1);
	pthread_join(c[0], NULL);
	pthread_join(c[1], NULL);
	if (cfg->limit)
		ck_assert_int_gt(refused, 0);
	if (cfg->codecs)
		ck_assert_int_gt(recompressed, 0);
	/* Everything freed: every page back, nothing counted twice or lost. */
	zpool_stats(pool, &st);
	ck_assert_uint_eq(st.objects, 0);
	ck_assert_uint_eq(st.compr_data_size, 0);
	ck_assert_uint_eq(st.huge_pages, 0);
	ck_assert_uint_eq(st.mem_used_total, empty.mem_used_total);
	zpool_destroy(pool);
}

START_TEST(test_short_zspages_no_checksum)
{
	/* Four-page zspages: trimming frees pages, emptying releases zspages. */
	const struct race_cfg cfg = { .flags = 0, .chain = 4, .rounds = 40 };

	race_run(&cfg);
}
END_TEST

START_TEST(test_codec_stores_and_recompression)
{
	const struct race_cfg cfg = { .flags = ZPOOL_F_CHECKSUM, .chain = 4, .codecs = true,
				      .rounds = 40 };

	race_run(&cfg);
}
END_TEST

START_TEST(test_mem_limit_refuses_under_compaction)
{
	/*
	 * Room for less than one worker's objects of a round (about 78 pages
	 * of data): stores are refused, some after taking their slot
	 * (allocate, then check), however the threads interleave.  Room for
	 * all three workers at once refused none in a run where the threads
	 * hardly overlapped (1 in 40 short runs under TSan).  Fewer stores
	 * get through, so more rounds.
	 */
	const struct race_cfg cfg = { .flags = ZPOOL_F_CHECKSUM, .chain = 4,
				      .limit = RACE_OBJS / 4, .rounds = 100 };

	race_run(&cfg);
}
END_TEST

/*
 * A page source over aligned_alloc() whose next allocation, once armed,
 * waits until the test lets it go: a store then sits between its limit
 * check and its allocation while another thread stores.
 */
struct gate_source {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool armed, held, open;
};

static void *gate_alloc(void *ctx, size_t bytes)
{
	struct gate_source *g = ctx;

	pthread_mutex_lock(&g->lock);
	if (g->armed) {
		g->armed = false;
		g->held = true;
		pthread_cond_broadcast(&g->cond);
		while (!g->open)
			pthread_cond_wait(&g->cond, &g->lock);
	}
	pthread_mutex_unlock(&g->lock);
	return aligned_alloc(PG, bytes);
}

static void gate_free(void *ctx, void *mem, size_t bytes)
{
	(void)ctx;
	(void)bytes;
	free(mem);
}

struct same_store {
	struct zpool *pool;
	zpool_handle_t h;
	int ret;
};

static void *store_same_page(void *arg)
{
	struct same_store *a = arg;
	unsigned char page[PG];

	make_page(page, PAGE_SAME, 5, 0);
	a->ret = zpool_store(a->pool, page, &a->h);
	return NULL;
}

/*
 * A same-filled store checks the limit before it makes its table pages, as
 * every store does; a store on another thread between that check and the
 * pages must not take the pool past mem_limit.  The first same-filled page
 * needs three table pages and the limit leaves room for exactly three: a
 * raw page stored while the same-filled store waits in the page source
 * takes one of them, so one of the two must be refused.
 */
START_TEST(test_same_store_races_limit)
{
	struct gate_source g = { .armed = false };
	struct zpool_page_source src = { .alloc = gate_alloc, .free = gate_free, .ctx = &g,
					 .lazy = true };
	struct zpool_config cfg = ZPOOL_CONFIG_INIT;
	struct same_store a = { .ret = -1 };
	struct zpool_stats before, after, st;
	unsigned char page[PG], out[PG];
	zpool_handle_t first, raw;
	struct zpool *pool;
	pthread_t t;

	pthread_mutex_init(&g.lock, NULL);
	pthread_cond_init(&g.cond, NULL);
	cfg.page_source = &src;
	pool = zpool_create(&cfg);
	ck_assert_ptr_nonnull(pool);
	/* The handle and zspage tables and a descriptor page exist from now on. */
	make_page(page, PAGE_TEXT, 1, 0);
	ck_assert_int_eq(zpool_store(pool, page, &first), 0);
	zpool_stats(pool, &before);
	zpool_set_mem_limit(pool, before.mem_used_total + 3 * PG);

	pthread_mutex_lock(&g.lock);
	g.armed = true;
	pthread_mutex_unlock(&g.lock);
	a.pool = pool;
	pthread_create(&t, NULL, store_same_page, &a);
	pthread_mutex_lock(&g.lock);
	while (!g.held)
		pthread_cond_wait(&g.cond, &g.lock);
	pthread_mutex_unlock(&g.lock);
	/* The same-filled store has passed its check and waits for its first page. */
	make_page(page, PAGE_RANDOM, 2, 0);
	ck_assert_int_eq(zpool_store(pool, page, &raw), 0);
	zpool_stats(pool, &after);
	ck_assert_uint_eq(after.mem_used_total, before.mem_used_total + PG);
	pthread_mutex_lock(&g.lock);
	g.open = true;
	pthread_cond_broadcast(&g.cond);
	pthread_mutex_unlock(&g.lock);
	pthread_join(t, NULL);

	zpool_stats(pool, &st);
	ck_assert_msg(st.mem_used_total <= st.mem_limit,
		      "same-filled store returned %d: mem_used_total %llu past mem_limit %llu",
		      a.ret, (unsigned long long)st.mem_used_total,
		      (unsigned long long)st.mem_limit);
	/* Refused, it changed nothing; the raw page is intact. */
	ck_assert_int_eq(a.ret, -ENOMEM);
	ck_assert_mem_eq(&st, &after, sizeof(st));
	ck_assert_int_eq(zpool_load(pool, raw, out), 0);
	ck_assert_mem_eq(out, page, PG);
	zpool_free(pool, raw);
	zpool_free(pool, first);
	zpool_destroy(pool);
	pthread_cond_destroy(&g.cond);
	pthread_mutex_destroy(&g.lock);
}
END_TEST

int main(void)
{
	const TTest *const threads[] = {
		test_workers_and_compactor,
		test_loads_during_compaction,
		test_short_zspages_no_checksum,
		test_codec_stores_and_recompression,
		test_mem_limit_refuses_under_compaction,
		test_same_store_races_limit,
		NULL
	};
	const struct test_group groups[] = {
		{ .name = "threads", .tests = threads, .timeout = 600 },
		{ .name = NULL },
	};

	return test_main("zpool_threads", groups);
}

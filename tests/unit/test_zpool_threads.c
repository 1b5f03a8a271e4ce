// SPDX-License-Identifier: MIT
/*
 * Threads: stores, loads and frees on several threads while two others
 * compact at once; readers never see an object change under them.  CI also
 * runs this program under ThreadSanitizer.
 */
#include <pthread.h>

#include <libbvec/zpool.h>

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

int main(void)
{
	const TTest *const threads[] = {
		test_workers_and_compactor,
		test_loads_during_compaction,
		NULL
	};
	const struct test_group groups[] = {
		{ .name = "threads", .tests = threads, .timeout = 600 },
		{ .name = NULL },
	};

	return test_main("zpool_threads", groups);
}

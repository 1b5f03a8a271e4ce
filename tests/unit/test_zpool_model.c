// SPDX-License-Identifier: MIT
/*
 * Property test: random store/load/free/compact/limit sequences against a
 * model (the pages that should be there, and the statistics they imply),
 * checked after every step.
 */
#include <libbvec/zpool.h>

#include "pages.h"

#define MAX_LIVE 700

struct obj {
	zpool_handle_t h;
	enum page_kind kind;
	uint64_t seed;
	unsigned int param;
	size_t size;
};

static struct obj live[MAX_LIVE];
static unsigned int nlive;

static void expect_stats(struct zpool *pool)
{
	struct zpool_stats st;
	uint64_t same = 0, compr = 0, huge = 0;
	unsigned int i;

	for (i = 0; i < nlive; i++) {
		same += live[i].size == 0;
		compr += live[i].size;
		huge += live[i].size == PG;
	}
	zpool_stats(pool, &st);
	ck_assert_uint_eq(st.orig_data_size, (uint64_t)nlive * PG);
	ck_assert_uint_eq(st.objects, nlive);
	ck_assert_uint_eq(st.same_pages, same);
	ck_assert_uint_eq(st.compr_data_size, compr);
	ck_assert_uint_eq(st.huge_pages, huge);
	ck_assert_uint_ge(st.mem_used_max, st.mem_used_total);
	ck_assert_uint_ge(st.mem_used_total, st.metadata_bytes);
	if (st.mem_limit)
		ck_assert_uint_le(st.mem_used_total, st.mem_limit > st.mem_used_max ?
				  st.mem_limit : st.mem_used_max);
}

static void check_obj(struct zpool *pool, const struct obj *o)
{
	unsigned char want[PG], got[PG];

	make_page(want, o->kind, o->seed, o->param);
	ck_assert_int_eq(zpool_load(pool, o->h, got), 0);
	ck_assert_mem_eq(got, want, PG);
}

START_TEST(test_random_sequences)
{
	/* Short and long zspages, the longest (capped at 1 MiB) and the default. */
	static const unsigned int chains[] = { 1, 6, 64, 16, 0, 33 };
	struct zpool_config cfg = ZPOOL_CONFIG_INIT;
	struct rng rng = { 0xabcdef12345ull + (uint64_t)_i };
	unsigned int steps = test_scale(6000), step;
	uint64_t seed = 1;
	struct zpool *pool;

	cfg.flags = _i % 2 ? ZPOOL_F_CHECKSUM : 0;
	cfg.max_pages_per_zspage = chains[_i % 6];
	pool = zpool_create(&cfg);
	ck_assert_ptr_nonnull(pool);
	nlive = 0;
	for (step = 0; step < steps; step++) {
		unsigned int op = rng_range(&rng, 0, 99);

		if (op < 45 && nlive < MAX_LIVE) {
			struct obj *o = &live[nlive];
			unsigned char page[PG];
			int ret;

			o->kind = (enum page_kind)rng_range(&rng, 0, PAGE_KINDS - 1);
			o->seed = seed++;
			o->param = rng_range(&rng, 0, (unsigned int)PG);
			make_page(page, o->kind, o->seed, o->param);
			ret = zpool_store(pool, page, &o->h);
			if (ret) {
				struct zpool_stats st;

				zpool_stats(pool, &st);
				ck_assert_int_eq(ret, -ENOMEM);
				ck_assert_uint_ne(st.mem_limit, 0);
			} else {
				o->size = zpool_obj_size(pool, o->h);
				nlive++;
			}
		} else if (op < 75 && nlive) {
			check_obj(pool, &live[rng_range(&rng, 0, nlive - 1)]);
		} else if (op < 95 && nlive) {
			unsigned int i = rng_range(&rng, 0, nlive - 1);

			zpool_free(pool, live[i].h);
			live[i] = live[--nlive];
		} else if (op < 98) {
			zpool_compact(pool);
		} else {
			struct zpool_stats st;

			zpool_stats(pool, &st);
			zpool_set_mem_limit(pool, rng_range(&rng, 0, 1) ? 0 :
					    st.mem_used_total + rng_range(&rng, 0, 64) * PG);
		}
		expect_stats(pool);
		if (step % 500 == 499) {
			unsigned int i;

			for (i = 0; i < nlive; i++)
				check_obj(pool, &live[i]);
		}
	}
	zpool_destroy(pool);
}
END_TEST

int main(void)
{
	const TTest *const property[] = { test_random_sequences, NULL };
	const struct test_group groups[] = {
		{ .name = "property", .tests = property, .timeout = 600, .loops = 6 },
		{ .name = NULL },
	};

	return test_main("zpool_model", groups);
}

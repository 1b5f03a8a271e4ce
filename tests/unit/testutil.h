/* SPDX-License-Identifier: MIT */
/* Helpers shared by the unit tests: PRNG, allocators, scale. */
#ifndef BVEC_TESTUTIL_H
#define BVEC_TESTUTIL_H

#include <check.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <libbvec/bio.h>

/* xorshift64*: deterministic, so a failing seed can be replayed. */
struct rng {
	uint64_t s;
};

static inline uint64_t rng_next(struct rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 2685821657736338717ull;
}

/* Uniform-enough value in [lo, hi]. */
static inline unsigned int rng_range(struct rng *r, unsigned int lo, unsigned int hi)
{
	return lo + (unsigned int)(rng_next(r) % ((uint64_t)hi - lo + 1));
}

/* Under valgrind (BVEC_TEST_SCALE=small) loops shrink by this factor. */
static inline unsigned int test_scale(unsigned int n)
{
	const char *s = getenv("BVEC_TEST_SCALE");

	if (s && !strcmp(s, "small"))
		return n / 20 ? n / 20 : 1;
	return n;
}

/*
 * An allocator that counts what is outstanding and can fail every Nth call,
 * for failure injection and leak checks independent of valgrind.
 */
struct test_alloc {
	atomic_long outstanding;
	atomic_long calls;
	long fail_every; /* 0 = never */
	atomic_bool fail_all;
};

static inline void *test_alloc_fn(void *ctx, size_t size)
{
	struct test_alloc *ta = ctx;
	long n = atomic_fetch_add(&ta->calls, 1) + 1;

	if (atomic_load(&ta->fail_all) || (ta->fail_every && n % ta->fail_every == 0))
		return NULL;
	atomic_fetch_add(&ta->outstanding, 1);
	return malloc(size);
}

static inline void test_free_fn(void *ctx, void *p, size_t size)
{
	struct test_alloc *ta = ctx;

	(void)size;
	if (!p)
		return;
	atomic_fetch_sub(&ta->outstanding, 1);
	free(p);
}

static inline struct bvec_allocator test_allocator(struct test_alloc *ta)
{
	struct bvec_allocator a = { .alloc = test_alloc_fn, .free = test_free_fn, .ctx = ta };

	memset(ta, 0, sizeof(*ta));
	return a;
}

/* Page-aligned scratch memory. */
static inline unsigned char *test_pages(size_t pages)
{
	void *p = NULL;

	ck_assert_int_eq(posix_memalign(&p, BVEC_PAGE_SIZE, pages * BVEC_PAGE_SIZE), 0);
	return p;
}

/*
 * A test program is a table: groups of tests (one Check TCase each) with
 * their timeout, fixture and loop count.  Test pointers from START_TEST are
 * variables, not constants, so the tables live inside main().
 */
struct test_group {
	const char *name;
	const TTest *const *tests;	/* NULL-terminated */
	int timeout;			/* seconds; 0 for Check's default */
	void (*setup)(void);		/* checked fixture, or NULL */
	void (*teardown)(void);
	int loops;			/* > 0: each test runs for _i in [0, loops) */
};

/* Run one suite of @groups (ended by a NULL name): exit status 0 only if all passed. */
static inline int test_main(const char *suite, const struct test_group *groups)
{
	Suite *s = suite_create(suite);
	SRunner *sr;
	int failed;

	for (; groups->name; groups++) {
		TCase *tc = tcase_create(groups->name);
		const TTest *const *t;

		if (groups->timeout)
			tcase_set_timeout(tc, groups->timeout);
		if (groups->setup || groups->teardown)
			tcase_add_checked_fixture(tc, groups->setup, groups->teardown);
		for (t = groups->tests; *t; t++) {
			if (groups->loops)
				tcase_add_loop_test(tc, *t, 0, groups->loops);
			else
				tcase_add_test(tc, *t);
		}
		suite_add_tcase(s, tc);
	}
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif

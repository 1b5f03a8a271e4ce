// SPDX-License-Identifier: MIT
/* bio_set: front_pad, table classes, the reserve, failure injection. */
#include <pthread.h>
#include <stddef.h>
#include <unistd.h>

#include <libbvec/bio.h>

#include "testutil.h"

struct my_io {
	unsigned long cookie;
	unsigned char state[40];
	struct bio bio; /* last, as drivers embed it */
};

START_TEST(test_front_pad)
{
	struct test_alloc ta;
	struct bvec_allocator a = test_allocator(&ta);
	struct bio_set bs;
	struct my_io *io;
	struct bio *bio;

	ck_assert_int_eq(bvec_bioset_init(&bs, 1, 3, 0, &a), -EINVAL);
	ck_assert_int_eq(bvec_bioset_init(&bs, 1, offsetof(struct my_io, bio), 0, &a), 0);
	bio = bio_alloc_bioset(NULL, 2, REQ_OP_READ, GFP_KERNEL, &bs);
	ck_assert_ptr_nonnull(bio);
	io = (struct my_io *)(void *)((char *)bio - offsetof(struct my_io, bio));
	io->cookie = 42;
	memset(io->state, 0x5a, sizeof(io->state));
	ck_assert_ptr_eq(bio->bi_io_vec, (struct bio_vec *)(void *)(bio + 1));
	ck_assert_uint_eq(bio->bi_max_vecs, BIO_INLINE_VECS);
	bio_put(bio);
	bioset_exit(&bs);
	bioset_exit(&bs); /* twice is harmless */
	ck_assert_int_eq(atomic_load(&ta.outstanding), 0);
}
END_TEST

START_TEST(test_invalid_calls)
{
	struct bio_set bs;

	memset(&bs, 0, sizeof(bs));
	errno = 0;
	ck_assert_ptr_null(bio_alloc_bioset(NULL, 1, REQ_OP_READ, GFP_KERNEL, &bs));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(bio_alloc(NULL, BIO_MAX_VECS + 1, REQ_OP_READ, GFP_KERNEL));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(bioset_init(NULL, 1, 0, 0), -EINVAL);
	ck_assert(!bioset_initialized(&bs));
}
END_TEST

START_TEST(test_default_set)
{
	struct bio *a = bio_alloc(NULL, 1, REQ_OP_READ, GFP_KERNEL);
	struct bio *b = bio_alloc_bioset(NULL, 100, REQ_OP_READ, GFP_KERNEL, &fs_bio_set);

	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_eq(a->bi_pool, &fs_bio_set);
	ck_assert_uint_eq(b->bi_max_vecs, 128);
	bio_put(a);
	bio_put(b);
}
END_TEST

/* Fill every entry of the table: ASan and valgrind catch a short table. */
static void fill_table(struct bio *bio, unsigned int n)
{
	static unsigned char buf[2 * BIO_MAX_VECS];
	unsigned int i;

	for (i = 0; i < n; i++)
		ck_assert_int_eq(bio_add_virt(bio, buf + 2 * i, 1), 1);
	ck_assert_uint_eq(bio->bi_vcnt, n);
}

/* Every size's free path, through the allocator and through the reserve. */
START_TEST(test_every_size_class)
{
	struct test_alloc ta;
	struct bvec_allocator a = test_allocator(&ta);
	struct bio_set bs;
	unsigned int nr;

	ck_assert_int_eq(bvec_bioset_init(&bs, 2, 0, BIOSET_NEED_BVECS, &a), 0);
	for (nr = 0; nr <= BIO_MAX_VECS; nr++) {
		struct bio *bio = bio_alloc_bioset(NULL, (unsigned short)nr,
						   REQ_OP_WRITE, GFP_KERNEL, &bs);

		ck_assert_ptr_nonnull(bio);
		ck_assert_uint_ge(bio->bi_max_vecs, nr);
		fill_table(bio, bio->bi_max_vecs);
		bio_put(bio);
	}
	bioset_exit(&bs);
	ck_assert_int_eq(atomic_load(&ta.outstanding), 0);
}
END_TEST

/*
 * Regression: a port freed small tables into the 256-entry reserve, so a
 * later full-size bio got a short table.
 */
START_TEST(test_small_table_free_path)
{
	struct test_alloc ta;
	struct bvec_allocator a = test_allocator(&ta);
	struct bio *bios[4];
	struct bio_set bs;
	unsigned int i;

	ck_assert_int_eq(bvec_bioset_init(&bs, 2, 0, BIOSET_NEED_BVECS, &a), 0);
	/* Allocator down: small requests are served from the reserve... */
	atomic_store(&ta.fail_all, true);
	bios[0] = bio_alloc_bioset(NULL, 20, REQ_OP_WRITE, GFP_NOIO, &bs);
	ck_assert_ptr_nonnull(bios[0]);
	ck_assert_uint_eq(bios[0]->bi_max_vecs, BIO_MAX_VECS);
	bio_put(bios[0]);
	/* ...while small tables from the allocator go back to it. */
	atomic_store(&ta.fail_all, false);
	for (i = 0; i < 4; i++)
		bios[i] = bio_alloc_bioset(NULL, 17, REQ_OP_WRITE, GFP_NOIO, &bs);
	for (i = 0; i < 4; i++) {
		ck_assert_uint_eq(bios[i]->bi_max_vecs, 64);
		bio_put(bios[i]);
	}
	atomic_store(&ta.fail_all, true);
	for (i = 0; i < 2; i++) {
		bios[i] = bio_alloc_bioset(NULL, BIO_MAX_VECS, REQ_OP_WRITE, GFP_NOIO, &bs);
		ck_assert_ptr_nonnull(bios[i]);
		ck_assert_uint_eq(bios[i]->bi_max_vecs, BIO_MAX_VECS);
		fill_table(bios[i], BIO_MAX_VECS);
	}
	/* Reserve empty, allocator down: GFP_NOWAIT fails fast. */
	errno = 0;
	ck_assert_ptr_null(bio_alloc_bioset(NULL, 1, REQ_OP_WRITE, GFP_NOWAIT, &bs));
	ck_assert_int_eq(errno, ENOMEM);
	for (i = 0; i < 2; i++)
		bio_put(bios[i]);
	atomic_store(&ta.fail_all, false);
	bioset_exit(&bs);
	ck_assert_int_eq(atomic_load(&ta.outstanding), 0);
}
END_TEST

struct waiter_arg {
	struct bio_set *bs;
	struct bio *got;
	atomic_int done;
};

static void *alloc_waiting(void *p)
{
	struct waiter_arg *w = p;

	w->got = bio_alloc_bioset(NULL, 1, REQ_OP_READ, GFP_NOIO, w->bs);
	atomic_store(&w->done, 1);
	return NULL;
}

/* Mempool semantics: a blocking allocation waits for a bio to come back. */
START_TEST(test_reserve_waits)
{
	struct test_alloc ta;
	struct bvec_allocator a = test_allocator(&ta);
	struct waiter_arg w;
	struct bio_set bs;
	struct bio *held;
	pthread_t t;

	ck_assert_int_eq(bvec_bioset_init(&bs, 1, 0, 0, &a), 0);
	atomic_store(&ta.fail_all, true);
	held = bio_alloc_bioset(NULL, 0, REQ_OP_READ, GFP_KERNEL, &bs);
	ck_assert_ptr_nonnull(held);
	w.bs = &bs;
	w.got = NULL;
	atomic_init(&w.done, 0);
	pthread_create(&t, NULL, alloc_waiting, &w);
	usleep(20000);
	ck_assert_int_eq(atomic_load(&w.done), 0); /* nothing to hand out yet */
	bio_put(held);
	pthread_join(t, NULL);
	ck_assert_ptr_nonnull(w.got);
	bio_put(w.got);
	atomic_store(&ta.fail_all, false);
	bioset_exit(&bs);
	ck_assert_int_eq(atomic_load(&ta.outstanding), 0);
}
END_TEST

START_TEST(test_init_failure_injection)
{
	long k;

	for (k = 1; k <= 8; k++) {
		struct test_alloc ta;
		struct bvec_allocator a = test_allocator(&ta);
		struct bio_set bs;
		int err;

		ta.fail_every = k;
		err = bvec_bioset_init(&bs, 3, 0, BIOSET_NEED_BVECS, &a);
		/* 1 state + 3 bios + 3 tables: any failure is a clean -ENOMEM. */
		ck_assert_int_eq(err, k <= 7 ? -ENOMEM : 0);
		if (!err)
			bioset_exit(&bs);
		ck_assert_int_eq(atomic_load(&ta.outstanding), 0);
	}
}
END_TEST

/*
 * Every Nth allocation fails during a workload of alloc/split/clone/
 * integrity: each failure is a clean NULL + ENOMEM, nothing changes, and
 * nothing leaks.
 */
START_TEST(test_workload_failure_injection)
{
	static unsigned char buf[1 << 16];
	struct rng rng = { 0x1234567 };
	long every;

	for (every = 2; every <= 9; every++) {
		struct test_alloc ta;
		struct bvec_allocator a = test_allocator(&ta);
		struct bio_set bs;
		unsigned int round, failures = 0;

		ck_assert_int_eq(bvec_bioset_init(&bs, 0, 0, 0, &a), 0);
		ta.fail_every = every;
		for (round = 0; round < test_scale(2000); round++) {
			unsigned short nr = (unsigned short)rng_range(&rng, 0, 300);
			struct bio *bio, *other;
			struct bvec_iter before;
			unsigned int i;

			errno = 0;
			bio = bio_alloc_bioset(NULL, nr, REQ_OP_WRITE, GFP_NOIO, &bs);
			if (!bio) {
				ck_assert_int_eq(errno, nr > BIO_MAX_VECS ? EINVAL : ENOMEM);
				failures++;
				continue;
			}
			for (i = 0; i < bio->bi_max_vecs; i++)
				bio_add_virt(bio, buf + i * 200, 512);
			if (!bio_integrity_alloc(bio, GFP_NOIO, 1)) {
				ck_assert_int_eq(errno, ENOMEM);
				failures++;
			}
			before = bio->bi_iter;
			other = bio_sectors(bio) > 1 ?
				bio_split(bio, 1, GFP_NOIO, &bs) :
				bio_alloc_clone(NULL, bio, GFP_NOIO, &bs);
			if (!other) {
				ck_assert_int_eq(errno, ENOMEM);
				ck_assert_mem_eq(&bio->bi_iter, &before, sizeof(before));
				failures++;
			}
			bio_put(other);
			bio_put(bio);
		}
		ck_assert_uint_gt(failures, 0);
		ta.fail_every = 0;
		bioset_exit(&bs);
		ck_assert_int_eq(atomic_load(&ta.outstanding), 0);
	}
}
END_TEST

/*
 * An allocator with a size limit: it refuses anything over 1 MiB and stops
 * after 64 calls, so a set that asked for a wrapped (too small) size shows
 * as allocations it should never have made instead of running away.
 */
struct capped_alloc {
	unsigned int calls;
	unsigned int outstanding;
};

static void *capped_alloc_fn(void *ctx, size_t size)
{
	struct capped_alloc *ca = ctx;
	void *p;

	if (++ca->calls > 64 || size > ((size_t)1 << 20))
		return NULL;
	p = malloc(size);
	if (p)
		ca->outstanding++;
	return p;
}

static void capped_free_fn(void *ctx, void *p, size_t size)
{
	struct capped_alloc *ca = ctx;

	(void)size;
	if (p)
		ca->outstanding--;
	free(p);
}

/*
 * A reserve or front_pad whose byte count does not fit size_t (a 32-bit
 * target) must be refused, not wrapped to a small allocation: the reserve's
 * slot array was sized 2 * pool_size pointers modulo 2^32 and then filled
 * pool_size deep, and a front_pad near UINT_MAX put the bio before its
 * allocation.  On 64-bit targets the sizes are exact and the allocator
 * simply refuses them; the assertions hold on both.
 */
START_TEST(test_huge_sizes_refused)
{
	struct capped_alloc ca = { 0, 0 };
	struct bvec_allocator a = {
		.alloc = capped_alloc_fn, .free = capped_free_fn, .ctx = &ca
	};
	unsigned int pool = (unsigned int)(((uint64_t)1 << 32) / (2 * sizeof(void *)));
	unsigned int pad = UINT32_MAX & ~(unsigned int)(_Alignof(struct bio) - 1);
	struct bio_set bs;
	struct bio *bio;

	/* 2 * pool pointers is 2^32 bytes: 0 modulo 2^32 on i386. */
	ck_assert_int_eq(bvec_bioset_init(&bs, pool, 0, 0, &a), -ENOMEM);
	ck_assert_uint_le(ca.calls, 1);	/* the slot array at most: no bio */
	ck_assert_uint_eq(ca.outstanding, 0);
	ck_assert(!bioset_initialized(&bs));

	ca.calls = 0;
	if (bvec_bioset_init(&bs, 0, pad, 0, &a) == 0) {
		errno = 0;
		bio = bio_alloc_bioset(NULL, 1, REQ_OP_READ, GFP_NOWAIT, &bs);
		ck_assert_ptr_null(bio);	/* 4 GiB of padding is not there */
		ck_assert_int_eq(errno, ENOMEM);
		bioset_exit(&bs);
	}
	ck_assert_uint_eq(ca.outstanding, 0);
}
END_TEST

int main(void)
{
	const TTest *const alloc[] = {
		test_front_pad,
		test_invalid_calls,
		test_default_set,
		test_every_size_class,
		test_small_table_free_path,
		test_reserve_waits,
		test_init_failure_injection,
		test_workload_failure_injection,
		test_huge_sizes_refused,
		NULL
	};
	const struct test_group groups[] = {
		{ .name = "alloc", .tests = alloc, .timeout = 120 },
		{ .name = NULL },
	};

	return test_main("bioset", groups);
}

// SPDX-License-Identifier: MIT
/*
 * bio_set: bios with front padding and inline vecs, table classes, and a
 * mempool-style reserve.
 *
 * The reserve exists for forward progress: a driver that must allocate a bio
 * to complete I/O (a split, a clone) can always get one once some earlier
 * bio comes back, even when the allocator has nothing.  So the allocator is
 * always tried first, the reserve second, and only blocking allocations
 * wait.  The reserve is refilled on free before memory goes back to the
 * allocator.
 *
 * Tables are freed by their real capacity (bi_max_vecs), never by the count
 * that was asked for: a port that freed small tables into the 256-entry
 * reserve later handed out short tables for full-size bios.
 */
#include <stdalign.h>
#include <stdbool.h>

#include "internal.h"
#include "os.h"

/* Table classes above the inline vecs, as in Linux. */
static const unsigned short vec_classes[] = { 16, 64, 128, BIO_MAX_VECS };

struct reserve {
	unsigned int cap;
	atomic_uint nr;
	void **slots;
};

struct bioset_state {
	struct bvec__lock *lock;
	size_t bio_bytes; /* front_pad + bio + inline vecs */
	struct reserve bios;
	struct reserve vecs; /* BIO_MAX_VECS-entry tables */
};

static const struct bvec_allocator os_allocator = {
	.alloc = bvec__os_alloc,
	.free = bvec__os_free,
};

void *bvec__bs_alloc(struct bio_set *bs, size_t size)
{
	return bs->allocator.alloc(bs->allocator.ctx, size);
}

void bvec__bs_free(struct bio_set *bs, void *ptr, size_t size)
{
	bs->allocator.free(bs->allocator.ctx, ptr, size);
}

static void *reserve_get(struct bio_set *bs, struct reserve *r, size_t size,
			 gfp_t gfp)
{
	struct bioset_state *st = bs->priv;
	void *p = bvec__bs_alloc(bs, size);
	unsigned int n;

	if (p || !r->cap)
		return p;
	bvec__lock(st->lock);
	for (;;) {
		n = atomic_load_explicit(&r->nr, memory_order_relaxed);
		if (n) {
			p = r->slots[n - 1];
			atomic_store_explicit(&r->nr, n - 1, memory_order_relaxed);
			break;
		}
		if (!gfpflags_allow_blocking(gfp) || !bvec__lock_wait(st->lock))
			break;
	}
	bvec__unlock(st->lock);
	return p;
}

static void reserve_put(struct bio_set *bs, struct reserve *r, void *p,
			size_t size)
{
	struct bioset_state *st = bs->priv;
	unsigned int n;

	/* Unlocked peek: the common case (reserve full) takes no lock. */
	if (atomic_load_explicit(&r->nr, memory_order_relaxed) < r->cap) {
		bvec__lock(st->lock);
		n = atomic_load_explicit(&r->nr, memory_order_relaxed);
		if (n < r->cap) {
			r->slots[n] = p;
			atomic_store_explicit(&r->nr, n + 1, memory_order_relaxed);
			bvec__lock_wake_all(st->lock);
			bvec__unlock(st->lock);
			return;
		}
		bvec__unlock(st->lock);
	}
	bvec__bs_free(bs, p, size);
}

static int reserve_fill(struct bio_set *bs, struct reserve *r, size_t size)
{
	unsigned int n;

	for (n = 0; n < r->cap; n++) {
		r->slots[n] = bvec__bs_alloc(bs, size);
		if (!r->slots[n])
			break;
	}
	atomic_init(&r->nr, n);
	return n == r->cap ? 0 : -ENOMEM;
}

static void reserve_drain(struct bio_set *bs, struct reserve *r, size_t size)
{
	unsigned int n = atomic_load(&r->nr);

	while (n)
		bvec__bs_free(bs, r->slots[--n], size);
	atomic_store(&r->nr, 0);
}

static size_t state_bytes(unsigned int pool_size)
{
	return sizeof(struct bioset_state) + 2 * (size_t)pool_size * sizeof(void *);
}

/*
 * Do the set's byte counts fit size_t?  On a 32-bit target they need not:
 * 2 * pool_size pointers, or front_pad plus a bio, can pass 4 GiB, and the
 * wrapped size would be a small allocation that the reserve fill then
 * overruns, or that the bio is placed before (p + front_pad wraps too).
 * Such a set could never be allocated, so it is refused as out of memory,
 * which is what a 64-bit target's allocator answers for the same sizes.
 */
static bool sizes_fit(unsigned int pool_size, unsigned int front_pad)
{
	const size_t bio_part = sizeof(struct bio) +
				BIO_INLINE_VECS * sizeof(struct bio_vec);

	/* In 64 bits, where no product of these operands can wrap. */
	return (uint64_t)pool_size * 2 * sizeof(void *) <=
		       SIZE_MAX - sizeof(struct bioset_state) &&
	       (uint64_t)front_pad <= SIZE_MAX - bio_part;
}

int bvec_bioset_init(struct bio_set *bs, unsigned int pool_size,
		     unsigned int front_pad, int flags,
		     const struct bvec_allocator *allocator)
{
	struct bioset_state *st;

	if (!bs || (allocator && (!allocator->alloc || !allocator->free)))
		return -EINVAL;
	/* The bio itself must be aligned; a driver's front_pad is offsetof(). */
	if (front_pad % alignof(struct bio))
		return -EINVAL;
	memset(bs, 0, sizeof(*bs));
	if (!sizes_fit(pool_size, front_pad))
		return -ENOMEM;
	bs->allocator = allocator ? *allocator : os_allocator;
	bs->front_pad = front_pad;
	bs->pool_size = pool_size;
	bs->flags = flags;

	st = bvec__bs_alloc(bs, state_bytes(pool_size));
	if (!st)
		return -ENOMEM;
	memset(st, 0, sizeof(*st));
	st->lock = bvec__lock_new();
	if (!st->lock) {
		bvec__bs_free(bs, st, state_bytes(pool_size));
		return -ENOMEM;
	}
	st->bio_bytes = (size_t)front_pad + sizeof(struct bio) +
			BIO_INLINE_VECS * sizeof(struct bio_vec);
	st->bios.cap = pool_size;
	st->bios.slots = (void **)(st + 1);
	st->vecs.cap = (flags & BIOSET_NEED_BVECS) ? pool_size : 0;
	st->vecs.slots = st->bios.slots + pool_size;
	bs->priv = st;

	if (reserve_fill(bs, &st->bios, st->bio_bytes) ||
	    reserve_fill(bs, &st->vecs, BIO_MAX_VECS * sizeof(struct bio_vec))) {
		bioset_exit(bs);
		return -ENOMEM;
	}
	return 0;
}

int bioset_init(struct bio_set *bs, unsigned int pool_size,
		unsigned int front_pad, int flags)
{
	return bvec_bioset_init(bs, pool_size, front_pad, flags, NULL);
}

void bioset_exit(struct bio_set *bs)
{
	struct bioset_state *st;

	if (!bs || !bs->priv)
		return;
	st = bs->priv;
	reserve_drain(bs, &st->bios, st->bio_bytes);
	reserve_drain(bs, &st->vecs, BIO_MAX_VECS * sizeof(struct bio_vec));
	bvec__lock_free(st->lock);
	bvec__bs_free(bs, st, state_bytes(bs->pool_size));
	bs->priv = NULL;
}

static unsigned short vec_class(unsigned short nr)
{
	unsigned int i;

	for (i = 0; vec_classes[i] < nr; i++)
		;
	return vec_classes[i];
}

static struct bio_vec *bvec_alloc(struct bio_set *bs, unsigned short *nr,
				  gfp_t gfp)
{
	struct bioset_state *st = bs->priv;
	struct bio_vec *table;

	*nr = vec_class(*nr);
	if (*nr < BIO_MAX_VECS) {
		table = bvec__bs_alloc(bs, *nr * sizeof(struct bio_vec));
		if (table || !gfpflags_allow_blocking(gfp))
			return table;
		*nr = BIO_MAX_VECS;
	}
	return reserve_get(bs, &st->vecs, BIO_MAX_VECS * sizeof(struct bio_vec), gfp);
}

static void bvec_free(struct bio_set *bs, struct bio_vec *table,
		      unsigned short nr)
{
	struct bioset_state *st = bs->priv;

	if (nr == BIO_MAX_VECS)
		reserve_put(bs, &st->vecs, table, nr * sizeof(struct bio_vec));
	else
		bvec__bs_free(bs, table, nr * sizeof(struct bio_vec));
}

struct bio *bio_alloc_bioset(struct block_device *bdev, unsigned short nr_vecs,
			     blk_opf_t opf, gfp_t gfp, struct bio_set *bs)
{
	struct bioset_state *st;
	struct bio_vec *table = NULL;
	unsigned short cap = 0;
	struct bio *bio;
	char *p;

	if (!bs || bs == &fs_bio_set) {
		bs = bvec__default_bioset();
		if (!bs) {
			bvec__set_errno(ENOMEM);
			return NULL;
		}
	}
	if (!bs->priv || nr_vecs > BIO_MAX_VECS) {
		bvec__set_errno(EINVAL);
		return NULL;
	}
	st = bs->priv;
	p = reserve_get(bs, &st->bios, st->bio_bytes, gfp);
	if (!p) {
		bvec__set_errno(ENOMEM);
		return NULL;
	}
	bio = (struct bio *)(void *)(p + bs->front_pad);
	if (nr_vecs > BIO_INLINE_VECS) {
		cap = nr_vecs;
		table = bvec_alloc(bs, &cap, gfp);
		if (!table) {
			reserve_put(bs, &st->bios, p, st->bio_bytes);
			bvec__set_errno(ENOMEM);
			return NULL;
		}
	} else if (nr_vecs) {
		table = (struct bio_vec *)(void *)(bio + 1);
		cap = BIO_INLINE_VECS;
	}
	bio_init(bio, bdev, table, cap, opf);
	bio->bi_pool = bs;
	return bio;
}

void bvec__bio_free(struct bio *bio)
{
	struct bio_set *bs = bio->bi_pool;
	struct bioset_state *st;

	bio_uninit(bio);
	if (!bs)
		return;
	st = bs->priv;
	if (bio->bi_max_vecs > BIO_INLINE_VECS)
		bvec_free(bs, bio->bi_io_vec, bio->bi_max_vecs);
	reserve_put(bs, &st->bios, (char *)bio - bs->front_pad, st->bio_bytes);
}

struct bio_set fs_bio_set;

struct bio_set *bvec__default_bioset(void)
{
	static atomic_int ready;
	static atomic_flag busy = ATOMIC_FLAG_INIT;

	if (atomic_load_explicit(&ready, memory_order_acquire))
		return &fs_bio_set;
	/* First use: a spin guard is enough, the critical section is short. */
	while (atomic_flag_test_and_set_explicit(&busy, memory_order_acquire))
		;
	if (!atomic_load_explicit(&ready, memory_order_relaxed) &&
	    !bioset_init(&fs_bio_set, BIO_POOL_SIZE, 0, BIOSET_NEED_BVECS))
		atomic_store_explicit(&ready, 1, memory_order_release);
	atomic_flag_clear_explicit(&busy, memory_order_release);
	return atomic_load_explicit(&ready, memory_order_acquire) ? &fs_bio_set : NULL;
}

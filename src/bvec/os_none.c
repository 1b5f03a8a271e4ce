// SPDX-License-Identifier: MIT
/*
 * The OS layer for programs without a C library or threads (unikernels,
 * boot code): no default allocator (give bio_sets one with
 * bvec_bioset_init()), locks that need no locking, and errno kept in
 * bvec_errno.  A blocking allocation that finds the reserve empty fails
 * instead of waiting, since nothing else could run to refill it.
 */
#include <stdbool.h>

#include "internal.h"
#include "os.h"

struct bvec__lock {
	int unused;
};

static struct bvec__lock the_lock;

/* errno of a build without a C library; read it after a failed call. */
BVEC_API int bvec_errno;

void bvec__set_errno(int err)
{
	bvec_errno = err;
}

void *bvec__os_alloc(void *ctx, size_t size)
{
	(void)ctx;
	(void)size;
	return NULL;
}

void bvec__os_free(void *ctx, void *ptr, size_t size)
{
	(void)ctx;
	(void)ptr;
	(void)size;
}

struct bvec__lock *bvec__lock_new(void)
{
	return &the_lock;
}

void bvec__lock_free(struct bvec__lock *l)
{
	(void)l;
}

void bvec__lock(struct bvec__lock *l)
{
	(void)l;
}

void bvec__unlock(struct bvec__lock *l)
{
	(void)l;
}

bool bvec__lock_wait(struct bvec__lock *l)
{
	(void)l;
	return false;
}

void bvec__lock_wake_all(struct bvec__lock *l)
{
	(void)l;
}

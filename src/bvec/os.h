/* SPDX-License-Identifier: MIT */
/*
 * The only OS services the bio core uses: a default allocator, a mutex with
 * a condition variable (for the bio_set reserve and submit_bio_wait), and
 * errno.  Everything OS-specific lives behind these few functions: in
 * os_posix.c, or in os_none.c for programs without a C library.
 */
#ifndef BVEC_OS_H
#define BVEC_OS_H

#include <stddef.h>
#include <stdbool.h>

struct bvec__lock;

void *bvec__os_alloc(void *ctx, size_t size);
void bvec__os_free(void *ctx, void *ptr, size_t size);

/* A lock with one condition; NULL on allocation failure. */
struct bvec__lock *bvec__lock_new(void);
void bvec__lock_free(struct bvec__lock *l);
void bvec__lock(struct bvec__lock *l);
void bvec__unlock(struct bvec__lock *l);
/* Wait for a wake-up; false where nothing else can run (no threads). */
bool bvec__lock_wait(struct bvec__lock *l);
void bvec__lock_wake_all(struct bvec__lock *l);

#endif

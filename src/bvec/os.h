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
#include <stdint.h>

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

/*
 * Microseconds on a clock that never goes back (not the wall clock), for
 * I/O statistics.  Only the device model uses it, and that is not part of
 * the build without a C library, so os_none.c leaves it out: a link error
 * is better than durations that silently read 0.
 */
uint64_t bvec__os_now_us(void);

#endif

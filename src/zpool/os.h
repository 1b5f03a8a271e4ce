/* SPDX-License-Identifier: MIT */
/*
 * The only OS services libzpool uses: locks, a thread-local slot with a
 * destructor, heap memory, a clock, yielding, and the default mmap page
 * source.  As in src/bvec/os.h, the lock types are opaque and made by the
 * edge, so no OS type reaches the portable code; everything OS-specific
 * lives behind these functions, in os_posix.c.
 */
#ifndef ZPOOL_OS_H
#define ZPOOL_OS_H

#include <errno.h>
#include <stddef.h>

struct zpool_page_source;
struct zpool__mutex;
struct zpool__cond;
struct zpool__rwlock;

/* A mutex; NULL on failure.  Freeing NULL does nothing. */
struct zpool__mutex *zpool__mutex_new(void);
void zpool__mutex_free(struct zpool__mutex *m);
void zpool__mutex_lock(struct zpool__mutex *m);
void zpool__mutex_unlock(struct zpool__mutex *m);

/*
 * A condition variable, used with a zpool__mutex; NULL on failure.  Freeing
 * NULL does nothing.  zpool__cond_wait() may return spuriously: callers loop
 * on their condition.
 */
struct zpool__cond *zpool__cond_new(void);
void zpool__cond_free(struct zpool__cond *c);
void zpool__cond_wait(struct zpool__cond *c, struct zpool__mutex *m);
void zpool__cond_broadcast(struct zpool__cond *c);

/*
 * A reader-writer lock; NULL on failure.  Freeing NULL does nothing.  A
 * port must let a thread that holds it shared take it shared again even
 * while a writer waits (reader preference, as glibc's and musl's default
 * pthread rwlocks give): a backing disk that completes a bio inside
 * submit_bio() runs zram's completion, which takes the device lock shared,
 * on the thread that submitted under it.  A writer-preferring lock would
 * deadlock there against a waiting zram_reset().
 */
struct zpool__rwlock *zpool__rwlock_new(void);
void zpool__rwlock_free(struct zpool__rwlock *l);
void zpool__read_lock(struct zpool__rwlock *l);
void zpool__write_lock(struct zpool__rwlock *l);
void zpool__rw_unlock(struct zpool__rwlock *l);

/* Plain heap memory (per-thread contexts, zram's slot table). */
void *zpool__os_alloc(size_t size);
void *zpool__os_zalloc(size_t size);
void zpool__os_free(void *p);

/* Monotonic seconds, for zram's access times. */
unsigned long long zpool__os_seconds(void);

/* Let another thread run (spinning on a zram slot lock). */
void zpool__os_yield(void);

/* CPUs online, at least 1: how many compressions can run at once. */
unsigned int zpool__os_cpus(void);

/* The default page source: page-aligned mmap chunks, demand paged. */
int zpool__mmap_source_new(struct zpool_page_source *src);
void zpool__mmap_source_delete(struct zpool_page_source *src);

#endif

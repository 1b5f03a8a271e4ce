/* SPDX-License-Identifier: MIT */
/*
 * The OS services libzpool uses, kept to one file (os_posix.c): locks,
 * a thread-local slot with a destructor, and the default mmap page source.
 */
#ifndef ZPOOL_OS_H
#define ZPOOL_OS_H

#include <pthread.h>
#include <errno.h>
#include <stddef.h>

struct zpool_page_source;

struct zp_mutex {
	pthread_mutex_t m;
};

struct zp_rwlock {
	pthread_rwlock_t l;
};

int zp_mutex_init(struct zp_mutex *m);
void zp_mutex_destroy(struct zp_mutex *m);
void zp_mutex_lock(struct zp_mutex *m);
void zp_mutex_unlock(struct zp_mutex *m);

int zp_rwlock_init(struct zp_rwlock *l);
void zp_rwlock_destroy(struct zp_rwlock *l);
void zp_read_lock(struct zp_rwlock *l);
void zp_write_lock(struct zp_rwlock *l);
void zp_rw_unlock(struct zp_rwlock *l);

/*
 * This thread's context pointer, made by @create on the thread's first
 * call; @dtor runs on it when the thread exits.  Every call must pass the
 * same @dtor (the first one is registered); NULL if that is not so or if
 * @create or the thread-specific key fails.
 */
void *zp_thread_ctx(void *(*create)(void), void (*dtor)(void *));

/* Plain heap memory (per-thread contexts, zram's slot table). */
void *zp_os_alloc(size_t size);
void *zp_os_zalloc(size_t size);
void zp_os_free(void *p);

/* Monotonic seconds, for zram's access times. */
unsigned long long zp_os_seconds(void);

/* Let another thread run (spinning on a zram slot lock). */
void zp_os_yield(void);

/* The default page source: page-aligned mmap chunks, demand paged. */
int zp_mmap_source_new(struct zpool_page_source *src);
void zp_mmap_source_delete(struct zpool_page_source *src);

#endif

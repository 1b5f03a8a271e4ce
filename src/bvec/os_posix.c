// SPDX-License-Identifier: MIT
/* POSIX edge of libbvec: malloc, pthreads and the monotonic clock. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "os.h"

struct bvec__lock {
	pthread_mutex_t mutex;
	pthread_cond_t cond;
};

void *bvec__os_alloc(void *ctx, size_t size)
{
	(void)ctx;
	return malloc(size);
}

void bvec__os_free(void *ctx, void *ptr, size_t size)
{
	(void)ctx;
	(void)size;
	free(ptr);
}

struct bvec__lock *bvec__lock_new(void)
{
	struct bvec__lock *l = malloc(sizeof(*l));

	if (!l)
		return NULL;
	if (pthread_mutex_init(&l->mutex, NULL)) {
		free(l);
		return NULL;
	}
	if (pthread_cond_init(&l->cond, NULL)) {
		pthread_mutex_destroy(&l->mutex);
		free(l);
		return NULL;
	}
	return l;
}

void bvec__lock_free(struct bvec__lock *l)
{
	if (!l)
		return;
	pthread_cond_destroy(&l->cond);
	pthread_mutex_destroy(&l->mutex);
	free(l);
}

void bvec__lock(struct bvec__lock *l)
{
	pthread_mutex_lock(&l->mutex);
}

void bvec__unlock(struct bvec__lock *l)
{
	pthread_mutex_unlock(&l->mutex);
}

bool bvec__lock_wait(struct bvec__lock *l)
{
	pthread_cond_wait(&l->cond, &l->mutex);
	return true;
}

void bvec__set_errno(int err);

void bvec__set_errno(int err)
{
	errno = err;
}

void bvec__lock_wake_all(struct bvec__lock *l)
{
	pthread_cond_broadcast(&l->cond);
}

uint64_t bvec__os_now_us(void)
{
	struct timespec ts;

	/* CLOCK_MONOTONIC cannot fail with a valid pointer on POSIX systems. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

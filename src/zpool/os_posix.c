// SPDX-License-Identifier: MIT
/* POSIX edge of libzpool: pthreads, thread-local contexts, mmap. */
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#include "internal.h"

int zp_mutex_init(struct zp_mutex *m)
{
	return pthread_mutex_init(&m->m, NULL) ? -ENOMEM : 0;
}

void zp_mutex_destroy(struct zp_mutex *m)
{
	pthread_mutex_destroy(&m->m);
}

void zp_mutex_lock(struct zp_mutex *m)
{
	pthread_mutex_lock(&m->m);
}

void zp_mutex_unlock(struct zp_mutex *m)
{
	pthread_mutex_unlock(&m->m);
}

int zp_rwlock_init(struct zp_rwlock *l)
{
	return pthread_rwlock_init(&l->l, NULL) ? -ENOMEM : 0;
}

void zp_rwlock_destroy(struct zp_rwlock *l)
{
	pthread_rwlock_destroy(&l->l);
}

void zp_read_lock(struct zp_rwlock *l)
{
	pthread_rwlock_rdlock(&l->l);
}

void zp_write_lock(struct zp_rwlock *l)
{
	pthread_rwlock_wrlock(&l->l);
}

void zp_rw_unlock(struct zp_rwlock *l)
{
	pthread_rwlock_unlock(&l->l);
}

void *zp_os_alloc(size_t size)
{
	return malloc(size);
}

void *zp_os_zalloc(size_t size)
{
	return calloc(1, size);
}

void zp_os_free(void *p)
{
	free(p);
}

unsigned long long zp_os_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec;
}

void zp_os_yield(void)
{
	sched_yield();
}

/*
 * The thread-local pointer is the fast path; the pthread key exists only
 * so the context is freed when the thread exits.
 */
static pthread_key_t ctx_key;
static pthread_once_t ctx_once = PTHREAD_ONCE_INIT;
static void (*ctx_dtor)(void *);
static _Thread_local void *ctx_cached;

static void ctx_exit(void *p)
{
	ctx_cached = NULL;
	if (ctx_dtor)
		ctx_dtor(p);
}

static void ctx_key_init(void)
{
	pthread_key_create(&ctx_key, ctx_exit);
}

void *zp_thread_ctx(void *(*create)(void), void (*dtor)(void *))
{
	void *c = ctx_cached;

	if (c)
		return c;
	pthread_once(&ctx_once, ctx_key_init);
	ctx_dtor = dtor;
	c = create();
	if (!c)
		return NULL;
	if (pthread_setspecific(ctx_key, c)) {
		dtor(c);
		return NULL;
	}
	ctx_cached = c;
	return c;
}

/*
 * mmap source.  Chunks of 2 MiB are mapped once and carved into runs of 1
 * to 16 pages; freed runs are discarded (MADV_DONTNEED) and kept on a list
 * per length.  Untouched pages of a chunk are not resident, which is what
 * lets the pool count only the pages it has written.  Huge pages are
 * refused so that residency stays page-granular.
 */
#define CHUNK_BYTES ((size_t)2 << 20)

struct run {
	struct run *next;
};

struct mmap_source {
	pthread_mutex_t lock;
	unsigned char *chunk;	/* current chunk */
	size_t used;		/* bytes carved from it */
	struct run *free_runs[ZP_MAX_CHAIN + 1];
	void **chunks;		/* every chunk, for unmapping */
	size_t nchunks, chunks_cap;
};

static void *mmap_alloc(void *ctx, size_t bytes)
{
	struct mmap_source *ms = ctx;
	size_t pages = bytes / BVEC_PAGE_SIZE;
	void *p = NULL;

	if (!pages || pages > ZP_MAX_CHAIN || bytes % BVEC_PAGE_SIZE)
		return NULL;
	pthread_mutex_lock(&ms->lock);
	if (ms->free_runs[pages]) {
		p = ms->free_runs[pages];
		ms->free_runs[pages] = ms->free_runs[pages]->next;
		goto out;
	}
	if (!ms->chunk || ms->used + bytes > CHUNK_BYTES) {
		void *c;

		if (ms->nchunks == ms->chunks_cap) {
			size_t cap = ms->chunks_cap ? 2 * ms->chunks_cap : 16;
			void **n = realloc(ms->chunks, cap * sizeof(*n));

			if (!n)
				goto out;
			ms->chunks = n;
			ms->chunks_cap = cap;
		}
		c = mmap(NULL, CHUNK_BYTES, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (c == MAP_FAILED)
			goto out;
#ifdef MADV_NOHUGEPAGE
		madvise(c, CHUNK_BYTES, MADV_NOHUGEPAGE);
#endif
		ms->chunks[ms->nchunks++] = c;
		ms->chunk = c;
		ms->used = 0;
	}
	p = ms->chunk + ms->used;
	ms->used += bytes;
out:
	pthread_mutex_unlock(&ms->lock);
	return p;
}

static void mmap_discard(void *ctx, void *mem, size_t bytes)
{
	(void)ctx;
	madvise(mem, bytes, MADV_DONTNEED);
}

static void mmap_free(void *ctx, void *mem, size_t bytes)
{
	struct mmap_source *ms = ctx;
	size_t pages = bytes / BVEC_PAGE_SIZE;
	struct run *r = mem;

	/* Give the memory back before the link is written into its first page. */
	madvise(mem, bytes, MADV_DONTNEED);
	pthread_mutex_lock(&ms->lock);
	r->next = ms->free_runs[pages];
	ms->free_runs[pages] = r;
	pthread_mutex_unlock(&ms->lock);
}

int zp_mmap_source_new(struct zpool_page_source *src)
{
	struct mmap_source *ms = calloc(1, sizeof(*ms));

	if (!ms)
		return -ENOMEM;
	if (pthread_mutex_init(&ms->lock, NULL)) {
		free(ms);
		return -ENOMEM;
	}
	src->alloc = mmap_alloc;
	src->free = mmap_free;
	src->discard = mmap_discard;
	src->ctx = ms;
	src->lazy = true;
	return 0;
}

void zp_mmap_source_delete(struct zpool_page_source *src)
{
	struct mmap_source *ms = src->ctx;
	size_t i;

	for (i = 0; i < ms->nchunks; i++)
		munmap(ms->chunks[i], CHUNK_BYTES);
	free(ms->chunks);
	pthread_mutex_destroy(&ms->lock);
	free(ms);
}

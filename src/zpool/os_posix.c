// SPDX-License-Identifier: MIT
/* POSIX edge of libzpool: pthreads, CPUs, time, mmap. */
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

struct zpool__mutex {
	pthread_mutex_t m;
};

struct zpool__cond {
	pthread_cond_t c;
};

struct zpool__rwlock {
	pthread_rwlock_t l;
};

struct zpool__mutex *zpool__mutex_new(void)
{
	struct zpool__mutex *m = malloc(sizeof(*m));

	if (m && pthread_mutex_init(&m->m, NULL)) {
		free(m);
		return NULL;
	}
	return m;
}

void zpool__mutex_free(struct zpool__mutex *m)
{
	if (!m)
		return;
	pthread_mutex_destroy(&m->m);
	free(m);
}

void zpool__mutex_lock(struct zpool__mutex *m)
{
	pthread_mutex_lock(&m->m);
}

void zpool__mutex_unlock(struct zpool__mutex *m)
{
	pthread_mutex_unlock(&m->m);
}

struct zpool__cond *zpool__cond_new(void)
{
	struct zpool__cond *c = malloc(sizeof(*c));

	if (c && pthread_cond_init(&c->c, NULL)) {
		free(c);
		return NULL;
	}
	return c;
}

void zpool__cond_free(struct zpool__cond *c)
{
	if (!c)
		return;
	pthread_cond_destroy(&c->c);
	free(c);
}

void zpool__cond_wait(struct zpool__cond *c, struct zpool__mutex *m)
{
	pthread_cond_wait(&c->c, &m->m);
}

void zpool__cond_broadcast(struct zpool__cond *c)
{
	pthread_cond_broadcast(&c->c);
}

struct zpool__rwlock *zpool__rwlock_new(void)
{
	struct zpool__rwlock *l = malloc(sizeof(*l));

	if (l && pthread_rwlock_init(&l->l, NULL)) {
		free(l);
		return NULL;
	}
	return l;
}

void zpool__rwlock_free(struct zpool__rwlock *l)
{
	if (!l)
		return;
	pthread_rwlock_destroy(&l->l);
	free(l);
}

void zpool__read_lock(struct zpool__rwlock *l)
{
	pthread_rwlock_rdlock(&l->l);
}

void zpool__write_lock(struct zpool__rwlock *l)
{
	pthread_rwlock_wrlock(&l->l);
}

void zpool__rw_unlock(struct zpool__rwlock *l)
{
	pthread_rwlock_unlock(&l->l);
}

void *zpool__os_alloc(size_t size)
{
	return malloc(size);
}

void *zpool__os_zalloc(size_t size)
{
	return calloc(1, size);
}

void zpool__os_free(void *p)
{
	free(p);
}

/*
 * zram stamps every page it reads or writes, so this runs once a page.
 * Whole seconds need no more than the kernel's tick: the coarse clock
 * skips the time-stamp counter, 6-9 ns a call on this project's VMs
 * against 34-42 ns (2% of a 1 MiB read's CPU over NBD).
 */
unsigned long long zpool__os_seconds(void)
{
	struct timespec ts;

#ifdef CLOCK_MONOTONIC_COARSE
	if (!clock_gettime(CLOCK_MONOTONIC_COARSE, &ts))
		return (unsigned long long)ts.tv_sec;
#endif
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec;
}

void zpool__os_yield(void)
{
	sched_yield();
}

unsigned int zpool__os_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1u : n > 1024 ? 1024u : (unsigned int)n;
}

/*
 * mmap source.  Chunks of 2 MiB are mapped once and carved into runs of 1
 * to ZP_MAX_CHAIN pages, a zspage each; freed runs are discarded
 * (MADV_DONTNEED) and kept for reuse by length.  Untouched pages of a
 * chunk are not resident, which is what lets the pool count only the pages
 * it has written.  Huge pages are refused so that residency stays
 * page-granular.
 *
 * The free runs are remembered in arrays off to the side, never in the
 * runs themselves: a link written into a discarded run would fault its
 * first page back in, resident but no longer counted by the pool (a pool
 * with everything freed held 27 times the memory it reported).  Each
 * array has room for every run of its length ever carved, reserved when
 * the run is carved, so freeing never allocates and cannot fail; that is
 * one pointer per run, at most 1/512 of the address space mapped.
 */
#define CHUNK_BYTES ((size_t)2 << 20)

struct run_stack {
	void **runs;
	size_t n;	/* free runs */
	size_t carved;	/* runs of this length carved: n never exceeds it */
	size_t size;	/* slots in @runs, at least @carved */
};

struct mmap_source {
	pthread_mutex_t lock;
	unsigned char *chunk;	/* current chunk */
	size_t used;		/* bytes carved from it */
	struct run_stack free_runs[ZP_MAX_CHAIN + 1];
	void **chunks;		/* every chunk, for unmapping */
	size_t nchunks, chunks_cap;
};

/*
 * A chunk aligned to BVEC_PAGE_SIZE, as the page source contract asks (a
 * zspage descriptor finds its slab page by masking its address).  mmap()
 * aligns only to the system page: 4 KiB on x86, so with 16 or 64 KiB
 * pages every run was misaligned wherever the kernel does not happen to
 * align 2 MiB anonymous maps (before Linux 6.7, under valgrind), and the
 * first descriptor freed or allocated wrote outside its page.  Map a
 * page more and unmap the misaligned head and the tail.
 */
static void *map_chunk(void)
{
	size_t extra = BVEC_PAGE_SIZE, head;
	unsigned char *c = mmap(NULL, CHUNK_BYTES + extra, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (c == MAP_FAILED)
		return NULL;
	head = (BVEC_PAGE_SIZE - (uintptr_t)c % BVEC_PAGE_SIZE) % BVEC_PAGE_SIZE;
	if (head)
		munmap(c, head);
	if (extra - head)
		munmap(c + head + CHUNK_BYTES, extra - head);
	return c + head;
}

/* Room for one more run in @st, before that run is carved. */
static bool reserve_run(struct run_stack *st)
{
	if (st->carved == st->size) {
		size_t size = st->size ? 2 * st->size : 16;
		void **n = realloc(st->runs, size * sizeof(*n));

		if (!n)
			return false;
		st->runs = n;
		st->size = size;
	}
	st->carved++;
	return true;
}

static void *mmap_alloc(void *ctx, size_t bytes)
{
	struct mmap_source *ms = ctx;
	size_t pages = bytes / BVEC_PAGE_SIZE;
	struct run_stack *st;
	void *p = NULL;

	if (!pages || pages > ZP_MAX_CHAIN || bytes % BVEC_PAGE_SIZE)
		return NULL;
	st = &ms->free_runs[pages];
	pthread_mutex_lock(&ms->lock);
	if (st->n) {
		p = st->runs[--st->n];
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
		c = map_chunk();
		if (!c)
			goto out;
#ifdef MADV_NOHUGEPAGE
		madvise(c, CHUNK_BYTES, MADV_NOHUGEPAGE);
#endif
		ms->chunks[ms->nchunks++] = c;
		ms->chunk = c;
		ms->used = 0;
	}
	if (!reserve_run(st))
		goto out;
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
	struct run_stack *st;

	if (!pages || pages > ZP_MAX_CHAIN)
		return;
	st = &ms->free_runs[pages];
	madvise(mem, bytes, MADV_DONTNEED);
	pthread_mutex_lock(&ms->lock);
	if (st->n < st->carved)	/* always: every carved run has its place */
		st->runs[st->n++] = mem;
	pthread_mutex_unlock(&ms->lock);
}

int zpool__mmap_source_new(struct zpool_page_source *src)
{
	struct mmap_source *ms = calloc(1, sizeof(*ms));

	if (!ms)
		return -ENOMEM;
	if (pthread_mutex_init(&ms->lock, NULL)) {
		free(ms);
		return -ENOMEM;
	}
	memset(src, 0, sizeof(*src));
	src->alloc = mmap_alloc;
	src->free = mmap_free;
	src->discard = mmap_discard;
	src->ctx = ms;
	src->lazy = true;
	return 0;
}

void zpool__mmap_source_delete(struct zpool_page_source *src)
{
	struct mmap_source *ms = src->ctx;
	size_t i;

	for (i = 0; i < ms->nchunks; i++)
		munmap(ms->chunks[i], CHUNK_BYTES);
	for (i = 0; i <= ZP_MAX_CHAIN; i++)
		free(ms->free_runs[i].runs);
	free(ms->chunks);
	pthread_mutex_destroy(&ms->lock);
	free(ms);
}

// SPDX-License-Identifier: MIT
/*
 * A page source over a caller's fixed memory, for embedders without mmap or
 * malloc.  Runs of 1 to ZP_MAX_CHAIN pages are carved in order and recycled
 * by length; a request with no run of its length splits a longer free run.
 *
 * Free runs are linked through their own first bytes, unlike the mmap
 * source's: an arena is not lazy, the caller's block is the pool's memory
 * whether a page is in use or not, and the pool counts a page while it
 * holds it, not while it is resident, so writing into a freed run hides
 * nothing.  With no malloc there is nowhere else to keep the links.
 */
#include "internal.h"

/*
 * The documented minimum, the longest zspage (ZP_MAX_CHAIN) of when it was
 * 16 pages at every page size: kept when zspages of 4 and 16 KiB pages
 * grew to 64, so an arena that worked then still does (at 64 KiB pages
 * ZP_MAX_CHAIN is still 16, 1 MiB).  It is enough to create a pool, not
 * to store in it: the pool's own pages (7 at 4 KiB pages, 4 at 16 KiB, 3
 * at 64 KiB), the table and descriptor pages a first store makes (7) and
 * a default 8-page zspage can need 22, 19 and 18 pages.  A store that does
 * not fit the arena gets -ENOMEM.
 */
#define ARENA_MIN_PAGES 16u

struct free_run {
	struct free_run *next;
};

/* Kept at the start of the caller's block, so the public API has no struct. */
struct zpool_arena {
	unsigned char *base;	/* first page */
	size_t pages;
	size_t next;		/* first never-used page */
	struct free_run *free_runs[ZP_MAX_CHAIN + 1]; /* by length */
	atomic_int lock;
};

static void arena_lock(struct zpool_arena *a)
{
	while (atomic_exchange_explicit(&a->lock, 1, memory_order_acquire))
		;
}

static void arena_unlock(struct zpool_arena *a)
{
	atomic_store_explicit(&a->lock, 0, memory_order_release);
}

static void push_run(struct zpool_arena *a, void *mem, size_t pages)
{
	struct free_run *r = mem;

	r->next = a->free_runs[pages];
	a->free_runs[pages] = r;
}

static void *arena_alloc(void *ctx, size_t bytes)
{
	struct zpool_arena *a = ctx;
	size_t pages = bytes / ZP_PAGE_SIZE, m;
	void *p = NULL;

	if (!pages || pages > ZP_MAX_CHAIN || bytes % ZP_PAGE_SIZE)
		return NULL;
	arena_lock(a);
	if (a->free_runs[pages]) {
		struct free_run *r = a->free_runs[pages];

		a->free_runs[pages] = r->next;
		p = r;
	} else if (a->pages - a->next >= pages) {
		p = a->base + a->next * ZP_PAGE_SIZE;
		a->next += pages;
	} else {
		for (m = pages + 1; m <= ZP_MAX_CHAIN && !a->free_runs[m]; m++)
			;
		if (m <= ZP_MAX_CHAIN) {
			struct free_run *r = a->free_runs[m];

			a->free_runs[m] = r->next;
			p = r;
			push_run(a, (unsigned char *)p + pages * ZP_PAGE_SIZE, m - pages);
		}
	}
	arena_unlock(a);
	return p;
}

static void arena_free(void *ctx, void *mem, size_t bytes)
{
	struct zpool_arena *a = ctx;

	arena_lock(a);
	push_run(a, mem, bytes / ZP_PAGE_SIZE);
	arena_unlock(a);
}

int zpool_arena_init(void *mem, size_t bytes, struct zpool_page_source *source)
{
	const size_t align = _Alignof(struct zpool_arena);
	uintptr_t at = ((uintptr_t)mem + align - 1) & ~(uintptr_t)(align - 1);
	uintptr_t start = (at + sizeof(struct zpool_arena) + ZP_PAGE_SIZE - 1) &
			  ~(uintptr_t)(ZP_PAGE_SIZE - 1);
	uintptr_t end = (uintptr_t)mem + bytes;
	struct zpool_arena *arena = (struct zpool_arena *)at;

	if (!mem || !source || bytes < sizeof(*arena) + align || end < start ||
	    (end - start) / ZP_PAGE_SIZE < ARENA_MIN_PAGES)
		return -EINVAL;
	memset(arena, 0, sizeof(*arena));
	arena->base = (unsigned char *)start;
	arena->pages = (end - start) / ZP_PAGE_SIZE;
	atomic_init(&arena->lock, 0);
	memset(source, 0, sizeof(*source));
	source->alloc = arena_alloc;
	source->free = arena_free;
	source->ctx = arena;
	source->lazy = false;
	return 0;
}

// SPDX-License-Identifier: MIT
/*
 * Pages from the page source, and the growable tables (handles, zspage ids,
 * same-filled words) built from them.  Everything the pool holds passes
 * through zpool__pages_alloc(), which is how mem_used_total counts it all.
 */
#include "internal.h"

void zpool__account(struct zpool *pool, long pages, bool meta)
{
	uint64_t total = atomic_fetch_add(&pool->pages_total, (uint64_t)pages) + (uint64_t)pages;
	uint64_t used = total * ZP_PAGE_SIZE;
	uint64_t max = atomic_load(&pool->mem_used_max);

	if (meta)
		atomic_fetch_add(&pool->meta_pages, (uint64_t)pages);
	while (pages > 0 && used > max &&
	       !atomic_compare_exchange_weak(&pool->mem_used_max, &max, used))
		;
}

void *zpool__pages_alloc(struct zpool *pool, size_t pages, bool meta)
{
	void *p = pool->src.alloc(pool->src.ctx, pages * ZP_PAGE_SIZE);

	if (p && meta)
		zpool__account(pool, (long)pages, true);
	return p;
}

void zpool__pages_free(struct zpool *pool, void *mem, size_t pages, bool meta)
{
	pool->src.free(pool->src.ctx, mem, pages * ZP_PAGE_SIZE);
	if (meta)
		zpool__account(pool, -(long)pages, true);
}

#define DIR_PER_PAGE (ZP_PAGE_SIZE / sizeof(void *))

/* A directory page run also records the previous one, for destroy. */
struct dir_header {
	void *prev;
	size_t pages;
};

static size_t dir_pages(size_t cap)
{
	return (sizeof(struct dir_header) + cap * sizeof(void *) + ZP_PAGE_SIZE - 1) /
	       ZP_PAGE_SIZE;
}

static int grow_dir(struct zpool *pool, struct zp_table *t)
{
	size_t cap = t->dir_cap ? 2 * t->dir_cap : DIR_PER_PAGE - 2;
	size_t pages = dir_pages(cap);
	struct dir_header *h;
	_Atomic(uint64_t) **dir, **old;

	if (pages > ZP_MAX_CHAIN)
		return -ENOMEM;
	h = zpool__pages_alloc(pool, pages, true);
	if (!h)
		return -ENOMEM;
	h->pages = pages;
	h->prev = t->retired;
	dir = (_Atomic(uint64_t) **)(void *)(h + 1);
	old = atomic_load_explicit(&t->dir, memory_order_relaxed);
	if (old)
		memcpy(dir, old, t->nchunks * sizeof(*dir));
	/* Readers may still hold @old: it is retired, not freed. */
	t->retired = h;
	t->dir_cap = cap;
	atomic_store_explicit(&t->dir, dir, memory_order_release);
	return 0;
}

int zpool__table_init(struct zp_table *t)
{
	memset(t, 0, sizeof(*t));
	atomic_init(&t->next_unused, 1);
	return zp_mutex_init(&t->lock);
}

void zpool__table_destroy(struct zpool *pool, struct zp_table *t)
{
	_Atomic(uint64_t) **dir = atomic_load(&t->dir);
	size_t i;

	for (i = 0; i < t->nchunks; i++)
		zpool__pages_free(pool, (void *)dir[i], 1, true);
	while (t->retired) {
		struct dir_header *h = t->retired;

		t->retired = h->prev;
		zpool__pages_free(pool, h, h->pages, true);
	}
	zp_mutex_destroy(&t->lock);
}

uint32_t zpool__table_alloc(struct zpool *pool, struct zp_table *t, uint64_t value)
{
	uint32_t idx = 0;

	zp_mutex_lock(&t->lock);
	if (t->free_head) {
		idx = t->free_head;
		t->free_head = (uint32_t)(atomic_load_explicit(zpool__table_slot(t, idx),
							       memory_order_relaxed) >> ZP_TAG_BITS);
	} else {
		idx = atomic_load_explicit(&t->next_unused, memory_order_relaxed);
		if (idx > t->nchunks * ZP_TABLE_CHUNK) {
			void *chunk;

			idx = 0;
			if (t->nchunks * ZP_TABLE_CHUNK >= UINT32_MAX - ZP_TABLE_CHUNK ||
			    (t->nchunks == t->dir_cap && grow_dir(pool, t)))
				goto out;
			chunk = zpool__pages_alloc(pool, 1, true);
			if (!chunk)
				goto out;
			atomic_load_explicit(&t->dir, memory_order_relaxed)[t->nchunks++] = chunk;
		}
		/* Publishes the chunk pointer to lock-free readers. */
		idx = atomic_fetch_add_explicit(&t->next_unused, 1, memory_order_release);
	}
	atomic_store_explicit(zpool__table_slot(t, idx), value, memory_order_release);
	t->in_use++;
out:
	zp_mutex_unlock(&t->lock);
	return idx;
}

void zpool__table_free(struct zp_table *t, uint32_t idx)
{
	zp_mutex_lock(&t->lock);
	atomic_store_explicit(zpool__table_slot(t, idx),
			      (uint64_t)t->free_head << ZP_TAG_BITS | ZP_TAG_FREE,
			      memory_order_release);
	t->free_head = idx;
	t->in_use--;
	zp_mutex_unlock(&t->lock);
}

bool zpool__table_valid(struct zp_table *t, uint32_t idx)
{
	/* next_unused only grows: an index below it has a chunk behind it. */
	return idx && idx < atomic_load_explicit(&t->next_unused, memory_order_acquire);
}

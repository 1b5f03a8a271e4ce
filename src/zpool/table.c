// SPDX-License-Identifier: MIT
/*
 * Pages from the page source, and the growable tables (handles, zspage ids,
 * same-filled words) built from them.  Everything the pool holds passes
 * through zpool__pages_alloc(), which is how mem_used_total counts it all.
 */
#include "internal.h"

void zpool__account(struct zpool *pool, long pages, bool meta)
{
	atomic_fetch_add(&pool->pages_total, (uint64_t)pages);
	if (meta)
		atomic_fetch_add(&pool->meta_pages, (uint64_t)pages);
}

void zpool__update_max(struct zpool *pool)
{
	uint64_t used = atomic_load(&pool->pages_total) * ZP_PAGE_SIZE;
	uint64_t max = atomic_load(&pool->mem_used_max);

	while (used > max && !atomic_compare_exchange_weak(&pool->mem_used_max, &max, used))
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

_Static_assert(sizeof(struct zp_table_dir) <= ZP_PAGE_SIZE, "a dir is one page");
_Static_assert(sizeof(struct zp_table_mid) <= ZP_PAGE_SIZE, "a mid is one page");
_Static_assert(ZP_TABLE_CHUNK <= UINT16_MAX, "chunk counts fit 16 bits");
_Static_assert((uint64_t)ZP_TABLE_TOP * ZP_TABLE_MIDN * ZP_TABLE_DIRN >= ZP_TABLE_MAX_CHUNKS,
	       "the radix reaches every 32-bit index");

/* Entries chunk @n holds: index 2^32 does not exist, so the last has one less. */
static size_t chunk_entries(uint32_t n)
{
	return n == ZP_TABLE_MAX_CHUNKS - 1 ? ZP_TABLE_CHUNK - 1 : ZP_TABLE_CHUNK;
}

/* Under the table lock every pointer is stable: plain loads will do. */
static struct zp_table_mid *mid_of(struct zp_table *t, uint32_t n)
{
	return atomic_load_explicit(&t->top[n / (ZP_TABLE_DIRN * ZP_TABLE_MIDN)],
				    memory_order_relaxed);
}

static struct zp_table_dir *dir_of(struct zp_table *t, uint32_t n)
{
	struct zp_table_mid *mid = mid_of(t, n);

	return mid ? atomic_load_explicit(&mid->dir[n / ZP_TABLE_DIRN % ZP_TABLE_MIDN],
					  memory_order_relaxed) : NULL;
}

static struct zp_chunk_info *info_of(struct zp_table *t, uint32_t n)
{
	return &dir_of(t, n)->info[n % ZP_TABLE_DIRN];
}

static bool chunk_present(struct zp_table *t, uint32_t n)
{
	struct zp_table_dir *dir = dir_of(t, n);

	return dir && atomic_load_explicit(&dir->chunk[n % ZP_TABLE_DIRN], memory_order_relaxed);
}

static void partial_push(struct zp_table *t, uint32_t n)
{
	struct zp_chunk_info *ci = info_of(t, n);

	ci->partial = 1;
	ci->prev = 0;
	ci->next = t->partial;
	if (t->partial)
		info_of(t, t->partial - 1)->prev = n + 1;
	t->partial = n + 1;
}

static void partial_remove(struct zp_table *t, uint32_t n)
{
	struct zp_chunk_info *ci = info_of(t, n);

	if (ci->prev)
		info_of(t, ci->prev - 1)->next = ci->next;
	else
		t->partial = ci->next;
	if (ci->next)
		info_of(t, ci->next - 1)->prev = ci->prev;
	ci->next = ci->prev = 0;
	ci->partial = 0;
}

/* The lowest chunk position with no chunk, or ZP_TABLE_MAX_CHUNKS. */
static uint32_t free_position(struct zp_table *t)
{
	uint32_t n = t->hole, end = atomic_load_explicit(&t->nchunks, memory_order_relaxed);

	while (n < end && chunk_present(t, n))
		n++;
	t->hole = n;
	return n;
}

/* Pages a new chunk at @n needs: the chunk, and its dir and mid if missing. */
static size_t new_chunk_cost(struct zp_table *t, uint32_t n)
{
	if (n >= ZP_TABLE_MAX_CHUNKS)
		return 0;
	if (!mid_of(t, n))
		return 3;
	return dir_of(t, n) ? 1 : 2;
}

/* Zeroed, counted metadata pages: readers must find NULLs, never garbage. */
static void *zeroed_page(struct zpool *pool)
{
	void *p = zpool__pages_alloc(pool, 1, true);

	if (p)
		memset(p, 0, ZP_PAGE_SIZE);
	return p;
}

/* A chunk at position @n, with its dir and mid; nothing is left half made. */
static int add_chunk(struct zpool *pool, struct zp_table *t, uint32_t n)
{
	_Atomic(struct zp_table_mid *) *topp = &t->top[n / (ZP_TABLE_DIRN * ZP_TABLE_MIDN)];
	struct zp_table_mid *mid = mid_of(t, n);
	struct zp_table_dir *dir = NULL;
	bool new_mid = false, new_dir = false;
	void *chunk;

	if (n >= ZP_TABLE_MAX_CHUNKS)
		return -ENOMEM;
	if (!mid) {
		mid = zeroed_page(pool);
		if (!mid)
			return -ENOMEM;
		new_mid = true;
	} else {
		dir = dir_of(t, n);
	}
	if (!dir) {
		dir = zeroed_page(pool);
		if (!dir)
			goto fail_mid;
		new_dir = true;
	}
	chunk = zeroed_page(pool);
	if (!chunk)
		goto fail_dir;
	memset(&dir->info[n % ZP_TABLE_DIRN], 0, sizeof(dir->info[0]));
	dir->live++;
	/* Published bottom-up, each page before the pointer that leads to it. */
	atomic_store_explicit(&dir->chunk[n % ZP_TABLE_DIRN], chunk, memory_order_release);
	if (new_dir) {
		mid->live++;
		atomic_store_explicit(&mid->dir[n / ZP_TABLE_DIRN % ZP_TABLE_MIDN], dir,
				      memory_order_release);
	}
	if (new_mid)
		atomic_store_explicit(topp, mid, memory_order_release);
	if (n >= atomic_load_explicit(&t->nchunks, memory_order_relaxed))
		atomic_store_explicit(&t->nchunks, n + 1, memory_order_release);
	return 0;
fail_dir:
	if (new_dir)
		zpool__pages_free(pool, dir, 1, true);
fail_mid:
	if (new_mid)
		zpool__pages_free(pool, mid, 1, true);
	return -ENOMEM;
}

/*
 * Chunk @n has no entry in use: unpublish it (and a dir or mid it leaves
 * empty), move gen so lock-free lookups that may have seen those pages
 * look again, and only then give the pages back.
 */
static void remove_chunk(struct zpool *pool, struct zp_table *t, uint32_t n)
{
	_Atomic(struct zp_table_mid *) *topp = &t->top[n / (ZP_TABLE_DIRN * ZP_TABLE_MIDN)];
	struct zp_table_mid *mid = mid_of(t, n);
	struct zp_table_dir *dir = dir_of(t, n);
	void *chunk = (void *)zpool__table_chunk(t, n);
	bool free_dir = false, free_mid = false;

	atomic_store_explicit(&dir->chunk[n % ZP_TABLE_DIRN], NULL, memory_order_relaxed);
	if (!--dir->live) {
		free_dir = true;
		atomic_store_explicit(&mid->dir[n / ZP_TABLE_DIRN % ZP_TABLE_MIDN], NULL,
				      memory_order_relaxed);
		if (!--mid->live) {
			free_mid = true;
			atomic_store_explicit(topp, NULL, memory_order_relaxed);
		}
	}
	atomic_fetch_add_explicit(&t->gen, 1, memory_order_release);
	zpool__pages_free(pool, chunk, 1, true);
	if (free_dir)
		zpool__pages_free(pool, dir, 1, true);
	if (free_mid)
		zpool__pages_free(pool, mid, 1, true);
	if (n < t->hole)
		t->hole = n;
}

int zpool__table_init(struct zp_table *t)
{
	memset(t, 0, sizeof(*t));
	t->lock = zpool__mutex_new();
	return t->lock ? 0 : -ENOMEM;
}

void zpool__table_destroy(struct zpool *pool, struct zp_table *t)
{
	uint32_t n, nchunks = atomic_load(&t->nchunks);

	for (n = 0; n < nchunks; n++)
		if (chunk_present(t, n))
			remove_chunk(pool, t, n);
	zpool__mutex_free(t->lock);
}

void zpool__table_for_each(struct zp_table *t,
			   bool (*fn)(_Atomic(uint64_t) *slotp, uint64_t e, void *arg),
			   void *arg)
{
	uint32_t n, nch = zpool__table_nchunks(t);
	bool more = true;

	for (n = 0; n < nch && more; n++) {
		_Atomic(uint64_t) *chunk;
		size_t i, entries = chunk_entries(n);

		/* Lock per chunk, not for the whole walk, so stores and loads
		 * of other chunks are not held up by a long scan. */
		zpool__mutex_lock(t->lock);
		chunk = zpool__table_chunk(t, n);
		for (i = 0; chunk && i < entries && more; i++)
			more = fn(&chunk[i], atomic_load_explicit(&chunk[i], memory_order_acquire),
				  arg);
		zpool__mutex_unlock(t->lock);
	}
}

size_t zpool__table_alloc_cost(struct zp_table *t)
{
	size_t cost = 0;

	zpool__mutex_lock(t->lock);
	if (!t->partial)
		cost = new_chunk_cost(t, free_position(t));
	zpool__mutex_unlock(t->lock);
	return cost;
}

uint32_t zpool__table_alloc_pages(struct zpool *pool, struct zp_table *t, uint64_t value,
				  size_t *pages)
{
	struct zp_chunk_info *ci;
	_Atomic(uint64_t) *chunk;
	uint32_t n, e, idx = 0;
	size_t added = 0;

	zpool__mutex_lock(t->lock);
	if (t->partial) {
		n = t->partial - 1;
	} else {
		n = free_position(t);
		added = new_chunk_cost(t, n);
		if (add_chunk(pool, t, n))
			goto out;
	}
	ci = info_of(t, n);
	chunk = zpool__table_chunk(t, n);
	if (ci->free_head) {
		e = ci->free_head - 1u;
		ci->free_head = (uint16_t)(atomic_load_explicit(&chunk[e], memory_order_relaxed) >>
					   ZP_TAG_BITS);
	} else {
		e = ci->bump++;
	}
	ci->in_use++;
	if (ci->in_use == chunk_entries(n)) {
		if (ci->partial)
			partial_remove(t, n);
	} else if (!ci->partial) {
		partial_push(t, n);
	}
	atomic_store_explicit(&chunk[e], value, memory_order_release);
	idx = (uint32_t)(n * ZP_TABLE_CHUNK + e + 1);
	if (pages)
		*pages = added;
out:
	zpool__mutex_unlock(t->lock);
	return idx;
}

uint32_t zpool__table_alloc(struct zpool *pool, struct zp_table *t, uint64_t value)
{
	return zpool__table_alloc_pages(pool, t, value, NULL);
}

void zpool__table_free(struct zpool *pool, struct zp_table *t, uint32_t idx)
{
	uint32_t n = (uint32_t)((idx - 1u) / ZP_TABLE_CHUNK);
	uint32_t e = (uint32_t)((idx - 1u) % ZP_TABLE_CHUNK);
	struct zp_chunk_info *ci;
	_Atomic(uint64_t) *chunk;

	zpool__mutex_lock(t->lock);
	ci = info_of(t, n);
	chunk = zpool__table_chunk(t, n);
	atomic_store_explicit(&chunk[e], (uint64_t)ci->free_head << ZP_TAG_BITS | ZP_TAG_FREE,
			      memory_order_release);
	ci->free_head = (uint16_t)(e + 1);
	ci->in_use--;
	if (!ci->in_use) {
		if (ci->partial)
			partial_remove(t, n);
		remove_chunk(pool, t, n);
	} else if (!ci->partial) {
		partial_push(t, n);
	}
	zpool__mutex_unlock(t->lock);
}

/* SPDX-License-Identifier: MIT */
/* Pools for the zpool tests, and a page source that fails when told to. */
#ifndef BVEC_TEST_POOLS_H
#define BVEC_TEST_POOLS_H

#include <libbvec/zpool.h>

#include "pages.h"

/* A pool of @comp (NULL: the default) with @flags over @src (NULL: mmap). */
static inline struct zpool *new_pool(const char *comp, unsigned int flags,
				     const struct zpool_page_source *src)
{
	struct zpool_config cfg = ZPOOL_CONFIG_INIT;
	struct zpool *pool;

	cfg.compressor = comp;
	cfg.flags = flags;
	cfg.page_source = src;
	pool = zpool_create(&cfg);
	ck_assert_ptr_nonnull(pool);
	return pool;
}

/* @st, from zpool_stats() or zram_mm_stat(), counts no data at all. */
static inline void assert_no_data(const struct zpool_stats *st)
{
	ck_assert_uint_eq(st->orig_data_size, 0);
	ck_assert_uint_eq(st->compr_data_size, 0);
	ck_assert_uint_eq(st->same_pages, 0);
	ck_assert_uint_eq(st->huge_pages, 0);
	ck_assert_uint_eq(st->objects, 0);
}

/*
 * Set arena_src with zpool_arena_init() and point a zpool_page_source at
 * failing_alloc(), failing_free() and the struct.  Allocations are numbered
 * from 1 in @calls; the one numbered @fail_at fails, and every multiple of
 * @fail_every (either 0: none).  @outstanding counts pages handed out and
 * not given back.
 */
struct failing_source {
	struct zpool_page_source arena_src;
	long calls, fail_at, fail_every, outstanding;
};

static inline void *failing_alloc(void *ctx, size_t bytes)
{
	struct failing_source *f = ctx;
	void *p;

	f->calls++;
	if (f->calls == f->fail_at || (f->fail_every && f->calls % f->fail_every == 0))
		return NULL;
	p = f->arena_src.alloc(f->arena_src.ctx, bytes);
	if (p)
		f->outstanding += (long)(bytes / PG);
	return p;
}

static inline void failing_free(void *ctx, void *mem, size_t bytes)
{
	struct failing_source *f = ctx;

	f->outstanding -= (long)(bytes / PG);
	f->arena_src.free(f->arena_src.ctx, mem, bytes);
}

#endif

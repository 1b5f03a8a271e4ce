/* SPDX-License-Identifier: MIT */
/*
 * Pools and zram devices for the zpool and zram tests, a page source that
 * fails when told to, and a RAM disk to back a device.
 */
#ifndef BVEC_TEST_POOLS_H
#define BVEC_TEST_POOLS_H

#include <pthread.h>
#include <unistd.h>

#include <libbvec/zpool.h>
#include <libbvec/zram.h>

#include "pages.h"
#include "zpool/zram_internal.h"

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


/* A zram device of @pages pages over a pool of @comp (NULL: the default) with @flags. */
static inline struct zram *new_zram_dev(uint64_t pages, const char *comp, uint32_t flags)
{
	struct zram_config cfg = ZRAM_CONFIG_INIT;
	struct zram *z;

	cfg.disksize = pages * PG;
	cfg.pool.compressor = comp;
	cfg.pool.flags = flags;
	z = zram_create(&cfg);
	ck_assert_ptr_nonnull(z);
	return z;
}

/* Bytes [@off, @off + @len) of @z's disk from or to @mem; NULL for discard or write-zeroes. */
static inline int zram_io(struct zram *z, blk_opf_t op, uint64_t off, void *mem,
			  unsigned int len)
{
	struct bio_vec table[1];
	struct bio bio;
	int ret;

	bio_init(&bio, zram_disk(z)->part0, table, 1, op);
	bio.bi_iter.bi_sector = off >> 9;
	if (mem)
		ck_assert_int_eq(bio_add_virt(&bio, mem, len), (int)len);
	else
		bio.bi_iter.bi_size = len;
	ret = submit_bio_wait(&bio);
	bio_uninit(&bio);
	return ret;
}

/* @n whole pages from page @index, in one bio of one segment. */
static inline int zram_pages_io(struct zram *z, blk_opf_t op, uint64_t index, void *mem,
				unsigned int n)
{
	return zram_io(z, op, index * PG, mem, n * (unsigned int)PG);
}

/* The secondary algorithm that beats lz4 on text: zstd where built. */
static inline const char *strong(void)
{
	return zpool_has_compressor("zstd") ? "zstd" : "lz4hc";
}

/* A page's slot flags (ZRAM_RECOMP, ZRAM_IDLE, ...); 0 for a page never written. */
static inline uint32_t flags_of(struct zram *z, uint64_t index)
{
	struct zram_slot *s = zram__slot_get(z, index, false);

	return s ? atomic_load(&s->flags) : 0;
}

/* A page's object handle; 0 for a page never written. */
static inline uint32_t handle_of(struct zram *z, uint64_t index)
{
	struct zram_slot *s = zram__slot_get(z, index, false);

	return s ? s->handle : 0;
}

/* The group a page belongs to (1-based), or 0 when it is not a member. */
static inline uint32_t group_of_page(struct zram *z, uint64_t i)
{
	uint32_t h = handle_of(z, i);
	uint64_t e;

	if (!h || (flags_of(z, i) & ZRAM_WB))
		return 0;
	e = zpool__table_get(&z->pool->handles, h);
	return zp_entry_is_member(e) ? zp_entry_same_index(e) + 1 : 0;
}

/* The codec id that wrote page @i's object (its group's): 0 for the primary algorithm. */
static inline unsigned int codec_of(struct zram *z, uint64_t i)
{
	struct zpool *pool = z->pool;
	uint32_t h = handle_of(z, i);
	uint64_t e = zpool__table_get(&pool->handles, h);
	const struct size_class *c;
	struct zspage *zsp;

	if (zp_entry_is_member(e)) {
		h = zp_group_handle(zpool__table_get(&pool->groups, zp_entry_same_index(e)));
		e = zpool__table_get(&pool->handles, h);
	}
	ck_assert_int_eq(zp_entry_tag(e), ZP_TAG_OBJ);
	if (!zp_entry_has_codec(e))
		return 0;
	c = pool->classes[zp_entry_class(e)];
	zsp = zpool__zspage(pool, zp_entry_zspage(e));
	return zpool__obj_addr(c, zsp, zp_entry_slot(e))[0];
}

/*
 * With no I/O in flight: the counters of @z's pool against what the slots
 * of its first @pages pages reference, so that a leaked or doubly freed
 * object or group reference shows.  Every object is counted once (a
 * group's once for all its pages), each group's references equal its
 * pages in slots, and compr_data_size, huge_pages, same_pages and objects
 * add up; a zero page (ZRAM_ZERO) has no handle and counts as a same-filled object.  @stored: pages the caller's model says hold data (UINT64_MAX:
 * not known).  Returns the size-class bytes of those objects: the memory
 * they hold, whatever zspage packing adds to it.
 */
static inline uint64_t check_accounting(struct zram *z, uint64_t pages, uint64_t stored)
{
	uint32_t *seen = calloc(pages * 2 + 1, sizeof(*seen));
	uint32_t *grp = calloc(pages + 1, sizeof(*grp));
	uint32_t *grefs = calloc(pages + 1, sizeof(*grefs));
	size_t nseen = 0, ngrp = 0, k;
	uint64_t i, compr = 0, huge = 0, objs = 0, wb = 0, same = 0, zero = 0, held = 0;
	struct zpool_stats st;

	ck_assert(seen && grp && grefs);
	for (i = 0; i < pages; i++) {
		uint32_t h = handle_of(z, i), oh;
		uint64_t e;

		if (flags_of(z, i) & ZRAM_ZERO) {
			ck_assert_msg(!h, "zero page %llu has handle %u", (unsigned long long)i, h);
			zero++;
			continue;
		}
		if (!h)
			continue;
		if (flags_of(z, i) & ZRAM_WB) {
			wb++;
			continue;
		}
		objs++;
		e = zpool__table_get(&z->pool->handles, h);
		ck_assert_msg(zp_entry_tag(e) == ZP_TAG_OBJ || zp_entry_tag(e) == ZP_TAG_SAME,
			      "page %llu: dead handle %u", (unsigned long long)i, h);
		if (zp_entry_is_member(e)) {
			uint32_t g = zp_entry_same_index(e);
			uint64_t w = zpool__table_get(&z->pool->groups, g);

			for (k = 0; k < ngrp && grp[k] != g; k++)
				;
			if (k == ngrp) {
				grp[ngrp] = g;
				grefs[ngrp++] = 0;
			}
			grefs[k]++;
			ck_assert_uint_le(zp_group_refs(w), zp_group_pages(w));
			oh = zp_group_handle(w);
		} else if (zp_entry_tag(e) == ZP_TAG_SAME) {
			same++;
			continue;
		} else {
			oh = h;
		}
		for (k = 0; k < nseen && seen[k] != oh; k++)
			;
		if (k < nseen)
			continue;
		seen[nseen++] = oh;
		e = zpool__table_get(&z->pool->handles, oh);
		ck_assert_int_eq(zp_entry_tag(e), ZP_TAG_OBJ);
		compr += zpool_obj_size(z->pool, oh);
		held += z->pool->classes[zp_entry_class(e)]->size;
		huge += z->pool->classes[zp_entry_class(e)]->huge;
	}
	for (k = 0; k < ngrp; k++) {
		uint64_t w = zpool__table_get(&z->pool->groups, grp[k]);

		ck_assert_msg(zp_group_refs(w) == grefs[k], "group %u: %u refs, %u pages in slots",
			      grp[k], (unsigned int)zp_group_refs(w), grefs[k]);
	}
	zram_mm_stat(z, &st);
	ck_assert_uint_eq(st.compr_data_size, compr);
	ck_assert_uint_eq(st.huge_pages, huge);
	ck_assert_uint_eq(st.same_pages, same + zero);
	ck_assert_uint_eq(st.objects, objs + zero);
	ck_assert_uint_eq(st.orig_data_size, (objs + wb + zero) * PG);
	ck_assert_uint_le(st.mem_used_total, st.mem_used_max);
	if (stored != UINT64_MAX)
		ck_assert_uint_eq(objs + wb + zero, stored);
	free(seen);
	free(grp);
	free(grefs);
	return held;
}

/*
 * A RAM disk for a backing device that can fail reads or writes and can
 * complete bios on a thread of its own, after a delay, like real hardware.
 */
struct tdisk {
	struct gendisk *disk;
	unsigned char *mem;
	atomic_bool fail_reads, fail_writes;
	atomic_bool hold; /* the thread serves nothing while set */
	atomic_bool hold_reads; /* the thread sets reads aside while set */
	atomic_int held;
	bool async;
	pthread_t thread;
	pthread_mutex_t mu;
	struct bio_list queue;
	bool stop;
	atomic_int inflight, max_inflight;
};

static inline void tdisk_serve(struct tdisk *t, struct bio *bio)
{
	uint64_t pos = bio->bi_iter.bi_sector << 9;
	bool write = op_is_write(bio->bi_opf);
	struct bvec_iter iter;
	struct bio_vec bv;

	if (write ? atomic_load(&t->fail_writes) : atomic_load(&t->fail_reads)) {
		bio->bi_status = BLK_STS_IOERR;
	} else {
		bio_for_each_segment(bv, bio, iter) {
			if (write)
				memcpy(t->mem + pos, bvec_virt(&bv), bv.bv_len);
			else
				memcpy(bvec_virt(&bv), t->mem + pos, bv.bv_len);
			pos += bv.bv_len;
		}
	}
	atomic_fetch_sub(&t->inflight, 1);
	bio_endio(bio);
}

static inline void *tdisk_thread(void *arg)
{
	struct tdisk *t = arg;
	struct bio_list held;
	struct bio *bio;
	bool stop;

	bio_list_init(&held);
	for (;;) {
		pthread_mutex_lock(&t->mu);
		bio = bio_list_pop(&t->queue);
		stop = t->stop;
		pthread_mutex_unlock(&t->mu);
		if (!bio && !atomic_load(&t->hold_reads))
			bio = bio_list_pop(&held);
		if (!bio) {
			if (stop && bio_list_empty(&held))
				break;
			usleep(50);
			continue;
		}
		if (!op_is_write(bio->bi_opf) && atomic_load(&t->hold_reads)) {
			bio_list_add(&held, bio);
			atomic_fetch_add(&t->held, 1);
			continue;
		}
		usleep(20); /* a device's latency: lets a batch queue up */
		while (atomic_load(&t->hold))
			usleep(50);
		tdisk_serve(t, bio);
	}
	return NULL;
}

static inline void tdisk_submit(struct bio *bio)
{
	struct tdisk *t = bio->bi_bdev->bd_disk->private_data;
	int n = atomic_fetch_add(&t->inflight, 1) + 1, m = atomic_load(&t->max_inflight);

	while (n > m && !atomic_compare_exchange_weak(&t->max_inflight, &m, n))
		;
	if (!t->async) {
		tdisk_serve(t, bio);
		return;
	}
	pthread_mutex_lock(&t->mu);
	bio_list_add(&t->queue, bio);
	pthread_mutex_unlock(&t->mu);
}

static const struct block_device_operations tdisk_fops = { .submit_bio = tdisk_submit };

static inline struct tdisk *tdisk_new(uint64_t pages, bool async)
{
	struct tdisk *t = calloc(1, sizeof(*t));
	struct queue_limits lim;

	ck_assert_ptr_nonnull(t);
	t->mem = calloc(pages ? pages : 1, PG);
	ck_assert_ptr_nonnull(t->mem);
	blk_set_stacking_limits(&lim);
	t->disk = blk_alloc_disk(&lim, -1);
	ck_assert_ptr_nonnull(t->disk);
	t->disk->fops = &tdisk_fops;
	t->disk->private_data = t;
	set_capacity(t->disk, pages * (PG / 512));
	t->async = async;
	bio_list_init(&t->queue);
	pthread_mutex_init(&t->mu, NULL);
	if (async)
		ck_assert_int_eq(pthread_create(&t->thread, NULL, tdisk_thread, t), 0);
	return t;
}

static inline void tdisk_free(struct tdisk *t)
{
	if (t->async) {
		pthread_mutex_lock(&t->mu);
		t->stop = true;
		pthread_mutex_unlock(&t->mu);
		pthread_join(t->thread, NULL);
	}
	put_disk(t->disk);
	free(t->mem);
	free(t);
}

#endif

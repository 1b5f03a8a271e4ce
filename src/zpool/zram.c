// SPDX-License-Identifier: MIT
/*
 * A zram-style block device: a slot per page of disksize holding a libzpool
 * handle, a disk of libbvec's device model whose submit_bio walks bios like
 * a kernel driver does, and zram's statistics.
 */
#include <stdio.h>

#include "zram_internal.h"

/* Sub-page I/O needs a whole page to decompress into or to patch. */
static _Thread_local unsigned char scratch[BVEC_PAGE_SIZE];

/*
 * The pool sees the caller's limit less the slot table, so that the limit
 * bounds everything mem_used_total reports.  A table already over the
 * limit leaves the pool one byte: every store is refused, as it should be.
 */
static void apply_limit(struct zram *z)
{
	uint64_t lim, table;

	zpool__mutex_lock(z->limit_lock);
	lim = atomic_load(&z->mem_limit);
	table = atomic_load(&z->table_pages) * ZP_PAGE_SIZE;
	z->pool_cfg.mem_limit = !lim ? 0 : lim > table ? lim - table : 1;
	if (z->pool)
		zpool_set_mem_limit(z->pool, z->pool_cfg.mem_limit);
	zpool__mutex_unlock(z->limit_lock);
}

static void *node_alloc(struct zram *z)
{
	void *p = z->src.alloc ? z->src.alloc(z->src.ctx, ZP_PAGE_SIZE) :
				 zpool__os_alloc(ZP_PAGE_SIZE);

	if (!p)
		return NULL;
	memset(p, 0, ZP_PAGE_SIZE);
	atomic_fetch_add(&z->table_pages, 1);
	return p;
}

static void node_free(struct zram *z, void *p)
{
	if (z->src.alloc)
		z->src.free(z->src.ctx, p, ZP_PAGE_SIZE);
	else
		zpool__os_free(p);
	atomic_fetch_sub(&z->table_pages, 1);
}

/* Free the subtree under @node, @level inner levels deep; not @node itself. */
static void subtree_free(struct zram *z, void *node, unsigned int level)
{
	zram_node_ptr *ptrs = node;
	size_t i;

	if (!level)
		return;
	for (i = 0; i < PTRS_PER_NODE; i++) {
		void *child = atomic_load_explicit(&ptrs[i], memory_order_relaxed);

		if (child) {
			subtree_free(z, child, level - 1);
			node_free(z, child);
			atomic_store_explicit(&ptrs[i], NULL, memory_order_relaxed);
		}
	}
}

/*
 * The slot of page @index, or NULL if its leaf does not exist and @create is
 * false, or could not be allocated.  A new node's zeroes are published by the
 * release of the compare-and-swap; the loser of a race frees its node.
 */
struct zram_slot *zram__slot_get(struct zram *z, uint64_t index, bool create)
{
	void *node = z->root;
	unsigned int level;

	for (level = z->depth; level > 0; level--) {
		zram_node_ptr *p = &((zram_node_ptr *)node)[index / z->span[level - 1]];
		void *child = atomic_load_explicit(p, memory_order_acquire);

		index %= z->span[level - 1];
		if (!child) {
			void *expected = NULL;

			if (!create)
				return NULL;
			child = node_alloc(z);
			if (!child)
				return NULL;
			if (atomic_compare_exchange_strong_explicit(p, &expected, child,
								    memory_order_acq_rel,
								    memory_order_acquire)) {
				apply_limit(z);
			} else {
				/*
				 * The winner's update may have counted this copy:
				 * update again once it is gone, or the pool's
				 * limit stays a page short until the next change.
				 */
				node_free(z, child);
				apply_limit(z);
				child = expected;
			}
		}
		node = child;
	}
	return &((struct zram_slot *)node)[index];
}

static void leaves_walk(struct zram *z, void *node, unsigned int level, uint64_t base,
			zram__slot_fn fn, void *arg)
{
	zram_node_ptr *ptrs = node;
	uint64_t i;

	if (!level) {
		for (i = 0; i < SLOTS_PER_LEAF && base + i < z->nr_pages; i++)
			fn(z, &((struct zram_slot *)node)[i], base + i, arg);
		return;
	}
	for (i = 0; i < PTRS_PER_NODE; i++) {
		void *child = atomic_load_explicit(&ptrs[i], memory_order_acquire);

		if (child)
			leaves_walk(z, child, level - 1, base + i * z->span[level - 1], fn, arg);
	}
}

void zram__slots_walk(struct zram *z, zram__slot_fn fn, void *arg)
{
	leaves_walk(z, z->root, z->depth, 0, fn, arg);
}

uint32_t zram__slot_swap(struct zram *z, struct zram_slot *s, uint32_t handle, bool zero)
{
	uint32_t old = s->handle;
	/* Clearing ZRAM_UNDER_WB tells a writeback in flight that the page changed. */
	uint32_t f = atomic_fetch_and_explicit(
		&s->flags, ~(ZRAM_WB | ZRAM_UNDER_WB | ZRAM_ZERO | ZRAM_RECOMP_FLAGS),
		memory_order_relaxed);

	if (zero)
		atomic_fetch_or_explicit(&s->flags, ZRAM_ZERO, memory_order_relaxed);
	if (zero && !(f & ZRAM_ZERO))
		atomic_fetch_add(&z->zero_pages, 1);
	else if (!zero && (f & ZRAM_ZERO))
		atomic_fetch_sub(&z->zero_pages, 1);
	s->handle = handle;
	slot_touch(z, s);
	if (f & ZRAM_WB) {
		/* A block of the backing disk, not a handle of the pool. */
		zram__wb_release(z, old);
		return 0;
	}
	return old;
}

/*
 * Bytes [@off, @off + @len) of page @index into @dst.  A written-back page
 * is read by a child of @bio that completes later; the block is pinned
 * under the slot's lock so that it cannot be reused before that read.
 */
static int read_page(struct zram *z, struct bio *bio, uint64_t index, unsigned int off,
		     void *dst, unsigned int len)
{
	struct zram_slot *s = zram__slot_get(z, index, false);
	unsigned char *page = !off && len == ZP_PAGE_SIZE ? dst : scratch;
	uint32_t hblk = 0;
	int ret = 0;

	if (!s) {
		/* No leaf: never written since creation or reset. */
		memset(dst, 0, len);
		return 0;
	}
	slot_lock(s);
	if (atomic_load_explicit(&s->flags, memory_order_relaxed) & ZRAM_WB) {
		hblk = s->handle;
		ret = zram__wb_pin(z, hblk);
	} else if (s->handle) {
		ret = zpool_load(z->pool, s->handle, page);
	} else {
		memset(page, 0, ZP_PAGE_SIZE);
	}
	slot_touch(z, s);
	slot_unlock(s);
	if (hblk && !ret)
		return zram__wb_read(z, bio, hblk, off, dst, len);
	if (ret)
		atomic_fetch_add(&z->failed_reads, 1);
	else if (page != dst)
		memcpy(dst, scratch + off, len);
	return ret;
}

int zram__cand_cmp(const void *a, const void *b)
{
	const struct zram__cand *x = a, *y = b;

	if (x->size != y->size)
		return x->size < y->size ? 1 : -1;
	return x->index < y->index ? -1 : x->index > y->index;
}

uint32_t zram__page_bytes(struct zram *z, uint32_t handle)
{
	if (zpool__obj_class_size(z->pool, handle))
		return (uint32_t)zpool_obj_size(z->pool, handle);
	return (uint32_t)zpool__obj_share(z->pool, handle);
}

static bool all_zero(const unsigned char *p, size_t len)
{
	return !len || (!p[0] && !memcmp(p, p + 1, len - 1));
}

int zram__store_page(struct zram *z, const void *page, uint32_t *handle, bool *zero)
{
	zpool_handle_t h;
	int ret;

	*handle = 0;
	*zero = all_zero(page, ZP_PAGE_SIZE);
	if (*zero)
		return 0;
	ret = zpool_store(z->pool, page, &h);
	if (ret) {
		atomic_fetch_add(&z->failed_writes, 1);
		return ret;
	}
	*handle = (uint32_t)h;
	return 0;
}

/* The slot a write needs; a table page that cannot be had fails the write. */
static struct zram_slot *slot_for_write(struct zram *z, uint64_t index)
{
	struct zram_slot *s = zram__slot_get(z, index, true);

	if (!s)
		atomic_fetch_add(&z->failed_writes, 1);
	return s;
}

/*
 * A whole page is compressed and stored before the slot is locked, so
 * writers of different pages never wait for each other's compression.  A
 * zero page is only a mark in the slot, as in the kernel's zram: it needs
 * no memory, so it is never refused.
 */
static int write_page(struct zram *z, uint64_t index, const void *src)
{
	struct zram_slot *s = slot_for_write(z, index);
	uint32_t h, old;
	bool zero;
	int ret;

	if (!s)
		return -ENOMEM;
	ret = zram__store_page(z, src, &h, &zero);
	if (ret)
		return ret;
	slot_lock(s);
	old = zram__slot_swap(z, s, h, zero);
	slot_unlock(s);
	if (old)
		zpool_free(z->pool, old);
	return 0;
}

/*
 * How many of @nr pages at @p, from the first, are not zero; at least 1.
 * A zero page ends a group: it is a mark in its slot, not part of an object.
 */
static unsigned int nonzero_pages(const unsigned char *p, unsigned int nr)
{
	unsigned int i = 0;

	while (i < nr && !all_zero(p + (size_t)i * ZP_PAGE_SIZE, ZP_PAGE_SIZE))
		i++;
	return i ? i : 1;
}

/*
 * Pages @index.. @index + @nr - 1, whole, from @src: stored together (the
 * pool compresses them as one object when ZPOOL_F_MULTI_PAGE is set), then
 * put in their slots one at a time, each page as atomic as write_page()'s.
 */
static int write_pages(struct zram *z, uint64_t index, const unsigned char *src,
		       unsigned int nr)
{
	struct zram_slot *s[ZP_GROUP_PAGES];
	zpool_handle_t h[ZP_GROUP_PAGES];
	unsigned int i;
	uint32_t old;
	int ret;

	for (i = 0; i < nr; i++) {
		s[i] = slot_for_write(z, index + i);
		if (!s[i])
			return -ENOMEM;
	}
	ret = zpool_store_pages(z->pool, src, nr, h);
	if (ret) {
		atomic_fetch_add(&z->failed_writes, 1);
		return ret;
	}
	for (i = 0; i < nr; i++) {
		slot_lock(s[i]);
		old = zram__slot_swap(z, s[i], (uint32_t)h[i], false);
		slot_unlock(s[i]);
		if (old)
			zpool_free(z->pool, old);
	}
	return 0;
}

/*
 * Pages @index.. @index + @nr - 1, whole, into @dst, so that the pages of a
 * group are decompressed once, not once per page.  Their slots are locked
 * in ascending order (no other path holds two) for zpool_load_pages() to
 * find every handle alive.  1 if a page is on the backing disk or has no
 * leaf: nothing was read, and the caller reads page by page.
 */
static int read_pages(struct zram *z, uint64_t index, unsigned char *dst, unsigned int nr)
{
	struct zram_slot *s[ZP_GROUP_PAGES];
	zpool_handle_t h[ZP_GROUP_PAGES];
	unsigned int i, j, locked;
	int ret = 0;

	for (i = 0; i < nr; i++) {
		s[i] = zram__slot_get(z, index + i, false);
		if (!s[i])
			return 1;
	}
	for (locked = 0; locked < nr && !ret; locked++) {
		slot_lock(s[locked]);
		if (atomic_load_explicit(&s[locked]->flags, memory_order_relaxed) & ZRAM_WB)
			ret = 1;
		h[locked] = s[locked]->handle;
	}
	/* Runs of stored pages between pages with no handle (never written, or zero). */
	for (i = 0; !ret && i < nr; i = j) {
		if (!h[i]) {
			memset(dst + (size_t)i * ZP_PAGE_SIZE, 0, ZP_PAGE_SIZE);
			j = i + 1;
			continue;
		}
		for (j = i + 1; j < nr && h[j]; j++)
			;
		ret = zpool_load_pages(z->pool, h + i, j - i, dst + (size_t)i * ZP_PAGE_SIZE);
		if (ret)
			atomic_fetch_add(&z->failed_reads, 1);
	}
	for (i = 0; i < locked; i++) {
		if (ret != 1)
			slot_touch(z, s[i]);
		slot_unlock(s[i]);
	}
	return ret;
}

/*
 * A part of a page: read, patch and store under the slot's lock, so two
 * sub-page writes to one page cannot lose each other's bytes.  @src NULL
 * writes zeroes; that needs no memory when the bytes are zero already (a
 * page never written, a zero page), so it cannot fail there.
 */
static int write_partial(struct zram *z, struct bio *bio, uint64_t index, unsigned int off,
			 const void *src, unsigned int len)
{
	struct zram_slot *s = src ? slot_for_write(z, index) : zram__slot_get(z, index, false);
	uint32_t h, old = 0, hblk = 0;
	bool wb;
	int ret = 0;

	if (!s)
		return src ? -ENOMEM : 0;
	slot_lock(s);
	wb = atomic_load_explicit(&s->flags, memory_order_relaxed) & ZRAM_WB;
	if (wb) {
		/* The old bytes are on the backing disk: patch them when read. */
		hblk = s->handle;
		ret = bio ? zram__wb_pin(z, hblk) : -EAGAIN;
	} else {
		if (s->handle) {
			ret = zpool_load(z->pool, s->handle, scratch);
			if (ret)
				atomic_fetch_add(&z->failed_reads, 1);
		} else if (src) {
			memset(scratch, 0, ZP_PAGE_SIZE);
		}
		if (!ret && (s->handle || src) && !(!src && all_zero(scratch + off, len))) {
			bool zero;

			if (src)
				memcpy(scratch + off, src, len);
			else
				memset(scratch + off, 0, len);
			ret = zram__store_page(z, scratch, &h, &zero);
			if (!ret)
				old = zram__slot_swap(z, s, h, zero);
		}
	}
	slot_unlock(s);
	if (wb)
		return ret ? ret : zram__wb_rmw(z, bio, index, hblk, off, src, len);
	if (old)
		zpool_free(z->pool, old);
	return ret;
}

int zram__write_partial(struct zram *z, struct bio *bio, uint64_t index, unsigned int off,
			const void *src, unsigned int len)
{
	return write_partial(z, bio, index, off, src, len);
}

/* Map a page-level failure to the bio's status; memory shortage is EIO. */
static blk_status_t page_status(int ret)
{
	return errno_to_blk_status(ret == -ENOMEM || ret == -EINVAL ? -EIO : ret);
}

/*
 * READ and WRITE.  Segments are multi-page and cut only at device page
 * boundaries: in userspace a bvec is contiguous memory, so a device page
 * maps to one run even when the caller's buffer is not page aligned (a FUSE
 * buffer is not).  Walking single-page segments instead would split every
 * device page in two and turn each write into two read-modify-writes.
 * Positions are kept in bytes, as segments need not be whole sectors.
 */
static void zram_rw(struct zram *z, struct bio *bio)
{
	uint64_t pos = bio->bi_iter.bi_sector << BVEC_SECTOR_SHIFT;
	struct bvec_iter iter = bio->bi_iter;
	bool write = op_is_write(bio->bi_opf);
	bool multi = z->pool_cfg.flags & ZPOOL_F_MULTI_PAGE;

	if (iter.bi_size % BVEC_SECTOR_SIZE) {
		atomic_fetch_add(&z->invalid_io, 1);
		bio->bi_status = BLK_STS_IOERR;
		return;
	}
	while (bvec_iter_skip_empty(bio->bi_io_vec, &iter)) {
		struct bio_vec bv = mp_bvec_iter_bvec(bio->bi_io_vec, iter);
		uint64_t index = pos / ZP_PAGE_SIZE;
		unsigned int off = (unsigned int)(pos % ZP_PAGE_SIZE);
		unsigned int nr = 1;
		unsigned char *mem = bvec_virt(&bv);
		int ret = 1;

		/*
		 * Whole pages contiguous in memory, up to the end of their
		 * aligned group, go together: a group then always covers the
		 * same pages of the disk, however the writes were cut.
		 */
		if (multi && !off && bv.bv_len >= 2 * ZP_PAGE_SIZE)
			nr = (unsigned int)zpool__min(bv.bv_len / ZP_PAGE_SIZE,
						      ZP_GROUP_PAGES - index % ZP_GROUP_PAGES);
		if (nr > 1 && write)
			nr = nonzero_pages(mem, nr);
		if (nr > 1)
			ret = write ? write_pages(z, index, mem, nr) : read_pages(z, index, mem, nr);
		if (ret != 1) {
			bv.bv_len = (unsigned int)(nr * ZP_PAGE_SIZE);
		} else {
			/* One page, or part of one. */
			if (bv.bv_len > ZP_PAGE_SIZE - off)
				bv.bv_len = (unsigned int)(ZP_PAGE_SIZE - off);
			if (!write)
				ret = read_page(z, bio, index, off, mem, bv.bv_len);
			else if (off == 0 && bv.bv_len == ZP_PAGE_SIZE)
				ret = write_page(z, index, mem);
			else
				ret = write_partial(z, bio, index, off, mem, bv.bv_len);
		}
		if (ret) {
			bio->bi_status = page_status(ret);
			return;
		}
		pos += bv.bv_len;
		bio_advance_iter_single(bio, &iter, bv.bv_len);
	}
}

static void free_page(struct zram *z, uint64_t index)
{
	struct zram_slot *s = zram__slot_get(z, index, false);
	uint32_t old;
	bool stored;

	if (!s)
		return;
	slot_lock(s);
	stored = s->handle || (atomic_load_explicit(&s->flags, memory_order_relaxed) & ZRAM_ZERO);
	old = zram__slot_swap(z, s, 0, false);
	slot_unlock(s);
	if (stored)
		atomic_fetch_add(&z->notify_free, 1);
	if (old)
		zpool_free(z->pool, old);
}

/*
 * DISCARD and WRITE_ZEROES: whole pages are freed, partial edges zeroed.
 * The whole pages go first and always: freeing needs no memory, and it may
 * make room for the edges' read-modify-write.  An edge that still cannot be
 * stored fails the bio, but undoes nothing; both edges are tried.
 */
static void zram_discard(struct zram *z, struct bio *bio)
{
	uint64_t start = bio->bi_iter.bi_sector << BVEC_SECTOR_SHIFT;
	uint64_t end = start + bio->bi_iter.bi_size;
	uint64_t head = start / ZP_PAGE_SIZE, tail = end / ZP_PAGE_SIZE;
	unsigned int head_off = (unsigned int)(start % ZP_PAGE_SIZE);
	unsigned int tail_len = (unsigned int)(end % ZP_PAGE_SIZE);
	uint64_t i;
	int ret = 0, r;

	if (start == end)
		return;
	for (i = head + (head_off != 0); i < tail; i++)
		free_page(z, i);
	if (head_off) {
		unsigned int n = (unsigned int)zpool__min(ZP_PAGE_SIZE - head_off, end - start);

		ret = write_partial(z, bio, head, head_off, NULL, n);
		if (head == tail)
			tail_len = 0; /* the one partial page, done */
	}
	if (tail_len && (r = write_partial(z, bio, tail, 0, NULL, tail_len)))
		ret = r;
	if (ret)
		bio->bi_status = page_status(ret);
}

static void zram_submit_bio(struct bio *bio)
{
	struct zram *z = bio->bi_bdev->bd_disk->private_data;

	zpool__read_lock(z->lock);
	switch (bio_op(bio)) {
	case REQ_OP_READ:
	case REQ_OP_WRITE:
		zram_rw(z, bio);
		break;
	case REQ_OP_DISCARD:
	case REQ_OP_WRITE_ZEROES:
		zram_discard(z, bio);
		break;
	default:
		atomic_fetch_add(&z->invalid_io, 1);
		bio->bi_status = BLK_STS_NOTSUPP;
	}
	/* Unlocked first: the completion may submit to this device again. */
	zpool__rw_unlock(z->lock);
	bio_endio(bio);
}

static const struct block_device_operations zram_fops = {
	.submit_bio = zram_submit_bio,
};

/* Inner levels needed for @nr_pages slots, and what one child spans. */
static void table_shape(struct zram *z)
{
	uint64_t span = SLOTS_PER_LEAF;

	z->depth = 0;
	while (span < z->nr_pages) {
		z->span[z->depth++] = span;
		span *= PTRS_PER_NODE;
	}
}

struct zram *zram_create(const struct zram_config *cfg)
{
	struct queue_limits lim;
	struct zpool_config pool;
	uint64_t disksize;
	struct zram *z;

	if (!cfg || (cfg->size != offsetof(struct zram_config, pool) &&
		     cfg->size != sizeof(*cfg)) ||
	    zpool__config_copy(&pool, cfg->size == sizeof(*cfg) ? &cfg->pool : NULL)) {
		errno = EINVAL;
		return NULL;
	}
	disksize = cfg->disksize;
	/*
	 * Every page of the disk may need an object of its own (a zero page
	 * too), so a disk the pool could not fill is refused now rather than
	 * failing writes near its end later.
	 */
	if (!disksize || disksize > ZRAM_MAX_DISKSIZE ||
	    (disksize + ZP_PAGE_SIZE - 1) / ZP_PAGE_SIZE > zpool__max_objects() ||
	    (pool.page_source && (!pool.page_source->alloc || !pool.page_source->free))) {
		errno = EINVAL;
		return NULL;
	}
	z = zpool__os_zalloc(sizeof(*z));
	if (!z) {
		errno = ENOMEM;
		return NULL;
	}
	z->lock = zpool__rwlock_new();
	z->limit_lock = zpool__mutex_new();
	if (!z->lock || !z->limit_lock || zram__wb_init(z)) {
		zram__wb_destroy(z);
		zpool__mutex_free(z->limit_lock);
		zpool__rwlock_free(z->lock);
		zpool__os_free(z);
		errno = ENOMEM;
		return NULL;
	}
	z->nr_pages = (disksize + ZP_PAGE_SIZE - 1) / ZP_PAGE_SIZE;
	z->epoch = zpool__os_seconds();
	table_shape(z);
	if (pool.page_source)
		z->src = *pool.page_source;
	z->pool_cfg = pool;
	z->pool_cfg.page_source = pool.page_source ? &z->src : NULL;
	atomic_store(&z->mem_limit, pool.mem_limit);
	z->root = node_alloc(z);
	if (!z->root) {
		errno = ENOMEM;
		goto fail;
	}
	apply_limit(z); /* sets pool_cfg.mem_limit, the table counted */
	z->pool = zpool_create(&z->pool_cfg);
	if (!z->pool)
		goto fail; /* errno from zpool_create() */
	z->pool_cfg.compressor = zpool_compressor(z->pool); /* static string */
	blk_set_stacking_limits(&lim);
	lim.physical_block_size = (unsigned int)ZP_PAGE_SIZE;
	/*
	 * As Linux's zram: no write cache (flushes complete in submit_bio
	 * and never reach us) and no secure erase.
	 */
	lim.max_secure_erase_sectors = 0;
	z->disk = blk_alloc_disk(&lim, -1);
	if (!z->disk) {
		errno = ENOMEM;
		goto fail;
	}
	z->disk->fops = &zram_fops;
	z->disk->private_data = z;
	snprintf(z->disk->disk_name, sizeof(z->disk->disk_name), "zram");
	set_capacity(z->disk, z->nr_pages << (ZP_PAGE_SHIFT - BVEC_SECTOR_SHIFT));
	return z;
fail:
	zram_destroy(z);
	return NULL;
}

void zram_destroy(struct zram *z)
{
	int saved = errno;

	if (!z)
		return;
	put_disk(z->disk);
	zram__wb_destroy(z);
	if (z->root) {
		subtree_free(z, z->root, z->depth);
		node_free(z, z->root);
	}
	zpool_destroy(z->pool);
	zpool__mutex_free(z->limit_lock);
	zpool__rwlock_free(z->lock);
	zpool__os_free(z);
	errno = saved;
}

struct gendisk *zram_disk(struct zram *z)
{
	if (!z) {
		errno = EINVAL;
		return NULL;
	}
	return z->disk;
}

int zram_reset(struct zram *z)
{
	int ret = 0;

	if (!z)
		return -EINVAL;
	zpool__write_lock(z->lock);
	zram__wb_reset(z);
	/* Handles die with the pool; the table shrinks back to its root. */
	subtree_free(z, z->root, z->depth);
	memset(z->root, 0, ZP_PAGE_SIZE);
	atomic_store(&z->zero_pages, 0);
	zpool_destroy(z->pool);
	z->pool = NULL;
	apply_limit(z);
	z->pool = zpool_create(&z->pool_cfg);
	if (!z->pool)
		ret = -ENOMEM;
	zpool__rw_unlock(z->lock);
	return ret;
}

void zram_mm_stat(struct zram *z, struct zpool_stats *st)
{
	uint64_t table, zero;

	if (!z || !st)
		return;
	zpool__read_lock(z->lock);
	table = atomic_load(&z->table_pages) * ZP_PAGE_SIZE;
	if (z->pool)
		zpool_stats(z->pool, st);
	else
		memset(st, 0, sizeof(*st));
	/* The device's limit covers the pool and the table together. */
	st->mem_limit = atomic_load(&z->mem_limit);
	/*
	 * Pages on the backing disk are still stored, as Linux counts them;
	 * so are zero pages, which live in their slots.
	 */
	zero = atomic_load(&z->zero_pages);
	st->orig_data_size += (atomic_load(&z->wb_pages) + zero) * ZP_PAGE_SIZE;
	st->same_pages += zero;
	st->objects += zero;
	st->mem_used_total += table;
	st->mem_used_max += table;
	st->metadata_bytes += table;
	zpool__rw_unlock(z->lock);
}

void zram_reset_mem_used_max(struct zram *z)
{
	if (!z)
		return;
	zpool__read_lock(z->lock);
	zpool_reset_mem_used_max(z->pool);
	zpool__rw_unlock(z->lock);
}

void zram_io_stat(struct zram *z, struct zram_io_stat *st)
{
	if (!z || !st)
		return;
	st->failed_reads = atomic_load(&z->failed_reads);
	st->failed_writes = atomic_load(&z->failed_writes);
	/* Bios past the end are refused by submit_bio() before they get here. */
	st->invalid_io = atomic_load(&z->invalid_io) + atomic_load(&z->disk->nr_refused);
	st->notify_free = atomic_load(&z->notify_free);
}

void zram_io_stat_add(struct zram_io_stat *sum, const struct zram_io_stat *st)
{
	if (!sum || !st)
		return;
	sum->failed_reads += st->failed_reads;
	sum->failed_writes += st->failed_writes;
	sum->invalid_io += st->invalid_io;
	sum->notify_free += st->notify_free;
}

int zram_format_mm_stat(const struct zpool_stats *s, char *buf, size_t len)
{
	if (!s || (!buf && len))
		return -EINVAL;
	return snprintf(buf, len, "%8llu %8llu %8llu %8llu %8llu %8llu %8llu %8llu %8llu\n",
			(unsigned long long)s->orig_data_size,
			(unsigned long long)s->compr_data_size,
			(unsigned long long)s->mem_used_total,
			(unsigned long long)s->mem_limit,
			(unsigned long long)s->mem_used_max,
			(unsigned long long)s->same_pages,
			(unsigned long long)s->pages_compacted,
			(unsigned long long)s->huge_pages,
			(unsigned long long)s->huge_pages_since);
}

int zram_format_io_stat(const struct zram_io_stat *s, char *buf, size_t len)
{
	if (!s || (!buf && len))
		return -EINVAL;
	return snprintf(buf, len, "%8llu %8llu %8llu %8llu\n",
			(unsigned long long)s->failed_reads,
			(unsigned long long)s->failed_writes,
			(unsigned long long)s->invalid_io,
			(unsigned long long)s->notify_free);
}

/*
 * Under the slot's lock: @page, a page of a group, stored alone by the
 * algorithm its flags say wrote it.  Recompression's priority is kept, or
 * its gain would be lost and, the page still marked as recompressed, never
 * sought again.  Where that algorithm is gone, or would keep the page raw,
 * the primary one stores it, as a new write would, and the mark goes.
 */
static int store_alone(struct zram *z, struct zram_slot *s, const void *page,
		       zpool_handle_t *h)
{
	uint32_t f = atomic_load_explicit(&s->flags, memory_order_relaxed);
	unsigned int prio = f & ZRAM_RECOMP ? (f & ZRAM_PRIO_MASK) >> ZRAM_PRIO_SHIFT : 0;
	int ret;

	if (prio) {
		ret = zpool__store_pages_slot(z->pool, prio, page, 1, h);
		if (ret <= 0 && ret != -ENOENT)
			return ret;
	}
	ret = zpool_store(z->pool, page, h);
	if (!ret && prio)
		atomic_fetch_and_explicit(&s->flags, ~(ZRAM_RECOMP | ZRAM_PRIO_MASK),
					  memory_order_relaxed);
	return ret;
}

/*
 * A page left in a group (ZPOOL_F_MULTI_PAGE) whose other pages were
 * overwritten, discarded or written back holds the whole group's memory
 * until it goes too.  Once at most half a group's pages are left, each is
 * stored again alone, under its slot's lock so that no reader sees the
 * switch, and the group's memory goes with the last of them.  A page on
 * its way to the backing disk is left to the writeback; one that cannot
 * be loaded or stored (corrupt, or mem_limit) stays as it is.
 */
static void regroup_slot(struct zram *z, struct zram_slot *s, uint64_t index, void *arg)
{
	zpool_handle_t h = 0;
	uint32_t old;
	bool moved;

	(void)index;
	(void)arg;
	slot_lock(s);
	old = s->handle;
	moved = !(atomic_load_explicit(&s->flags, memory_order_relaxed) &
		  (ZRAM_WB | ZRAM_UNDER_WB)) &&
		old && zpool__group_sparse(z->pool, old) && !zpool_load(z->pool, old, scratch) &&
		!store_alone(z, s, scratch, &h);
	if (moved)
		s->handle = (uint32_t)h;
	slot_unlock(s);
	if (moved)
		zpool_free(z->pool, old);
}

size_t zram_compact(struct zram *z)
{
	size_t n;

	if (!z)
		return 0;
	zpool__read_lock(z->lock);
	if (z->pool_cfg.flags & ZPOOL_F_MULTI_PAGE)
		zram__slots_walk(z, regroup_slot, NULL);
	n = zpool_compact(z->pool);
	zpool__rw_unlock(z->lock);
	return n;
}

void zram_set_mem_limit(struct zram *z, uint64_t bytes)
{
	if (!z)
		return;
	zpool__read_lock(z->lock);
	atomic_store(&z->mem_limit, bytes);
	apply_limit(z);
	zpool__rw_unlock(z->lock);
}

struct idle_scan {
	uint32_t now;
	unsigned int min_age;
	uint64_t n;
};

static void idle_mark_slot(struct zram *z, struct zram_slot *s, uint64_t index, void *arg)
{
	struct idle_scan *sc = arg;

	(void)index;
	slot_lock(s);
	/*
	 * As Linux: neither a page on the backing disk nor a same-filled one
	 * (a zero page has no handle; the pool's have no size) is marked, as
	 * neither writeback nor recompression has anything to do with it.
	 */
	if (s->handle && !(atomic_load_explicit(&s->flags, memory_order_relaxed) & ZRAM_WB) &&
	    zpool_obj_size(z->pool, s->handle)) {
		/*
		 * A mark an earlier call left on a page younger than this
		 * call's age goes, as Linux has done since 6.13: otherwise a
		 * writeback after "4 hours", then "8 hours", would also take
		 * the pages the first call marked and the second did not.
		 */
		if (!sc->min_age || sc->now - s->ac_time >= sc->min_age) {
			atomic_fetch_or(&s->flags, ZRAM_IDLE);
			sc->n++;
		} else {
			atomic_fetch_and(&s->flags, ~ZRAM_IDLE);
		}
	}
	slot_unlock(s);
}

uint64_t zram_idle_mark(struct zram *z, unsigned int min_age)
{
	struct idle_scan sc = { 0, min_age, 0 };

	if (!z)
		return 0;
	sc.now = (uint32_t)(zpool__os_seconds() - z->epoch);
	zpool__read_lock(z->lock);
	zram__slots_walk(z, idle_mark_slot, &sc);
	zpool__rw_unlock(z->lock);
	return sc.n;
}

static void idle_count_slot(struct zram *z, struct zram_slot *s, uint64_t index, void *arg)
{
	(void)z;
	(void)index;
	*(uint64_t *)arg += (atomic_load_explicit(&s->flags, memory_order_relaxed) &
			     ZRAM_IDLE) != 0;
}

uint64_t zram_idle_pages(struct zram *z)
{
	uint64_t n = 0;

	if (!z)
		return 0;
	zpool__read_lock(z->lock);
	zram__slots_walk(z, idle_count_slot, &n);
	zpool__rw_unlock(z->lock);
	return n;
}

/*
 * A page that a tier (writeback, recompression) marks with its flags may be
 * held outside the pool, where an empty handle says nothing: it counts as
 * data, which is never wrong for a map of allocation.
 */
static enum zram_page_state slot_state(struct zram_slot *s)
{
	enum zram_page_state st;
	uint32_t f;

	slot_lock(s);
	f = atomic_load_explicit(&s->flags, memory_order_relaxed);
	if (f & ZRAM_ZERO)
		st = ZRAM_PAGE_ZERO;
	else if (s->handle || (f & ~(ZRAM_LOCK | ZRAM_IDLE | ZRAM_GEN_MASK)))
		st = ZRAM_PAGE_DATA;
	else
		st = ZRAM_PAGE_UNALLOCATED;
	slot_unlock(s);
	return st;
}

/*
 * The slot of page @index, or NULL when a node on its path is missing; then
 * *@gap is the number of pages from @index to the end of what that node
 * would cover, all of them unallocated, so a thin disk is walked in a few
 * steps instead of one per page.
 */
static struct zram_slot *slot_or_gap(struct zram *z, uint64_t index, uint64_t *gap)
{
	void *node = z->root;
	unsigned int level;

	for (level = z->depth; level > 0; level--) {
		uint64_t span = z->span[level - 1];
		void *child = atomic_load_explicit(&((zram_node_ptr *)node)[index / span],
						   memory_order_acquire);

		index %= span;
		if (!child) {
			*gap = span - index;
			return NULL;
		}
		node = child;
	}
	return &((struct zram_slot *)node)[index];
}

/*
 * The callback runs unlocked: it may submit bios, or even reset the device.
 * Nothing is carried across it but page numbers, as the table is descended
 * afresh for every page.
 */
int zram_extents(struct zram *z, uint64_t offset, uint64_t length, zram_extent_fn fn,
		 void *arg)
{
	enum zram_page_state run = ZRAM_PAGE_UNALLOCATED, st;
	uint64_t size, end, page, last, start = offset;
	bool have = false;
	int ret;

	if (!z || !fn)
		return -EINVAL;
	size = z->nr_pages * ZP_PAGE_SIZE;
	if (offset >= size)
		return -EINVAL;
	if (!length)
		return 0;
	end = length > size - offset ? size : offset + length;
	page = offset / ZP_PAGE_SIZE;
	last = (end - 1) / ZP_PAGE_SIZE;
	zpool__read_lock(z->lock);
	while (page <= last) {
		uint64_t n = 1;
		struct zram_slot *s = slot_or_gap(z, page, &n);

		st = s ? slot_state(s) : ZRAM_PAGE_UNALLOCATED;
		if (!s)
			n = zpool__min(n, last - page + 1);
		if (have && st != run) {
			uint64_t boundary = page * ZP_PAGE_SIZE;

			zpool__rw_unlock(z->lock);
			ret = fn(arg, start, boundary - start, run);
			if (ret)
				return ret;
			zpool__read_lock(z->lock);
			start = boundary;
		}
		run = st;
		have = true;
		page += n;
	}
	zpool__rw_unlock(z->lock);
	return fn(arg, start, end - start, run);
}

// SPDX-License-Identifier: MIT
/*
 * A zram-style block device: a slot per page of disksize holding a libzpool
 * handle, a disk of libbvec's device model whose submit_bio walks bios like
 * a kernel driver does, and zram's statistics.
 */
#include <stdio.h>

#include <libbvec/zram.h>

#include "internal.h"

#define BVEC_MIN_U64(a, b) ((uint64_t)(a) < (uint64_t)(b) ? (uint64_t)(a) : (uint64_t)(b))
#define ZRAM_LOCK (1u << 0)
#define ZRAM_IDLE (1u << 1)

/*
 * 12 bytes per page (the kernel's zram uses 16): libzpool handles fit in
 * 32 bits, and the access time is seconds since the device was created.
 */
struct zram_slot {
	uint32_t handle;
	_Atomic(uint32_t) flags;
	uint32_t ac_time;
};

struct zram {
	struct gendisk *disk;
	struct zpool *pool;
	struct zpool_config pool_cfg;
	struct zram_slot *table;
	uint64_t nr_pages;
	uint64_t epoch;
	atomic_uint_fast64_t failed_reads;
	atomic_uint_fast64_t failed_writes;
	atomic_uint_fast64_t invalid_io;
	atomic_uint_fast64_t notify_free;
};

/* Sub-page I/O needs a whole page to decompress into or to patch. */
static _Thread_local unsigned char scratch[BVEC_PAGE_SIZE];

static void slot_lock(struct zram_slot *s)
{
	unsigned int spins = 0;

	while (atomic_fetch_or_explicit(&s->flags, ZRAM_LOCK, memory_order_acquire) &
	       ZRAM_LOCK)
		if (++spins % 64 == 0)
			zp_os_yield();
}

static void slot_unlock(struct zram_slot *s)
{
	atomic_fetch_and_explicit(&s->flags, ~ZRAM_LOCK, memory_order_release);
}

/* Called with the slot locked: a read or write clears the idle mark. */
static void slot_touch(struct zram *z, struct zram_slot *s)
{
	s->ac_time = (uint32_t)(zp_os_seconds() - z->epoch);
	atomic_fetch_and_explicit(&s->flags, ~ZRAM_IDLE, memory_order_relaxed);
}

static int read_page(struct zram *z, uint64_t index, void *dst)
{
	struct zram_slot *s = &z->table[index];
	int ret = 0;

	slot_lock(s);
	if (s->handle)
		ret = zpool_load(z->pool, s->handle, dst);
	else
		memset(dst, 0, ZP_PAGE_SIZE);
	slot_touch(z, s);
	slot_unlock(s);
	if (ret)
		atomic_fetch_add(&z->failed_reads, 1);
	return ret;
}

/* Put @handle in the slot (locked by the caller) and free what was there. */
static void slot_replace(struct zram *z, struct zram_slot *s, uint32_t handle)
{
	uint32_t old = s->handle;

	s->handle = handle;
	slot_touch(z, s);
	slot_unlock(s);
	if (old)
		zpool_free(z->pool, old);
}

static int store(struct zram *z, const void *page, uint32_t *handle)
{
	zpool_handle_t h;
	int ret = zpool_store(z->pool, page, &h);

	if (ret) {
		atomic_fetch_add(&z->failed_writes, 1);
		return ret;
	}
	*handle = (uint32_t)h;
	return 0;
}

/*
 * A whole page is compressed and stored before the slot is locked, so
 * writers of different pages never wait for each other's compression.
 */
static int write_page(struct zram *z, uint64_t index, const void *src)
{
	struct zram_slot *s = &z->table[index];
	uint32_t h;
	int ret = store(z, src, &h);

	if (ret)
		return ret;
	slot_lock(s);
	slot_replace(z, s, h);
	return 0;
}

/*
 * A part of a page: read, patch and store under the slot's lock, so two
 * sub-page writes to one page cannot lose each other's bytes.  @src NULL
 * writes zeroes.
 */
static int write_partial(struct zram *z, uint64_t index, unsigned int off,
			 const void *src, unsigned int len)
{
	struct zram_slot *s = &z->table[index];
	uint32_t h;
	int ret = 0;

	slot_lock(s);
	if (s->handle)
		ret = zpool_load(z->pool, s->handle, scratch);
	else if (!src)
		goto out; /* zeroing an empty page: it already reads as zeroes */
	else
		memset(scratch, 0, ZP_PAGE_SIZE);
	if (ret) {
		atomic_fetch_add(&z->failed_reads, 1);
		goto out;
	}
	if (src)
		memcpy(scratch + off, src, len);
	else
		memset(scratch + off, 0, len);
	ret = store(z, scratch, &h);
	if (ret)
		goto out;
	slot_replace(z, s, h);
	return 0;
out:
	slot_unlock(s);
	return ret;
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

	if (iter.bi_size % BVEC_SECTOR_SIZE) {
		atomic_fetch_add(&z->invalid_io, 1);
		bio->bi_status = BLK_STS_IOERR;
		return;
	}
	while (bvec_iter_skip_empty(bio->bi_io_vec, &iter)) {
		struct bio_vec bv = mp_bvec_iter_bvec(bio->bi_io_vec, iter);
		uint64_t index = pos / ZP_PAGE_SIZE;
		unsigned int off = (unsigned int)(pos % ZP_PAGE_SIZE);
		unsigned char *mem;
		int ret;

		if (bv.bv_len > ZP_PAGE_SIZE - off)
			bv.bv_len = (unsigned int)(ZP_PAGE_SIZE - off);
		mem = bvec_virt(&bv);
		if (off == 0 && bv.bv_len == ZP_PAGE_SIZE)
			ret = write ? write_page(z, index, mem) : read_page(z, index, mem);
		else if (write)
			ret = write_partial(z, index, off, mem, bv.bv_len);
		else if (!(ret = read_page(z, index, scratch)))
			memcpy(mem, scratch + off, bv.bv_len);
		if (ret) {
			bio->bi_status = errno_to_blk_status(ret == -ENOMEM ? -EIO : ret);
			return;
		}
		pos += bv.bv_len;
		bio_advance_iter_single(bio, &iter, bv.bv_len);
	}
}

/* DISCARD and WRITE_ZEROES: whole pages are freed, partial edges zeroed. */
static void zram_discard(struct zram *z, struct bio *bio)
{
	uint64_t pos = bio->bi_iter.bi_sector << BVEC_SECTOR_SHIFT;
	uint64_t end = pos + bio->bi_iter.bi_size;

	while (pos < end) {
		uint64_t index = pos / ZP_PAGE_SIZE;
		unsigned int off = (unsigned int)(pos % ZP_PAGE_SIZE);
		unsigned int n = (unsigned int)BVEC_MIN_U64(ZP_PAGE_SIZE - off, end - pos);

		if (n == ZP_PAGE_SIZE) {
			struct zram_slot *s = &z->table[index];

			slot_lock(s);
			if (s->handle)
				atomic_fetch_add(&z->notify_free, 1);
			slot_replace(z, s, 0);
		} else if (write_partial(z, index, off, NULL, n)) {
			bio->bi_status = BLK_STS_IOERR;
			return;
		}
		pos += n;
	}
}

static void zram_submit_bio(struct bio *bio)
{
	struct zram *z = bio->bi_bdev->bd_disk->private_data;

	switch (bio_op(bio)) {
	case REQ_OP_READ:
	case REQ_OP_WRITE:
		zram_rw(z, bio);
		break;
	case REQ_OP_DISCARD:
	case REQ_OP_WRITE_ZEROES:
		zram_discard(z, bio);
		break;
	case REQ_OP_FLUSH:
		break;
	default:
		atomic_fetch_add(&z->invalid_io, 1);
		bio->bi_status = BLK_STS_NOTSUPP;
	}
	bio_endio(bio);
}

static const struct block_device_operations zram_fops = {
	.submit_bio = zram_submit_bio,
};

static size_t table_bytes(const struct zram *z)
{
	return (size_t)z->nr_pages * sizeof(struct zram_slot);
}

struct zram *zram_create(const struct zram_config *cfg)
{
	struct zram_config c = ZRAM_CONFIG_INIT;
	struct queue_limits lim;
	struct zram *z;

	if (!cfg || cfg->size < offsetof(struct zram_config, compressor) ||
	    cfg->size > sizeof(c)) {
		errno = EINVAL;
		return NULL;
	}
	memcpy(&c, cfg, cfg->size);
	if (!c.disksize || c.disksize > ((uint64_t)UINT32_MAX << ZP_PAGE_SHIFT)) {
		errno = EINVAL;
		return NULL;
	}
	z = zp_os_zalloc(sizeof(*z));
	if (!z) {
		errno = ENOMEM;
		return NULL;
	}
	z->nr_pages = (c.disksize + ZP_PAGE_SIZE - 1) / ZP_PAGE_SIZE;
	z->epoch = zp_os_seconds();
	z->pool_cfg.size = sizeof(z->pool_cfg);
	z->pool_cfg.compressor = c.compressor;
	z->pool_cfg.level = c.level;
	z->pool_cfg.mem_limit = c.mem_limit;
	z->pool_cfg.flags = c.flags;
	z->pool_cfg.max_pages_per_zspage = c.max_pages_per_zspage;
	z->pool = zpool_create(&z->pool_cfg);
	if (!z->pool)
		goto fail; /* errno from zpool_create() */
	z->pool_cfg.compressor = zpool_compressor(z->pool); /* static string */
	z->table = zp_os_zalloc(table_bytes(z));
	blk_set_stacking_limits(&lim);
	lim.physical_block_size = (unsigned int)ZP_PAGE_SIZE;
	z->disk = z->table ? blk_alloc_disk(&lim, -1) : NULL;
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
	zpool_destroy(z->pool);
	zp_os_free(z->table);
	zp_os_free(z);
	errno = saved;
}

struct gendisk *zram_disk(struct zram *z)
{
	return z->disk;
}

void zram_reset(struct zram *z)
{
	uint64_t i;

	/* Handles die with the pool; the slots only need clearing. */
	for (i = 0; i < z->nr_pages; i++) {
		z->table[i].handle = 0;
		atomic_store(&z->table[i].flags, 0);
	}
	zpool_destroy(z->pool);
	z->pool = zpool_create(&z->pool_cfg);
}

void zram_mm_stat(struct zram *z, struct zram_mm_stat *st)
{
	struct zpool_stats ps;

	memset(st, 0, sizeof(*st));
	if (!z->pool)
		return;
	zpool_stats(z->pool, &ps);
	st->orig_data_size = ps.orig_data_size;
	st->compr_data_size = ps.compr_data_size;
	st->mem_used_total = ps.mem_used_total + table_bytes(z);
	st->mem_limit = ps.mem_limit;
	st->mem_used_max = ps.mem_used_max + table_bytes(z);
	st->same_pages = ps.same_pages;
	st->pages_compacted = ps.pages_compacted;
	st->huge_pages = ps.huge_pages;
	st->huge_pages_since = ps.huge_pages_since;
}

void zram_io_stat(struct zram *z, struct zram_io_stat *st)
{
	st->failed_reads = atomic_load(&z->failed_reads);
	st->failed_writes = atomic_load(&z->failed_writes);
	/* Bios past the end are refused by submit_bio() before they get here. */
	st->invalid_io = atomic_load(&z->invalid_io) + atomic_load(&z->disk->nr_eod);
	st->notify_free = atomic_load(&z->notify_free);
}

int zram_format_mm_stat(const struct zram_mm_stat *s, char *buf, size_t len)
{
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
	return snprintf(buf, len, "%8llu %8llu %8llu %8llu\n",
			(unsigned long long)s->failed_reads,
			(unsigned long long)s->failed_writes,
			(unsigned long long)s->invalid_io,
			(unsigned long long)s->notify_free);
}

size_t zram_compact(struct zram *z)
{
	return zpool_compact(z->pool);
}

void zram_set_mem_limit(struct zram *z, uint64_t bytes)
{
	z->pool_cfg.mem_limit = bytes;
	zpool_set_mem_limit(z->pool, bytes);
}

uint64_t zram_idle_mark(struct zram *z, unsigned int min_age)
{
	uint32_t now = (uint32_t)(zp_os_seconds() - z->epoch);
	uint64_t i, n = 0;

	for (i = 0; i < z->nr_pages; i++) {
		struct zram_slot *s = &z->table[i];

		slot_lock(s);
		if (s->handle && (!min_age || now - s->ac_time >= min_age)) {
			atomic_fetch_or(&s->flags, ZRAM_IDLE);
			n++;
		}
		slot_unlock(s);
	}
	return n;
}

uint64_t zram_idle_pages(struct zram *z)
{
	uint64_t i, n = 0;

	for (i = 0; i < z->nr_pages; i++)
		n += (atomic_load_explicit(&z->table[i].flags, memory_order_relaxed) &
		      ZRAM_IDLE) != 0;
	return n;
}

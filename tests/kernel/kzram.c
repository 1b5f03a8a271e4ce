// SPDX-License-Identifier: MIT
/*
 * kzram: a page store in the style of Linux's zram, written for these
 * tests from the documented semantics (no compression: the point is the
 * block-layer contract).  Like zram it has 4 KiB logical blocks whatever
 * the page size, stores nothing for a page of zeroes, does partial-page
 * I/O by read-modify-write through a bounce page, and its discard frees
 * whole pages only: it trusts the block layer to refuse bios that are not
 * whole logical blocks, and never sees flushes or write-zeroes.
 */
#include "drivers.h"

#define KZRAM_LOGICAL_BLOCK_SIZE 4096

static bool page_is_zero(const char *mem)
{
	size_t i;

	for (i = 0; i < PAGE_SIZE; i++)
		if (mem[i])
			return false;
	return true;
}

static void kzram_free_slot(struct kzram *zram, u32 index)
{
	if (zram->slots[index]) {
		__free_page(zram->slots[index]);
		zram->slots[index] = NULL;
		atomic64_dec(&zram->stored);
	}
}

/* Store a whole page's contents into slot @index. */
static int kzram_write_page(struct kzram *zram, const char *src, u32 index)
{
	struct page *page;

	if (page_is_zero(src)) {
		kzram_free_slot(zram, index);
		return 0;
	}
	page = zram->slots[index];
	if (!page) {
		page = alloc_page(GFP_NOIO);
		if (!page)
			return -ENOMEM;
		zram->slots[index] = page;
		atomic64_inc(&zram->stored);
	}
	memcpy_to_page(page, 0, src, PAGE_SIZE);
	return 0;
}

static void kzram_read_page(struct kzram *zram, char *dst, u32 index)
{
	if (zram->slots[index])
		memcpy_from_page(dst, zram->slots[index], 0, PAGE_SIZE);
	else
		memset(dst, 0, PAGE_SIZE);
}

/* One segment that lies inside page @index, starting @offset bytes in. */
static int kzram_bvec_rw(struct kzram *zram, struct bio_vec *bv, u32 index,
			 u32 offset, bool write)
{
	struct page *bounce;
	char *mem;
	int ret = 0;

	if (bv->bv_len == PAGE_SIZE && !offset) {
		mem = bvec_kmap_local(bv);
		if (write)
			ret = kzram_write_page(zram, mem, index);
		else
			kzram_read_page(zram, mem, index);
		kunmap_local(mem);
		return ret;
	}
	bounce = alloc_page(GFP_NOIO);
	if (!bounce)
		return -ENOMEM;
	mem = kmap_local_page(bounce);
	kzram_read_page(zram, mem, index);
	if (write) {
		memcpy_from_bvec(mem + offset, bv);
		ret = kzram_write_page(zram, mem, index);
	} else {
		memcpy_to_bvec(bv, mem + offset);
	}
	kunmap_local(mem);
	__free_page(bounce);
	return ret;
}

static void kzram_bio_rw(struct kzram *zram, struct bio *bio)
{
	unsigned long start = bio_start_io_acct(bio);
	struct bvec_iter iter = bio->bi_iter;

	do {
		u32 index = iter.bi_sector >> PAGE_SECTORS_SHIFT;
		u32 offset = (iter.bi_sector & SECTOR_MASK) << SECTOR_SHIFT;
		struct bio_vec bv = bio_iter_iovec(bio, iter);
		int err;

		bv.bv_len = min_t(u32, bv.bv_len, PAGE_SIZE - offset);
		err = kzram_bvec_rw(zram, &bv, index, offset, op_is_write(bio_op(bio)));
		if (err) {
			bio->bi_status = errno_to_blk_status(err);
			break;
		}
		bio_advance_iter_single(bio, &iter, bv.bv_len);
	} while (iter.bi_size);
	bio_end_io_acct(bio, start);
	bio_endio(bio);
}

static void kzram_bio_discard(struct kzram *zram, struct bio *bio)
{
	unsigned long start = bio_start_io_acct(bio);
	u32 index = bio->bi_iter.bi_sector >> PAGE_SECTORS_SHIFT;
	u32 offset = (bio->bi_iter.bi_sector & SECTOR_MASK) << SECTOR_SHIFT;
	size_t n = bio->bi_iter.bi_size;

	atomic_inc(&zram->discards);
#if PAGE_SIZE != 4096
	/*
	 * A page holds several logical blocks, so a discard the block layer
	 * accepted may still start inside a page.  That page is kept whole:
	 * discarding is about freeing memory, and zeroing part of a page
	 * would free none.
	 */
	if (offset) {
		n -= min_t(size_t, n, PAGE_SIZE - offset);
		index++;
	}
#else
	/*
	 * A page is one logical block here, and the block layer refuses
	 * discards that are not whole, aligned logical blocks: no partial
	 * page can arrive.
	 */
	WARN_ON_ONCE(offset || (n & (PAGE_SIZE - 1)));
#endif
	for (; n >= PAGE_SIZE; n -= PAGE_SIZE, index++)
		kzram_free_slot(zram, index);
	bio_end_io_acct(bio, start);
	bio_endio(bio);
}

static void kzram_submit_bio(struct bio *bio)
{
	struct kzram *zram = bio->bi_bdev->bd_disk->private_data;

	atomic_inc(&zram->calls);
	switch (bio_op(bio)) {
	case REQ_OP_READ:
	case REQ_OP_WRITE:
		kzram_bio_rw(zram, bio);
		break;
	case REQ_OP_DISCARD:
		kzram_bio_discard(zram, bio);
		break;
	default:
		WARN_ON_ONCE(1);
		bio_io_error(bio);
		break;
	}
}

static const struct block_device_operations kzram_fops = {
	.owner = THIS_MODULE,
	.submit_bio = kzram_submit_bio,
};

struct kzram *kzram_create(unsigned long nr_pages)
{
	struct queue_limits lim = {
		.logical_block_size = KZRAM_LOGICAL_BLOCK_SIZE,
		.physical_block_size = PAGE_SIZE,
		.io_min = PAGE_SIZE,
		.io_opt = PAGE_SIZE,
		.max_hw_discard_sectors = UINT_MAX,
		.discard_granularity = PAGE_SIZE,
	};
	struct kzram *zram = calloc(1, sizeof(*zram));

	if (!zram)
		return NULL;
	zram->nr_pages = nr_pages;
	zram->slots = calloc(nr_pages, sizeof(*zram->slots));
	zram->disk = blk_alloc_disk(&lim, NUMA_NO_NODE);
	if (!zram->slots || IS_ERR(zram->disk)) {
		if (!IS_ERR(zram->disk))
			put_disk(zram->disk);
		free(zram->slots);
		free(zram);
		return NULL;
	}
	zram->disk->fops = &kzram_fops;
	zram->disk->private_data = zram;
	set_capacity(zram->disk, (sector_t)nr_pages << PAGE_SECTORS_SHIFT);
	return zram;
}

void kzram_destroy(struct kzram *zram)
{
	unsigned long i;

	put_disk(zram->disk);
	for (i = 0; i < zram->nr_pages; i++)
		kzram_free_slot(zram, i);
	free(zram->slots);
	free(zram);
}

// SPDX-License-Identifier: MIT
/*
 * kbrd: a RAM disk in the style of Linux's brd, written for these tests
 * from the documented semantics.  Pages are allocated on first write, a
 * discard frees the whole pages it covers, and everything else is left to
 * the block layer: flushes reach it only with a write cache, unsupported
 * operations and misaligned or past-the-end bios never do.  Like brd it
 * takes REQ_NOWAIT (BLK_FEAT_NOWAIT): such a write allocates its pages
 * without waiting and ends BLK_STS_AGAIN when it cannot.
 */
#include "drivers.h"

/* Copy between @buf and the disk at byte @pos, one disk page at a time. */
static int kbrd_rw(struct kbrd *brd, char *buf, u64 pos, unsigned int len, bool write,
		   bool nowait)
{
	while (len) {
		unsigned long idx = pos >> PAGE_SHIFT;
		size_t off = pos & (PAGE_SIZE - 1);
		unsigned int n = min_t(unsigned int, len, PAGE_SIZE - off);
		struct page *page = brd->pages[idx];

		if (write) {
			if (!page) {
				page = alloc_page((nowait ? GFP_NOWAIT : GFP_NOIO) | __GFP_ZERO);
				if (!page)
					return nowait ? -EAGAIN : -ENOMEM;
				brd->pages[idx] = page;
				atomic64_inc(&brd->allocated);
			}
			memcpy_to_page(page, off, buf, n);
			flush_dcache_page(page);
		} else if (page) {
			memcpy_from_page(buf, page, off, n);
		} else {
			memset(buf, 0, n);
		}
		buf += n;
		pos += n;
		len -= n;
	}
	return 0;
}

/* Free the pages wholly inside the range; partial pages keep their data. */
static void kbrd_do_discard(struct kbrd *brd, sector_t sector, u32 size)
{
	sector_t first = round_up(sector, (sector_t)PAGE_SECTORS);
	sector_t end = sector + (size >> SECTOR_SHIFT);

	for (; first + PAGE_SECTORS <= end; first += PAGE_SECTORS) {
		unsigned long idx = first >> PAGE_SECTORS_SHIFT;

		if (brd->pages[idx]) {
			__free_page(brd->pages[idx]);
			brd->pages[idx] = NULL;
			atomic64_dec(&brd->allocated);
		}
	}
}

static void kbrd_submit_bio(struct bio *bio)
{
	struct kbrd *brd = bio->bi_bdev->bd_disk->private_data;
	u64 pos = (u64)bio->bi_iter.bi_sector << SECTOR_SHIFT;
	unsigned long start = bio_start_io_acct(bio);
	struct bio_vec bvec;
	struct bvec_iter iter;

	atomic_inc(&brd->calls);
	brd->last_opf = bio->bi_opf;
	if (bio->bi_opf & REQ_PREFLUSH)
		atomic_inc(&brd->flushes);	/* RAM is durable enough */
	if (bio->bi_opf & REQ_FUA)
		atomic_inc(&brd->fuas);

	switch (bio_op(bio)) {
	case REQ_OP_DISCARD:
		kbrd_do_discard(brd, bio->bi_iter.bi_sector, bio->bi_iter.bi_size);
		break;
	case REQ_OP_READ:
	case REQ_OP_WRITE:
		/* Bytes, not sectors: a userspace segment may be any length. */
		bio_for_each_segment(bvec, bio, iter) {
			char *buf = bvec_kmap_local(&bvec);
			int err = kbrd_rw(brd, buf, pos, bvec.bv_len, op_is_write(bio_op(bio)),
					  bio->bi_opf & REQ_NOWAIT);

			kunmap_local(buf);
			if (err) {
				bio->bi_status = errno_to_blk_status(err);
				break;
			}
			pos += bvec.bv_len;
		}
		break;
	default:
		/* The limits say no; the block layer must not let it through. */
		WARN_ON_ONCE(1);
		bio->bi_status = BLK_STS_NOTSUPP;
		break;
	}
	bio_end_io_acct(bio, start);
	bio_endio(bio);
}

static const struct block_device_operations kbrd_fops = {
	.owner = THIS_MODULE,
	.submit_bio = kbrd_submit_bio,
};

struct kbrd *kbrd_create(sector_t sectors, unsigned int lbs, bool write_cache)
{
	struct queue_limits lim = {
		.logical_block_size = lbs,
		.physical_block_size = PAGE_SIZE,
		.max_hw_discard_sectors = UINT_MAX,
		.discard_granularity = PAGE_SIZE,
		.features = BLK_FEAT_NOWAIT |
			    (write_cache ? BLK_FEAT_WRITE_CACHE | BLK_FEAT_FUA : 0),
	};
	struct kbrd *brd = calloc(1, sizeof(*brd));

	if (!brd)
		return NULL;
	brd->nr_pages = DIV_ROUND_UP(sectors, PAGE_SECTORS);
	brd->pages = calloc(brd->nr_pages, sizeof(*brd->pages));
	brd->disk = blk_alloc_disk(&lim, NUMA_NO_NODE);
	if (!brd->pages || IS_ERR(brd->disk)) {
		if (!IS_ERR(brd->disk))
			put_disk(brd->disk);
		free(brd->pages);
		free(brd);
		return NULL;
	}
	brd->disk->fops = &kbrd_fops;
	brd->disk->private_data = brd;
	snprintf(brd->disk->disk_name, sizeof(brd->disk->disk_name), "kbrd");
	set_capacity(brd->disk, sectors);
	return brd;
}

void kbrd_destroy(struct kbrd *brd)
{
	unsigned long i;

	put_disk(brd->disk);
	for (i = 0; i < brd->nr_pages; i++)
		if (brd->pages[i])
			__free_page(brd->pages[i]);
	free(brd->pages);
	free(brd);
}

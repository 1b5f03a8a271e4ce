// SPDX-License-Identifier: MIT
/*
 * The device model: disks, submission without recursion, waiting for a bio,
 * and splitting bios to a device's limits.
 */
#include "internal.h"
#include "os.h"

static bool is_power_of_2(unsigned int x)
{
	return x && !(x & (x - 1));
}

/* Fill defaults and refuse limits no bio could satisfy (blk_validate_limits). */
static int validate_limits(struct queue_limits *lim)
{
	if (!lim->logical_block_size)
		lim->logical_block_size = BVEC_SECTOR_SIZE;
	if (!is_power_of_2(lim->logical_block_size) ||
	    lim->logical_block_size < BVEC_SECTOR_SIZE ||
	    lim->logical_block_size > BVEC_PAGE_SIZE)
		return -EINVAL;
	/* Raised, not refused, as Linux: a driver that raises only the
	 * logical block size over blk_set_stacking_limits() gets a disk. */
	if (lim->physical_block_size < lim->logical_block_size)
		lim->physical_block_size = lim->logical_block_size;
	if (!is_power_of_2(lim->physical_block_size))
		return -EINVAL;
	if (lim->io_min < lim->physical_block_size)
		lim->io_min = lim->physical_block_size;
	if (!lim->max_sectors)
		lim->max_sectors = BLK_DEF_MAX_SECTORS;
	if (lim->max_sectors > BIO_MAX_SECTORS)
		lim->max_sectors = BIO_MAX_SECTORS;
	lim->max_sectors &= ~((lim->logical_block_size >> BVEC_SECTOR_SHIFT) - 1);
	if (lim->max_sectors < BVEC_PAGE_SIZE >> BVEC_SECTOR_SHIFT)
		return -EINVAL;
	if (!lim->max_segments)
		lim->max_segments = BLK_MAX_SEGMENTS;
	if (!lim->max_segment_size)
		lim->max_segment_size = BLK_MAX_SEGMENT_SIZE;
	if (lim->max_segment_size < BVEC_PAGE_SIZE)
		return -EINVAL;
	if (!lim->seg_boundary_mask)
		lim->seg_boundary_mask = BLK_SEG_BOUNDARY_MASK;
	if (lim->seg_boundary_mask < BVEC_PAGE_SIZE - 1)
		return -EINVAL;
	/* Linux 6.x drivers set the hardware limit; older code the derived one. */
	if (lim->max_hw_discard_sectors && (!lim->max_discard_sectors ||
					    lim->max_discard_sectors > lim->max_hw_discard_sectors))
		lim->max_discard_sectors = lim->max_hw_discard_sectors;
	else if (!lim->max_hw_discard_sectors)
		lim->max_hw_discard_sectors = lim->max_discard_sectors;
	/* Discard splits land on granules; without discard Linux reports 0. */
	if (lim->max_discard_sectors) {
		if (lim->discard_granularity < lim->physical_block_size)
			lim->discard_granularity = lim->physical_block_size;
	} else {
		lim->discard_granularity = 0;
	}
	if (lim->integrity_interval_exp &&
	    (lim->integrity_interval_exp < BVEC_SECTOR_SHIFT ||
	     lim->integrity_interval_exp > 12 || !lim->integrity_tuple_size))
		return -EINVAL;
	return 0;
}

void blk_set_stacking_limits(struct queue_limits *lim)
{
	memset(lim, 0, sizeof(*lim));
	lim->logical_block_size = BVEC_SECTOR_SIZE;
	lim->physical_block_size = BVEC_SECTOR_SIZE;
	lim->io_min = BVEC_SECTOR_SIZE;
	lim->discard_granularity = BVEC_SECTOR_SIZE;
	lim->max_sectors = BIO_MAX_SECTORS;
	lim->max_segments = UINT32_MAX;
	lim->max_segment_size = UINT32_MAX;
	lim->seg_boundary_mask = UINT64_MAX;
	lim->max_discard_sectors = BIO_MAX_SECTORS;
	lim->max_hw_discard_sectors = BIO_MAX_SECTORS;
	lim->max_secure_erase_sectors = BIO_MAX_SECTORS;
	lim->max_write_zeroes_sectors = BIO_MAX_SECTORS;
}

/*
 * A disk's I/O counters live beside it, not in struct gendisk, so the
 * public struct keeps its layout and callers cannot come to depend on how
 * they are kept.  Times are microseconds of bvec__os_now_us().
 */
struct disk_stats {
	_Atomic uint64_t ios[BVEC_NR_STAT_GROUPS];
	_Atomic uint64_t sectors[BVEC_NR_STAT_GROUPS];
	_Atomic uint64_t usecs[BVEC_NR_STAT_GROUPS];
	_Atomic uint64_t in_flight[2];
	_Atomic uint64_t io_usecs;
	/* when io_usecs was last brought up to date */
	_Atomic uint64_t stamp;
};

/* Every disk is allocated as one of these by blk_alloc_disk(). */
struct disk_alloc {
	struct gendisk disk;
	struct disk_stats stats;
};

static struct disk_stats *disk_stats(struct gendisk *disk)
{
	return &((struct disk_alloc *)(void *)((char *)disk -
					       offsetof(struct disk_alloc, disk)))->stats;
}

struct gendisk *blk_alloc_disk(const struct queue_limits *lim, int node)
{
	struct disk_alloc *da;
	struct gendisk *disk;
	int err;

	(void)node;
	da = bvec__os_alloc(NULL, sizeof(*da));
	if (!da) {
		bvec__set_errno(ENOMEM);
		return NULL;
	}
	memset(da, 0, sizeof(*da));
	disk = &da->disk;
	if (lim)
		disk->limits = *lim;
	err = validate_limits(&disk->limits);
	if (!err)
		err = bioset_init(&disk->bio_split, BIO_POOL_SIZE, 0, 0);
	if (err) {
		bvec__os_free(NULL, da, sizeof(*da));
		bvec__set_errno(-err);
		return NULL;
	}
	disk->bdev.bd_disk = disk;
	disk->part0 = &disk->bdev;
	return disk;
}

void put_disk(struct gendisk *disk)
{
	if (!disk)
		return;
	if (disk->fops && disk->fops->free_disk)
		disk->fops->free_disk(disk);
	bioset_exit(&disk->bio_split);
	bvec__os_free(NULL, (char *)disk - offsetof(struct disk_alloc, disk),
		      sizeof(struct disk_alloc));
}

static uint64_t in_flight(struct disk_stats *st)
{
	return atomic_load_explicit(&st->in_flight[0], memory_order_relaxed) +
	       atomic_load_explicit(&st->in_flight[1], memory_order_relaxed);
}

/*
 * io_ticks is the time the disk was busy.  Each start, end and read of the
 * statistics moves the stamp to now; the interval it covered counts if I/O
 * was in flight during it, which it was at an end (this I/O) or when
 * something was already in flight at a start.  Only the thread that moves
 * the stamp adds the interval, so concurrent updates never count it twice.
 */
static void update_io_ticks(struct disk_stats *st, uint64_t now, bool end)
{
	uint64_t stamp = atomic_load(&st->stamp);

	if (now > stamp && atomic_compare_exchange_strong(&st->stamp, &stamp, now) &&
	    (end || in_flight(st)))
		atomic_fetch_add_explicit(&st->io_usecs, now - stamp, memory_order_relaxed);
}

static enum bvec_stat_group stat_group(const struct bio *bio)
{
	if (op_is_discard(bio->bi_opf))
		return BVEC_STAT_DISCARD;
	if (bio_op(bio) == REQ_OP_WRITE && (bio->bi_opf & REQ_PREFLUSH) &&
	    !bio->bi_iter.bi_size)
		return BVEC_STAT_FLUSH;
	return op_is_write(bio->bi_opf) ? BVEC_STAT_WRITE : BVEC_STAT_READ;
}

unsigned long bio_start_io_acct(struct bio *bio)
{
	uint64_t now = bvec__os_now_us();
	struct disk_stats *st;

	if (bio->bi_bdev && bio->bi_bdev->bd_disk) {
		st = disk_stats(bio->bi_bdev->bd_disk);
		update_io_ticks(st, now, false);
		atomic_fetch_add(&st->in_flight[op_is_write(bio->bi_opf)], 1);
	}
	return (unsigned long)now;
}

void bio_end_io_acct_remapped(struct bio *bio, unsigned long start_time,
			      struct block_device *orig_bdev)
{
	uint64_t now = bvec__os_now_us();
	/* Modulo unsigned long, as jiffies are compared in Linux. */
	unsigned long duration = (unsigned long)now - start_time;
	enum bvec_stat_group grp = stat_group(bio);
	struct disk_stats *st;

	if (!orig_bdev || !orig_bdev->bd_disk)
		return;
	st = disk_stats(orig_bdev->bd_disk);
	update_io_ticks(st, now, true);
	atomic_fetch_add_explicit(&st->ios[grp], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&st->sectors[grp], bio_sectors(bio), memory_order_relaxed);
	atomic_fetch_add_explicit(&st->usecs[grp], duration, memory_order_relaxed);
	atomic_fetch_sub(&st->in_flight[op_is_write(bio->bi_opf)], 1);
}

int bvec_disk_stat(struct gendisk *disk, struct bvec_disk_stat *out)
{
	struct disk_stats *st;
	int i;

	if (!disk || !out)
		return -EINVAL;
	st = disk_stats(disk);
	if (in_flight(st))
		update_io_ticks(st, bvec__os_now_us(), true);
	memset(out, 0, sizeof(*out));
	for (i = 0; i < BVEC_NR_STAT_GROUPS; i++) {
		uint64_t usecs = atomic_load_explicit(&st->usecs[i], memory_order_relaxed);

		out->ios[i] = atomic_load_explicit(&st->ios[i], memory_order_relaxed);
		out->sectors[i] = atomic_load_explicit(&st->sectors[i], memory_order_relaxed);
		out->ticks[i] = usecs / 1000;
		out->time_in_queue += usecs;
	}
	/* Summed in microseconds, then converted, as Linux sums nanoseconds. */
	out->time_in_queue /= 1000;
	out->in_flight[0] = atomic_load_explicit(&st->in_flight[0], memory_order_relaxed);
	out->in_flight[1] = atomic_load_explicit(&st->in_flight[1], memory_order_relaxed);
	out->io_ticks = atomic_load_explicit(&st->io_usecs, memory_order_relaxed) / 1000;
	return 0;
}

/*
 * Bios submitted while this thread is inside a driver's submit_bio.  Linux
 * keeps this list in current->bio_list for the same reason: a stack of N
 * drivers, or a driver that resubmits split remainders, must not need N
 * stack frames.
 */
static _Thread_local struct bio_list *current_bio_list;

static bool bio_beyond_eod(const struct bio *bio)
{
	sector_t max = bdev_nr_sectors(bio->bi_bdev);
	unsigned int nr = bio_sectors(bio);

	return nr && (nr > max || bio->bi_iter.bi_sector > max - nr);
}

static bool bio_misaligned(const struct bio *bio)
{
	unsigned int lbs = bdev_logical_block_size(bio->bi_bdev);
	uint64_t mask = (lbs >> BVEC_SECTOR_SHIFT) - 1;

	return (bio->bi_iter.bi_sector & mask) || (bio->bi_iter.bi_size & (lbs - 1));
}

/*
 * The checks Linux's submit_bio_noacct() makes, so a driver sees only bios
 * it can serve: a driver written for Linux does not check these itself (a
 * brd or zram port would dereference a flush's missing table, or return
 * without completing a misaligned discard).  Returns true when the bio must
 * complete now with *status instead of reaching the driver.
 */
static bool bio_check(struct bio *bio, blk_status_t *status)
{
	const struct block_device *bdev = bio->bi_bdev;

	*status = BLK_STS_NOTSUPP;
	/* First, as in Linux: a driver that may block must never see a bio
	 * whose submitter cannot block, whatever else is wrong with it. */
	if ((bio->bi_opf & REQ_NOWAIT) && !bdev_nowait(bdev))
		return true;
	if (bio_op(bio) == REQ_OP_FLUSH && !bio->bi_iter.bi_size)
		bio->bi_opf = REQ_OP_WRITE | REQ_PREFLUSH | (bio->bi_opf & ~REQ_OP_MASK);
	if (bio_beyond_eod(bio) || bio_misaligned(bio)) {
		*status = BLK_STS_IOERR;
		return true;
	}
	if (op_is_flush(bio->bi_opf) && !bdev_write_cache(bdev)) {
		bio->bi_opf &= ~(blk_opf_t)(REQ_PREFLUSH | REQ_FUA);
		if (!bio->bi_iter.bi_size) {
			*status = BLK_STS_OK;
			return true;
		}
	}
	switch (bio_op(bio)) {
	case REQ_OP_READ:
	case REQ_OP_WRITE:
		return false;
	case REQ_OP_DISCARD:
		return !bdev_max_discard_sectors(bdev);
	case REQ_OP_SECURE_ERASE:
		return !bdev_max_secure_erase_sectors(bdev);
	case REQ_OP_WRITE_ZEROES:
		return !bdev_write_zeroes_sectors(bdev);
	default:
		return true;
	}
}

void submit_bio_noacct(struct bio *bio)
{
	struct bio_list on_stack;
	struct gendisk *disk;
	blk_status_t status;

	if (!bio->bi_bdev || !bio->bi_bdev->bd_disk ||
	    !bio->bi_bdev->bd_disk->fops || !bio->bi_bdev->bd_disk->fops->submit_bio) {
		bio_io_error(bio);
		return;
	}
	if (bio_check(bio, &status)) {
		if (status)
			atomic_fetch_add(&bio->bi_bdev->bd_disk->nr_refused, 1);
		bio->bi_status = status;
		bio_endio(bio);
		return;
	}
	/* Only a driver that polls may see REQ_POLLED: nobody else would ever
	 * reap the bio otherwise, since its submitter waits by polling. */
	if ((bio->bi_opf & REQ_POLLED) &&
	    !(bio->bi_bdev->bd_disk->limits.features & BLK_FEAT_POLL))
		bio_clear_polled(bio);
	if (current_bio_list) {
		bio_list_add(current_bio_list, bio);
		return;
	}
	bio_list_init(&on_stack);
	current_bio_list = &on_stack;
	do {
		disk = bio->bi_bdev->bd_disk;
		disk->fops->submit_bio(bio);
	} while ((bio = bio_list_pop(&on_stack)));
	current_bio_list = NULL;
}

void submit_bio(struct bio *bio)
{
	submit_bio_noacct(bio);
}

struct bio_waiter {
	struct bvec__lock *lock;
	/* Read without the lock by a poller between polls. */
	_Atomic bool done;
};

static void bio_wait_end_io(struct bio *bio)
{
	struct bio_waiter *w = bio->bi_private;

	bvec__lock(w->lock);
	atomic_store_explicit(&w->done, true, memory_order_release);
	bvec__lock_wake_all(w->lock);
	bvec__unlock(w->lock);
}

int bio_poll(struct bio *bio, struct io_comp_batch *iob, unsigned int flags)
{
	struct block_device *bdev = bio->bi_bdev;
	struct gendisk *disk;

	if (!bdev || !(bio->bi_opf & REQ_POLLED))
		return 0;
	disk = bdev->bd_disk;
	/* BLK_FEAT_POLL first: a table without poll_bio is never read past. */
	if (!disk || !(disk->limits.features & BLK_FEAT_POLL) || !disk->fops ||
	    !disk->fops->poll_bio)
		return 0;
	return disk->fops->poll_bio(bio, iob, flags);
}

struct bio *bio_chain_and_submit(struct bio *prev, struct bio *next)
{
	if (!next)
		return NULL;
	if (prev) {
		if (bio_chain(prev, next)) {
			bvec__set_errno(EINVAL);
			return NULL;
		}
		submit_bio(prev);
	}
	return next;
}

struct bio *blk_next_bio(struct bio *bio, struct block_device *bdev, unsigned int nr_pages,
			 blk_opf_t opf, gfp_t gfp)
{
	struct bio *next;

	if (nr_pages > BIO_MAX_VECS) {
		bvec__set_errno(EINVAL);
		return NULL;
	}
	next = bio_alloc(bdev, (unsigned short)nr_pages, opf, gfp);
	if (next && !bio_chain_and_submit(bio, next)) {
		bio_put(next);
		return NULL;
	}
	return next;
}

int submit_bio_wait(struct bio *bio)
{
	struct bio_waiter w;

	if (current_bio_list)
		return -EDEADLK;
	w.lock = bvec__lock_new();
	if (!w.lock)
		return -ENOMEM;
	atomic_init(&w.done, false);
	bio->bi_private = &w;
	bio->bi_end_io = bio_wait_end_io;
	submit_bio(bio);
	/*
	 * Still REQ_POLLED after submission (only this thread's submission
	 * clears it): the device completes it only when polled.  Poll until
	 * it has ended or there is nothing left to reap, which means another
	 * poller has taken its completion and is running bi_end_io.
	 */
	if (bio->bi_opf & REQ_POLLED)
		while (!atomic_load_explicit(&w.done, memory_order_acquire) &&
		       bio_poll(bio, NULL, 0) > 0)
			;
	bvec__lock(w.lock);
	while (!atomic_load_explicit(&w.done, memory_order_relaxed))
		bvec__lock_wait(w.lock);
	bvec__unlock(w.lock);
	bvec__lock_free(w.lock);
	return blk_status_to_errno(atomic_load(&bio->bi_status));
}

unsigned int bvec_max_segment_size(const struct queue_limits *lim,
				   uintptr_t addr, unsigned int len)
{
	uint64_t mask = lim->seg_boundary_mask;
	uint64_t to_boundary = mask - (mask & (uint64_t)addr);
	uint64_t seg_max = (uint64_t)lim->max_segment_size - 1;

	/* +1 on the smaller term: mask = ~0 at address 0 cannot overflow. */
	return (unsigned int)BVEC_MIN((uint64_t)len, BVEC_MIN(to_boundary, seg_max) + 1);
}

int bio_split_rw_at(struct bio *bio, const struct queue_limits *lim,
		    unsigned int *segs, unsigned int max_bytes)
{
	struct bvec_iter iter;
	struct bio_vec bv;
	unsigned int nsegs = 0, bytes = 0;

	bio_for_each_bvec(bv, bio, iter) {
		uintptr_t addr = (uintptr_t)bvec_virt(&bv);
		unsigned int len = bv.bv_len;

		while (len) {
			unsigned int seg;

			if (nsegs >= lim->max_segments || bytes >= max_bytes)
				goto split;
			seg = bvec_max_segment_size(lim, addr, len);
			seg = BVEC_MIN(seg, max_bytes - bytes);
			nsegs++;
			bytes += seg;
			addr += seg;
			len -= seg;
		}
	}
	*segs = nsegs;
	return 0;
split:
	/* A split may wait for its bio (the reserve), which REQ_NOWAIT forbids:
	 * as Linux, the caller retries the whole bio where it may block. */
	if (bio->bi_opf & REQ_NOWAIT)
		return -EAGAIN;
	*segs = nsegs;
	bytes &= ~(lim->logical_block_size - 1);
	if (!bytes)
		return -EINVAL;
	return (int)(bytes >> BVEC_SECTOR_SHIFT);
}

/*
 * With @granular (DISCARD, SECURE_ERASE), the split point lands on the
 * discard granularity, as Linux's bio_split_discard(): a device that can
 * only drop whole granules (zram's pages) would otherwise keep every
 * granule a split cuts, since neither piece holds it whole.  A limit
 * below one granule cannot keep to them and splits at the limit.
 */
static int split_discard_at(const struct bio *bio, const struct queue_limits *lim,
			    unsigned int max_sectors, bool granular)
{
	unsigned int lbs = lim->logical_block_size >> BVEC_SECTOR_SHIFT;
	unsigned int gran = lim->discard_granularity >> BVEC_SECTOR_SHIFT;
	unsigned int split, off;

	if (!max_sectors)
		return -EOPNOTSUPP;
	max_sectors &= ~(lbs - 1);
	if (!max_sectors)
		return -EINVAL;
	if (bio_sectors(bio) <= max_sectors)
		return 0;
	if (!granular || gran <= 1 || max_sectors < gran)
		return (int)max_sectors;
	split = max_sectors - max_sectors % gran;
	off = (unsigned int)((bio->bi_iter.bi_sector + split) % gran);
	if (split > off)
		split -= off;
	/* A granularity that is not whole logical blocks: keep to those. */
	if (split % lbs)
		return (int)max_sectors;
	return (int)split;
}

/*
 * As Linux's get_max_io_size(): the most a READ or WRITE piece may carry,
 * ending on a physical block where the limit reaches one.  A piece that
 * ends inside a physical block leaves the device a read, patch and write
 * of that block for each of the two pieces sharing it.
 */
static unsigned int max_io_sectors(const struct bio *bio, const struct queue_limits *lim)
{
	unsigned int pbs = lim->physical_block_size >> BVEC_SECTOR_SHIFT;
	unsigned int lbs = lim->logical_block_size >> BVEC_SECTOR_SHIFT;
	unsigned int start = (unsigned int)(bio->bi_iter.bi_sector & (pbs - 1));
	uint64_t end = ((uint64_t)start + lim->max_sectors) & ~(uint64_t)(pbs - 1);

	if (end > start)
		return (unsigned int)(end - start);
	return lim->max_sectors & ~(lbs - 1);
}

struct bio *bio_split_to_limits(struct bio *bio)
{
	struct gendisk *disk = bio->bi_bdev->bd_disk;
	const struct queue_limits *lim = &disk->limits;
	unsigned int segs;
	struct bio *split;
	int sectors;

	switch (bio_op(bio)) {
	case REQ_OP_READ:
	case REQ_OP_WRITE:
		sectors = bio_split_rw_at(bio, lim, &segs,
					  max_io_sectors(bio, lim) << BVEC_SECTOR_SHIFT);
		break;
	case REQ_OP_DISCARD:
		sectors = split_discard_at(bio, lim, lim->max_discard_sectors, true);
		break;
	case REQ_OP_SECURE_ERASE:
		sectors = split_discard_at(bio, lim, lim->max_secure_erase_sectors, true);
		break;
	case REQ_OP_WRITE_ZEROES:
		sectors = split_discard_at(bio, lim, lim->max_write_zeroes_sectors, false);
		break;
	default:
		return bio;
	}
	if (sectors < 0) {
		bio->bi_status = errno_to_blk_status(sectors);
		bio_endio(bio);
		return NULL;
	}
	if (!sectors)
		return bio;
	/* As Linux: the parts of a split bio complete the ordinary way, since
	 * a poller waits for one bio and the chain ends on another's end. */
	bio_clear_polled(bio);
	split = bio_split(bio, sectors, GFP_NOIO, &disk->bio_split);
	if (!split) {
		bio->bi_status = BLK_STS_RESOURCE;
		bio_endio(bio);
		return NULL;
	}
	bio_chain(split, bio);
	submit_bio_noacct(bio);
	return split;
}

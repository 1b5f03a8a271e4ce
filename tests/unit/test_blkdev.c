// SPDX-License-Identifier: MIT
/* blkdev.h: disks, submission without recursion, limits, the iovec bridge. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#if defined(__linux__) && defined(__has_include)
#if __has_include(<linux/loop.h>) /* not in the musl build's path */
#include <linux/loop.h>
#endif
#endif

#include <libbvec/blkdev.h>

#include "testutil.h"

#define PS ((unsigned int)BVEC_PAGE_SIZE)

START_TEST(test_limits_defaults_and_validation)
{
	struct queue_limits lim;
	struct gendisk *disk = blk_alloc_disk(NULL, -1);

	ck_assert_ptr_nonnull(disk);
	ck_assert_uint_eq(disk->limits.logical_block_size, 512);
	ck_assert_uint_eq(disk->limits.max_sectors, BLK_DEF_MAX_SECTORS);
	ck_assert_uint_eq(disk->limits.max_segments, BLK_MAX_SEGMENTS);
	ck_assert_uint_eq(disk->limits.max_segment_size, BLK_MAX_SEGMENT_SIZE);
	ck_assert(disk->limits.seg_boundary_mask == BLK_SEG_BOUNDARY_MASK);
	ck_assert_ptr_eq(disk->part0->bd_disk, disk);
	set_capacity(disk, 1234);
	ck_assert_uint_eq(bdev_nr_sectors(disk->part0), 1234);
	ck_assert_uint_eq(bdev_logical_block_size(disk->part0), 512);
	put_disk(disk);
	put_disk(NULL);

	memset(&lim, 0, sizeof(lim));
	lim.logical_block_size = 1000;
	errno = 0;
	ck_assert_ptr_null(blk_alloc_disk(&lim, -1));
	ck_assert_int_eq(errno, EINVAL);
	memset(&lim, 0, sizeof(lim));
	lim.max_segment_size = 512;
	ck_assert_ptr_null(blk_alloc_disk(&lim, -1));
	memset(&lim, 0, sizeof(lim));
	lim.seg_boundary_mask = 0xff;
	ck_assert_ptr_null(blk_alloc_disk(&lim, -1));
	memset(&lim, 0, sizeof(lim));
	lim.integrity_interval_exp = 13;
	lim.integrity_tuple_size = 8;
	ck_assert_ptr_null(blk_alloc_disk(&lim, -1));
}
END_TEST

/*
 * blk_set_stacking_limits() as in Linux 6.x: 512-byte blocks, io_min and
 * discard granularity, so a stacking driver that raises them to its
 * children's (or reads them before it has children) starts from sane
 * values; and blk_alloc_disk() raises io_min and, where discard is
 * supported, the discard granularity to the physical block size.
 */
START_TEST(test_stacking_limits_sector_defaults)
{
	struct queue_limits lim;
	struct gendisk *disk;

	memset(&lim, 0xff, sizeof(lim));
	blk_set_stacking_limits(&lim);
	ck_assert_uint_eq(lim.logical_block_size, 512);
	ck_assert_uint_eq(lim.physical_block_size, 512);
	ck_assert_uint_eq(lim.io_min, 512);
	ck_assert_uint_eq(lim.discard_granularity, 512);
	ck_assert_uint_eq(lim.max_discard_sectors, BIO_MAX_SECTORS);

	/* A driver that only raises the logical block size, as Linux's do. */
	lim.logical_block_size = PS;
	disk = blk_alloc_disk(&lim, -1);
	ck_assert_ptr_nonnull(disk);
	ck_assert_uint_eq(disk->limits.physical_block_size, PS);
	ck_assert_uint_eq(disk->limits.io_min, PS);
	ck_assert_uint_eq(disk->limits.discard_granularity, PS);
	put_disk(disk);

	memset(&lim, 0, sizeof(lim));
	lim.physical_block_size = PS;
	lim.max_hw_discard_sectors = 64;
	disk = blk_alloc_disk(&lim, -1);
	ck_assert_ptr_nonnull(disk);
	ck_assert_uint_eq(disk->limits.io_min, PS);
	ck_assert_uint_eq(disk->limits.discard_granularity, PS);
	put_disk(disk);

	/* No discard: no granularity, as Linux reports it. */
	blk_set_stacking_limits(&lim);
	lim.max_hw_discard_sectors = lim.max_discard_sectors = 0;
	disk = blk_alloc_disk(&lim, -1);
	ck_assert_ptr_nonnull(disk);
	ck_assert_uint_eq(disk->limits.discard_granularity, 0);
	ck_assert_uint_eq(disk->limits.io_min, 512);
	put_disk(disk);
}
END_TEST

static void complete_now(struct bio *bio)
{
	bio_endio(bio);
}

static const struct block_device_operations now_ops = { .submit_bio = complete_now };

START_TEST(test_submit_rejects_bad_bios)
{
	struct gendisk *disk = blk_alloc_disk(NULL, -1);
	unsigned char buf[1024];
	struct bio_vec table[1];
	struct bio bio;

	disk->fops = &now_ops;
	set_capacity(disk, 8);
	bio_init(&bio, disk->part0, table, 1, REQ_OP_WRITE);
	bio_add_virt(&bio, buf, 1024);
	bio.bi_iter.bi_sector = 6;
	ck_assert_int_eq(submit_bio_wait(&bio), 0);
	bio_reset(&bio, disk->part0, REQ_OP_WRITE);
	bio_add_virt(&bio, buf, 1024);
	bio.bi_iter.bi_sector = 7; /* crosses the end */
	ck_assert_int_eq(submit_bio_wait(&bio), -EIO);
	bio_reset(&bio, disk->part0, REQ_OP_WRITE);
	bio_add_virt(&bio, buf, 1024);
	bio.bi_iter.bi_sector = UINT64_MAX - 1; /* would wrap */
	ck_assert_int_eq(submit_bio_wait(&bio), -EIO);
	bio_reset(&bio, NULL, REQ_OP_FLUSH); /* no device */
	ck_assert_int_eq(submit_bio_wait(&bio), -EIO);
	bio_reset(&bio, disk->part0, REQ_OP_FLUSH);
	ck_assert_int_eq(submit_bio_wait(&bio), 0);
	bio_uninit(&bio);
	put_disk(disk);
}
END_TEST

/* A driver that resubmits the same bio to itself a million times. */
struct self {
	unsigned long left;
	uintptr_t lowest, highest;
};

static void resubmit(struct bio *bio)
{
	struct self *s = bio->bi_bdev->bd_disk->private_data;
	uintptr_t here = (uintptr_t)&s;

	if (here < s->lowest)
		s->lowest = here;
	if (here > s->highest)
		s->highest = here;
	if (s->left--) {
		submit_bio(bio);
		return;
	}
	bio_endio(bio);
}

static const struct block_device_operations resubmit_ops = { .submit_bio = resubmit };

/* A disk with a write cache, so an empty flush reaches its driver. */
static struct gendisk *cached_disk(void)
{
	struct queue_limits lim = { .features = BLK_FEAT_WRITE_CACHE };

	return blk_alloc_disk(&lim, -1);
}

START_TEST(test_submit_does_not_recurse)
{
	struct gendisk *disk = cached_disk();
	struct self s = { 1000000, UINTPTR_MAX, 0 };
	struct bio bio;

	s.left = test_scale(1000000);
	disk->fops = &resubmit_ops;
	disk->private_data = &s;
	bio_init(&bio, disk->part0, NULL, 0, REQ_OP_WRITE | REQ_PREFLUSH);
	ck_assert_int_eq(submit_bio_wait(&bio), 0);
	ck_assert_uint_eq(s.left, (unsigned long)-1);
	/* Every call ran in the same frame of the outer submit_bio. */
	ck_assert_uint_eq(s.highest - s.lowest, 0);
	put_disk(disk);
}
END_TEST

static void *complete_later(void *p)
{
	bio_endio(p);
	return NULL;
}

static void async_submit(struct bio *bio)
{
	pthread_t t;

	bio->bi_status = BLK_STS_NOSPC;
	pthread_create(&t, NULL, complete_later, bio);
	pthread_detach(t);
}

static const struct block_device_operations async_ops = { .submit_bio = async_submit };

START_TEST(test_submit_bio_wait_async)
{
	struct gendisk *disk = cached_disk();
	struct bio bio;

	disk->fops = &async_ops;
	bio_init(&bio, disk->part0, NULL, 0, REQ_OP_WRITE | REQ_PREFLUSH);
	ck_assert_int_eq(submit_bio_wait(&bio), -ENOSPC);
	put_disk(disk);
}
END_TEST

/* A driver that records what reached it. */
struct seen {
	unsigned int calls;
	blk_opf_t opf;
	unsigned int size;
};

static void record(struct bio *bio)
{
	struct seen *s = bio->bi_bdev->bd_disk->private_data;

	s->calls++;
	s->opf = bio->bi_opf;
	s->size = bio->bi_iter.bi_size;
	bio_endio(bio);
}

static const struct block_device_operations record_ops = { .submit_bio = record };

/* A 64-sector test disk of @ops over @priv, which is zeroed. */
static struct gendisk *test_disk(const struct queue_limits *lim,
				 const struct block_device_operations *ops, void *priv, size_t size)
{
	struct gendisk *disk = blk_alloc_disk(lim, -1);

	ck_assert_ptr_nonnull(disk);
	disk->fops = ops;
	disk->private_data = priv;
	set_capacity(disk, 64);
	memset(priv, 0, size);
	return disk;
}

static struct gendisk *recording_disk(const struct queue_limits *lim, struct seen *s)
{
	return test_disk(lim, &record_ops, s, sizeof(*s));
}

/* Submit a bio of @opf over @len bytes of @buf (NULL: no memory) at @sector. */
static int submit_op(struct gendisk *disk, blk_opf_t opf, sector_t sector,
		     void *buf, unsigned int len)
{
	struct bio_vec table[1];
	struct bio bio;
	int ret;

	bio_init(&bio, disk->part0, table, 1, opf);
	bio.bi_iter.bi_sector = sector;
	if (buf)
		bio_add_virt(&bio, buf, len);
	else
		bio.bi_iter.bi_size = len;
	ret = submit_bio_wait(&bio);
	bio_uninit(&bio);
	return ret;
}

/*
 * A driver that completes REQ_POLLED bios only from poll_bio, as a poll
 * queue with no interrupt, and every other bio at once.
 */
struct poller {
	struct bio_list held;
	unsigned int submitted, polled_seen, polls;
	unsigned int last_flags;
};

static void poll_submit(struct bio *bio)
{
	struct poller *p = bio->bi_bdev->bd_disk->private_data;

	bio = bio_split_to_limits(bio);
	if (!bio)
		return;
	p->submitted++;
	if (bio->bi_opf & REQ_POLLED) {
		p->polled_seen++;
		bio_list_add(&p->held, bio);
		return;
	}
	bio_endio(bio);
}

static int poll_poll(struct bio *bio, struct io_comp_batch *iob, unsigned int flags)
{
	struct poller *p = bio->bi_bdev->bd_disk->private_data;
	struct bio *b;
	int n = 0;

	ck_assert_ptr_null(iob);
	p->polls++;
	p->last_flags = flags;
	while ((b = bio_list_pop(&p->held))) {
		bio_endio(b);
		n++;
	}
	return n;
}

static const struct block_device_operations poll_ops = {
	.submit_bio = poll_submit,
	.poll_bio = poll_poll,
};

static struct gendisk *polling_disk(const struct queue_limits *lim, struct poller *p)
{
	struct gendisk *disk = test_disk(lim, &poll_ops, p, sizeof(*p));

	bio_list_init(&p->held);
	return disk;
}

static void count_end(struct bio *bio)
{
	(*(unsigned int *)bio->bi_private)++;
}

/*
 * REQ_POLLED reaches a driver only on a disk with BLK_FEAT_POLL, and only
 * in a bio the block layer did not split; submit_bio_wait() polls for it
 * (this driver would never complete it otherwise); bio_poll() calls
 * poll_bio only for a bio still polled.
 */
START_TEST(test_polled_bios)
{
	struct queue_limits lim = { .features = BLK_FEAT_POLL };
	static char buf[8192];
	struct bio_vec table[2];
	struct poller p;
	struct gendisk *disk = polling_disk(&lim, &p);
	unsigned int ended = 0;
	struct bio bio;

	/* Polled: held by the driver, completed by submit_bio_wait()'s poll. */
	ck_assert_int_eq(submit_op(disk, REQ_OP_READ | REQ_POLLED, 0, buf, 4096), 0);
	ck_assert_uint_eq(p.polled_seen, 1);
	ck_assert_uint_ge(p.polls, 1);
	ck_assert_uint_eq(p.last_flags, 0);

	/* bio_poll() with ONESHOT passes the flag on and finds the bio. */
	bio_init(&bio, disk->part0, table, 1, REQ_OP_READ | REQ_POLLED);
	bio_add_virt(&bio, buf, 4096);
	bio.bi_private = &ended;
	bio.bi_end_io = count_end;
	submit_bio(&bio);
	ck_assert_uint_eq(ended, 0);
	ck_assert_int_eq(bio_poll(&bio, NULL, BLK_POLL_ONESHOT), 1);
	ck_assert_uint_eq(p.last_flags, BLK_POLL_ONESHOT);
	ck_assert_uint_eq(ended, 1);
	bio_uninit(&bio);

	/* Not polled: bio_poll() leaves the driver alone. */
	p.polls = 0;
	bio_init(&bio, disk->part0, table, 1, REQ_OP_READ);
	bio_add_virt(&bio, buf, 4096);
	ck_assert_int_eq(bio_poll(&bio, NULL, 0), 0);
	ck_assert_uint_eq(p.polls, 0);
	bio_uninit(&bio);
	put_disk(disk);

	/* A split bio is no longer polled, either part. */
	lim.max_segments = 1;
	disk = polling_disk(&lim, &p);
	bio_init(&bio, disk->part0, table, 2, REQ_OP_WRITE | REQ_POLLED);
	bio_add_virt(&bio, buf, 512);
	bio_add_virt(&bio, buf + 4096, 512);
	ck_assert_uint_eq(bio.bi_vcnt, 2);
	ck_assert_int_eq(submit_bio_wait(&bio), 0);
	ck_assert_uint_eq(p.submitted, 2);
	ck_assert_uint_eq(p.polled_seen, 0);
	ck_assert_uint_eq(p.polls, 0);
	bio_uninit(&bio);
	put_disk(disk);

	/* Without BLK_FEAT_POLL the flag is cleared before the driver sees it. */
	lim = (struct queue_limits){ .features = 0 };
	disk = polling_disk(&lim, &p);
	ck_assert_int_eq(submit_op(disk, REQ_OP_READ | REQ_POLLED, 0, buf, 4096), 0);
	ck_assert_uint_eq(p.submitted, 1);
	ck_assert_uint_eq(p.polled_seen, 0);
	ck_assert_uint_eq(p.polls, 0);
	put_disk(disk);
}
END_TEST

/* Without a write cache, flushes and FUA are stripped as Linux strips them. */
START_TEST(test_submit_filters_flush)
{
	static unsigned char buf[4096];
	struct queue_limits cached = { .features = BLK_FEAT_WRITE_CACHE };
	struct gendisk *disk;
	struct seen s;

	disk = recording_disk(NULL, &s);
	ck_assert(!bdev_write_cache(disk->part0));
	ck_assert_int_eq(submit_op(disk, REQ_OP_WRITE | REQ_PREFLUSH, 0, NULL, 0), 0);
	ck_assert_int_eq(submit_op(disk, REQ_OP_FLUSH, 0, NULL, 0), 0);
	ck_assert_uint_eq(s.calls, 0);
	ck_assert_int_eq(submit_op(disk, REQ_OP_WRITE | REQ_PREFLUSH | REQ_FUA | REQ_SYNC,
				   8, buf, 4096), 0);
	ck_assert_uint_eq(s.calls, 1);
	ck_assert_uint_eq(s.opf, REQ_OP_WRITE | REQ_SYNC);
	ck_assert_uint_eq(s.size, 4096);
	ck_assert_uint_eq(disk->nr_refused, 0);
	put_disk(disk);

	disk = recording_disk(&cached, &s);
	ck_assert(bdev_write_cache(disk->part0));
	ck_assert_int_eq(submit_op(disk, REQ_OP_FLUSH, 0, NULL, 0), 0);
	ck_assert_uint_eq(s.calls, 1);
	ck_assert_uint_eq(s.opf, REQ_OP_WRITE | REQ_PREFLUSH); /* Linux's spelling */
	ck_assert_uint_eq(s.size, 0);
	ck_assert_int_eq(submit_op(disk, REQ_OP_WRITE | REQ_FUA, 8, buf, 512), 0);
	ck_assert_uint_eq(s.opf, REQ_OP_WRITE | REQ_FUA);
	put_disk(disk);
}
END_TEST

/* Operations the limits rule out never reach the driver. */
START_TEST(test_submit_filters_unsupported)
{
	struct queue_limits lim = { .max_hw_discard_sectors = 16 };
	struct gendisk *disk;
	struct seen s;

	disk = recording_disk(NULL, &s); /* no discard, erase or write-zeroes */
	ck_assert_int_eq(submit_op(disk, REQ_OP_DISCARD, 0, NULL, 4096), -EOPNOTSUPP);
	ck_assert_int_eq(submit_op(disk, REQ_OP_SECURE_ERASE, 0, NULL, 4096), -EOPNOTSUPP);
	ck_assert_int_eq(submit_op(disk, REQ_OP_WRITE_ZEROES, 0, NULL, 4096), -EOPNOTSUPP);
	ck_assert_int_eq(submit_op(disk, (blk_opf_t)7, 0, NULL, 0), -EOPNOTSUPP);
	ck_assert_uint_eq(s.calls, 0);
	ck_assert_uint_eq(disk->nr_refused, 4);
	put_disk(disk);

	disk = recording_disk(&lim, &s);
	ck_assert_uint_eq(bdev_max_discard_sectors(disk->part0), 16); /* from the hw limit */
	ck_assert_int_eq(submit_op(disk, REQ_OP_DISCARD, 0, NULL, 4096), 0);
	ck_assert_uint_eq(s.calls, 1);
	ck_assert_uint_eq(s.opf, REQ_OP_DISCARD);
	put_disk(disk);

	blk_set_stacking_limits(&lim);
	disk = recording_disk(&lim, &s);
	ck_assert_int_eq(submit_op(disk, REQ_OP_SECURE_ERASE, 0, NULL, 4096), 0);
	ck_assert_int_eq(submit_op(disk, REQ_OP_WRITE_ZEROES, 0, NULL, 4096), 0);
	ck_assert_uint_eq(s.calls, 2);
	put_disk(disk);
}
END_TEST

/*
 * As Linux 6.x's submit_bio_noacct(): a REQ_NOWAIT bio to a disk whose
 * limits lack BLK_FEAT_NOWAIT ends with BLK_STS_NOTSUPP before anything
 * else is checked, since its driver may block where the submitter said it
 * must not.
 */
START_TEST(test_submit_filters_nowait)
{
	static unsigned char buf[8192];
	struct queue_limits lim;
	struct gendisk *disk;
	struct seen s;

	disk = recording_disk(NULL, &s);
	ck_assert_int_eq(submit_op(disk, REQ_OP_WRITE | REQ_NOWAIT, 0, buf, 4096), -EOPNOTSUPP);
	ck_assert_msg(s.calls == 0, "a REQ_NOWAIT write reached a driver without BLK_FEAT_NOWAIT");
	ck_assert_int_eq(submit_op(disk, REQ_OP_READ | REQ_NOWAIT, 0, buf, 512), -EOPNOTSUPP);
	/* Before the end-of-device check and the flush filter, as in Linux. */
	ck_assert_int_eq(submit_op(disk, REQ_OP_READ | REQ_NOWAIT, 64, buf, 512), -EOPNOTSUPP);
	ck_assert_int_eq(submit_op(disk, REQ_OP_WRITE | REQ_PREFLUSH | REQ_NOWAIT, 0, NULL, 0),
			 -EOPNOTSUPP);
	ck_assert_uint_eq(s.calls, 0);
	ck_assert_uint_eq(disk->nr_refused, 4);
	ck_assert_int_eq(submit_op(disk, REQ_OP_WRITE, 0, buf, 4096), 0);
	ck_assert_uint_eq(s.calls, 1);
	ck_assert(!bdev_nowait(disk->part0));
	put_disk(disk);

	/* With the feature, the driver gets the bio and the flag with it. */
	blk_set_stacking_limits(&lim);
	ck_assert_uint_eq(lim.features & BLK_FEAT_NOWAIT, 0); /* as Linux */
	lim.features |= BLK_FEAT_NOWAIT;
	disk = recording_disk(&lim, &s);
	ck_assert(bdev_nowait(disk->part0));
	ck_assert_int_eq(submit_op(disk, REQ_OP_WRITE | REQ_NOWAIT, 0, buf, 4096), 0);
	ck_assert_uint_eq(s.calls, 1);
	ck_assert(s.opf & REQ_NOWAIT);
	/* Past the end it is an I/O error again. */
	ck_assert_int_eq(submit_op(disk, REQ_OP_READ | REQ_NOWAIT, 64, buf, 512), -EIO);
	ck_assert_uint_eq(s.calls, 1);
	put_disk(disk);
}
END_TEST

/* Position and size must be whole logical blocks, for every operation. */
START_TEST(test_submit_filters_misaligned)
{
	static unsigned char buf[8192];
	struct queue_limits lim;
	struct gendisk *disk;
	struct seen s;

	blk_set_stacking_limits(&lim);
	lim.logical_block_size = 4096;
	disk = recording_disk(&lim, &s);
	ck_assert_int_eq(submit_op(disk, REQ_OP_WRITE, 1, buf, 4096), -EIO);
	ck_assert_int_eq(submit_op(disk, REQ_OP_READ, 0, buf, 512), -EIO);
	ck_assert_int_eq(submit_op(disk, REQ_OP_DISCARD, 1, NULL, 512), -EIO);
	ck_assert_int_eq(submit_op(disk, REQ_OP_WRITE_ZEROES, 8, NULL, 4096 + 512), -EIO);
	ck_assert_uint_eq(s.calls, 0);
	ck_assert_uint_eq(disk->nr_refused, 4);
	ck_assert_int_eq(submit_op(disk, REQ_OP_WRITE, 8, buf, 8192), 0);
	ck_assert_int_eq(submit_op(disk, REQ_OP_DISCARD, 16, NULL, 4096), 0);
	ck_assert_uint_eq(s.calls, 2);
	put_disk(disk);
}
END_TEST

/* A driver that splits to its limits and records what it was given. */
struct piece {
	sector_t sector;
	unsigned int size, segs;
};

struct recorder {
	struct piece pieces[4096];
	unsigned int n;
};

/* Hardware segments of a bio as the limits define them. */
static unsigned int count_segments(struct bio *bio, const struct queue_limits *lim)
{
	struct bvec_iter iter;
	struct bio_vec bv;
	unsigned int segs = 0;

	if (!bio_has_data(bio))
		return 0;
	bio_for_each_bvec(bv, bio, iter) {
		uintptr_t addr = (uintptr_t)bvec_virt(&bv);
		unsigned int len = bv.bv_len;

		while (len) {
			unsigned int seg = bvec_max_segment_size(lim, addr, len);

			addr += seg;
			len -= seg;
			segs++;
		}
	}
	return segs;
}

static void split_and_record(struct bio *bio)
{
	struct recorder *r = bio->bi_bdev->bd_disk->private_data;

	bio = bio_split_to_limits(bio);
	if (!bio)
		return;
	ck_assert_uint_lt(r->n, 4096);
	r->pieces[r->n].sector = bio->bi_iter.bi_sector;
	r->pieces[r->n].size = bio->bi_iter.bi_size;
	r->pieces[r->n].segs = count_segments(bio, bdev_limits(bio->bi_bdev));
	r->n++;
	bio_endio(bio);
}

static const struct block_device_operations split_ops = { .submit_bio = split_and_record };

/* A 512 MiB disk of @lim whose driver splits to its limits and records @r. */
static struct gendisk *splitting_disk(const struct queue_limits *lim, struct recorder *r)
{
	struct gendisk *disk = test_disk(lim, &split_ops, r, sizeof(*r));

	set_capacity(disk, 1 << 20);
	return disk;
}

START_TEST(test_split_to_limits)
{
	struct queue_limits lim;
	struct recorder *r = calloc(1, sizeof(*r));
	unsigned char *mem = test_pages(64);
	struct rng rng = { 99 };
	struct gendisk *disk;
	unsigned int round;

	memset(&lim, 0, sizeof(lim));
	lim.logical_block_size = 1024;
	lim.max_sectors = 4 * PS / 512;
	lim.max_segments = 3;
	lim.max_segment_size = PS;
	lim.seg_boundary_mask = 2 * PS - 1;
	disk = splitting_disk(&lim, r);

	for (round = 0; round < test_scale(200); round++) {
		struct bio *bio = bio_alloc(disk->part0, 16, REQ_OP_WRITE, GFP_KERNEL);
		unsigned int total = 0, i, nseg = rng_range(&rng, 1, 16);
		sector_t start = rng_range(&rng, 0, 1000) * 2, expect;

		r->n = 0;
		/* Pieces of whole 1 KiB blocks at random places, some spanning pages. */
		for (i = 0; i < nseg; i++) {
			unsigned int len = rng_range(&rng, 1, 12) * 1024;
			unsigned int off = rng_range(&rng, 0, 48) * PS + rng_range(&rng, 0, 7) * 512;

			ck_assert_int_eq(bio_add_virt(bio, mem + off, len), (int)len);
			total += len;
		}
		bio->bi_iter.bi_sector = start;
		ck_assert_int_eq(submit_bio_wait(bio), 0);
		expect = start;
		for (i = 0; i < r->n; i++) {
			ck_assert_uint_eq(r->pieces[i].sector, expect);
			ck_assert_uint_le(r->pieces[i].size, 4 * PS);
			ck_assert_uint_le(r->pieces[i].segs, 3);
			ck_assert_uint_eq(r->pieces[i].size % 1024, 0);
			ck_assert_uint_gt(r->pieces[i].size, 0);
			expect += r->pieces[i].size >> 9;
		}
		ck_assert_uint_eq(expect - start, total >> 9);
		bio_put(bio);
	}
	put_disk(disk);
	free(mem);
	free(r);
}
END_TEST

/*
 * A REQ_NOWAIT bio must not wait, and a split may (the split bio comes
 * from a reserve), so Linux ends one that would need splitting with
 * BLK_STS_AGAIN before any of it is done, for the caller to retry from
 * where it may block.  One that fits goes through.
 */
START_TEST(test_split_nowait)
{
	struct queue_limits lim;
	struct recorder *r = calloc(1, sizeof(*r));
	unsigned char *mem = test_pages(4);
	struct gendisk *disk;
	struct bio *bio;
	unsigned int segs;
	int ret;

	memset(&lim, 0, sizeof(lim));
	lim.max_sectors = PS / 512;
	lim.features = BLK_FEAT_NOWAIT; /* else submit_bio() refuses it first */
	disk = splitting_disk(&lim, r);

	bio = bio_alloc(disk->part0, 1, REQ_OP_WRITE | REQ_NOWAIT, GFP_KERNEL);
	ck_assert_int_eq(bio_add_virt(bio, mem, 2 * PS), (int)(2 * PS));
	ret = submit_bio_wait(bio);
	ck_assert_msg(r->n == 0, "%u pieces of a REQ_NOWAIT bio reached the driver", r->n);
	ck_assert_int_eq(ret, -EAGAIN);
	bio_put(bio);
	bio = bio_alloc(disk->part0, 1, REQ_OP_READ | REQ_NOWAIT, GFP_KERNEL);
	ck_assert_int_eq(bio_add_virt(bio, mem, 2 * PS), (int)(2 * PS));
	ck_assert_int_eq(bio_split_rw_at(bio, &disk->limits, &segs, PS), -EAGAIN);
	bio_put(bio);

	bio = bio_alloc(disk->part0, 1, REQ_OP_WRITE | REQ_NOWAIT, GFP_KERNEL);
	ck_assert_int_eq(bio_add_virt(bio, mem, PS), (int)PS);
	ck_assert_int_eq(submit_bio_wait(bio), 0);
	ck_assert_uint_eq(r->n, 1);
	bio_put(bio);
	put_disk(disk);
	free(mem);
	free(r);
}
END_TEST

/*
 * READ and WRITE splits end on the physical block size where the limit
 * allows it, as Linux's: a piece ending inside a 4 KiB physical block
 * makes the device read, patch and write that block for each of the two
 * pieces that share it.  A limit below one physical block splits at the
 * limit.
 */
START_TEST(test_split_physical_block)
{
	const unsigned int ps = PS / 512, pbs = 2 * ps; /* a block of two pages */
	const unsigned int len = 8 * pbs;
	const unsigned int starts[] = { 0, 1, ps / 2, ps, pbs + 3 };
	const unsigned int maxes[] = { ps, 2 * pbs + ps / 2 }; /* below a block, 2.25 */
	struct queue_limits lim;
	struct recorder *r = calloc(1, sizeof(*r));
	unsigned char *mem = test_pages(len / ps);
	struct gendisk *disk;
	struct bio *bio;
	unsigned int i, m, k;

	for (m = 0; m < 2; m++) {
		unsigned int max = maxes[m];

		memset(&lim, 0, sizeof(lim));
		lim.physical_block_size = pbs * 512;
		lim.max_sectors = max;
		disk = splitting_disk(&lim, r);
		for (k = 0; k < sizeof(starts) / sizeof(starts[0]); k++) {
			sector_t expect = starts[k];

			r->n = 0;
			bio = bio_alloc(disk->part0, 1, REQ_OP_WRITE, GFP_KERNEL);
			ck_assert_int_eq(bio_add_virt(bio, mem, len * 512), (int)(len * 512));
			bio->bi_iter.bi_sector = starts[k];
			ck_assert_int_eq(submit_bio_wait(bio), 0);
			bio_put(bio);
			for (i = 0; i < r->n; i++) {
				sector_t s = r->pieces[i].sector, n = r->pieces[i].size / 512;

				ck_assert_uint_eq(s, expect);
				ck_assert_uint_gt(n, 0);
				ck_assert_uint_le(n, max);
				if (i + 1 < r->n && max >= pbs)
					ck_assert_msg((s + n) % pbs == 0,
						      "max %u from %u: piece %u ends at sector %u, inside a physical block",
						      max, starts[k], i, (unsigned int)(s + n));
				/* below one block: a whole limit, or up to a block */
				if (i + 1 < r->n && max < pbs && (s + n) % pbs)
					ck_assert_uint_eq(n, max);
				expect += n;
			}
			ck_assert_uint_eq(expect, starts[k] + len);
		}
		put_disk(disk);
	}
	free(mem);
	free(r);
}
END_TEST

START_TEST(test_split_to_limits_discard)
{
	struct queue_limits lim;
	struct recorder *r = calloc(1, sizeof(*r));
	struct gendisk *disk;
	struct bio bio;

	memset(&lim, 0, sizeof(lim));
	lim.max_discard_sectors = 100;
	disk = splitting_disk(&lim, r);
	bio_init(&bio, disk->part0, NULL, 0, REQ_OP_DISCARD);
	bio.bi_iter.bi_size = 250 * 512;
	ck_assert_int_eq(submit_bio_wait(&bio), 0);
	ck_assert_uint_eq(r->n, 3);
	ck_assert_uint_eq(r->pieces[0].size, 100 * 512);
	ck_assert_uint_eq(r->pieces[2].size, 50 * 512);
	ck_assert_uint_eq(r->pieces[2].sector, 200);

	bio_reset(&bio, disk->part0, REQ_OP_WRITE_ZEROES); /* not supported */
	bio.bi_iter.bi_size = 8 * 512;
	ck_assert_int_eq(submit_bio_wait(&bio), -EOPNOTSUPP);
	bio_uninit(&bio);
	put_disk(disk);
	free(r);
}
END_TEST

/*
 * Linux splits a DISCARD (and a SECURE_ERASE) so that each split point
 * lands on the discard granularity: a device that frees whole granules
 * only (zram, brd: pages) then frees every granule the bio covers.  A
 * split inside a granule leaves it to two pieces, neither of which holds
 * it whole, and it is never freed.  WRITE_ZEROES splits at its limit.
 */
START_TEST(test_split_discard_granularity)
{
	const unsigned int gs = PS / 512; /* sectors per granule: a page */
	static const enum req_op ops[] = { REQ_OP_DISCARD, REQ_OP_SECURE_ERASE };
	struct queue_limits lim;
	struct recorder *r = calloc(1, sizeof(*r));
	struct gendisk *disk;
	struct bio bio;
	unsigned int o, i, start, len, whole;

	memset(&lim, 0, sizeof(lim));
	lim.discard_granularity = PS;
	lim.max_hw_discard_sectors = gs + gs / 2;	/* a granule and a half */
	lim.max_secure_erase_sectors = 2 * gs + gs / 2;
	lim.max_write_zeroes_sectors = gs + gs / 2;
	disk = splitting_disk(&lim, r);
	for (o = 0; o < 2; o++) {
		unsigned int max = o ? 2 * gs + gs / 2 : gs + gs / 2;

		for (start = 0; start < 2 * gs; start += gs / 2) {
			sector_t expect = start;

			r->n = 0;
			len = 7 * gs;
			bio_init(&bio, disk->part0, NULL, 0, ops[o]);
			bio.bi_iter.bi_sector = start;
			bio.bi_iter.bi_size = len * 512;
			ck_assert_int_eq(submit_bio_wait(&bio), 0);
			bio_uninit(&bio);
			whole = 0;
			for (i = 0; i < r->n; i++) {
				sector_t s = r->pieces[i].sector, n = r->pieces[i].size / 512;

				ck_assert_uint_eq(s, expect);
				ck_assert_uint_gt(n, 0);
				ck_assert_uint_le(n, max);
				if (i)
					ck_assert_msg(s % gs == 0,
						      "op %u from %u: piece %u starts at %u, inside a granule",
						      (unsigned int)ops[o], start, i, (unsigned int)s);
				/* granules this piece holds whole */
				whole += (unsigned int)((s + n) / gs - (s + gs - 1) / gs);
				expect += n;
			}
			ck_assert_uint_eq(expect, start + len);
			ck_assert_uint_eq(whole, (start + len) / gs - (start + gs - 1) / gs);
		}
	}

	/* WRITE_ZEROES ignores the granularity, as in Linux. */
	r->n = 0;
	bio_init(&bio, disk->part0, NULL, 0, REQ_OP_WRITE_ZEROES);
	bio.bi_iter.bi_sector = gs / 2;
	bio.bi_iter.bi_size = 3 * gs * 512;
	ck_assert_int_eq(submit_bio_wait(&bio), 0);
	bio_uninit(&bio);
	ck_assert_uint_eq(r->n, 2);
	ck_assert_uint_eq(r->pieces[0].size, (gs + gs / 2) * 512);
	put_disk(disk);

	/* A limit below one granule still makes progress, in limit-sized pieces. */
	memset(&lim, 0, sizeof(lim));
	lim.discard_granularity = 4 * PS;
	lim.max_hw_discard_sectors = gs;
	disk = splitting_disk(&lim, r);
	r->n = 0;
	bio_init(&bio, disk->part0, NULL, 0, REQ_OP_DISCARD);
	bio.bi_iter.bi_sector = 1;
	bio.bi_iter.bi_size = 3 * gs * 512;
	ck_assert_int_eq(submit_bio_wait(&bio), 0);
	bio_uninit(&bio);
	ck_assert_uint_eq(r->n, 3);
	for (i = 0; i < 3; i++)
		ck_assert_uint_eq(r->pieces[i].size, gs * 512);
	put_disk(disk);
	free(r);
}
END_TEST

/*
 * Regressions: the segment-size formula once overflowed for an all-ones
 * mask at address 0 (a 4 GB corruption) and on 32-bit limits.
 */
START_TEST(test_segment_size_no_overflow)
{
	struct queue_limits lim;

	memset(&lim, 0, sizeof(lim));
	lim.seg_boundary_mask = UINT64_MAX;
	lim.max_segment_size = UINT32_MAX;
	ck_assert_uint_eq(bvec_max_segment_size(&lim, 0, UINT32_MAX), UINT32_MAX);
	ck_assert_uint_eq(bvec_max_segment_size(&lim, 0, 1u << 31), 1u << 31);
	lim.seg_boundary_mask = 0xFFFFFFFFu;
	ck_assert_uint_eq(bvec_max_segment_size(&lim, 0, UINT32_MAX), UINT32_MAX);
	ck_assert_uint_eq(bvec_max_segment_size(&lim, 0xFFFFF000u, 8192), 4096);
	lim.max_segment_size = 65536;
	ck_assert_uint_eq(bvec_max_segment_size(&lim, 0, 1u << 20), 65536);
	lim.seg_boundary_mask = 0xFFF;
	ck_assert_uint_eq(bvec_max_segment_size(&lim, 0x1F00, 4096), 256);
	ck_assert_uint_eq(bvec_max_segment_size(&lim, 0x1FFF, 4096), 1);
}
END_TEST

START_TEST(test_iovec_bridge)
{
	unsigned char *mem = test_pages(4);
	struct iovec in[5], out[8];
	struct bio_vec table[3];
	struct bio b, *bio = &b;
	struct bvec_iter iter;
	int n;

	bio_init(bio, NULL, table, 3, REQ_OP_WRITE);
	in[0].iov_base = mem;
	in[0].iov_len = 100;
	in[1].iov_base = mem + 100; /* contiguous with in[0]: one bvec */
	in[1].iov_len = 2 * PS;
	in[2].iov_base = mem + 5;
	in[2].iov_len = 0; /* skipped */
	in[3].iov_base = mem + 3 * PS;
	in[3].iov_len = 50;
	in[4].iov_base = mem + 3 * PS + 100;
	in[4].iov_len = 60;
	ck_assert_int_eq(bvec_bio_add_iovec(bio, in, 5), 100 + 2 * PS + 50 + 60);
	ck_assert_uint_eq(bio->bi_vcnt, 3);
	/* All or nothing: one more entry does not fit, the bio is unchanged. */
	ck_assert_int_eq(bvec_bio_add_iovec(bio, in + 3, 1), -EINVAL);
	ck_assert_uint_eq(bio->bi_vcnt, 3);
	ck_assert_uint_eq(bio->bi_iter.bi_size, 100 + 2 * PS + 50 + 60);

	ck_assert_int_eq(bvec_bio_iovec_count(bio, bio->bi_iter), 3);
	n = bvec_bio_to_iovec(bio, bio->bi_iter, out, 8);
	ck_assert_int_eq(n, 3);
	ck_assert_ptr_eq(out[0].iov_base, mem);
	ck_assert_uint_eq(out[0].iov_len, 100 + 2 * PS);
	ck_assert_ptr_eq(out[2].iov_base, mem + 3 * PS + 100);
	ck_assert_int_eq(bvec_bio_to_iovec(bio, bio->bi_iter, out, 2), -ENOSPC);

	iter = bio->bi_iter;
	bio_advance_iter(bio, &iter, 150);
	n = bvec_bio_to_iovec(bio, iter, out, 8);
	ck_assert_int_eq(n, 3);
	ck_assert_ptr_eq(out[0].iov_base, mem + 150);
	ck_assert_uint_eq(out[0].iov_len, 2 * PS - 50);
	bio_uninit(bio);
	free(mem);
}
END_TEST

/* A file disk given 200 separate runs in one bio: more than one iovec batch. */
/*
 * The file disk's preadv()/pwritev() and fdatasync() block on I/O, so it
 * must not claim BLK_FEAT_NOWAIT even when the caller's limits carry it:
 * a REQ_NOWAIT bio is refused with BLK_STS_NOTSUPP and the file is left
 * alone.
 */
START_TEST(test_file_disk_not_nowait)
{
	char name[] = "/tmp/bvec-file-XXXXXX";
	int fd = mkstemp(name);
	struct queue_limits lim;
	unsigned char *buf = calloc(1, PS), back;
	struct gendisk *disk;

	ck_assert_int_ge(fd, 0);
	unlink(name);
	ck_assert_int_eq(ftruncate(fd, 4 * PS), 0);
	memset(buf, 0x5a, PS);
	blk_set_stacking_limits(&lim);
	lim.features |= BLK_FEAT_NOWAIT;
	disk = bvec_file_disk_create(fd, &lim);
	ck_assert_ptr_nonnull(disk);
	ck_assert_msg(!bdev_nowait(disk->part0),
		      "the file disk, which blocks on I/O, has BLK_FEAT_NOWAIT");
	ck_assert_int_eq(submit_op(disk, REQ_OP_WRITE | REQ_NOWAIT, 0, buf, PS), -EOPNOTSUPP);
	ck_assert_int_eq(pread(fd, &back, 1, 0), 1);
	ck_assert_uint_eq(back, 0);
	put_disk(disk);
	disk = bvec_file_disk_create(fd, NULL);
	ck_assert_ptr_nonnull(disk);
	ck_assert(!bdev_nowait(disk->part0));
	put_disk(disk);
	close(fd);
	free(buf);
}
END_TEST

START_TEST(test_file_disk_many_segments)
{
	char name[] = "/tmp/bvec-file-XXXXXX";
	int fd = mkstemp(name);
	unsigned char *mem = malloc(200 * 1024), *back = malloc(200 * 512);
	struct gendisk *disk;
	struct bio *bio;
	unsigned int i;

	ck_assert_int_ge(fd, 0);
	unlink(name);
	ck_assert_int_eq(ftruncate(fd, 200 * 512), 0);
	disk = bvec_file_disk_create(fd, NULL);
	ck_assert_ptr_nonnull(disk);
	for (i = 0; i < 200 * 1024; i++)
		mem[i] = (unsigned char)(i * 13 + 5);
	bio = bio_alloc(disk->part0, 200, REQ_OP_WRITE, GFP_KERNEL);
	for (i = 0; i < 200; i++) /* 512 bytes of every KiB: never contiguous */
		ck_assert_int_eq(bio_add_virt(bio, mem + i * 1024, 512), 512);
	ck_assert_int_eq(submit_bio_wait(bio), 0);
	bio_put(bio);
	ck_assert_int_eq(pread(fd, back, 200 * 512, 0), 200 * 512);
	for (i = 0; i < 200; i++)
		ck_assert_mem_eq(back + i * 512, mem + i * 1024, 512);
	memset(mem, 0, 200 * 1024);
	bio = bio_alloc(disk->part0, 200, REQ_OP_READ, GFP_KERNEL);
	for (i = 0; i < 200; i++)
		bio_add_virt(bio, mem + i * 1024, 512);
	ck_assert_int_eq(submit_bio_wait(bio), 0);
	bio_put(bio);
	for (i = 0; i < 200; i++)
		ck_assert_mem_eq(mem + i * 1024, back + i * 512, 512);
	put_disk(disk);
	close(fd);
	free(mem);
	free(back);
}
END_TEST

/*
 * A file disk over a block device: its size is the device's, where
 * fstat() says 0, which once made every bio fail as past the end.  The
 * device is a loop device over a file of 1 MiB; without one (no root, no
 * loop driver, or qemu-user) there is nothing to check.
 */
START_TEST(test_file_disk_block_device)
{
#if defined(__linux__) && defined(LOOP_CONFIGURE)
	char name[] = "/tmp/bvec-loop-XXXXXX", dev[32];
	struct loop_config cfg;
	unsigned char *mem = malloc(8192), *back = malloc(8192);
	struct gendisk *disk;
	struct bio *bio;
	int fd = mkstemp(name), ctl, n, lfd = -1;
	unsigned int i;

	ck_assert_int_ge(fd, 0);
	unlink(name);
	ck_assert_int_eq(ftruncate(fd, 1 << 20), 0);
	ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	n = ctl < 0 ? -1 : ioctl(ctl, LOOP_CTL_GET_FREE);
	if (n >= 0) {
		snprintf(dev, sizeof(dev), "/dev/loop%d", n);
		lfd = open(dev, O_RDWR | O_CLOEXEC);
	}
	memset(&cfg, 0, sizeof(cfg));
	cfg.fd = (unsigned int)fd;
	cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR; /* detached at the last close */
	if (lfd < 0 || ioctl(lfd, LOOP_CONFIGURE, &cfg)) {
		printf("test_file_disk_block_device: no loop device (%s); not checked\n",
		       strerror(errno));
		if (lfd >= 0)
			close(lfd);
		if (ctl >= 0)
			close(ctl);
		close(fd);
		free(mem);
		free(back);
		return;
	}
	close(ctl);
	disk = bvec_file_disk_create(lfd, NULL);
	ck_assert_ptr_nonnull(disk);
	ck_assert_uint_eq(get_capacity(disk), (1 << 20) / 512);
	for (i = 0; i < 8192; i++)
		mem[i] = (unsigned char)(i * 7 + 1);
	/* The last 8 KiB: past the end if the capacity were 0, or too small. */
	bio = bio_alloc(disk->part0, 1, REQ_OP_WRITE | REQ_FUA, GFP_KERNEL);
	bio->bi_iter.bi_sector = ((1 << 20) - 8192) / 512;
	ck_assert_int_eq(bio_add_virt(bio, mem, 8192), 8192);
	ck_assert_int_eq(submit_bio_wait(bio), 0);
	bio_put(bio);
	ck_assert_int_eq(pread(fd, back, 8192, (1 << 20) - 8192), 8192);
	ck_assert_mem_eq(back, mem, 8192);
	put_disk(disk);
	close(lfd);
	close(fd);
	free(mem);
	free(back);
#else
	printf("test_file_disk_block_device: built without <linux/loop.h>; not checked\n");
#endif
}
END_TEST

int main(void)
{
	const TTest *const device[] = {
		test_limits_defaults_and_validation,
		test_stacking_limits_sector_defaults,
		test_submit_rejects_bad_bios,
		test_submit_does_not_recurse,
		test_submit_bio_wait_async,
		test_submit_filters_flush,
		test_submit_filters_unsupported,
		test_submit_filters_nowait,
		test_submit_filters_misaligned,
		test_split_to_limits,
		test_split_nowait,
		test_split_physical_block,
		test_split_to_limits_discard,
		test_split_discard_granularity,
		test_segment_size_no_overflow,
		test_iovec_bridge,
		test_file_disk_many_segments,
		test_file_disk_not_nowait,
		test_file_disk_block_device,
		test_polled_bios,
		NULL
	};
	const struct test_group groups[] = {
		{ .name = "device", .tests = device, .timeout = 120 },
		{ .name = NULL },
	};

	return test_main("blkdev", groups);
}

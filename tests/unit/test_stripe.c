// SPDX-License-Identifier: MIT
/* The stripe driver over zram devices and over files: split, chain, remap. */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <libbvec/stripe.h>
#include <libbvec/zram.h>

#include "pages.h"

#define CHUNK_SECTORS ((unsigned int)(2 * PG / 512))

static int io(struct gendisk *disk, blk_opf_t op, uint64_t off, void *mem, unsigned int len)
{
	struct bio *bio = bio_alloc(disk->part0, 1, op, GFP_KERNEL);
	int ret;

	bio->bi_iter.bi_sector = off >> 9;
	if (mem)
		bio_add_virt(bio, mem, len);
	else
		bio->bi_iter.bi_size = len;
	ret = submit_bio_wait(bio);
	bio_put(bio);
	return ret;
}

/* Bad geometry is refused with EINVAL; nothing is allocated. */
START_TEST(test_create_refuses)
{
	struct gendisk *children[BVEC_STRIPE_MAX_CHILDREN + 1];
	struct gendisk *disk = blk_alloc_disk(NULL, -1);
	unsigned int i;

	ck_assert_ptr_nonnull(disk);
	set_capacity(disk, 1024);
	for (i = 0; i <= BVEC_STRIPE_MAX_CHILDREN; i++)
		children[i] = disk;
	errno = 0;
	ck_assert_ptr_null(bvec_stripe_create(NULL, 1, CHUNK_SECTORS));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(bvec_stripe_create(children, 0, CHUNK_SECTORS));
	ck_assert_ptr_null(bvec_stripe_create(children, BVEC_STRIPE_MAX_CHILDREN + 1,
					      CHUNK_SECTORS));
	ck_assert_ptr_null(bvec_stripe_create(children, 2, CHUNK_SECTORS + 1));
	ck_assert_ptr_null(bvec_stripe_create(children, 2, PG / 512 / 2));
	children[1] = NULL;
	errno = 0;
	ck_assert_ptr_null(bvec_stripe_create(children, 2, CHUNK_SECTORS));
	ck_assert_int_eq(errno, EINVAL);
	put_disk(disk);
}
END_TEST

START_TEST(test_over_zram)
{
	struct zram_config cfg = ZRAM_CONFIG_INIT;
	struct gendisk *children[4];
	struct zram *z[4];
	struct gendisk *s;
	uint64_t bytes;
	unsigned char *model, *buf = malloc(8 * PG + 16), *got = malloc(8 * PG + 16);
	struct rng rng = { 31337 };
	unsigned int i, step;

	cfg.disksize = 32 * PG;
	for (i = 0; i < 4; i++) {
		z[i] = zram_create(&cfg);
		ck_assert_ptr_nonnull(z[i]);
		children[i] = zram_disk(z[i]);
	}
	s = bvec_stripe_create(children, 4, CHUNK_SECTORS);
	ck_assert_ptr_nonnull(s);
	bytes = get_capacity(s) * 512;
	ck_assert(!bdev_write_cache(s->part0)); /* zram has none */
	ck_assert(!bdev_nowait(children[0]->part0)); /* as Linux's zram */
	ck_assert(!bdev_nowait(s->part0));
	ck_assert_uint_eq(bytes, 4 * 32 * PG);
	model = calloc(1, bytes);
	for (step = 0; step < test_scale(1500); step++) {
		unsigned int sectors = rng_range(&rng, 1, (unsigned int)(8 * PG / 512));
		uint64_t off = (uint64_t)rng_range(&rng, 0, (unsigned int)(bytes / 512) - sectors) * 512;
		unsigned int len = sectors * 512, mis = rng_range(&rng, 0, 15), op = rng_range(&rng, 0, 4);

		if (op < 2) {
			for (i = 0; i < len; i++)
				buf[mis + i] = (unsigned char)rng_next(&rng);
			memcpy(model + off, buf + mis, len);
			ck_assert_int_eq(io(s, REQ_OP_WRITE, off, buf + mis, len), 0);
		} else if (op < 4) {
			ck_assert_int_eq(io(s, REQ_OP_READ, off, got + mis, len), 0);
			ck_assert_mem_eq(got + mis, model + off, len);
		} else {
			memset(model + off, 0, len);
			ck_assert_int_eq(io(s, REQ_OP_DISCARD, off, NULL, len), 0);
		}
	}
	ck_assert_int_eq(io(s, REQ_OP_FLUSH, 0, NULL, 0), 0);
	for (i = 0; i < 4; i++) {
		struct zpool_stats ms;

		zram_mm_stat(z[i], &ms);
		ck_assert_uint_gt(ms.orig_data_size, 0); /* every child got data */
	}
	/* Past the end of the stripe: refused, nothing reaches the children. */
	ck_assert_int_eq(io(s, REQ_OP_WRITE, bytes - 512, buf, 1024), -EIO);
	put_disk(s);
	for (i = 0; i < 4; i++)
		zram_destroy(z[i]);
	free(model);
	free(buf);
	free(got);
}
END_TEST

/* Over files: each chunk lands in the file and at the offset RAID-0 says. */
START_TEST(test_over_files)
{
	const unsigned int n = 3, per_file = 16 * CHUNK_SECTORS * 512;
	struct gendisk *children[3];
	int fd[3];
	char name[64];
	struct gendisk *s;
	unsigned char *data = malloc(n * per_file), *chunk = malloc(CHUNK_SECTORS * 512);
	unsigned int i, c;
	struct rng rng = { 99 };

	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "/tmp/bvec-stripe-XXXXXX");
		fd[i] = mkstemp(name);
		ck_assert_int_ge(fd[i], 0);
		unlink(name);
		ck_assert_int_eq(ftruncate(fd[i], per_file + 4096), 0);
		children[i] = bvec_file_disk_create(fd[i], NULL);
		ck_assert_ptr_nonnull(children[i]);
	}
	s = bvec_stripe_create(children, n, CHUNK_SECTORS);
	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(get_capacity(s), (uint64_t)n * per_file / 512);
	ck_assert(bdev_write_cache(s->part0)); /* inherited from the files */
	for (i = 0; i < n * per_file; i++)
		data[i] = (unsigned char)rng_next(&rng);
	/* One bio for everything: split into 48 chunks across three files. */
	ck_assert_int_eq(io(s, REQ_OP_WRITE, 0, data, n * per_file), 0);
	ck_assert_int_eq(io(s, REQ_OP_FLUSH, 0, NULL, 0), 0);
	for (c = 0; c < n * per_file / (CHUNK_SECTORS * 512); c++) {
		off_t at = (off_t)(c / n) * CHUNK_SECTORS * 512;

		ck_assert_int_eq(pread(fd[c % n], chunk, CHUNK_SECTORS * 512, at),
				 CHUNK_SECTORS * 512);
		ck_assert_mem_eq(chunk, data + (size_t)c * CHUNK_SECTORS * 512,
				 CHUNK_SECTORS * 512);
	}
	/* WRITE_ZEROES across a chunk boundary reads back as zeroes. */
	ck_assert_int_eq(io(s, REQ_OP_WRITE_ZEROES, CHUNK_SECTORS * 512 - 1024,
			    NULL, 4096), 0);
	ck_assert_int_eq(io(s, REQ_OP_READ, CHUNK_SECTORS * 512 - 1024, chunk, 4096), 0);
	for (i = 0; i < 4096; i++)
		ck_assert_uint_eq(chunk[i], 0);
	put_disk(s);
	for (i = 0; i < n; i++) {
		put_disk(children[i]);
		close(fd[i]);
	}
	free(data);
	free(chunk);
}
END_TEST

/* A child that fails some writes: the original completes once, with it. */
static void failing_submit(struct bio *bio)
{
	if (bio->bi_iter.bi_sector % (2 * CHUNK_SECTORS) == CHUNK_SECTORS)
		bio->bi_status = BLK_STS_MEDIUM;
	bio_endio(bio);
}

static const struct block_device_operations failing_ops = { .submit_bio = failing_submit };

static int completions;

static void count_done(struct bio *bio)
{
	(void)bio;
	completions++;
}

START_TEST(test_first_error_reaches_parent)
{
	struct gendisk *children[2];
	struct gendisk *s;
	unsigned char *buf = malloc(8 * CHUNK_SECTORS * 512);
	struct bio *bio;
	unsigned int i;

	for (i = 0; i < 2; i++) {
		children[i] = blk_alloc_disk(NULL, -1);
		children[i]->fops = &failing_ops;
		set_capacity(children[i], 64 * CHUNK_SECTORS);
	}
	s = bvec_stripe_create(children, 2, CHUNK_SECTORS);
	bio = bio_alloc(s->part0, 1, REQ_OP_WRITE, GFP_KERNEL);
	bio_add_virt(bio, buf, 8 * CHUNK_SECTORS * 512);
	bio->bi_end_io = count_done;
	completions = 0;
	submit_bio(bio);
	ck_assert_int_eq(completions, 1);
	ck_assert_int_eq(bio->bi_status, BLK_STS_MEDIUM);
	bio_put(bio);
	put_disk(s);
	for (i = 0; i < 2; i++)
		put_disk(children[i]);
	free(buf);
}
END_TEST

/*
 * Children that hold every flush until the test ends it, as a disk with
 * an asynchronous flush (the io_uring disk's fsync SQE) does, and note any
 * data that reaches them while a flush is still pending.
 */
static struct {
	struct bio *held[8];
	unsigned int nr_held;
	unsigned int data;		/* data bios that reached a child */
	unsigned int data_early;	/* ... while a flush was pending */
	unsigned int ended;
	blk_status_t status;
} hold;

static void hold_submit(struct bio *bio)
{
	if ((bio->bi_opf & REQ_PREFLUSH) && !bio->bi_iter.bi_size) {
		ck_assert_uint_lt(hold.nr_held, 8);
		hold.held[hold.nr_held++] = bio;
		return;
	}
	hold.data++;
	if (hold.nr_held)
		hold.data_early++;
	bio_endio(bio);
}

static const struct block_device_operations hold_ops = { .submit_bio = hold_submit };

static void hold_end(struct bio *bio)
{
	hold.ended++;
	hold.status = bio->bi_status;
}

/* End the held flushes, the first with @status. */
static void hold_release(blk_status_t status)
{
	unsigned int i, n = hold.nr_held;
	struct bio *held[8];

	memcpy(held, hold.held, sizeof(held));
	hold.nr_held = 0;
	for (i = 0; i < n; i++) {
		if (!i)
			held[i]->bi_status = status;
		bio_endio(held[i]);
	}
}

/*
 * REQ_PREFLUSH: what completed before must be on stable storage before the
 * data is written, so no piece of the data may reach a child until every
 * child's flush has completed (dm holds the data back the same way).  A
 * flush that fails fails the bio without writing the data.
 */
START_TEST(test_preflush_before_data)
{
	struct queue_limits lim;
	struct gendisk *children[2];
	unsigned char *buf = calloc(1, 4 * CHUNK_SECTORS * 512);
	struct gendisk *s;
	struct bio *bio;
	unsigned int i, round;

	memset(&lim, 0, sizeof(lim));
	lim.features = BLK_FEAT_WRITE_CACHE;
	for (i = 0; i < 2; i++) {
		children[i] = blk_alloc_disk(&lim, -1);
		children[i]->fops = &hold_ops;
		set_capacity(children[i], 64 * CHUNK_SECTORS);
	}
	s = bvec_stripe_create(children, 2, CHUNK_SECTORS);
	ck_assert_ptr_nonnull(s);
	ck_assert(bdev_write_cache(s->part0));
	for (round = 0; round < 2; round++) {
		blk_status_t st = round ? BLK_STS_IOERR : BLK_STS_OK;

		memset(&hold, 0, sizeof(hold));
		bio = bio_alloc(s->part0, 1, REQ_OP_WRITE | REQ_PREFLUSH, GFP_KERNEL);
		bio_add_virt(bio, buf, 4 * CHUNK_SECTORS * 512);
		bio->bi_end_io = hold_end;
		submit_bio(bio);
		ck_assert_uint_eq(hold.nr_held, 2);
		ck_assert_uint_eq(hold.data_early, 0);
		ck_assert_uint_eq(hold.data, 0);
		ck_assert_uint_eq(hold.ended, 0);
		hold_release(st);
		ck_assert_uint_eq(hold.data_early, 0);
		ck_assert_uint_eq(hold.data, round ? 0 : 4);
		ck_assert_uint_eq(hold.ended, 1);
		ck_assert_uint_eq(hold.status, st);
		bio_put(bio);
	}
	put_disk(s);
	for (i = 0; i < 2; i++)
		put_disk(children[i]);
	free(buf);
}
END_TEST

static unsigned int lbs_writes;

static void count_submit(struct bio *bio)
{
	lbs_writes++;
	bio_endio(bio);
}

static const struct block_device_operations count_ops = { .submit_bio = count_submit };

/*
 * Children of 4 KiB logical blocks: the stripe's blocks are as large, so
 * a write its children would refuse is refused whole, before any piece of
 * it is written; a 4 KiB piece beside a 512-byte one must not land.
 */
START_TEST(test_block_size_stacks)
{
	struct queue_limits lim;
	struct gendisk *children[2];
	unsigned char *buf = calloc(1, 3 * CHUNK_SECTORS * 512);
	struct gendisk *s;
	unsigned int i;

	memset(&lim, 0, sizeof(lim));
	lim.logical_block_size = 4096;
	for (i = 0; i < 2; i++) {
		children[i] = blk_alloc_disk(&lim, -1);
		ck_assert_ptr_nonnull(children[i]);
		children[i]->fops = &count_ops;
		set_capacity(children[i], 64 * CHUNK_SECTORS);
	}
	s = bvec_stripe_create(children, 2, CHUNK_SECTORS);
	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(bdev_logical_block_size(s->part0), 4096);
	ck_assert_uint_ge(s->limits.physical_block_size, 4096);
	lbs_writes = 0;
	/* A chunk and 512 bytes: the chunk's piece would be written alone. */
	ck_assert_int_eq(io(s, REQ_OP_WRITE, 0, buf, CHUNK_SECTORS * 512 + 512), -EIO);
	ck_assert_uint_eq(lbs_writes, 0);
	ck_assert_int_eq(io(s, REQ_OP_WRITE, 512, buf, 4096), -EIO);
	ck_assert_uint_eq(lbs_writes, 0);
	ck_assert_int_eq(io(s, REQ_OP_WRITE, 0, buf, CHUNK_SECTORS * 512 + 4096), 0);
	ck_assert_uint_eq(lbs_writes, 2);
	put_disk(s);
	for (i = 0; i < 2; i++)
		put_disk(children[i]);
	free(buf);
}
END_TEST

/* Per child: bios of each operation that reached it, and the largest. */
static struct {
	unsigned int n[REQ_OP_WRITE_ZEROES + 1];
	unsigned int max[REQ_OP_WRITE_ZEROES + 1];
} seen[2];

static void seen_submit(struct bio *bio)
{
	unsigned int c = (unsigned int)(uintptr_t)bio->bi_bdev->bd_disk->private_data;
	enum req_op op = bio_op(bio);

	seen[c].n[op]++;
	if (bio_sectors(bio) > seen[c].max[op])
		seen[c].max[op] = bio_sectors(bio);
	bio_endio(bio);
}

static const struct block_device_operations seen_ops = { .submit_bio = seen_submit };

static struct gendisk *seen_child(unsigned int c, const struct queue_limits *lim)
{
	struct gendisk *d = blk_alloc_disk(lim, -1);

	ck_assert_ptr_nonnull(d);
	d->fops = &seen_ops;
	d->private_data = (void *)(uintptr_t)c;
	set_capacity(d, 64 * CHUNK_SECTORS);
	return d;
}

/*
 * DISCARD, SECURE_ERASE and WRITE_ZEROES stack as in Linux (dm, md): the
 * stripe takes the smallest of its children's limits, 0 if any child
 * lacks the operation, so it is refused whole before any child acts on
 * it, never done on some children and then failed; and no piece it sends
 * a child is larger than that child's limit.
 */
START_TEST(test_discard_limits_stack)
{
	static const enum req_op ops[] = {
		REQ_OP_DISCARD, REQ_OP_SECURE_ERASE, REQ_OP_WRITE_ZEROES
	};
	struct queue_limits all, none, small;
	struct gendisk *children[2];
	struct gendisk *s;
	unsigned int i, o;

	blk_set_stacking_limits(&all);
	memset(&none, 0, sizeof(none));
	blk_set_stacking_limits(&small);
	small.max_hw_discard_sectors = small.max_discard_sectors = CHUNK_SECTORS / 4;
	small.max_secure_erase_sectors = CHUNK_SECTORS / 4;
	small.max_write_zeroes_sectors = CHUNK_SECTORS / 2;
	small.discard_granularity = 2 * 512;

	/* One child without them: the stripe has none, and does none. */
	children[0] = seen_child(0, &all);
	children[1] = seen_child(1, &none);
	s = bvec_stripe_create(children, 2, CHUNK_SECTORS);
	ck_assert_ptr_nonnull(s);
	memset(seen, 0, sizeof(seen));
	for (o = 0; o < 3; o++)
		ck_assert_int_eq(io(s, ops[o], 0, NULL, 4 * CHUNK_SECTORS * 512), -EOPNOTSUPP);
	for (o = 0; o < 3; o++)
		ck_assert_msg(!seen[0].n[ops[o]],
			      "op %u: %u pieces done by child 0, then the stripe failed it",
			      (unsigned int)ops[o], seen[0].n[ops[o]]);
	ck_assert_uint_eq(bdev_max_discard_sectors(s->part0), 0);
	ck_assert_uint_eq(bdev_max_secure_erase_sectors(s->part0), 0);
	ck_assert_uint_eq(bdev_write_zeroes_sectors(s->part0), 0);
	put_disk(s);
	for (i = 0; i < 2; i++)
		put_disk(children[i]);

	/* A child with smaller limits: they are the stripe's, and hold. */
	children[0] = seen_child(0, &all);
	children[1] = seen_child(1, &small);
	s = bvec_stripe_create(children, 2, CHUNK_SECTORS);
	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(bdev_max_discard_sectors(s->part0), CHUNK_SECTORS / 4);
	ck_assert_uint_eq(bdev_max_secure_erase_sectors(s->part0), CHUNK_SECTORS / 4);
	ck_assert_uint_eq(bdev_write_zeroes_sectors(s->part0), CHUNK_SECTORS / 2);
	ck_assert_uint_eq(s->limits.discard_granularity, 2 * 512);
	memset(seen, 0, sizeof(seen));
	for (o = 0; o < 3; o++) {
		unsigned int lim = ops[o] == REQ_OP_WRITE_ZEROES ? CHUNK_SECTORS / 2
								 : CHUNK_SECTORS / 4;

		ck_assert_int_eq(io(s, ops[o], 512, NULL, 4 * CHUNK_SECTORS * 512), 0);
		for (i = 0; i < 2; i++) {
			ck_assert_uint_gt(seen[i].n[ops[o]], 0);
			ck_assert_msg(seen[i].max[ops[o]] <= lim,
				      "op %u: child %u got %u sectors, over its limit %u",
				      (unsigned int)ops[o], i, seen[i].max[ops[o]], lim);
		}
	}
	put_disk(s);
	for (i = 0; i < 2; i++)
		put_disk(children[i]);
}
END_TEST

/* A child that splits to its own limits, as zram and the file disks do. */
static void split_seen_submit(struct bio *bio)
{
	bio = bio_split_to_limits(bio);
	if (bio)
		seen_submit(bio);
}

static const struct block_device_operations split_seen_ops = { .submit_bio = split_seen_submit };

/*
 * A REQ_NOWAIT READ or WRITE ends with BLK_STS_AGAIN with none of it done,
 * or the caller, told to retry, cannot know what it already changed.  The
 * stripe cannot split one without waiting either, and a child that must
 * split its piece refuses that piece only, after others were written: so
 * the stripe refuses one that crosses a chunk whole, as dm does, and one
 * inside a chunk goes to a single child, which refuses it whole or does it.
 */
START_TEST(test_nowait_whole_or_nothing)
{
	const unsigned int ps = (unsigned int)(PG / 512);
	unsigned char *buf = calloc(1, 3 * PG);
	struct queue_limits lim;
	struct gendisk *children[2];
	struct gendisk *s;
	unsigned int i;
	int ret;

	ck_assert_ptr_nonnull(buf);
	memset(&lim, 0, sizeof(lim));
	lim.max_sectors = ps; /* a chunk (two pages) is split by the child */
	lim.features = BLK_FEAT_NOWAIT; /* else nothing takes REQ_NOWAIT */
	for (i = 0; i < 2; i++) {
		children[i] = seen_child(i, &lim);
		children[i]->fops = &split_seen_ops;
	}
	s = bvec_stripe_create(children, 2, CHUNK_SECTORS);
	ck_assert_ptr_nonnull(s);

	/* The last page of chunk 0 (fits child 0) and all of chunk 1. */
	memset(seen, 0, sizeof(seen));
	ret = io(s, REQ_OP_WRITE | REQ_NOWAIT, PG, buf, 3 * PG);
	ck_assert_msg(seen[0].n[REQ_OP_WRITE] + seen[1].n[REQ_OP_WRITE] == 0,
		      "REQ_NOWAIT write ended %d after %u pieces were written",
		      ret, seen[0].n[REQ_OP_WRITE] + seen[1].n[REQ_OP_WRITE]);
	ck_assert_int_eq(ret, -EAGAIN);
	/* Inside one chunk, too large for its child: refused whole. */
	ck_assert_int_eq(io(s, REQ_OP_READ | REQ_NOWAIT, 0, buf, 2 * PG), -EAGAIN);
	ck_assert_uint_eq(seen[0].n[REQ_OP_READ], 0);
	/* One that needs no split goes through; without the flag, all do. */
	ck_assert_int_eq(io(s, REQ_OP_WRITE | REQ_NOWAIT, PG, buf, PG), 0);
	ck_assert_uint_eq(seen[0].n[REQ_OP_WRITE], 1);
	ck_assert_int_eq(io(s, REQ_OP_WRITE, PG, buf, 3 * PG), 0);
	ck_assert_uint_eq(seen[0].n[REQ_OP_WRITE] + seen[1].n[REQ_OP_WRITE], 4);
	put_disk(s);
	for (i = 0; i < 2; i++)
		put_disk(children[i]);
	free(buf);
}
END_TEST

/*
 * BLK_FEAT_NOWAIT stacks as Linux's blk_stack_limits() stacks it: the
 * stripe serves REQ_NOWAIT only if every child does, since a bio inside
 * any chunk goes on to that chunk's child.  Over a child without it the
 * stripe refuses REQ_NOWAIT whole, even in a chunk of a child that has it.
 */
START_TEST(test_nowait_stacks)
{
	unsigned char *buf = calloc(1, PG);
	struct queue_limits nowait, blocking;
	struct gendisk *children[2];
	struct gendisk *s;
	unsigned int i;

	ck_assert_ptr_nonnull(buf);
	memset(&nowait, 0, sizeof(nowait));
	nowait.features = BLK_FEAT_NOWAIT;
	memset(&blocking, 0, sizeof(blocking));
	for (i = 0; i < 2; i++)
		children[i] = seen_child(i, &nowait);
	s = bvec_stripe_create(children, 2, CHUNK_SECTORS);
	ck_assert_ptr_nonnull(s);
	ck_assert_msg(bdev_nowait(s->part0),
		      "a stripe over children that all have BLK_FEAT_NOWAIT lacks it");
	memset(seen, 0, sizeof(seen));
	ck_assert_int_eq(io(s, REQ_OP_WRITE | REQ_NOWAIT, CHUNK_SECTORS * 512, buf, PG), 0);
	ck_assert_uint_eq(seen[1].n[REQ_OP_WRITE], 1);
	put_disk(s);
	put_disk(children[1]);

	children[1] = seen_child(1, &blocking);
	s = bvec_stripe_create(children, 2, CHUNK_SECTORS);
	ck_assert_ptr_nonnull(s);
	ck_assert_msg(!bdev_nowait(s->part0),
		      "a stripe over a child without BLK_FEAT_NOWAIT has it");
	memset(seen, 0, sizeof(seen));
	ck_assert_int_eq(io(s, REQ_OP_WRITE | REQ_NOWAIT, 0, buf, PG), -EOPNOTSUPP);
	ck_assert_int_eq(io(s, REQ_OP_WRITE | REQ_NOWAIT, CHUNK_SECTORS * 512, buf, PG),
			 -EOPNOTSUPP);
	ck_assert_uint_eq(seen[0].n[REQ_OP_WRITE] + seen[1].n[REQ_OP_WRITE], 0);
	/* Without the flag, both children take it. */
	ck_assert_int_eq(io(s, REQ_OP_WRITE, 0, buf, PG), 0);
	ck_assert_int_eq(io(s, REQ_OP_WRITE, CHUNK_SECTORS * 512, buf, PG), 0);
	ck_assert_uint_eq(seen[0].n[REQ_OP_WRITE] + seen[1].n[REQ_OP_WRITE], 2);
	put_disk(s);
	for (i = 0; i < 2; i++)
		put_disk(children[i]);
	free(buf);
}
END_TEST

int main(void)
{
	const TTest *const raid0[] = {
		test_create_refuses,
		test_over_zram,
		test_over_files,
		test_first_error_reaches_parent,
		test_preflush_before_data,
		test_block_size_stacks,
		test_discard_limits_stack,
		test_nowait_whole_or_nothing,
		test_nowait_stacks,
		NULL
	};
	const struct test_group groups[] = {
		{ .name = "raid0", .tests = raid0, .timeout = 300 },
		{ .name = NULL },
	};

	return test_main("stripe", groups);
}

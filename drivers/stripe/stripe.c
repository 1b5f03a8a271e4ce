// SPDX-License-Identifier: MIT
/* The stripe driver (RAID-0): split at chunk boundaries, chain, remap, resubmit. */
#include <libbvec/stripe.h>

#include "bvec/internal.h"
#include "bvec/os.h"

struct stripe {
	struct gendisk *children[BVEC_STRIPE_MAX_CHILDREN];
	unsigned int n;
	unsigned int chunk_sectors;
	struct bio_set bs;
};

/* Point a bio that lies inside one chunk at the child holding that chunk. */
static void remap(struct stripe *s, struct bio *bio)
{
	sector_t sector = bio->bi_iter.bi_sector;
	sector_t chunk = sector / s->chunk_sectors;

	bio->bi_bdev = s->children[chunk % s->n]->part0;
	bio->bi_iter.bi_sector = chunk / s->n * s->chunk_sectors + sector % s->chunk_sectors;
}

/*
 * Every child's flush of a REQ_PREFLUSH write has completed: now the data
 * may go, without the flag, unless a flush failed.
 */
static void stripe_preflush_done(struct bio *flush)
{
	struct bio *bio = flush->bi_private;
	blk_status_t st = atomic_load(&flush->bi_status);
	blk_status_t none = BLK_STS_OK;

	bio_put(flush);
	if (st) {
		atomic_compare_exchange_strong(&bio->bi_status, &none, st);
		bio_endio(bio);
		return;
	}
	bio->bi_opf &= ~(blk_opf_t)REQ_PREFLUSH;
	submit_bio(bio);
}

/*
 * Send an empty flush to every child, all chained to @parent.  A child
 * whose flush cannot be allocated fails @parent with BLK_STS_RESOURCE.
 */
static void stripe_flush_children(struct stripe *s, struct bio *parent)
{
	blk_status_t none = BLK_STS_OK;
	unsigned int i;

	for (i = 0; i < s->n; i++) {
		struct bio *flush = bio_alloc_bioset(s->children[i]->part0, 0,
						     REQ_OP_WRITE | REQ_PREFLUSH,
						     GFP_NOIO, &s->bs);

		if (!flush) {
			atomic_compare_exchange_strong(&parent->bi_status, &none,
						       BLK_STS_RESOURCE);
			break;
		}
		bio_chain(flush, parent);
		submit_bio(flush); /* queued: we are inside submit_bio */
	}
}

static void stripe_submit_bio(struct bio *bio)
{
	struct stripe *s = bio->bi_bdev->bd_disk->private_data;
	struct bio *flushes;

	/*
	 * A REQ_NOWAIT READ or WRITE must end with none of it done if it
	 * ends with BLK_STS_AGAIN.  Split over chunks, a child that must
	 * split its piece refuses it after others were done (and our own
	 * split may wait): refused whole here, as dm does.  Inside one
	 * chunk it goes to one child, which does it or refuses it whole.
	 */
	if ((bio->bi_opf & REQ_NOWAIT) &&
	    (bio_op(bio) == REQ_OP_READ || bio_op(bio) == REQ_OP_WRITE) &&
	    bio_sectors(bio) > s->chunk_sectors -
				   (unsigned int)(bio->bi_iter.bi_sector % s->chunk_sectors)) {
		bio_wouldblock_error(bio);
		return;
	}
	if (bio->bi_opf & REQ_PREFLUSH) {
		if (!bio->bi_iter.bi_size) {
			/* An empty flush: it completes after every child's. */
			stripe_flush_children(s, bio);
			bio_endio(bio);
			return;
		}
		/*
		 * Data with REQ_PREFLUSH: what completed before it must be
		 * stable before it is written, so the data waits for every
		 * child's flush to complete, not only to be queued (a child
		 * such as the io_uring disk runs its flush beside later I/O).
		 * As dm does, the flushes hang off a bio of their own whose
		 * end sends the data on, without the flag.
		 */
		flushes = bio_alloc_bioset(bio->bi_bdev, 0, REQ_OP_WRITE | REQ_PREFLUSH,
					   GFP_NOIO, &s->bs);
		if (!flushes) {
			bio->bi_status = BLK_STS_RESOURCE;
			bio_endio(bio);
			return;
		}
		flushes->bi_private = bio;
		flushes->bi_end_io = stripe_preflush_done;
		stripe_flush_children(s, flushes);
		bio_endio(flushes);
		return;
	}
	/* Pieces no larger than the smallest child's limit for the operation. */
	if (bio_op(bio) == REQ_OP_DISCARD || bio_op(bio) == REQ_OP_SECURE_ERASE ||
	    bio_op(bio) == REQ_OP_WRITE_ZEROES) {
		bio = bio_split_to_limits(bio);
		if (!bio)
			return;
	}
	for (;;) {
		unsigned int to_boundary = s->chunk_sectors -
					   (unsigned int)(bio->bi_iter.bi_sector % s->chunk_sectors);
		struct bio *split;

		if (bio_sectors(bio) <= to_boundary)
			break;
		split = bio_split(bio, (int)to_boundary, GFP_NOIO, &s->bs);
		if (!split) {
			bio->bi_status = BLK_STS_RESOURCE;
			bio_endio(bio);
			return;
		}
		bio_chain(split, bio);
		remap(s, split);
		submit_bio(split); /* queued: we are inside submit_bio */
	}
	/* The last piece is the original itself, as md's raid0 does. */
	remap(s, bio);
	submit_bio(bio);
}

static void stripe_free_disk(struct gendisk *disk)
{
	struct stripe *s = disk->private_data;

	bioset_exit(&s->bs);
	bvec__os_free(NULL, s, sizeof(*s));
}

static const struct block_device_operations stripe_fops = {
	.submit_bio = stripe_submit_bio,
	.free_disk = stripe_free_disk,
};

struct gendisk *bvec_stripe_create(struct gendisk *const *children, unsigned int n,
				   unsigned int chunk_sectors)
{
	struct queue_limits lim;
	struct gendisk *disk;
	struct stripe *s;
	sector_t min = UINT64_MAX;
	unsigned int i;
	int err;

	if (!children || !n || n > BVEC_STRIPE_MAX_CHILDREN ||
	    chunk_sectors < BVEC_PAGE_SIZE >> BVEC_SECTOR_SHIFT ||
	    (chunk_sectors & (chunk_sectors - 1))) {
		bvec__set_errno(EINVAL);
		return NULL;
	}
	for (i = 0; i < n; i++)
		if (!children[i]) {
			bvec__set_errno(EINVAL);
			return NULL;
		}
	s = bvec__os_alloc(NULL, sizeof(*s));
	if (!s) {
		bvec__set_errno(ENOMEM);
		return NULL;
	}
	memset(s, 0, sizeof(*s));
	s->n = n;
	s->chunk_sectors = chunk_sectors;
	for (i = 0; i < n; i++) {
		s->children[i] = children[i];
		if (get_capacity(children[i]) < min)
			min = get_capacity(children[i]);
	}
	/* Splits must make progress when memory is short: keep a reserve. */
	err = bioset_init(&s->bs, 4 * n, 0, 0);
	if (err) {
		bvec__os_free(NULL, s, sizeof(*s));
		bvec__set_errno(-err);
		return NULL;
	}
	blk_set_stacking_limits(&lim); /* it splits for itself */
	/*
	 * The stripe itself never waits for a REQ_NOWAIT READ or WRITE (one
	 * it would split it refuses), but each goes on to a child: it keeps
	 * the feature only if every child has it, as blk_stack_limits().
	 */
	lim.features |= BLK_FEAT_NOWAIT;
	for (i = 0; i < n; i++) {
		const struct queue_limits *cl = &children[i]->limits;

		/* A write cache in any child makes the stripe's flushes matter. */
		lim.features |= cl->features & (BLK_FEAT_WRITE_CACHE | BLK_FEAT_FUA);
		if (!(cl->features & BLK_FEAT_NOWAIT))
			lim.features &= ~BLK_FEAT_NOWAIT;
		/*
		 * The largest block of any child, as blk_stack_limits() takes
		 * it: a bio the stripe took at a finer size would be cut into
		 * pieces some child refuses after others were written, where
		 * submit_bio() refuses it whole, with nothing written.
		 */
		if (cl->logical_block_size > lim.logical_block_size)
			lim.logical_block_size = cl->logical_block_size;
		if (cl->physical_block_size > lim.physical_block_size)
			lim.physical_block_size = cl->physical_block_size;
		/*
		 * What every child takes, as dm and md stack them: a child
		 * without the operation (0) takes it from the stripe too, so
		 * such a bio is refused whole rather than done on the other
		 * children and then failed.
		 */
		lim.max_discard_sectors = BVEC_MIN(lim.max_discard_sectors,
						   cl->max_discard_sectors);
		lim.max_secure_erase_sectors = BVEC_MIN(lim.max_secure_erase_sectors,
							cl->max_secure_erase_sectors);
		lim.max_write_zeroes_sectors = BVEC_MIN(lim.max_write_zeroes_sectors,
							cl->max_write_zeroes_sectors);
		if (cl->discard_granularity > lim.discard_granularity)
			lim.discard_granularity = cl->discard_granularity;
	}
	lim.max_hw_discard_sectors = lim.max_discard_sectors;
	disk = blk_alloc_disk(&lim, -1);
	if (!disk) {
		bioset_exit(&s->bs);
		bvec__os_free(NULL, s, sizeof(*s));
		return NULL; /* errno from blk_alloc_disk() */
	}
	disk->fops = &stripe_fops;
	disk->private_data = s;
	strncpy(disk->disk_name, "stripe", sizeof(disk->disk_name) - 1);
	set_capacity(disk, min / chunk_sectors * chunk_sectors * n);
	return disk;
}

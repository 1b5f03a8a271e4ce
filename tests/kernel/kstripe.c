// SPDX-License-Identifier: MIT
/*
 * kstripe: striping over other disks in the style of a device-mapper
 * target, written for these tests from the documented semantics (with
 * one child it is a linear mapping).  A bio that crosses a chunk boundary
 * is cut with bio_split(); the front is chained to the rest, the rest goes
 * back through submit_bio_noacct() to this driver, and the front is
 * remapped to its child.  A flush is fanned out to every child.  It takes
 * REQ_NOWAIT when every child does, and ends one it would have to split
 * BLK_STS_AGAIN, as a device-mapper target does: a split may wait.
 */
#include "drivers.h"

/* Which child holds @sector, and where. */
static unsigned int kstripe_map_sector(struct kstripe *sc, sector_t sector,
				       sector_t *result)
{
	sector_t chunk = sector;
	u32 offset = sector_div(chunk, sc->chunk_sectors);
	u32 stripe = sector_div(chunk, sc->nr);

	*result = chunk * sc->chunk_sectors + offset;
	return stripe;
}

/* Send an empty flush to every child; @bio completes after all of them. */
static void kstripe_flush_children(struct kstripe *sc, struct bio *bio)
{
	unsigned int i;

	for (i = 0; i < sc->nr; i++) {
		struct bio *flush = bio_alloc(sc->children[i]->part0, 0,
					      REQ_OP_WRITE | REQ_PREFLUSH, GFP_NOIO);

		bio_chain(flush, bio);
		submit_bio_noacct(flush);
	}
}

static void kstripe_submit_bio(struct bio *bio)
{
	struct kstripe *sc = bio->bi_bdev->bd_disk->private_data;
	unsigned int max, stripe;
	sector_t mapped;

	atomic_inc(&sc->calls);
	if (bio->bi_opf & REQ_PREFLUSH) {
		kstripe_flush_children(sc, bio);
		if (!bio->bi_iter.bi_size) {
			bio_endio(bio);
			return;
		}
		/* The children's flushes are queued ahead of the data. */
		bio->bi_opf &= ~REQ_PREFLUSH;
	}

	max = sc->chunk_sectors - (bio->bi_iter.bi_sector & (sc->chunk_sectors - 1));
	if (bio_sectors(bio) > max) {
		struct bio *split;

		if (bio->bi_opf & REQ_NOWAIT) {
			bio_wouldblock_error(bio);
			return;
		}
		split = bio_split(bio, max, GFP_NOIO, &sc->bs);

		if (IS_ERR_OR_NULL(split)) {
			bio->bi_status = BLK_STS_RESOURCE;
			bio_endio(bio);
			return;
		}
		atomic_inc(&sc->splits);
		bio_chain(split, bio);
		submit_bio_noacct(bio);
		bio = split;
	}
	stripe = kstripe_map_sector(sc, bio->bi_iter.bi_sector, &mapped);
	bio_set_dev(bio, sc->children[stripe]->part0);
	bio->bi_iter.bi_sector = mapped;
	submit_bio_noacct(bio);
}

static const struct block_device_operations kstripe_fops = {
	.owner = THIS_MODULE,
	.submit_bio = kstripe_submit_bio,
};

struct kstripe *kstripe_create(struct gendisk **children, unsigned int nr,
			       unsigned int chunk_sectors)
{
	struct queue_limits lim;
	struct kstripe *sc;
	sector_t chunks = U64_MAX;
	bool discard = true;
	unsigned int i;

	if (!nr || nr > ARRAY_SIZE(sc->children) || !chunk_sectors ||
	    (chunk_sectors & (chunk_sectors - 1)))
		return NULL;
	sc = calloc(1, sizeof(*sc));
	if (!sc)
		return NULL;
	/* Take bios of any shape, then narrow to what every child accepts. */
	blk_set_stacking_limits(&lim);
	lim.features |= BLK_FEAT_NOWAIT;	/* unless a child lacks it */
	lim.max_write_zeroes_sectors = 0;
	lim.max_secure_erase_sectors = 0;
	for (i = 0; i < nr; i++) {
		const struct queue_limits *cl = bdev_limits(children[i]->part0);

		lim.logical_block_size = max(lim.logical_block_size, cl->logical_block_size);
		lim.features |= cl->features & (BLK_FEAT_WRITE_CACHE | BLK_FEAT_FUA);
		if (!(cl->features & BLK_FEAT_NOWAIT))
			lim.features &= ~BLK_FEAT_NOWAIT;
		discard &= bdev_max_discard_sectors(children[i]->part0) != 0;
		chunks = min(chunks, get_capacity(children[i]) / chunk_sectors);
		sc->children[i] = children[i];
	}
	if (!discard)
		lim.max_hw_discard_sectors = lim.max_discard_sectors = 0;
	lim.io_min = chunk_sectors << SECTOR_SHIFT;
	lim.io_opt = lim.io_min * nr;
	sc->nr = nr;
	sc->chunk_sectors = chunk_sectors;
	if ((chunk_sectors << SECTOR_SHIFT) % lim.logical_block_size ||
	    bioset_init(&sc->bs, BIO_POOL_SIZE, 0, 0))
		goto fail;
	sc->disk = blk_alloc_disk(&lim, NUMA_NO_NODE);
	if (IS_ERR(sc->disk)) {
		bioset_exit(&sc->bs);
		goto fail;
	}
	sc->disk->fops = &kstripe_fops;
	sc->disk->private_data = sc;
	set_capacity(sc->disk, chunks * chunk_sectors * nr);
	return sc;
fail:
	free(sc);
	return NULL;
}

void kstripe_destroy(struct kstripe *sc)
{
	put_disk(sc->disk);
	bioset_exit(&sc->bs);
	free(sc);
}

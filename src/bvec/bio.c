// SPDX-License-Identifier: MIT
/*
 * The bio core: life cycle, building, cursors, split/clone, chained
 * completion, data copies.
 */
#include "internal.h"

void bio_init(struct bio *bio, struct block_device *bdev, struct bio_vec *table,
	      unsigned short max_vecs, blk_opf_t opf)
{
	memset(bio, 0, sizeof(*bio));
	bio->bi_bdev = bdev;
	bio->bi_opf = opf;
	atomic_init(&bio->bi_status, BLK_STS_OK);
	atomic_init(&bio->__bi_remaining, 1);
	atomic_init(&bio->__bi_cnt, 1);
	bio->bi_io_vec = table;
	bio->bi_max_vecs = max_vecs;
}

void bio_uninit(struct bio *bio)
{
	if (bio->bi_integrity)
		bvec__integrity_free(bio);
}

void bio_reset(struct bio *bio, struct block_device *bdev, blk_opf_t opf)
{
	unsigned short max_vecs = bio->bi_max_vecs;
	struct bio_vec *table = bio->bi_io_vec;
	struct bio_set *pool = bio->bi_pool;
	int cnt = atomic_load(&bio->__bi_cnt);

	bio_uninit(bio);
	bio_init(bio, bdev, table, max_vecs, opf);
	bio->bi_pool = pool;
	atomic_store(&bio->__bi_cnt, cnt);
}

void bio_get(struct bio *bio)
{
	bio_set_flag(bio, BIO_REFFED);
	atomic_fetch_add(&bio->__bi_cnt, 1);
}

void bio_put(struct bio *bio)
{
	if (!bio)
		return;
	if (bio_flagged(bio, BIO_REFFED) &&
	    atomic_fetch_sub(&bio->__bi_cnt, 1) != 1)
		return;
	bvec__bio_free(bio);
}

int bio_add_page(struct bio *bio, struct page *page, unsigned int len,
		 unsigned int off)
{
	const char *start = (const char *)page_address(page) + off;

	if (!len || bio_flagged(bio, BIO_CLONED) ||
	    bio->bi_iter.bi_size > UINT32_MAX - len)
		return 0;
	if (bio->bi_vcnt) {
		struct bio_vec *prev = &bio->bi_io_vec[bio->bi_vcnt - 1];

		if ((const char *)bvec_virt(prev) + prev->bv_len == start &&
		    prev->bv_len <= UINT32_MAX - len) {
			prev->bv_len += len;
			bio->bi_iter.bi_size += len;
			return (int)len;
		}
	}
	if (bio->bi_vcnt >= bio->bi_max_vecs)
		return 0;
	bvec_set_page(&bio->bi_io_vec[bio->bi_vcnt], page, len, off);
	bio->bi_vcnt++;
	bio->bi_iter.bi_size += len;
	return (int)len;
}

int bio_add_virt(struct bio *bio, void *vaddr, unsigned int len)
{
	return bio_add_page(bio, virt_to_page(vaddr), len, offset_in_page(vaddr));
}

void bio_advance(struct bio *bio, unsigned int nbytes)
{
	if (bio->bi_integrity)
		bvec__integrity_advance(bio, nbytes);
	bio_advance_iter(bio, &bio->bi_iter, nbytes);
}

unsigned int bio_segments(const struct bio *bio)
{
	struct bvec_iter iter;
	struct bio_vec bv;
	unsigned int segs = 0;

	if (bio_no_advance_iter(bio))
		return 0;
	bio_for_each_segment(bv, bio, iter)
		segs++;
	return segs;
}

/* What both clone calls share: @bio is freshly initialised, with no table. */
static int clone_from(struct bio *bio, struct bio *src, gfp_t gfp)
{
	bio_set_flag(bio, BIO_CLONED);
	bio->bi_ioprio = src->bi_ioprio;
	bio->bi_iter = src->bi_iter;
	bio->bi_io_vec = src->bi_io_vec;
	if (src->bi_integrity && bvec__integrity_clone(bio, src, gfp) < 0)
		return -ENOMEM;
	return 0;
}

struct bio *bio_alloc_clone(struct block_device *bdev, struct bio *src,
			    gfp_t gfp, struct bio_set *bs)
{
	struct bio *bio = bio_alloc_bioset(bdev, 0, src->bi_opf, gfp, bs);

	if (!bio)
		return NULL;
	if (clone_from(bio, src, gfp)) {
		bio_put(bio);
		bvec__set_errno(ENOMEM);
		return NULL;
	}
	return bio;
}

int bio_init_clone(struct block_device *bdev, struct bio *bio, struct bio *src, gfp_t gfp)
{
	bio_init(bio, bdev, NULL, 0, src->bi_opf);
	if (clone_from(bio, src, gfp)) {
		bio_uninit(bio);
		return -ENOMEM;
	}
	return 0;
}

struct bio *bio_split(struct bio *bio, int sectors, gfp_t gfp,
		      struct bio_set *bs)
{
	struct bio *split;

	if (sectors <= 0 || (unsigned int)sectors >= bio_sectors(bio)) {
		bvec__set_errno(EINVAL);
		return NULL;
	}
	split = bio_alloc_clone(bio->bi_bdev, bio, gfp, bs);
	if (!split)
		return NULL;
	split->bi_iter.bi_size = (unsigned int)sectors << BVEC_SECTOR_SHIFT;
	if (split->bi_integrity)
		bvec__integrity_trim(split);
	bio_advance(bio, split->bi_iter.bi_size);
	return split;
}

int bio_trim(struct bio *bio, sector_t offset, sector_t size)
{
	if (offset > BIO_MAX_SECTORS || size > BIO_MAX_SECTORS ||
	    offset + size > bio_sectors(bio))
		return -EINVAL;
	size <<= BVEC_SECTOR_SHIFT;
	if (offset == 0 && size == bio->bi_iter.bi_size)
		return 0;
	bio_advance(bio, (unsigned int)(offset << BVEC_SECTOR_SHIFT));
	bio->bi_iter.bi_size = (unsigned int)size;
	if (bio->bi_integrity)
		bvec__integrity_trim(bio);
	return 0;
}

void bio_truncate(struct bio *bio, unsigned int new_size)
{
	struct bvec_iter iter;
	struct bio_vec bv;
	unsigned int done = 0;
	bool truncated = false;

	if (new_size >= bio->bi_iter.bi_size)
		return;
	/* Only a READ's tail is memory the device would have filled. */
	if (bio_op(bio) == REQ_OP_READ) {
		bio_for_each_bvec(bv, bio, iter) {
			if (done + bv.bv_len > new_size) {
				unsigned int skip = truncated ? 0 : new_size - done;

				memset((char *)bvec_virt(&bv) + skip, 0,
				       bv.bv_len - skip);
				truncated = true;
			}
			done += bv.bv_len;
		}
	}
	bio->bi_iter.bi_size = new_size;
}

void bio_inc_remaining(struct bio *bio)
{
	bio_set_flag(bio, BIO_CHAIN);
	atomic_fetch_add(&bio->__bi_remaining, 1);
}

/* Passes a child's completion to its parent; see bio_endio(). */
static struct bio *chain_complete_child(struct bio *bio)
{
	struct bio *parent = bio->bi_private;
	blk_status_t st = atomic_load(&bio->bi_status);
	blk_status_t none = BLK_STS_OK;

	/* First error wins: a check-then-set here raced until 2021. */
	if (st)
		atomic_compare_exchange_strong(&parent->bi_status, &none, st);
	bio_put(bio);
	return parent;
}

/*
 * The end_io of a chained child.  bio_endio() recognises it and walks up the
 * chain itself; it is only called directly by code that wrongly calls
 * bi_end_io instead of bio_endio(), and then still does the right thing.
 */
static void bio_chain_endio(struct bio *bio)
{
	bio_endio(chain_complete_child(bio));
}

int bio_chain(struct bio *bio, struct bio *parent)
{
	if (bio->bi_private || bio->bi_end_io || !parent || bio == parent)
		return -EINVAL;
	bio->bi_private = parent;
	bio->bi_end_io = bio_chain_endio;
	bio_inc_remaining(parent);
	return 0;
}

static bool bio_remaining_done(struct bio *bio)
{
	if (!bio_flagged(bio, BIO_CHAIN))
		return true;
	if (atomic_fetch_sub(&bio->__bi_remaining, 1) != 1)
		return false;
	bio_clear_flag(bio, BIO_CHAIN);
	return true;
}

void bio_endio(struct bio *bio)
{
	/* A loop, not recursion: a million-link chain needs constant stack. */
	while (bio_remaining_done(bio)) {
		if (bio->bi_end_io != bio_chain_endio) {
			if (bio->bi_end_io)
				bio->bi_end_io(bio);
			return;
		}
		bio = chain_complete_child(bio);
	}
}

void bio_copy_data_iter(struct bio *dst, struct bvec_iter *dst_iter,
			struct bio *src, struct bvec_iter *src_iter)
{
	while (bvec_iter_skip_empty(src->bi_io_vec, src_iter) &&
	       bvec_iter_skip_empty(dst->bi_io_vec, dst_iter)) {
		/* Userspace memory is contiguous: copy whole runs, not pages. */
		struct bio_vec s = mp_bvec_iter_bvec(src->bi_io_vec, *src_iter);
		struct bio_vec d = mp_bvec_iter_bvec(dst->bi_io_vec, *dst_iter);
		unsigned int bytes = BVEC_MIN(s.bv_len, d.bv_len);

		memcpy(bvec_virt(&d), bvec_virt(&s), bytes);
		bio_advance_iter_single(src, src_iter, bytes);
		bio_advance_iter_single(dst, dst_iter, bytes);
	}
}

void bio_copy_data(struct bio *dst, struct bio *src)
{
	struct bvec_iter src_iter = src->bi_iter;
	struct bvec_iter dst_iter = dst->bi_iter;

	bio_copy_data_iter(dst, &dst_iter, src, &src_iter);
}

void zero_fill_bio(struct bio *bio)
{
	struct bvec_iter iter;
	struct bio_vec bv;

	bio_for_each_bvec(bv, bio, iter)
		memset(bvec_virt(&bv), 0, bv.bv_len);
}

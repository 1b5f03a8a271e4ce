// SPDX-License-Identifier: MIT
/*
 * Integrity payloads: protection information that travels with a bio and
 * whose cursor moves in integrity intervals, not sectors (Linux advanced it
 * by sectors until a 2022 fix, which broke 4 KiB-interval devices).
 */
#include "internal.h"
#include "os.h"

/* Payloads come from the bio's own set when it has one, else from the OS. */
static void *bip_alloc(struct bio *bio, size_t size)
{
	if (bio->bi_pool)
		return bvec__bs_alloc(bio->bi_pool, size);
	return bvec__os_alloc(NULL, size);
}

void bvec__integrity_free(struct bio *bio)
{
	struct bio_integrity_payload *bip = bio->bi_integrity;

	bio->bi_integrity = NULL;
	bio->bi_opf &= ~REQ_INTEGRITY;
	if (bio->bi_pool)
		bvec__bs_free(bio->bi_pool, bip, bip->bip_alloc_size);
	else
		bvec__os_free(NULL, bip, bip->bip_alloc_size);
}

static struct bio_integrity_payload *bip_new(struct bio *bio, unsigned int nr_vecs)
{
	size_t size = sizeof(struct bio_integrity_payload) +
		      (size_t)nr_vecs * sizeof(struct bio_vec);
	struct bio_integrity_payload *bip = bip_alloc(bio, size);

	if (!bip)
		return NULL;
	memset(bip, 0, sizeof(*bip));
	bip->bip_alloc_size = size;
	bip->bip_bio = bio;
	bip->bip_max_vcnt = (unsigned short)nr_vecs;
	bip->bip_vec = nr_vecs ? (struct bio_vec *)(void *)(bip + 1) : NULL;
	bio->bi_integrity = bip;
	bio->bi_opf |= REQ_INTEGRITY;
	return bip;
}

struct bio_integrity_payload *bio_integrity_alloc(struct bio *bio, gfp_t gfp,
						  unsigned int nr_vecs)
{
	struct bio_integrity_payload *bip;
	const struct queue_limits *lim = NULL;

	(void)gfp;
	if (!bio || bio->bi_integrity || nr_vecs > BIO_MAX_VECS) {
		bvec__set_errno(EINVAL);
		return NULL;
	}
	bip = bip_new(bio, nr_vecs);
	if (!bip) {
		bvec__set_errno(ENOMEM);
		return NULL;
	}
	if (bio->bi_bdev && bio->bi_bdev->bd_disk)
		lim = bdev_limits(bio->bi_bdev);
	if (lim && lim->integrity_interval_exp) {
		bip->bip_interval_exp = lim->integrity_interval_exp;
		bip->bip_tuple_size = lim->integrity_tuple_size;
	} else {
		bip->bip_interval_exp = BVEC_SECTOR_SHIFT;
		bip->bip_tuple_size = 8;
	}
	bip->bip_iter.bi_sector = bio->bi_iter.bi_sector >>
				  (bip->bip_interval_exp - BVEC_SECTOR_SHIFT);
	return bip;
}

int bio_integrity_add_page(struct bio *bio, struct page *page, unsigned int len,
			   unsigned int offset)
{
	struct bio_integrity_payload *bip = bio ? bio->bi_integrity : NULL;
	const char *start = (const char *)page_address(page) + offset;

	if (!bip || !len || bip->bip_iter.bi_size > UINT32_MAX - len)
		return 0;
	if (bip->bip_vcnt) {
		struct bio_vec *prev = &bip->bip_vec[bip->bip_vcnt - 1];

		if ((const char *)bvec_virt(prev) + prev->bv_len == start) {
			prev->bv_len += len;
			bip->bip_iter.bi_size += len;
			return (int)len;
		}
	}
	if (bip->bip_vcnt >= bip->bip_max_vcnt)
		return 0;
	bvec_set_page(&bip->bip_vec[bip->bip_vcnt++], page, len, offset);
	bip->bip_iter.bi_size += len;
	return (int)len;
}

int bvec__integrity_clone(struct bio *bio, struct bio *src, gfp_t gfp)
{
	const struct bio_integrity_payload *from = src->bi_integrity;
	struct bio_integrity_payload *bip;

	(void)gfp;
	bip = bip_new(bio, 0);
	if (!bip)
		return -ENOMEM;
	/* Like the bio's own table, the clone shares the source's vector. */
	bip->bip_vec = from->bip_vec;
	bip->bip_iter = from->bip_iter;
	bip->bip_flags = (unsigned short)(from->bip_flags | BIP_CLONED);
	bip->bip_interval_exp = from->bip_interval_exp;
	bip->bip_tuple_size = from->bip_tuple_size;
	return 0;
}

void bvec__integrity_advance(struct bio *bio, unsigned int bytes_done)
{
	struct bio_integrity_payload *bip = bio->bi_integrity;
	unsigned int sectors = bytes_done >> BVEC_SECTOR_SHIFT;

	bip->bip_iter.bi_sector += bio_integrity_intervals(bip, sectors);
	bvec_iter_advance(bip->bip_vec, &bip->bip_iter,
			  bio_integrity_bytes(bip, sectors));
}

void bvec__integrity_trim(struct bio *bio)
{
	struct bio_integrity_payload *bip = bio->bi_integrity;

	bip->bip_iter.bi_size = bio_integrity_bytes(bip, bio_sectors(bio));
}

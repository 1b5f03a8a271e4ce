/* SPDX-License-Identifier: MIT */
/**
 * DOC: libbvec/bio_integrity.h - protection information carried by a bio
 *
 * The integrity payload of Linux's <linux/bio-integrity.h>: a table of
 * protection buffers with its own cursor, counted in integrity intervals.
 * bio_advance(), bio_split(), bio_trim() and bio_alloc_clone() carry it
 * along.  <libbvec/bio.h> includes it.
 *
 * Locking: as the bio it belongs to.
 */
#ifndef LIBBVEC_BIO_INTEGRITY_H
#define LIBBVEC_BIO_INTEGRITY_H

#include <libbvec/blk_types.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * struct bio_integrity_payload - protection information travelling with a bio
 * @bip_bio: the bio it belongs to
 * @bip_iter: cursor over @bip_vec; bi_sector counts integrity intervals
 * @bip_vcnt: entries used in @bip_vec
 * @bip_max_vcnt: entries available in @bip_vec (0 for a clone's shared table)
 * @bip_flags: BIP_* flags
 * @bip_interval_exp: log2 of the bytes covered by one tuple (9 to 12)
 * @bip_tuple_size: bytes of protection information per interval
 * @bip_vec: the table of integrity buffers
 * @bip_alloc_size: private: bytes allocated for this payload
 *
 * Linux reads the interval and tuple size from the disk's integrity profile;
 * here bio_integrity_alloc() copies them from the bio's device limits (or
 * uses 512-byte intervals with 8-byte tuples) and the caller may change them
 * before I/O starts.
 */
struct bio_integrity_payload {
	struct bio *bip_bio;
	struct bvec_iter bip_iter;
	unsigned short bip_vcnt;
	unsigned short bip_max_vcnt;
	unsigned short bip_flags;
	unsigned char bip_interval_exp;
	unsigned char bip_tuple_size;
	struct bio_vec *bip_vec;
	size_t bip_alloc_size;
};

#define BIP_CLONED (1u << 0)

/**
 * bio_integrity() - the integrity payload of a bio
 * @bio: the bio
 *
 * Return: the payload or NULL.
 */
static inline struct bio_integrity_payload *bio_integrity(const struct bio *bio)
{
	return bio->bi_integrity;
}

/**
 * bio_integrity_alloc() - attach an integrity payload
 * @bio: the bio (must have none)
 * @gfp: allocation flags
 * @nr_vecs: entries in the payload's table
 *
 * Return: the payload, or NULL with errno EINVAL or ENOMEM.
 */
BVEC_API struct bio_integrity_payload *
bio_integrity_alloc(struct bio *bio, gfp_t gfp, unsigned int nr_vecs);

/**
 * bio_integrity_add_page() - append protection memory to the payload
 * @bio: the bio
 * @page: first page
 * @len: bytes
 * @offset: offset from page_address(@page)
 *
 * Return: @len, or 0 if the table is full or there is no payload.
 */
BVEC_API int bio_integrity_add_page(struct bio *bio, struct page *page,
				    unsigned int len, unsigned int offset);

/**
 * bio_integrity_intervals() - integrity intervals covering some sectors
 * @bip: the payload
 * @sectors: 512-byte sectors
 *
 * Return: @sectors expressed in the payload's intervals.
 */
static inline unsigned int
bio_integrity_intervals(const struct bio_integrity_payload *bip,
			unsigned int sectors)
{
	return sectors >> (bip->bip_interval_exp - BVEC_SECTOR_SHIFT);
}

/**
 * bio_integrity_bytes() - protection bytes for some sectors
 * @bip: the payload
 * @sectors: 512-byte sectors
 *
 * Return: intervals times tuple size.
 */
static inline unsigned int
bio_integrity_bytes(const struct bio_integrity_payload *bip,
		    unsigned int sectors)
{
	return bio_integrity_intervals(bip, sectors) * bip->bip_tuple_size;
}

#ifdef __cplusplus
}
#endif

#endif /* LIBBVEC_BIO_INTEGRITY_H */

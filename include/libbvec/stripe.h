/* SPDX-License-Identifier: MIT */
/**
 * DOC: libbvec/stripe.h - a RAID-0 disk over other disks of the device model
 *
 * The stripe driver spreads a disk over N child disks in chunks: chunk k
 * lives on child k mod N.  Each bio is cut at chunk boundaries with
 * bio_split(), the pieces are chained to the original with bio_chain() and
 * remapped to their child, and the original completes once, with the first
 * error, after every piece.  A flush (REQ_PREFLUSH) goes to every child
 * before the data, which is sent once every child's flush has completed.
 * The stripe has a write cache if any child has one, and the largest
 * logical and physical block size and discard granularity of its children.
 * Its DISCARD, SECURE_ERASE and WRITE_ZEROES limits are the smallest of its
 * children's, 0 (not supported) if any child lacks the operation, and it
 * splits those bios to them, so each child gets only what it takes.  It
 * has BLK_FEAT_NOWAIT only if every child has it (Linux's stacking rule),
 * so without it submit_bio() refuses REQ_NOWAIT with BLK_STS_NOTSUPP.  With
 * it, a REQ_NOWAIT READ or WRITE that crosses a chunk ends with
 * BLK_STS_AGAIN before any of it is done, as dm ends one it would have to
 * split.
 *
 * Built into libbvec (drivers/stripe/): any disk of the device model can be
 * a child, the zram devices of libzpool included, and stripes stack.
 *
 * Locking: bios may be submitted from any number of threads; the children
 * must allow the same.
 */
#ifndef LIBBVEC_STRIPE_H
#define LIBBVEC_STRIPE_H

#include <libbvec/blkdev.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * BVEC_STRIPE_MAX_CHILDREN - the most children a stripe takes
 */
#define BVEC_STRIPE_MAX_CHILDREN 64

/**
 * bvec_stripe_create() - a RAID-0 disk over child disks
 * @children: the child disks, in chunk order; they must outlive the stripe
 *	and are not freed with it
 * @n: number of children, 1 to BVEC_STRIPE_MAX_CHILDREN
 * @chunk_sectors: chunk size in sectors: a power of two, at least one page
 *
 * The capacity is @n times the smallest child's, rounded down to whole
 * chunks.  Free the stripe with put_disk(), before its children.
 *
 * Return: the disk, or NULL with errno EINVAL (bad @n or @chunk_sectors)
 * or ENOMEM.
 */
BVEC_API struct gendisk *bvec_stripe_create(struct gendisk *const *children, unsigned int n,
					    unsigned int chunk_sectors);

#ifdef __cplusplus
}
#endif

#endif /* LIBBVEC_STRIPE_H */

/* SPDX-License-Identifier: MIT */
/*
 * stripe: a RAID-0 driver over N child disks of libbvec's device model.
 * Each bio is split at chunk boundaries with bio_split(), the pieces are
 * chained to the original with bio_chain(), and the original completes
 * once, with the first error, after every piece.
 */
#ifndef STRIPE_H
#define STRIPE_H

#include <libbvec/blkdev.h>

struct stripe;

/*
 * Stripe @n children (1 to 64) in chunks of @chunk_sectors (a power of two,
 * at least one page).  The capacity is @n times the smallest child's,
 * rounded down to whole chunks.  Returns NULL with errno on failure.
 */
struct stripe *stripe_create(struct gendisk *const *children, unsigned int n,
			     unsigned int chunk_sectors);
struct gendisk *stripe_disk(struct stripe *s);
void stripe_destroy(struct stripe *s);

#endif

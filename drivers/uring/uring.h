/* SPDX-License-Identifier: MIT */
/* Internal interface of the io_uring disk, for its unit tests. */
#ifndef BVEC_URING_H
#define BVEC_URING_H

#include <libbvec/blkdev.h>

/*
 * Cap every read and write SQE of @disk (a disk from bvec_uring_disk_create())
 * at @bytes (0: no cap), so the tests see short transfers at will and check
 * that the rest is resubmitted.  Call before the first bio.
 */
void bvec__uring_disk_set_max_io(struct gendisk *disk, unsigned int bytes);

/* What the disk did, so the tests can tell which path a bio took. */
struct bvec__uring_stats {
	unsigned long fixed;	/* SQEs sent as READ_FIXED/WRITE_FIXED */
	unsigned long polled;	/* bios ended by a poller (poll_bio, put_disk) */
	unsigned long fixed_in_flight;	/* READ_FIXED/WRITE_FIXED SQEs not reaped */
};

/* A copy of @disk's counters, taken under its lock. */
void bvec__uring_disk_stats(struct gendisk *disk, struct bvec__uring_stats *st);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * Internal interfaces of libbvec, shared by its source files and reachable
 * by the unit tests through the static build.  Names follow libuv:
 * bvec__ for internal non-static functions.
 */
#ifndef BVEC_INTERNAL_H
#define BVEC_INTERNAL_H

#include <stdatomic.h>

#ifdef BVEC_FREESTANDING
#include "freestanding.h"
#else
#include <errno.h>
#include <string.h>
#endif

#include <libbvec/bio.h>
#include <libbvec/blkdev.h>

#define BVEC_MIN(a, b) ((a) < (b) ? (a) : (b))

/* os_*.c: errno where there is one (a variable of the library where not) */
void bvec__set_errno(int err);

#ifndef BVEC_FREESTANDING
/* uio.c: up to @max iovecs (contiguous runs merged) from *@iter, which is
 * advanced past them; 0 when nothing is left. */
int bvec__bio_iovec_batch(const struct bio *bio, struct bvec_iter *iter,
			  struct iovec *iov, int max);

/* drivers/file/file_disk.c: the sectors of the file or block device at
 * @fd, whose fstat() is @st; the file and io_uring disks' capacity. */
struct stat;
sector_t bvec__fd_sectors(int fd, const struct stat *st);

/* drivers/file/file_disk.c: fstat() @fd into @st if a disk can be built
 * over it; false (the caller fails with EINVAL) if not. */
bool bvec__fd_usable(int fd, struct stat *st);

/*
 * drivers/file/file_disk.c: WRITE_ZEROES written out, for a file that takes
 * no fallocate() mode.  bvec__zero_iovecs() lays out up to @max iovecs over
 * one shared, page-aligned buffer of zeroes (fit for O_DIRECT), covering at
 * most @len bytes; returns how many.  bvec__zero_end() is where the zeroes
 * over [@off, @end) stop: at the size of a regular file, rounded up to
 * @lbs and never past @end, as FALLOC_FL_KEEP_SIZE does not grow the file
 * (reads past its end are zeroes anyway); @end for anything else.
 */
int bvec__zero_iovecs(struct iovec *iov, int max, uint64_t len);
uint64_t bvec__zero_end(int fd, uint64_t off, uint64_t end, unsigned int lbs);
#endif

/* bio_set.c */
struct bio_set *bvec__default_bioset(void);
void bvec__bio_free(struct bio *bio);
void *bvec__bs_alloc(struct bio_set *bs, size_t size);
void bvec__bs_free(struct bio_set *bs, void *ptr, size_t size);

/* integrity.c */
void bvec__integrity_free(struct bio *bio);
int bvec__integrity_clone(struct bio *bio, struct bio *src, gfp_t gfp);
void bvec__integrity_advance(struct bio *bio, unsigned int bytes_done);
void bvec__integrity_trim(struct bio *bio);

#endif

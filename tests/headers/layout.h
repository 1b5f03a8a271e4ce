/* SPDX-License-Identifier: MIT */
/*
 * The layout of the public structs with BVEC_ATOMIC() members, listed once
 * and computed by both a C and a C++ translation unit (layout_c.c,
 * cplusplus.cc): C++ sees those members as plain types, and on i386 a plain
 * uint64_t in a struct is 4-aligned where C's _Atomic(uint64_t) is 8, so
 * the two languages disagreed on struct gendisk before compiler.h aligned
 * the plain spelling.
 */
#ifndef BVEC_TEST_LAYOUT_H
#define BVEC_TEST_LAYOUT_H

#include <stddef.h>

#include <libbvec/blkdev.h>

#define HDR_LAYOUT_LIST                                                        \
	sizeof(struct bio), offsetof(struct bio, bi_status),                  \
	offsetof(struct bio, __bi_remaining), offsetof(struct bio, __bi_cnt), \
	offsetof(struct bio, bi_io_vec), sizeof(struct gendisk),              \
	offsetof(struct gendisk, nr_refused), offsetof(struct gendisk, bdev)

#define HDR_LAYOUT_NAMES                                                       \
	"sizeof(bio)", "bio.bi_status", "bio.__bi_remaining", "bio.__bi_cnt",  \
	"bio.bi_io_vec", "sizeof(gendisk)", "gendisk.nr_refused", "gendisk.bdev"

#ifdef __cplusplus
extern "C" {
#endif
extern const size_t hdr_layout_c[];
#ifdef __cplusplus
}
#endif

#endif

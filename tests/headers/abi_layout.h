/* SPDX-License-Identifier: MIT */
/*
 * The public structs' layout on the three data models the project builds
 * for, in one table: tests/unit/test_abi.c checks it at run time on the
 * host, tests/headers/abi32.c at compile time for both 32-bit models.
 * A change here needs a new SONAME.
 */
#ifndef BVEC_ABI_LAYOUT_H
#define BVEC_ABI_LAYOUT_H

/*
 * bio_vec, bvec_iter, bio, bi_iter, bi_end_io, bi_max_vecs, bi_io_vec, bi_pool,
 * bio_set, bvec_allocator, queue_limits, queue_limits.features, zpool_page_source,
 * then libzpool's: zpool_stats, zram_io_stat, zram_bd_stat, zram_block_state,
 * zram_recompress_params, zram_config, zpool_config (the last three carry
 * their size in their first field, so they may grow; the others may not)
 */
#define ABI_LP64 16, 24, 104, 32, 56, 82, 88, 96, 64, 40, 96, 44, 56, \
	88, 32, 24, 16, 48, 64, 48
/* ILP32 with 8-byte-aligned 64-bit integers (arm, mips, ppc; i386 -malign-double) */
#define ABI_ILP32 12, 24, 80, 24, 48, 62, 68, 72, 36, 20, 96, 44, 28, \
	88, 32, 24, 16, 32, 56, 40
/* ILP32 with 4-byte-aligned 64-bit integers inside structs (i386) */
#define ABI_I386 12, 20, 72, 24, 44, 58, 64, 68, 36, 20, 92, 40, 28, \
	88, 32, 24, 16, 32, 44, 32

#endif

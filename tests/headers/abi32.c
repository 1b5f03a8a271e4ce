// SPDX-License-Identifier: MIT
/*
 * Compile-time check of the 32-bit layouts, built freestanding with -m32
 * (and -malign-double for the 8-byte-aligned model): the core headers need
 * only the compiler's own headers, so no 32-bit C library is required.
 */
#ifndef BVEC_FREESTANDING
#define BVEC_FREESTANDING
#endif
#include <libbvec/blkdev.h>
#include <libbvec/zpool.h>
#include <libbvec/zram.h>

#include "abi_layout.h"

#ifdef __SIZEOF_POINTER__
_Static_assert(__SIZEOF_POINTER__ == 4, "build this with -m32");
#endif

#define EXPECT(a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t)   \
	_Static_assert(sizeof(struct bio_vec) == (a), "bio_vec");          \
	_Static_assert(sizeof(struct bvec_iter) == (b), "bvec_iter");      \
	_Static_assert(sizeof(struct bio) == (c), "bio");                  \
	_Static_assert(offsetof(struct bio, bi_iter) == (d), "bi_iter");   \
	_Static_assert(offsetof(struct bio, bi_end_io) == (e), "bi_end_io"); \
	_Static_assert(offsetof(struct bio, bi_max_vecs) == (f), "bi_max_vecs"); \
	_Static_assert(offsetof(struct bio, bi_io_vec) == (g), "bi_io_vec"); \
	_Static_assert(offsetof(struct bio, bi_pool) == (h), "bi_pool");   \
	_Static_assert(sizeof(struct bio_set) == (i), "bio_set");          \
	_Static_assert(sizeof(struct bvec_allocator) == (j), "bvec_allocator"); \
	_Static_assert(sizeof(struct queue_limits) == (k), "queue_limits"); \
	_Static_assert(offsetof(struct queue_limits, features) == (l), "features"); \
	_Static_assert(sizeof(struct zpool_page_source) == (m), "zpool_page_source"); \
	_Static_assert(sizeof(struct zpool_stats) == (n), "zpool_stats");  \
	_Static_assert(sizeof(struct zram_io_stat) == (o), "zram_io_stat"); \
	_Static_assert(sizeof(struct zram_bd_stat) == (p), "zram_bd_stat"); \
	_Static_assert(sizeof(struct zram_block_state) == (q), "zram_block_state"); \
	_Static_assert(sizeof(struct zram_recompress_params) == (r), "zram_recompress_params"); \
	_Static_assert(sizeof(struct zram_config) == (s), "zram_config");  \
	_Static_assert(sizeof(struct zpool_config) == (t), "zpool_config");
#define EXPAND(x) EXPECT(x)

#if defined(__i386__) && !defined(BVEC_ALIGN_DOUBLE)
EXPAND(ABI_I386)
#else
EXPAND(ABI_ILP32)
#endif

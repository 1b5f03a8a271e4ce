// SPDX-License-Identifier: MIT
/*
 * The public structs' layout is ABI: drivers embed struct bio and
 * struct bio_set, and the inline helpers read fields directly.  A change
 * here needs a new SONAME.  Sizes are given for the three data models the
 * project builds for.
 */
#include <stddef.h>

#include <libbvec/blkdev.h>
#include <libbvec/zram.h>

#include "testutil.h"
#include "../headers/abi_layout.h"

struct u64_in_struct {
	char c;
	uint64_t x;
};

#define U64_ALIGN offsetof(struct u64_in_struct, x)

struct layout {
	size_t bio_vec, bvec_iter, bio, bi_iter, bi_end_io, bi_max_vecs, bi_io_vec,
		bi_pool, bio_set, bvec_allocator, queue_limits, features, page_source,
		zpool_stats, zram_io_stat, zram_bd_stat, zram_block_state, recompress_params,
		zram_config, zpool_config;
};

static const struct layout lp64 = { ABI_LP64 };
static const struct layout ilp32 = { ABI_ILP32 };
static const struct layout i386 = { ABI_I386 };

START_TEST(test_struct_layout)
{
	const struct layout *want = sizeof(void *) == 8 ? &lp64 :
				    U64_ALIGN == 8	? &ilp32 : &i386;

	ck_assert(sizeof(void *) == 8 || sizeof(void *) == 4);
	ck_assert_uint_eq(sizeof(struct bio_vec), want->bio_vec);
	ck_assert_uint_eq(sizeof(struct bvec_iter), want->bvec_iter);
	ck_assert_uint_eq(sizeof(struct bio), want->bio);
	ck_assert_uint_eq(offsetof(struct bio, bi_iter), want->bi_iter);
	ck_assert_uint_eq(offsetof(struct bio, bi_end_io), want->bi_end_io);
	ck_assert_uint_eq(offsetof(struct bio, bi_max_vecs), want->bi_max_vecs);
	ck_assert_uint_eq(offsetof(struct bio, bi_io_vec), want->bi_io_vec);
	ck_assert_uint_eq(offsetof(struct bio, bi_pool), want->bi_pool);
	ck_assert_uint_eq(sizeof(struct bio_set), want->bio_set);
	ck_assert_uint_eq(sizeof(struct bvec_allocator), want->bvec_allocator);
	ck_assert_uint_eq(sizeof(struct queue_limits), want->queue_limits);
	ck_assert_uint_eq(offsetof(struct queue_limits, features), want->features);
	ck_assert_uint_eq(sizeof(struct zpool_page_source), want->page_source);
	ck_assert_uint_eq(sizeof(struct zpool_stats), want->zpool_stats);
	ck_assert_uint_eq(sizeof(struct zram_io_stat), want->zram_io_stat);
	ck_assert_uint_eq(sizeof(struct zram_bd_stat), want->zram_bd_stat);
	ck_assert_uint_eq(sizeof(struct zram_block_state), want->zram_block_state);
	ck_assert_uint_eq(sizeof(struct zram_recompress_params), want->recompress_params);
	ck_assert_uint_eq(sizeof(struct zram_config), want->zram_config);
	ck_assert_uint_eq(sizeof(struct zpool_config), want->zpool_config);
}
END_TEST

START_TEST(test_kernel_field_types)
{
	struct bio_vec bv;
	struct bvec_iter it;

	ck_assert_uint_eq(sizeof(sector_t), 8);
	ck_assert_uint_eq(sizeof(bv.bv_len), 4);
	ck_assert_uint_eq(sizeof(bv.bv_offset), 4);
	ck_assert_uint_eq(sizeof(it.bi_size), 4);
	ck_assert_uint_eq(sizeof(blk_status_t), 1);
	ck_assert_uint_eq(sizeof(blk_opf_t), 4);
	/* Inline vecs follow the bio directly: its size keeps them aligned. */
	ck_assert_uint_eq(sizeof(struct bio) % _Alignof(struct bio_vec), 0);
	ck_assert_uint_eq(BVEC_PAGE_SIZE, (size_t)1 << BVEC_PAGE_SHIFT);
	ck_assert_int_eq(REQ_OP_WRITE_ZEROES, 9);
	ck_assert_int_eq(BLK_STS_IOERR, 10);
}
END_TEST

int main(void)
{
	const TTest *const layout[] = {
		test_struct_layout,
		test_kernel_field_types,
		NULL
	};
	const struct test_group groups[] = {
		{ .name = "layout", .tests = layout },
		{ .name = NULL },
	};

	return test_main("abi", groups);
}

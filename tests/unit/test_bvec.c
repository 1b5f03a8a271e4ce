// SPDX-License-Identifier: MIT
/* bvec.h: segment synthesis, advance, the zero-length policy. */
#include <libbvec/bvec.h>

#include "testutil.h"

#define PS ((unsigned int)BVEC_PAGE_SIZE)

START_TEST(test_page_helpers)
{
	unsigned char *mem = test_pages(3);
	struct bio_vec bv;

	ck_assert_ptr_eq(page_address(virt_to_page(mem + PS + 17)), mem + PS);
	ck_assert_uint_eq(offset_in_page(mem + PS + 17), 17);
	ck_assert_ptr_eq(page_address(nth_page(virt_to_page(mem), 2)), mem + 2 * PS);
	bvec_set_virt(&bv, mem + PS + 5, 100);
	ck_assert_ptr_eq(bv.bv_page, virt_to_page(mem + PS));
	ck_assert_uint_eq(bv.bv_offset, 5);
	ck_assert_uint_eq(bv.bv_len, 100);
	ck_assert_ptr_eq(bvec_virt(&bv), mem + PS + 5);
	free(mem);
}
END_TEST

START_TEST(test_segment_synthesis)
{
	unsigned char *mem = test_pages(4);
	struct bio_vec table[2], bv;
	struct bvec_iter iter = { 0, 0, 0, 0 };

	/* One multi-page bvec: 100 bytes into page 0 up to 50 bytes into page 2. */
	bvec_set_page(&table[0], virt_to_page(mem), 2 * PS - 50, 100);
	bvec_set_page(&table[1], virt_to_page(mem), 10, 3 * PS);
	iter.bi_size = 2 * PS - 50 + 10;
	iter.bi_bvec_done = PS; /* now 100 bytes into page 1 */

	bv = mp_bvec_iter_bvec(table, iter);
	ck_assert_ptr_eq(bv.bv_page, virt_to_page(mem));
	ck_assert_uint_eq(bv.bv_offset, PS + 100);
	ck_assert_uint_eq(bv.bv_len, PS - 50);

	bv = bvec_iter_bvec(table, iter);
	ck_assert_ptr_eq(bv.bv_page, virt_to_page(mem + PS));
	ck_assert_uint_eq(bv.bv_offset, 100);
	ck_assert_uint_eq(bv.bv_len, PS - 100);
	ck_assert_uint_eq(bvec_iter_len(table, iter), PS - 100);
	ck_assert_uint_eq(mp_bvec_iter_len(table, iter), PS - 50);
	ck_assert_ptr_eq(bvec_iter_page(table, iter), virt_to_page(mem + PS));
	ck_assert_uint_eq(mp_bvec_iter_offset(table, iter), PS + 100);

	/* bi_size clips the segment. */
	iter.bi_size = 30;
	ck_assert_uint_eq(bvec_iter_bvec(table, iter).bv_len, 30);
	ck_assert_uint_eq(mp_bvec_iter_bvec(table, iter).bv_len, 30);
	free(mem);
}
END_TEST

START_TEST(test_advance)
{
	unsigned char buf[64];
	struct bio_vec table[3];
	struct bvec_iter iter = { 7, 60, 0, 0 };

	bvec_set_virt(&table[0], buf, 10);
	bvec_set_virt(&table[1], buf + 20, 20);
	bvec_set_virt(&table[2], buf + 40, 30);

	ck_assert(bvec_iter_advance(table, &iter, 5));
	ck_assert_uint_eq(iter.bi_idx, 0);
	ck_assert_uint_eq(iter.bi_bvec_done, 5);
	ck_assert_uint_eq(iter.bi_size, 55);
	ck_assert_uint_eq(iter.bi_sector, 7); /* the bvec cursor has no sectors */

	/* Stopping exactly on a boundary leaves bi_bvec_done at 0. */
	ck_assert(bvec_iter_advance(table, &iter, 25));
	ck_assert_uint_eq(iter.bi_idx, 2);
	ck_assert_uint_eq(iter.bi_bvec_done, 0);
	ck_assert_uint_eq(iter.bi_size, 30);

	ck_assert(bvec_iter_advance(table, &iter, 0));
	ck_assert_uint_eq(iter.bi_idx, 2);
	ck_assert(bvec_iter_advance(table, &iter, 30));
	ck_assert_uint_eq(iter.bi_size, 0);
	ck_assert_uint_eq(iter.bi_idx, 3);
}
END_TEST

/* Regression: over-advance walked past the table in 3.14 (fixed 2017). */
START_TEST(test_over_advance_clamps)
{
	unsigned char buf[64];
	struct bio_vec table[2];
	struct bvec_iter iter = { 0, 30, 0, 0 };

	bvec_set_virt(&table[0], buf, 10);
	bvec_set_virt(&table[1], buf + 10, 20);
	ck_assert(bvec_iter_advance(table, &iter, 15));
	ck_assert(!bvec_iter_advance(table, &iter, 16));
	ck_assert_uint_eq(iter.bi_size, 0);
	ck_assert_uint_eq(iter.bi_idx, 1);
	ck_assert_uint_eq(iter.bi_bvec_done, 5);
	/* A huge count cannot reach past the table either. */
	iter.bi_size = 1;
	ck_assert(!bvec_iter_advance(table, &iter, UINT32_MAX));
	ck_assert_uint_eq(iter.bi_idx, 1);
}
END_TEST

START_TEST(test_advance_single)
{
	unsigned char buf[32];
	struct bio_vec table[2];
	struct bvec_iter iter = { 0, 32, 0, 0 };

	bvec_set_virt(&table[0], buf, 12);
	bvec_set_virt(&table[1], buf + 12, 20);
	bvec_iter_advance_single(table, &iter, 4);
	ck_assert_uint_eq(iter.bi_idx, 0);
	ck_assert_uint_eq(iter.bi_bvec_done, 4);
	bvec_iter_advance_single(table, &iter, 8);
	ck_assert_uint_eq(iter.bi_idx, 1);
	ck_assert_uint_eq(iter.bi_bvec_done, 0);
	ck_assert_uint_eq(iter.bi_size, 20);
}
END_TEST

/*
 * Regression: zero-length bvecs made for_each_bvec loop forever (syzbot).
 * Policy: the loops step over them and never yield an empty segment.
 */
START_TEST(test_zero_length_bvecs)
{
	unsigned char buf[64];
	struct bio_vec table[6], bv;
	struct bvec_iter iter, start = { 0, 30, 0, 0 };
	unsigned int n = 0, total = 0;

	bvec_set_virt(&table[0], buf, 0);
	bvec_set_virt(&table[1], buf, 10);
	bvec_set_virt(&table[2], buf + 10, 0);
	bvec_set_virt(&table[3], buf + 10, 0);
	bvec_set_virt(&table[4], buf + 10, 20);
	bvec_set_virt(&table[5], buf + 30, 0);

	for_each_bvec(bv, table, iter, start) {
		ck_assert_uint_gt(bv.bv_len, 0);
		total += bv.bv_len;
		ck_assert_uint_lt(++n, 10);
	}
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(total, 30);

	/* Advance stops on the boundary before a zero-length bvec, as Linux. */
	iter = start;
	ck_assert(bvec_iter_advance(table, &iter, 10));
	ck_assert_uint_eq(iter.bi_idx, 2);
	ck_assert_uint_eq(iter.bi_bvec_done, 0);
	ck_assert(bvec_iter_skip_empty(table, &iter));
	ck_assert_uint_eq(iter.bi_idx, 4);
}
END_TEST

START_TEST(test_for_each_splits_pages)
{
	unsigned char *mem = test_pages(4);
	struct bio_vec table[1], bv;
	struct bvec_iter iter, start = { 0, 3 * PS, 0, 0 };
	unsigned int n = 0, mp = 0;
	unsigned char *expect = mem + 7;

	bvec_set_virt(&table[0], mem + 7, 3 * PS);
	for_each_bvec(bv, table, iter, start) {
		ck_assert_ptr_eq(bvec_virt(&bv), expect);
		ck_assert_uint_le(bv.bv_offset + bv.bv_len, PS);
		expect += bv.bv_len;
		n++;
	}
	ck_assert_uint_eq(n, 4); /* 7 bytes into page 0 -> touches 4 pages */
	for_each_mp_bvec(bv, table, iter, start)
		mp++;
	ck_assert_uint_eq(mp, 1);
	free(mem);
}
END_TEST

int main(void)
{
	const TTest *const iter[] = {
		test_page_helpers,
		test_segment_synthesis,
		test_advance,
		test_over_advance_clamps,
		test_advance_single,
		test_zero_length_bvecs,
		test_for_each_splits_pages,
		NULL
	};
	const struct test_group groups[] = {
		{ .name = "iter", .tests = iter },
		{ .name = NULL },
	};

	return test_main("bvec", groups);
}

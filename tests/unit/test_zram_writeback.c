// SPDX-License-Identifier: MIT
/*
 * zram's writeback tier: every mode with the data compared after writeback
 * and read back, partial I/O over written-back pages, a backing disk that
 * fails, ENOSPC, the budget, reset, batching, and writeback racing with I/O.
 */
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include <libbvec/zram.h>

#include "pools.h"

#define NP 16				/* pages in the small device */
#define UNITS (PG >= 4096 ? PG / 4096 : 1) /* bd_stat units a page */

static struct zram *new_zram_flags(uint64_t pages, struct gendisk *backing, uint32_t flags)
{
	struct zram *z = new_zram_dev(pages, NULL, flags);

	if (backing)
		ck_assert_int_eq(zram_set_backing(z, backing), 0);
	return z;
}

static struct zram *new_zram(uint64_t pages, struct gendisk *backing)
{
	return new_zram_flags(pages, backing, ZPOOL_F_CHECKSUM);
}

/*
 * The small device's pages: text (0-3), incompressible (4-7, stored raw:
 * "huge"), a zero page (8), a quarter page of random bytes then zeroes
 * (9-15).  Returns in @model.
 */
static void fill(struct zram *z, unsigned char (*model)[PG], uint64_t seed)
{
	unsigned int i;

	for (i = 0; i < NP; i++) {
		enum page_kind k = i < 4 ? PAGE_TEXT : i < 8 ? PAGE_RANDOM :
				   i == 8 ? PAGE_ZERO : PAGE_SIZED;

		make_page(model[i], k, seed * 100 + i, (unsigned int)(PG / 4));
		ck_assert_int_eq(zram_io(z, REQ_OP_WRITE, i * PG, model[i], PG), 0);
	}
}

static void check_all(struct zram *z, unsigned char (*model)[PG], unsigned int n)
{
	static unsigned char got[PG];
	unsigned int i;

	for (i = 0; i < n; i++) {
		memset(got, 0xa5, PG);
		ck_assert_int_eq(zram_io(z, REQ_OP_READ, i * PG, got, PG), 0);
		ck_assert_msg(!memcmp(got, model[i], PG), "page %u differs", i);
	}
}

static void check_bd(struct zram *z, uint64_t count, uint64_t reads, uint64_t writes)
{
	struct zram_bd_stat bd;

	zram_bd_stat(z, &bd);
	ck_assert_uint_eq(bd.bd_count, count * UNITS);
	ck_assert_uint_eq(bd.bd_reads, reads * UNITS);
	ck_assert_uint_eq(bd.bd_writes, writes * UNITS);
}

/* orig_data_size counts every stored page, on the backing disk or not. */
static void check_mm(struct zram *z, uint64_t stored, bool compr_zero)
{
	struct zpool_stats st;

	zram_mm_stat(z, &st);
	ck_assert_uint_eq(st.orig_data_size, stored * PG);
	if (compr_zero)
		ck_assert_uint_eq(st.compr_data_size, 0);
}

/* After a run whose every write failed: all 15 tried, none moved, none lost. */
static void check_all_failed(struct zram *z, unsigned char (*model)[PG])
{
	struct zram_io_stat ios;

	zram_io_stat(z, &ios);
	ck_assert_uint_eq(ios.failed_writes, 15);
	check_bd(z, 0, 0, 0);
	check_all(z, model, NP);
}

static bool page_on_backing(struct zram *z, uint64_t index)
{
	struct zram_block_state bs;
	uint64_t i = index;

	return !zram_block_state(z, &i, &bs) && i == index && (bs.flags & ZRAM_BS_WB);
}

struct mode_case {
	enum zram_wb_mode mode;
	uint64_t first, count;
	unsigned int idle_touch; /* pages read after "all > idle": not idle */
	int64_t want;
	unsigned int wb[NP];	  /* which pages end up on the backing disk */
};

START_TEST(test_modes)
{
	static const struct mode_case cases[] = {
		/* every page but the zero page */
		{ ZRAM_WB_ALL, 0, UINT64_MAX, 0, 15,
		  { 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1 } },
		/* idle, pages 0 and 4 touched */
		{ ZRAM_WB_IDLE, 0, UINT64_MAX, 2, 13,
		  { 0, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1 } },
		{ ZRAM_WB_HUGE, 0, UINT64_MAX, 0, 4,
		  { 0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0 } },
		{ ZRAM_WB_HUGE_IDLE, 0, UINT64_MAX, 2, 3,
		  { 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0 } },
		/* nothing marked incompressible without recompression */
		{ ZRAM_WB_INCOMPRESSIBLE, 0, UINT64_MAX, 0, 0, { 0 } },
		/* page_indexes=2-6 */
		{ ZRAM_WB_ALL, 2, 5, 0, 5,
		  { 0, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0 } },
		/* page_index=8: the zero page is never written back */
		{ ZRAM_WB_ALL, 8, 1, 0, 0, { 0 } },
		/* type=huge page_indexes=5-9 */
		{ ZRAM_WB_HUGE, 5, 5, 0, 3,
		  { 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0 } },
	};
	static unsigned char model[NP][PG], tmp[PG];
	unsigned int c;

	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		const struct mode_case *mc = &cases[c];
		struct tdisk *t = tdisk_new(64, false);
		struct zram *z = new_zram(NP, t->disk);
		unsigned int i, nwb = 0;
		struct zpool_stats before, after;

		fill(z, model, c);
		if (mc->mode & ZRAM_WB_IDLE) {
			ck_assert_uint_eq(zram_idle_mark(z, 0), NP - 1); /* not the zero page */
			ck_assert_int_eq(zram_io(z, REQ_OP_READ, 0, tmp, PG), 0);
			ck_assert_int_eq(zram_io(z, REQ_OP_READ, 4 * PG, tmp, PG), 0);
		}
		zram_mm_stat(z, &before);
		ck_assert_int_eq(zram_writeback(z, mc->mode, mc->first, mc->count), mc->want);
		for (i = 0; i < NP; i++) {
			ck_assert_msg(page_on_backing(z, i) == (mc->wb[i] != 0),
				      "case %u page %u", c, i);
			nwb += mc->wb[i] != 0;
		}
		ck_assert_uint_eq(nwb, (unsigned int)mc->want);
		check_mm(z, NP, false);
		zram_mm_stat(z, &after);
		/* Memory of the written-back pages was freed. */
		if (nwb)
			ck_assert_uint_lt(after.compr_data_size, before.compr_data_size);
		check_bd(z, nwb, 0, nwb);
		/* Reads come from the backing disk and leave the pages there. */
		check_all(z, model, NP);
		check_bd(z, nwb, nwb, nwb);
		for (i = 0; i < NP; i++)
			ck_assert(page_on_backing(z, i) == (mc->wb[i] != 0));
		/* The pages are really on the backing disk: clobber it and see. */
		if (nwb) {
			memset(t->mem, 0x5a, 64 * PG);
			for (i = 0; i < NP && !mc->wb[i]; i++)
				;
			ck_assert_int_eq(zram_io(z, REQ_OP_READ, i * PG, tmp, PG), 0);
			ck_assert_uint_eq(tmp[0], 0x5a);
		}
		zram_destroy(z);
		tdisk_free(t);
	}
}
END_TEST

START_TEST(test_partial_io)
{
	static unsigned char model[NP][PG], buf[PG];
	struct tdisk *t = tdisk_new(64, _i == 1);
	struct zram *z = new_zram(NP, t->disk);
	struct zram_io_stat ios;
	uint64_t stored = NP;

	fill(z, model, 7);
	/* Page 11: one byte of data, in its first sector. */
	memset(model[11], 0, PG);
	model[11][100] = 0x5a;
	ck_assert_int_eq(zram_io(z, REQ_OP_WRITE, 11 * PG, model[11], PG), 0);
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_ALL, 0, UINT64_MAX), 15);
	/* A partial read goes through a bounce page; the page stays out. */
	ck_assert_int_eq(zram_io(z, REQ_OP_READ, 512, buf, 1536), 0);
	ck_assert(!memcmp(buf, model[0] + 512, 1536));
	ck_assert(page_on_backing(z, 0));
	check_bd(z, 15, 1, 15);
	/* A partial write brings the page back, patched. */
	memset(buf, 0xee, 1024);
	ck_assert_int_eq(zram_io(z, REQ_OP_WRITE, PG + 1024, buf, 1024), 0);
	memset(model[1] + 1024, 0xee, 1024);
	ck_assert(!page_on_backing(z, 1));
	check_bd(z, 14, 2, 15);
	/* Discarding a whole page releases its block. */
	ck_assert_int_eq(zram_io(z, REQ_OP_DISCARD, 2 * PG, NULL, PG), 0);
	memset(model[2], 0, PG);
	stored--;
	check_bd(z, 13, 2, 15);
	zram_io_stat(z, &ios);
	ck_assert_uint_eq(ios.notify_free, 1);
	/* Zeroing an edge of a written-back page: read, patch, store. */
	ck_assert_int_eq(zram_io(z, REQ_OP_WRITE_ZEROES, 3 * PG + PG - 512, NULL, 512), 0);
	memset(model[3] + PG - 512, 0, 512);
	ck_assert(!page_on_backing(z, 3));
	check_bd(z, 12, 3, 15);
	/* Zeroing all the data a written-back page held leaves a zero page: a mark. */
	ck_assert_int_eq(zram_io(z, REQ_OP_WRITE_ZEROES, 11 * PG, NULL, 512), 0);
	model[11][100] = 0;
	ck_assert(!page_on_backing(z, 11));
	ck_assert_uint_eq(flags_of(z, 11) & ZRAM_ZERO, ZRAM_ZERO);
	ck_assert_uint_eq(handle_of(z, 11), 0);
	check_bd(z, 11, 4, 15);
	/* A whole-page write only releases the block. */
	make_page(model[9], PAGE_TEXT, 999, 0);
	ck_assert_int_eq(zram_io(z, REQ_OP_WRITE, 9 * PG, model[9], PG), 0);
	check_bd(z, 10, 4, 15);
	check_mm(z, stored, false);
	check_accounting(z, NP, stored);
	check_all(z, model, NP);
	check_bd(z, 10, 4 + 10, 15);
	zram_destroy(z);
	tdisk_free(t);
}
END_TEST

START_TEST(test_backing_fails)
{
	static unsigned char model[NP][PG], buf[PG];
	struct tdisk *t = tdisk_new(64, _i == 1);
	struct zram *z = new_zram(NP, t->disk);
	struct zram_io_stat ios;
	struct zpool_stats before, after;

	fill(z, model, 3);
	zram_mm_stat(z, &before);
	atomic_store(&t->fail_writes, true);
	/* Nothing lost: every page stays in memory; the errors are counted. */
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_ALL, 0, UINT64_MAX), -EIO);
	zram_io_stat(z, &ios);
	ck_assert_uint_eq(ios.failed_writes, 15);
	check_bd(z, 0, 0, 0);
	zram_mm_stat(z, &after);
	ck_assert_uint_eq(after.compr_data_size, before.compr_data_size);
	check_all(z, model, NP);
	atomic_store(&t->fail_writes, false);
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_ALL, 0, UINT64_MAX), 15);
	check_bd(z, 15, 0, 15);
	/* A failed read: -EIO to the reader, counted, the page kept. */
	atomic_store(&t->fail_reads, true);
	ck_assert_int_eq(zram_io(z, REQ_OP_READ, 0, buf, PG), -EIO);
	ck_assert_int_eq(zram_io(z, REQ_OP_READ, PG + 512, buf, 512), -EIO);
	memset(buf, 1, 512);
	ck_assert_int_eq(zram_io(z, REQ_OP_WRITE, 2 * PG, buf, 512), -EIO);
	zram_io_stat(z, &ios);
	ck_assert_uint_eq(ios.failed_reads, 3);
	atomic_store(&t->fail_reads, false);
	ck_assert(page_on_backing(z, 2));
	check_all(z, model, NP);
	zram_destroy(z);
	tdisk_free(t);
}
END_TEST

START_TEST(test_enospc)
{
	static unsigned char model[NP][PG];
	struct tdisk *t = tdisk_new(3, false);
	struct zram *z = new_zram(NP, t->disk);

	fill(z, model, 4);
	/* Largest first: three of the four raw pages, in disk order. */
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_ALL, 0, UINT64_MAX), -ENOSPC);
	ck_assert(page_on_backing(z, 4) && page_on_backing(z, 5) && page_on_backing(z, 6));
	ck_assert(!page_on_backing(z, 7) && !page_on_backing(z, 0));
	check_bd(z, 3, 0, 3);
	/* A freed block is found again (first fit). */
	ck_assert_int_eq(zram_io(z, REQ_OP_DISCARD, 5 * PG, NULL, PG), 0);
	memset(model[5], 0, PG);
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_ALL, 9, 1), 1);
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_ALL, 10, 1), -ENOSPC);
	check_bd(z, 3, 0, 4);
	check_mm(z, NP - 1, false);
	check_all(z, model, NP);
	zram_destroy(z);
	tdisk_free(t);
}
END_TEST

/*
 * As Linux since 6.13: the largest objects are written back first, so that
 * a budget (or a backing disk) too small for every page frees the most
 * memory.  In disk order the four text pages would go before the four raw
 * ones; then the largest of what is left, page by page.
 */
START_TEST(test_largest_first)
{
	static unsigned char model[NP][PG];
	struct tdisk *t = tdisk_new(64, false);
	struct zram *z = new_zram(NP, t->disk);
	size_t size[NP], least_out, most_in;
	unsigned int i, round;

	fill(z, model, 6);
	for (i = 0; i < NP; i++)
		size[i] = i == 8 ? 0 : zpool_obj_size(z->pool, handle_of(z, i));
	zram_set_writeback_limit_enable(z, true);
	for (round = 0; round < 3; round++) {
		zram_set_writeback_limit(z, (round ? 3 : 4) * UNITS);
		ck_assert_int_eq(zram_writeback(z, ZRAM_WB_ALL, 0, UINT64_MAX), -EIO);
		if (!round)
			for (i = 0; i < NP; i++)
				ck_assert_msg(page_on_backing(z, i) == (i >= 4 && i < 8), "page %u", i);
		least_out = PG;
		most_in = 0;
		for (i = 0; i < NP; i++) {
			if (i == 8)
				continue;
			if (page_on_backing(z, i))
				least_out = size[i] < least_out ? size[i] : least_out;
			else
				most_in = size[i] > most_in ? size[i] : most_in;
		}
		ck_assert_msg(least_out >= most_in, "round %u: a %zu-byte page went, a %zu-byte one "
			      "stayed", round, least_out, most_in);
	}
	check_bd(z, 10, 0, 10);
	check_all(z, model, NP);
	zram_destroy(z);
	tdisk_free(t);
}
END_TEST

/*
 * A device with more candidates than a window (2^18, a GiB of 4 KiB pages)
 * sorts them a window at a time, windows in disk order.  Windows of three
 * candidates show that on the small device: a failed backing write ends
 * neither its window nor the run, and the order is largest first within
 * each window.
 */
START_TEST(test_windows)
{
	static unsigned char model[NP][PG];
	struct tdisk *t = tdisk_new(64, _i == 1);
	struct zram *z = new_zram(NP, t->disk);
	unsigned int i;

	fill(z, model, 8);
	zram__wb_set_window(z, 3);
	/* Every write fails: all 15 pages tried, over five windows; none lost. */
	atomic_store(&t->fail_writes, true);
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_ALL, 0, UINT64_MAX), -EIO);
	check_all_failed(z, model);
	atomic_store(&t->fail_writes, false);
	/*
	 * A budget of five pages: the first window (text pages 0-2) whole,
	 * then of the second (3-5) the two raw pages before the text one.
	 */
	zram_set_writeback_limit_enable(z, true);
	zram_set_writeback_limit(z, 5 * UNITS);
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_ALL, 0, UINT64_MAX), -EIO);
	for (i = 0; i < NP; i++)
		ck_assert_msg(page_on_backing(z, i) == (i <= 2 || i == 4 || i == 5), "page %u", i);
	/* The rest, window by window, failures forgotten. */
	zram_set_writeback_limit_enable(z, false);
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_ALL, 0, UINT64_MAX), 10);
	check_bd(z, 15, 0, 15);
	check_all(z, model, NP);
	zram_destroy(z);
	tdisk_free(t);
}
END_TEST

START_TEST(test_limit)
{
	static unsigned char model[NP][PG];
	struct tdisk *t = tdisk_new(64, false);
	struct zram *z = new_zram(NP, t->disk);
	bool on = true;

	fill(z, model, 5);
	ck_assert_uint_eq(zram_writeback_limit(z, &on), 0);
	ck_assert(!on);
	/* A budget set while disabled is kept, not spent. */
	zram_set_writeback_limit(z, 100 * UNITS);
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_ALL, 0, 1), 1);
	ck_assert_uint_eq(zram_writeback_limit(z, NULL), 100 * UNITS);
	/* Enabled with no budget: nothing is written. */
	zram_set_writeback_limit(z, 0);
	zram_set_writeback_limit_enable(z, true);
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_ALL, 0, UINT64_MAX), -EIO);
	check_bd(z, 1, 0, 1);
	/* Two pages' worth: two pages, then -EIO; nothing left. */
	zram_set_writeback_limit(z, 2 * UNITS);
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_ALL, 0, UINT64_MAX), -EIO);
	check_bd(z, 3, 0, 3);
	ck_assert_uint_eq(zram_writeback_limit(z, &on), 0);
	ck_assert(on);
	/* A failed write gives its budget back. */
	zram_set_writeback_limit(z, 1 * UNITS);
	atomic_store(&t->fail_writes, true);
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_ALL, 0, UINT64_MAX), -EIO);
	ck_assert_uint_eq(zram_writeback_limit(z, NULL), 1 * UNITS);
	atomic_store(&t->fail_writes, false);
	zram_set_writeback_limit_enable(z, false);
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_ALL, 0, UINT64_MAX), 12);
	check_bd(z, 15, 0, 15);
	check_all(z, model, NP);
	zram_destroy(z);
	tdisk_free(t);
}
END_TEST

START_TEST(test_reset)
{
	static unsigned char model[NP][PG], buf[PG];
	struct tdisk *t = tdisk_new(NP, _i == 1);
	struct zram *z = new_zram(NP, t->disk);
	bool on;

	fill(z, model, 6);
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_ALL, 0, UINT64_MAX), 15);
	zram_set_writeback_limit(z, 7);
	zram_set_writeback_limit_enable(z, true);
	ck_assert_int_eq(zram_reset(z), 0);
	check_bd(z, 0, 0, 15);
	check_mm(z, 0, true);
	ck_assert_uint_eq(zram_writeback_limit(z, &on), 0);
	ck_assert(!on);
	memset(buf, 1, PG);
	ck_assert_int_eq(zram_io(z, REQ_OP_READ, 0, buf, PG), 0);
	ck_assert_uint_eq(buf[0], 0);
	/* Every block is free again: the whole device fits once more. */
	fill(z, model, 8);
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_ALL, 0, UINT64_MAX), 15);
	check_bd(z, 15, 0, 30);
	check_all(z, model, NP);
	zram_destroy(z);
	tdisk_free(t);
}
END_TEST

START_TEST(test_backing_rules)
{
	static unsigned char model[NP][PG];
	struct tdisk *t = tdisk_new(64, false), *tiny = tdisk_new(0, false);
	struct zram *z = new_zram(NP, NULL);
	struct zram_block_state bs;
	char line[128];
	uint64_t i;

	fill(z, model, 9);
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_ALL, 0, UINT64_MAX), -ENODEV);
	set_capacity(tiny->disk, PG / 512 - 1); /* less than a page */
	ck_assert_int_eq(zram_set_backing(z, tiny->disk), -EINVAL);
	ck_assert_int_eq(zram_set_backing(z, t->disk), 0);
	ck_assert_int_eq(zram_writeback(z, (enum zram_wb_mode)9, 0, 1), -EINVAL);
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_ALL, NP, 1), -EINVAL);
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_ALL, 3, 1), 1);
	ck_assert_int_eq(zram_set_backing(z, NULL), -EBUSY);
	ck_assert_uint_eq(zram_writeback_batch_size(z), 32);
	ck_assert_int_eq(zram_set_writeback_batch_size(z, 0), -EINVAL);
	ck_assert_int_eq(zram_set_writeback_batch_size(z, 257), -EINVAL);
	ck_assert_uint_eq(zram_writeback_batch_size(z), 32); /* refused: unchanged */
	ck_assert_int_eq(zram_set_writeback_batch_size(z, 256), 0);
	ck_assert_uint_eq(zram_writeback_batch_size(z), 256);
	ck_assert_int_eq(zram_set_writeback_batch_size(z, 32), 0);
	ck_assert_uint_eq(zram_writeback_batch_size(NULL), 0);
	/* block_state: stored pages only, Linux's letters. */
	i = 0;
	ck_assert_int_eq(zram_block_state(z, &i, &bs), 0);
	ck_assert_uint_eq(i, 0);
	i = 3;
	ck_assert_int_eq(zram_block_state(z, &i, &bs), 0);
	zram_format_block_state(&bs, line, sizeof(line));
	ck_assert_str_eq(line + 33, ".w....\n");
	ck_assert_uint_eq(strlen(line), 40);
	i = 4;
	ck_assert_int_eq(zram_block_state(z, &i, &bs), 0);
	zram_format_block_state(&bs, line, sizeof(line));
	ck_assert_str_eq(line + 33, "..h...\n");
	i = 8;
	zram_idle_mark(z, 0);
	ck_assert_int_eq(zram_block_state(z, &i, &bs), 0);
	zram_format_block_state(&bs, line, sizeof(line));
	ck_assert_str_eq(line + 33, "s.....\n"); /* a zero page is never idle */
	i = 9;
	ck_assert_int_eq(zram_block_state(z, &i, &bs), 0);
	zram_format_block_state(&bs, line, sizeof(line));
	ck_assert_str_eq(line + 33, "...i..\n");
	i = 3; /* a written-back page is not marked idle */
	ck_assert_int_eq(zram_block_state(z, &i, &bs), 0);
	ck_assert_uint_eq(bs.flags, ZRAM_BS_WB);
	ck_assert_int_eq(zram_io(z, REQ_OP_DISCARD, 15 * PG, NULL, PG), 0);
	i = 15;
	ck_assert_int_eq(zram_block_state(z, &i, &bs), -ENOENT);
	zram_format_bd_stat(&(struct zram_bd_stat){ 1, 2, 3 }, line, sizeof(line));
	ck_assert_str_eq(line, "       1        2        3\n");
	/* Once nothing is on it, the backing disk may go. */
	ck_assert_int_eq(zram_io(z, REQ_OP_DISCARD, 3 * PG, NULL, PG), 0);
	ck_assert_int_eq(zram_set_backing(z, NULL), 0);
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_ALL, 0, UINT64_MAX), -ENODEV);
	zram_destroy(z);
	tdisk_free(t);
	tdisk_free(tiny);
}
END_TEST

/* The file disk as the backing device, as zblk uses it. */
START_TEST(test_file_disk)
{
	static unsigned char model[NP][PG];
	FILE *f = tmpfile();
	struct gendisk *d;
	struct zram *z;

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(ftruncate(fileno(f), 64 * (off_t)PG), 0);
	d = bvec_file_disk_create(fileno(f), NULL);
	ck_assert_ptr_nonnull(d);
	z = new_zram(NP, d);
	fill(z, model, 10);
	zram_idle_mark(z, 0);
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_IDLE, 0, UINT64_MAX), 15);
	check_all(z, model, NP);
	check_bd(z, 15, 15, 15);
	zram_destroy(z);
	put_disk(d);
	fclose(f);
}
END_TEST

static void *writeback_page0(void *arg)
{
	return (void *)(intptr_t)zram_writeback(arg, ZRAM_WB_ALL, 0, 1);
}

/*
 * A writeback waiting for a slow disk sleeps: it used to spin on yield,
 * taking a CPU for as long as the disk took.  The disk holds the write for
 * 300 ms; the waiting thread may use a few milliseconds of CPU in that time.
 */
START_TEST(test_wait_sleeps)
{
	static unsigned char model[NP][PG];
	struct tdisk *t = tdisk_new(64, true);
	struct zram *z = new_zram(NP, t->disk);
	struct timespec a, b;
	clockid_t clk;
	pthread_t th;
	void *ret;
	long used_us;

	fill(z, model, 13);
	atomic_store(&t->hold, true);
	ck_assert_int_eq(pthread_create(&th, NULL, writeback_page0, z), 0);
	ck_assert_int_eq(pthread_getcpuclockid(th, &clk), 0);
	while (!atomic_load(&t->inflight))
		usleep(100);
	ck_assert_int_eq(clock_gettime(clk, &a), 0);
	usleep(300 * 1000);
	ck_assert_int_eq(clock_gettime(clk, &b), 0);
	atomic_store(&t->hold, false);
	pthread_join(th, &ret);
	ck_assert_int_eq((intptr_t)ret, 1);
	used_us = (long)(b.tv_sec - a.tv_sec) * 1000000 + (b.tv_nsec - a.tv_nsec) / 1000;
	ck_assert_msg(used_us < 5000, "the waiting writeback used %ld us of CPU in 300 ms",
		      used_us);
	check_all(z, model, NP);
	zram_destroy(z);
	tdisk_free(t);
}
END_TEST

struct wb_thread {
	struct zram *z;
	uint64_t first, count;
	int64_t ret;
	atomic_bool done;
};

static void *writeback_range(void *arg)
{
	struct wb_thread *w = arg;

	w->ret = zram_writeback(w->z, ZRAM_WB_ALL, w->first, w->count);
	atomic_store(&w->done, true);
	return NULL;
}

/*
 * zram_writeback() of pages [@first, @first + @count) on its own thread,
 * the disk holding its writes: once @held of them are held, @during (if
 * not NULL) runs with @arg, then the disk lets them go.  Returns what the
 * run returned.  A run that ends with fewer writes fails the test.
 */
static int64_t writeback_held(struct zram *z, struct tdisk *t, uint64_t first, uint64_t count,
			      int held, void (*during)(void *), void *arg)
{
	struct wb_thread w = { z, first, count, 0, false };
	pthread_t th;

	atomic_store(&t->hold, true);
	ck_assert_int_eq(pthread_create(&th, NULL, writeback_range, &w), 0);
	while (atomic_load(&t->inflight) < held && !atomic_load(&w.done))
		usleep(100);
	ck_assert_msg(atomic_load(&t->inflight) >= held, "the run returned %lld with %d writes held",
		      (long long)w.ret, atomic_load(&t->inflight));
	if (during)
		during(arg);
	atomic_store(&t->hold, false);
	pthread_join(th, NULL);
	return w.ret;
}

/*
 * A use of page @index while a run holds its writes: overwrite it, read
 * it, discard it, or overwrite it until its object has the handle it had
 * before (a rewrite that a comparison of handles cannot see).  @model is
 * kept right.
 */
enum page_use { USE_WRITE, USE_READ, USE_DISCARD, USE_SAME_HANDLE };

struct use {
	struct zram *z;
	unsigned char (*model)[PG];
	uint64_t index;
	enum page_use how;
};

static void use_page(void *arg)
{
	static unsigned char got[PG];
	const struct use *u = arg;
	uint32_t was = zram__slot_get(u->z, u->index, false)->handle;
	unsigned char *page = u->model[u->index];
	uint64_t off = u->index * PG;
	unsigned int n;

	switch (u->how) {
	case USE_READ:
		ck_assert_int_eq(zram_io(u->z, REQ_OP_READ, off, got, PG), 0);
		ck_assert(!memcmp(got, page, PG));
		break;
	case USE_DISCARD:
		ck_assert_int_eq(zram_io(u->z, REQ_OP_DISCARD, off, NULL, PG), 0);
		memset(page, 0, PG);
		break;
	case USE_WRITE:
	case USE_SAME_HANDLE:
		for (n = 1; n <= 64; n++) {
			make_page(page, PAGE_TEXT, 4242 + n, 0);
			ck_assert_int_eq(zram_io(u->z, REQ_OP_WRITE, off, page, PG), 0);
			if (u->how == USE_WRITE ||
			    zram__slot_get(u->z, u->index, false)->handle == was)
				break;
		}
		ck_assert_msg(n <= 64, "the page's old handle never came back");
		break;
	}
}

/*
 * A page overwritten, read or discarded while its write to the backing
 * disk is in flight stays in memory (new contents, same, or none), and the
 * block and the budget go back: as Linux, which drops a page accessed
 * meanwhile and charges only pages that moved.  The page is no less a
 * candidate for the next run (a read once left it marked as being written
 * back, which every tier passes over).
 */
START_TEST(test_used_in_flight)
{
	static unsigned char model[NP][PG];
	struct tdisk *t = tdisk_new(64, true);
	struct zram *z = new_zram(NP, t->disk);
	struct use u = { z, model, 0, (enum page_use)_i };
	const bool gone = u.how == USE_DISCARD;

	fill(z, model, 12);
	zram_set_writeback_limit_enable(z, true);
	zram_set_writeback_limit(z, 4 * UNITS);
	ck_assert_int_eq(writeback_held(z, t, 0, 1, 1, use_page, &u), 0);
	ck_assert(!page_on_backing(z, 0));
	check_bd(z, 0, 0, 1); /* the disk was written, the block released */
	ck_assert_uint_eq(zram_writeback_limit(z, NULL), 4 * UNITS);
	check_all(z, model, NP);
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_ALL, 0, 1), gone ? 0 : 1);
	ck_assert(page_on_backing(z, 0) == !gone);
	check_bd(z, !gone, 0, 1 + !gone);
	ck_assert_uint_eq(zram_writeback_limit(z, NULL), (gone ? 4 : 3) * UNITS);
	check_all(z, model, NP);
	zram_destroy(z);
	tdisk_free(t);
}
END_TEST

/*
 * Writes in flight hold a block and a page of the budget each until they
 * complete; one that fails gives both back.  So with every write failing,
 * neither a budget of 4 pages nor a disk of 4 blocks is ever spent: all 15
 * pages are tried, -EIO says a write failed, nothing is lost.  The disk holds
 * the first four writes until the run has asked for the fifth page.
 */
START_TEST(test_failed_writes_give_back)
{
	static unsigned char model[NP][PG];
	struct tdisk *t = tdisk_new(_i ? 4 : 64, true);
	struct zram *z = new_zram(NP, t->disk);

	fill(z, model, 9);
	if (!_i) {
		zram_set_writeback_limit_enable(z, true);
		zram_set_writeback_limit(z, 4 * UNITS);
	}
	atomic_store(&t->fail_writes, true);
	ck_assert_int_eq(writeback_held(z, t, 0, UINT64_MAX, 4, NULL, NULL), -EIO);
	check_all_failed(z, model);
	ck_assert_uint_eq(zram_writeback_limit(z, NULL), _i ? 0 : 4 * UNITS);
	/* Writes that succeed keep theirs: then the budget or the disk runs out. */
	atomic_store(&t->fail_writes, false);
	ck_assert_int_eq(writeback_held(z, t, 0, UINT64_MAX, 4, NULL, NULL),
			 _i ? -ENOSPC : -EIO);
	check_bd(z, 4, 0, 4);
	ck_assert_uint_eq(zram_writeback_limit(z, NULL), 0);
	check_all(z, model, NP);
	zram_destroy(z);
	tdisk_free(t);
}
END_TEST

/*
 * Page 15 used while the run waits on its first write (batch of one):
 * rewritten, read, or rewritten until its object has its old handle back.
 * Each is an access since the window was filled, so it is passed over, as
 * Linux passes over a slot that lost its post-processing mark.
 */
START_TEST(test_used_passed_over)
{
	static unsigned char model[NP][PG];
	struct tdisk *t = tdisk_new(64, true);
	struct zram *z = new_zram(NP, t->disk);
	struct use u = { z, model, 15, _i == 2 ? USE_SAME_HANDLE : (enum page_use)_i };

	fill(z, model, 10);
	ck_assert_int_eq(zram_set_writeback_batch_size(z, 1), 0);
	ck_assert_int_eq(writeback_held(z, t, 0, UINT64_MAX, 1, use_page, &u), 14);
	ck_assert(!page_on_backing(z, 15));
	check_all(z, model, NP);
	/* It is still a candidate for the next run. */
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_ALL, 0, UINT64_MAX), 1);
	ck_assert(page_on_backing(z, 15));
	check_all(z, model, NP);
	zram_destroy(z);
	tdisk_free(t);
}
END_TEST

struct second_run {
	struct zram *z;
	atomic_bool done;
	int64_t ret;
};

static void *second_writeback(void *arg)
{
	struct second_run *r = arg;

	r->ret = zram_writeback(r->z, ZRAM_WB_ALL, 0, 1);
	atomic_store(&r->done, true);
	return NULL;
}

/*
 * A second writeback run while the first's write of a page is in flight,
 * the page overwritten in between: the second must leave the page alone.
 * It used to take it (the overwrite had cleared the mark that it was being
 * written back, and the second run set it again), and the first run's
 * completion then took that mark for its own and put the old contents'
 * block in the slot: the overwrite was lost, and reads returned old data.
 */
START_TEST(test_second_run_while_in_flight)
{
	static unsigned char model[NP][PG];
	struct tdisk *t = tdisk_new(64, true);
	struct zram *z = new_zram(NP, t->disk);
	struct second_run r = { .z = z, .done = false, .ret = -1 };
	pthread_t first, second;
	void *ret;
	int waited, n;

	fill(z, model, 14);
	atomic_store(&t->hold, true);
	ck_assert_int_eq(pthread_create(&first, NULL, writeback_page0, z), 0);
	while (!atomic_load(&t->inflight))
		usleep(100);
	make_page(model[0], PAGE_TEXT, 4343, 0);
	ck_assert_int_eq(zram_io(z, REQ_OP_WRITE, 0, model[0], PG), 0);
	ck_assert_int_eq(pthread_create(&second, NULL, second_writeback, &r), 0);
	/* The second run has nothing it may write: it returns while the disk
	 * still holds the first's write.  A second write in flight is the bug. */
	for (waited = 0; !atomic_load(&r.done) && waited < 10000; waited++) {
		n = atomic_load(&t->inflight);
		ck_assert_msg(n == 1, "a second run took the page the first still writes: %d in flight",
			      n);
		usleep(1000);
	}
	ck_assert_msg(atomic_load(&r.done), "the second run waited for the first's write");
	atomic_store(&t->hold, false);
	pthread_join(first, &ret);
	pthread_join(second, NULL);
	ck_assert_int_eq((intptr_t)ret, 0);
	ck_assert_int_eq(r.ret, 0);
	ck_assert(!page_on_backing(z, 0));
	check_bd(z, 0, 0, 1);
	check_all(z, model, NP);
	/* The claim is gone with the first run: the page can be written back now. */
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_ALL, 0, 1), 1);
	ck_assert(page_on_backing(z, 0));
	check_all(z, model, NP);
	zram_destroy(z);
	tdisk_free(t);
}
END_TEST

struct reader {
	struct zram *z;
	unsigned char *buf;
	int ret;
};

/* @fn(@arg) on a new thread *@th, once its backing read is held by @t. */
static void start_behind_held_read(struct tdisk *t, pthread_t *th, void *(*fn)(void *),
				   void *arg)
{
	atomic_store(&t->hold_reads, true);
	ck_assert_int_eq(pthread_create(th, NULL, fn, arg), 0);
	while (!atomic_load(&t->held))
		usleep(100);
}

static void *read_page0(void *arg)
{
	struct reader *r = arg;

	r->ret = zram_io(r->z, REQ_OP_READ, 0, r->buf, PG);
	return NULL;
}

/*
 * A block whose read is in flight is not handed to another page when its
 * own page is overwritten: the reader gets the page it asked for, never
 * another page's bytes written over the block meanwhile.
 */
START_TEST(test_block_pinned_while_read)
{
	static unsigned char model[NP][PG], old[PG], got[PG];
	struct tdisk *t = tdisk_new(64, true);
	struct reader r = { .z = new_zram(NP, t->disk), .buf = got };
	struct zram *z = r.z;
	pthread_t th;

	fill(z, model, 13);
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_ALL, 0, 1), 1);
	memcpy(old, model[0], PG);
	start_behind_held_read(t, &th, read_page0, &r);
	make_page(model[0], PAGE_TEXT, 4343, 0);
	ck_assert_int_eq(zram_io(z, REQ_OP_WRITE, 0, model[0], PG), 0);
	check_bd(z, 1, 0, 1); /* released, but still taken: it is being read */
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_ALL, 1, 1), 1);
	check_bd(z, 2, 0, 2);
	atomic_store(&t->hold_reads, false);
	pthread_join(th, NULL);
	ck_assert_int_eq(r.ret, 0);
	ck_assert(!memcmp(got, old, PG));
	check_bd(z, 1, 1, 2); /* free once the read is done */
	check_all(z, model, NP);
	zram_destroy(z);
	tdisk_free(t);
}
END_TEST

struct patcher {
	struct zram *z;
	const unsigned char *src;
	int ret;
};

/* 512 bytes at offset 1024 of page 0: a read-modify-write. */
static void *patch_page0(void *arg)
{
	struct patcher *p = arg;

	p->ret = zram_io(p->z, REQ_OP_WRITE, 1024, (void *)p->src, 512);
	return NULL;
}

/*
 * A sub-page write to a written-back page reads the page's block first.  If
 * the page changes while that read is in flight (_i = 0: overwritten in
 * memory; 1: overwritten and written back again, to another block), the
 * patch lands on what the page holds when the read returns, never on the
 * stale block's bytes.
 */
START_TEST(test_rmw_page_changed)
{
	static unsigned char model[NP][PG], patch[PG];
	struct tdisk *t = tdisk_new(64, true);
	struct patcher p = { .z = new_zram(NP, t->disk), .src = patch };
	struct zram *z = p.z;
	pthread_t th;

	fill(z, model, 17);
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_ALL, 0, 1), 1);
	make_page(patch, PAGE_RANDOM, 99, 0); /* its first 512 bytes go in */
	start_behind_held_read(t, &th, patch_page0, &p);
	make_page(model[0], PAGE_TEXT, 4747, 0);
	ck_assert_int_eq(zram_io(z, REQ_OP_WRITE, 0, model[0], PG), 0);
	if (_i) {
		ck_assert_int_eq(zram_writeback(z, ZRAM_WB_ALL, 0, 1), 1);
		ck_assert(page_on_backing(z, 0));
	}
	atomic_store(&t->hold_reads, false);
	pthread_join(th, NULL);
	ck_assert_int_eq(p.ret, 0);
	memcpy(model[0] + 1024, patch, 512);
	check_all(z, model, NP);
	zram_destroy(z);
	tdisk_free(t);
}
END_TEST

/* ZP_GROUP_PAGES, or 2 where a group is one page, so runs still span pages. */
#define GRP (ZP_GROUP_PAGES > 1 ? ZP_GROUP_PAGES : 2u)
/* The disk of test_multi_members(): four quarters of a group each, or of 4 pages. */
#define Q (GRP > 4 ? GRP : 4u)
#define MP (4 * Q)

static unsigned int block_flags(struct zram *z, uint64_t index)
{
	struct zram_block_state bs;
	uint64_t i = index;

	ck_assert_int_eq(zram_block_state(z, &i, &bs), 0);
	ck_assert_uint_eq(i, index);
	return bs.flags;
}

/* Pages @first.. @first + @n - 1 in one bio; returns how many came from the backing disk. */
static unsigned int check_run(struct zram *z, unsigned char (*model)[PG], uint64_t first,
			      unsigned int n)
{
	unsigned char *got = malloc((size_t)n * PG);
	unsigned int i, on = 0;

	for (i = 0; i < n; i++)
		on += page_on_backing(z, first + i);
	memset(got, 0xa5, (size_t)n * PG);
	ck_assert_int_eq(zram_io(z, REQ_OP_READ, first * PG, got, n * (unsigned int)PG), 0);
	for (i = 0; i < n; i++)
		ck_assert_msg(!memcmp(got + (size_t)i * PG, model[first + i], PG), "page %u",
			      (unsigned int)first + i);
	free(got);
	return on;
}

/*
 * Members of groups (ZPOOL_F_MULTI_PAGE) on the backing disk: each mode
 * picks them as it picks any page (never as huge: a group is below the
 * huge class), a run read in one bio mixes the backing disk and groups,
 * part of a group written back and the rest overwritten gives the group
 * back, and a failing backing disk loses nothing.
 */
START_TEST(test_multi_members)
{
	static unsigned char model[MP][PG];
	struct tdisk *t = tdisk_new(2 * MP, _i == 1);
	struct zram *z = new_zram_flags(MP, t->disk, ZPOOL_F_MULTI_PAGE | ZPOOL_F_CHECKSUM);
	unsigned char *run = malloc((size_t)MP * PG);
	struct zram_io_stat ios;
	struct zpool_stats st;
	unsigned int i, wb = 0, reads = 0, writes = 0;
	int64_t n;

	/*
	 * Quarters (groups, where a group is 8 pages) 0, 2 and 3 all text or
	 * binary; quarter 1 broken by a raw page (Q + 3) and a zero page (2 * Q - 2).
	 */
	for (i = 0; i < MP; i++)
		make_page(model[i], i == Q + 3 ? PAGE_RANDOM : i == 2 * Q - 2 ? PAGE_ZERO :
				    i / Q == 3 ? PAGE_BINARY : PAGE_TEXT, i, 0);
	for (i = 0; i < MP; i++)
		memcpy(run + (size_t)i * PG, model[i], PG);
	ck_assert_int_eq(zram_io(z, REQ_OP_WRITE, 0, run, MP * (unsigned int)PG), 0);
	check_mm(z, MP, false);
	for (i = 0; i < MP; i++) {
		unsigned int f = block_flags(z, i);

		ck_assert_msg(!(f & ZRAM_BS_HUGE) == (i != Q + 3), "page %u: %x", i, f);
		ck_assert_msg(!(f & ZRAM_BS_SAME) == (i != 2 * Q - 2), "page %u: %x", i, f);
	}

	/* Huge: the raw page alone.  Incompressible: none without recompression. */
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_HUGE, 0, UINT64_MAX), 1);
	wb++;
	writes++;
	ck_assert(page_on_backing(z, Q + 3));
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_INCOMPRESSIBLE, 0, UINT64_MAX), 0);

	/* Idle: group 0 but its pages 1 and 2, read together after the mark. */
	ck_assert_uint_eq(zram_idle_mark(z, 0), MP - 2); /* not the zero page */
	ck_assert_uint_eq(check_run(z, model, 1, 2), 0);
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_IDLE, 0, Q), Q - 2);
	wb += Q - 2;
	writes += Q - 2;
	for (i = 0; i < Q; i++)
		ck_assert(page_on_backing(z, i) == (i < 1 || i > 2));
	check_bd(z, wb, 0, writes);
	check_mm(z, MP, false);
	/* One bio over groups 0 and 1: from the backing disk and from memory. */
	reads += check_run(z, model, 0, 2 * Q);
	ck_assert_uint_eq(reads, Q - 1);
	check_bd(z, wb, reads, writes);

	/* Half of group 2 written back, the other half overwritten. */
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_ALL, 2 * Q, Q / 2), Q / 2);
	wb += Q / 2;
	writes += Q / 2;
	for (i = 2 * Q + Q / 2; i < 3 * Q; i++)
		make_page(model[i], PAGE_BINARY, 1000 + i, 0);
	ck_assert_int_eq(zram_io(z, REQ_OP_WRITE, (2 * Q + Q / 2) * PG, model[2 * Q + Q / 2],
			    Q / 2 * (unsigned int)PG), 0);
	reads += check_run(z, model, 2 * Q, Q);

	/* A sector of a written-back member patched; a run over one and a page in memory. */
	memset(model[0] + 512, 0x77, 512);
	ck_assert_int_eq(zram_io(z, REQ_OP_WRITE, 512, model[0] + 512, 512), 0);
	ck_assert(!page_on_backing(z, 0));
	wb--;
	reads++;
	ck_assert(page_on_backing(z, Q - 1) && !page_on_backing(z, Q));
	make_page(model[Q - 1], PAGE_TEXT, 5005, 0);
	make_page(model[Q], PAGE_TEXT, 5006, 0);
	ck_assert_int_eq(zram_io(z, REQ_OP_WRITE, (Q - 1) * PG, model[Q - 1], 2 * (unsigned int)PG), 0);
	ck_assert(!page_on_backing(z, Q - 1));
	wb--;
	check_bd(z, wb, reads, writes);
	reads += check_run(z, model, 0, MP);

	/* A backing disk that fails writes: every page stays, each failure counted. */
	atomic_store(&t->fail_writes, true);
	n = zram_writeback(z, ZRAM_WB_ALL, 3 * Q, Q);
	ck_assert_int_eq(n, -EIO);
	zram_io_stat(z, &ios);
	ck_assert_uint_eq(ios.failed_writes, Q);
	atomic_store(&t->fail_writes, false);
	for (i = 3 * Q; i < MP; i++)
		ck_assert(!page_on_backing(z, i));
	ck_assert_uint_eq(check_run(z, model, 3 * Q, Q), 0);
	/* ...and one that fails reads fails a run over a written-back member. */
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_ALL, 3 * Q + 1, 1), 1);
	wb++;
	writes++;
	atomic_store(&t->fail_reads, true);
	ck_assert_int_eq(zram_io(z, REQ_OP_READ, 3 * Q * PG, run, Q * (unsigned int)PG), -EIO);
	zram_io_stat(z, &ios);
	ck_assert_uint_eq(ios.failed_reads, 1);
	atomic_store(&t->fail_reads, false);
	reads += check_run(z, model, 0, MP);
	check_bd(z, wb, reads, writes);
	check_mm(z, MP, false);

	/* Everything discarded: no block, no group byte left. */
	ck_assert_int_eq(zram_io(z, REQ_OP_DISCARD, 0, NULL, MP * (unsigned int)PG), 0);
	zram_mm_stat(z, &st);
	ck_assert_uint_eq(st.orig_data_size, 0);
	ck_assert_uint_eq(st.compr_data_size, 0);
	check_bd(z, 0, reads, writes);
	zram_destroy(z);
	tdisk_free(t);
	free(run);
}
END_TEST

/*
 * Incompressible mode with groups: recompression marks the raw pages of a
 * run incompressible and never the members beside them (it skips them), so
 * only the raw pages go to the backing disk; the run reads back whole.
 */
START_TEST(test_multi_incompressible)
{
	static unsigned char model[8][PG];
	struct zram_recompress_params p = ZRAM_RECOMPRESS_PARAMS_INIT;
	struct tdisk *t = tdisk_new(16, false);
	struct zram *z = new_zram_flags(8, t->disk, ZPOOL_F_MULTI_PAGE | ZPOOL_F_CHECKSUM);
	unsigned char *run = malloc(8 * PG);
	unsigned int i, raw, marked;
	bool on[8];
	int64_t n;

	/* Stored as a group of 4, two raw pages, a group of 2. */
	for (i = 0; i < 8; i++) {
		raw = i == 4 || i == 5;
		make_page(model[i], raw ? PAGE_RANDOM : PAGE_SIZED, i, 256);
		memcpy(run + (size_t)i * PG, model[i], PG);
	}
	ck_assert_int_eq(zram_io(z, REQ_OP_WRITE, 0, run, 8 * (unsigned int)PG), 0);
	ck_assert_int_eq(zram_set_recomp_algorithm(z, "lz4hc", 1), 0);
	ck_assert_int_ge(zram_recompress(z, &p), 0);
	/*
	 * The random pages always; with 4 KiB pages all eight share a group
	 * window, and a run with a page that would stay raw marks none of
	 * the others.  With smaller windows lz4hc may fail to shrink a group
	 * of text pages, which marks its pages too, as Linux marks a page.
	 */
	for (i = 0, marked = 0; i < 8; i++) {
		raw = i == 4 || i == 5;
		on[i] = block_flags(z, i) & ZRAM_BS_INCOMPRESSIBLE;
		marked += on[i];
		if (raw || ZP_GROUP_PAGES >= 8)
			ck_assert_msg(on[i] == raw, "page %u", i);
	}
	n = zram_writeback(z, ZRAM_WB_INCOMPRESSIBLE, 0, UINT64_MAX);
	ck_assert_int_eq(n, marked);
	for (i = 0; i < 8; i++)
		ck_assert_msg(page_on_backing(z, i) == on[i], "page %u", i);
	ck_assert_uint_eq(check_run(z, model, 0, 8), (unsigned int)n);
	zram_destroy(z);
	tdisk_free(t);
	free(run);
}
END_TEST

/*
 * The case Linux 6.13 fixed ("zram: clear IDLE flag after recompression"):
 * recompression given every idle page above a threshold fails to shrink
 * the random ones; they must not keep the mark for a writeback of idle
 * pages that follows, which takes only the pages recompression did not
 * read.  Their access time stays, so the next mark finds them again.  With
 * and without ZPOOL_F_MULTI_PAGE (a run tried as a group, then alone).
 */
START_TEST(test_recompress_then_writeback)
{
	static unsigned char model[NP][PG];
	const uint32_t flags = _i ? ZPOOL_F_MULTI_PAGE | ZPOOL_F_CHECKSUM : ZPOOL_F_CHECKSUM;
	struct zram_recompress_params p = ZRAM_RECOMPRESS_PARAMS_INIT;
	struct tdisk *t = tdisk_new(NP, false);
	struct zram *z = new_zram_flags(NP, t->disk, flags);
	unsigned int i, f;

	fill(z, model, 17);
	ck_assert_int_eq(zram_set_recomp_algorithm(z, "lz4hc", 1), 0);
	ck_assert_uint_eq(zram_idle_mark(z, 0), NP - 1); /* not the zero page */
	p.type = ZRAM_RECOMP_IDLE;
	p.threshold = PG / 2; /* the random pages 4-7 only */
	ck_assert_int_eq(zram_recompress(z, &p), 0);
	for (i = 0; i < NP; i++) {
		if (i == 8)
			continue;
		f = block_flags(z, i);
		if (i >= 4 && i < 8)
			ck_assert_msg((f & (ZRAM_BS_IDLE | ZRAM_BS_INCOMPRESSIBLE)) ==
				      ZRAM_BS_INCOMPRESSIBLE, "page %u: %#x", i, f);
		else
			ck_assert_msg((f & (ZRAM_BS_IDLE | ZRAM_BS_INCOMPRESSIBLE)) ==
				      ZRAM_BS_IDLE, "page %u: %#x", i, f);
	}
	ck_assert_uint_eq(zram_idle_pages(z), NP - 5);
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_IDLE, 0, UINT64_MAX), NP - 5);
	for (i = 0; i < NP; i++)
		ck_assert_msg(page_on_backing(z, i) == (i < 4 || i > 8), "page %u", i);
	check_all(z, model, NP);
	/* Pages on the backing disk are never marked: 4-7 alone are marked again. */
	ck_assert_uint_eq(zram_idle_mark(z, 0), 4);
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_IDLE, 0, UINT64_MAX), 4);
	check_bd(z, NP - 1, NP - 5, NP - 1);
	check_all(z, model, NP);
	zram_destroy(z);
	tdisk_free(t);
}
END_TEST

/*
 * ZPOOL_F_MULTI_PAGE: a group with one page in use.  Its idle pages cannot
 * move while that page holds the group, so recompression decides nothing
 * for them and they keep their marks: writeback takes them at once, at
 * every pass that marks them.  (Clearing them, as for a page tried, kept
 * them in memory for as long as the hot page was used.)  Without groups
 * (64 KiB pages) each page is tried alone and loses its mark.
 */
START_TEST(test_group_waits_for_writeback)
{
	static unsigned char model[GRP][PG];
	struct zram_recompress_params p = ZRAM_RECOMPRESS_PARAMS_INIT;
	struct tdisk *t = tdisk_new(GRP, false);
	struct zram *z = new_zram_flags(GRP, t->disk, ZPOOL_F_MULTI_PAGE | ZPOOL_F_CHECKSUM);
	unsigned char *run = malloc(GRP * PG);
	const unsigned int hot = GRP - 1, cold = ZP_GROUP_PAGES > 1 ? GRP - 1 : 0;
	unsigned int i;

	for (i = 0; i < GRP; i++) {
		rep_page(model[i], i, 0); /* the run compresses as one group */
		memcpy(run + (size_t)i * PG, model[i], PG);
	}
	ck_assert_int_eq(zram_io(z, REQ_OP_WRITE, 0, run, GRP * (unsigned int)PG), 0);
	ck_assert_int_eq(zram_set_recomp_algorithm(z, "lz4hc", 1), 0);
	p.type = ZRAM_RECOMP_IDLE;
	ck_assert_uint_eq(zram_idle_mark(z, 0), GRP);
	ck_assert_int_eq(zram_io(z, REQ_OP_READ, hot * PG, run, PG), 0);
	ck_assert_int_eq(zram_recompress(z, &p), cold ? 0 : GRP - 1);
	for (i = 0; i < GRP; i++)
		ck_assert_msg(!(block_flags(z, i) & ZRAM_BS_IDLE) == (i == hot || !cold),
			      "page %u", i);
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_IDLE, 0, UINT64_MAX), cold);
	ck_assert_uint_eq(check_run(z, model, 0, GRP), cold);
	zram_destroy(z);
	tdisk_free(t);
	free(run);
}
END_TEST

struct regroup {
	struct zram *z;
	unsigned char (*model)[PG];
	bool used[GRP];		/* overwritten */
};

/*
 * The huge page in flight, overwrite half the group and compact: the rest
 * of the group is stored again alone, under new handles.
 */
static void overwrite_half_and_compact(void *arg)
{
	struct regroup *r = arg;
	struct use u = { r->z, r->model, 0, USE_WRITE };
	uint32_t was[GRP];
	unsigned int i;

	ck_assert(atomic_load(&zram__slot_get(r->z, GRP, false)->flags) & ZRAM_UNDER_WB);
	for (u.index = 0; u.index < GRP / 2; u.index++) {
		use_page(&u);
		r->used[u.index] = true;
	}
	for (i = GRP / 2; i < GRP; i++)
		was[i] = zram__slot_get(r->z, i, false)->handle;
	zram_compact(r->z);
	for (i = GRP / 2; i < GRP; i++)
		ck_assert_msg(zram__slot_get(r->z, i, false)->handle != was[i],
			      "page %u was not regrouped", i);
}

/*
 * A group regrouped by zram_compact() while a run waits on its first
 * write, a huge page's (batch of one): the pages left of it get new
 * objects for the same data, which is no use of theirs, so the run still
 * writes them back.  (Compared by handle, as before, they were passed
 * over.)  Half the group is overwritten first: that is what makes
 * compaction store the rest alone.  Registered only where pages group.
 */
START_TEST(test_regrouped_still_chosen)
{
	static unsigned char model[GRP + 1][PG];
	struct tdisk *t = tdisk_new(2 * GRP + 2, true);
	struct zram *z = new_zram_flags(GRP + 1, t->disk, ZPOOL_F_MULTI_PAGE | ZPOOL_F_CHECKSUM);
	unsigned char *run = malloc(GRP * PG);
	struct regroup r = { .z = z, .model = model };
	const unsigned int moved = 1 + GRP - GRP / 2; /* the huge page, the rest */
	unsigned int i;

	for (i = 0; i < GRP; i++) {
		rep_page(model[i], i, 0); /* one bio: one group */
		memcpy(run + (size_t)i * PG, model[i], PG);
	}
	ck_assert_int_eq(zram_io(z, REQ_OP_WRITE, 0, run, GRP * (unsigned int)PG), 0);
	make_page(model[GRP], PAGE_RANDOM, 77, 0);
	ck_assert_int_eq(zram_io(z, REQ_OP_WRITE, GRP * PG, model[GRP], PG), 0);
	ck_assert_int_eq(zram_set_writeback_batch_size(z, 1), 0);
	ck_assert_int_eq(writeback_held(z, t, 0, UINT64_MAX, 1, overwrite_half_and_compact, &r),
			 moved);
	for (i = 0; i <= GRP; i++)
		ck_assert_msg(page_on_backing(z, i) == (i == GRP || !r.used[i]), "page %u", i);
	ck_assert_uint_eq(check_run(z, model, 0, GRP + 1), moved);
	zram_destroy(z);
	tdisk_free(t);
	free(run);
}
END_TEST

/* Many writes in flight on a disk that completes later; one with batch 1. */
START_TEST(test_batch)
{
	static unsigned char model[NP][PG];
	struct tdisk *t = tdisk_new(64, true);
	struct zram *z = new_zram(NP, t->disk);

	fill(z, model, 11);
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_ALL, 0, 8), 8);
	ck_assert_int_gt(atomic_load(&t->max_inflight), 1);
	ck_assert_int_le(atomic_load(&t->max_inflight), 32);
	atomic_store(&t->max_inflight, 0);
	ck_assert_int_eq(zram_set_writeback_batch_size(z, 1), 0);
	ck_assert_int_eq(zram_writeback(z, ZRAM_WB_ALL, 0, UINT64_MAX), 7);
	ck_assert_int_eq(atomic_load(&t->max_inflight), 1);
	check_bd(z, 15, 0, 15);
	check_all(z, model, NP);
	zram_destroy(z);
	tdisk_free(t);
}
END_TEST

/*
 * Writeback racing with overwrites, partial writes, discards and reads of
 * the same pages.  Each I/O thread owns a set of pages, so its model is
 * exact; another thread marks everything idle and writes it back, over and
 * over, and a third reads the first thread's pages while both run.
 */
#define RP 48
#define RT 2

struct race {
	struct zram *z;
	unsigned char (*model)[PG];
	bool multi;	/* ZPOOL_F_MULTI_PAGE: threads own groups, not pages */
	atomic_bool stop;
	atomic_bool wb_seen;	/* a writeback wrote something while I/O ran */
	int64_t wb_total;
};

struct racer {
	struct race *r;
	unsigned int id;
};

static void *race_io(void *arg)
{
	struct racer *me = arg;
	struct race *r = me->r;
	struct rng g = { 77 + me->id };
	unsigned char *buf = malloc(GRP * PG);
	unsigned int n, ops = test_scale(3000);

	/*
	 * Past @ops until a writeback has landed, so the race happens however
	 * the threads are scheduled (a loaded machine can run all the I/O
	 * before the writeback thread's first pass); bounded all the same.
	 */
	for (n = 0; n < ops || (!atomic_load(&r->wb_seen) && n < 100 * ops); n++) {
		unsigned int p = rng_range(&g, 0, RP / RT - 1) * RT + me->id;
		unsigned int off = rng_range(&g, 0, (unsigned int)(PG / 512) - 1) * 512;
		unsigned int len = 512 * rng_range(&g, 1, (unsigned int)((PG - off) / 512));
		unsigned int op = rng_range(&g, 0, r->multi ? 7 : 5), k, runp;
		unsigned char *m;

		if (r->multi) {
			/* Page p of a group this thread owns. */
			p = (rng_range(&g, 0, RP / GRP / RT - 1) * RT + me->id) * GRP +
			    rng_range(&g, 0, GRP - 1);
			runp = rng_range(&g, 1, GRP - p % GRP);
			if (op == 6) {
				for (k = 0; k < runp; k++)
					make_page(r->model[p + k], k % 3 ? PAGE_TEXT : PAGE_BINARY,
						  n * GRP + k, 0);
				for (k = 0; k < runp; k++)
					memcpy(buf + (size_t)k * PG, r->model[p + k], PG);
				ck_assert_int_eq(zram_io(r->z, REQ_OP_WRITE, p * PG, buf,
						    runp * (unsigned int)PG), 0);
				continue;
			}
			if (op == 7) {
				ck_assert_int_eq(zram_io(r->z, REQ_OP_READ, p * PG, buf,
						    runp * (unsigned int)PG), 0);
				for (k = 0; k < runp; k++) {
					m = r->model[p + k];
					ck_assert_msg(!memcmp(buf + k * PG, m, PG), "page %u", p + k);
				}
				continue;
			}
		}
		m = r->model[p];
		switch (op) {
		case 0:
			make_page(m, (enum page_kind)rng_range(&g, 0, PAGE_RANDOM), n, 0);
			ck_assert_int_eq(zram_io(r->z, REQ_OP_WRITE, p * PG, m, PG), 0);
			break;
		case 1:
			memset(buf, (int)rng_range(&g, 1, 255), len);
			memcpy(m + off, buf, len);
			ck_assert_int_eq(zram_io(r->z, REQ_OP_WRITE, p * PG + off, buf, len), 0);
			break;
		case 2:
			memset(m, 0, PG);
			ck_assert_int_eq(zram_io(r->z, REQ_OP_DISCARD, p * PG, NULL, PG), 0);
			break;
		case 3:
			memset(m + off, 0, len);
			ck_assert_int_eq(zram_io(r->z, REQ_OP_WRITE_ZEROES, p * PG + off, NULL, len),
					 0);
			break;
		default:
			ck_assert_int_eq(zram_io(r->z, REQ_OP_READ, p * PG + off, buf, len), 0);
			ck_assert_msg(!memcmp(buf, m + off, len), "page %u", p);
		}
	}
	free(buf);
	return NULL;
}

static void *race_writeback(void *arg)
{
	struct race *r = arg;

	while (!atomic_load(&r->stop)) {
		int64_t n;

		zram_idle_mark(r->z, 0);
		n = zram_writeback(r->z, ZRAM_WB_IDLE, 0, UINT64_MAX);
		ck_assert_int_ge(n, 0);
		r->wb_total += n;
		n = zram_writeback(r->z, ZRAM_WB_ALL, RP / 2, RP / 4);
		ck_assert_int_ge(n, 0);
		r->wb_total += n;
		if (r->wb_total)
			atomic_store(&r->wb_seen, true);
	}
	return NULL;
}

/*
 * With the tiers: a second writeback run, overlapping the first, of other
 * modes and ranges (Linux allows one at a time; here any number may run).
 */
static void *race_writeback2(void *arg)
{
	struct race *r = arg;
	unsigned int k;

	for (k = 0; !atomic_load(&r->stop); k++)
		ck_assert_int_ge(zram_writeback(r->z, k & 1 ? ZRAM_WB_HUGE : ZRAM_WB_ALL,
						k * 7 % RP, RP / 2 + k % 5), 0);
	return NULL;
}

/* With the tiers: recompression of every page or the idle ones, over and over. */
static void *race_recompress(void *arg)
{
	struct race *r = arg;
	unsigned int k;

	for (k = 0; !atomic_load(&r->stop); k++) {
		struct zram_recompress_params p = ZRAM_RECOMPRESS_PARAMS_INIT;
		int64_t n;

		p.type = k & 1 ? ZRAM_RECOMP_IDLE : ZRAM_RECOMP_ALL;
		p.priority = k % 3;
		n = zram_recompress(r->z, &p);
		ck_assert_msg(n >= 0 || n == -ENOMEM, "zram_recompress: %lld", (long long)n);
	}
	return NULL;
}

/* With the tiers: compaction, which also regroups sparse groups. */
static void *race_compact(void *arg)
{
	struct race *r = arg;

	while (!atomic_load(&r->stop)) {
		zram_compact(r->z);
		usleep(200);
	}
	return NULL;
}

/*
 * Reads pages that another thread writes: only checks the I/O succeeds.
 * With groups, also runs of two groups from any page, across owners.
 */
static void *race_reader(void *arg)
{
	struct race *r = arg;
	unsigned char *buf = malloc(2 * GRP * PG);
	unsigned int p = 0;

	while (!atomic_load(&r->stop)) {
		ck_assert_int_eq(zram_io(r->z, REQ_OP_READ, (p % RP) * PG, buf, PG), 0);
		ck_assert_int_eq(zram_io(r->z, REQ_OP_READ, (p % RP) * PG + 512, buf, 1024), 0);
		if (r->multi)
			ck_assert_int_eq(zram_io(r->z, REQ_OP_READ, (p % (RP - 2 * GRP + 1)) * PG, buf,
					    2 * GRP * (unsigned int)PG), 0);
		p++;
	}
	free(buf);
	return NULL;
}

/*
 * I/O threads with a model, a reader and a writeback thread; with @tiers
 * also a second writeback, recompression (two algorithms) and compaction,
 * all at once.  Ends with every page compared, each backing block owned by
 * one written-back page, and no page left marked as being written back.
 */
static void race_run(bool async, uint32_t flags, bool tiers)
{
	static unsigned char model[RP][PG];
	/*
	 * Twice the disk's pages: a block stays pinned while a read of it is
	 * in flight even after its page was overwritten, and readers of runs
	 * pin up to a run's worth each, so a backing disk of exactly the
	 * disk's pages could be full for a moment (-ENOSPC), as CI once saw.
	 */
	struct tdisk *t = tdisk_new(2 * RP, async);
	struct race r = { .z = new_zram_flags(RP, t->disk, flags), .model = model,
			  .multi = flags & ZPOOL_F_MULTI_PAGE };
	void *(*const tier_fn[])(void *) = { race_writeback2, race_recompress, race_compact };
	const unsigned int nt = tiers ? 3 : 0;
	struct racer me[RT];
	pthread_t io_t[RT], wb_t, rd_t, tier_t[3];
	struct zram_bd_stat bd;
	struct zram_io_stat ios;
	unsigned int i;

	memset(model, 0, sizeof(model));
	if (tiers) {
		ck_assert_int_eq(zram_set_recomp_algorithm(r.z, "lz4hc", 1), 0);
		ck_assert_int_eq(zram_set_recomp_algorithm(r.z, strong(), 2), 0);
		ck_assert_int_eq(zram_set_writeback_batch_size(r.z, 3), 0);
	}
	for (i = 0; i < RT; i++) {
		me[i] = (struct racer){ &r, i };
		ck_assert_int_eq(pthread_create(&io_t[i], NULL, race_io, &me[i]), 0);
	}
	ck_assert_int_eq(pthread_create(&wb_t, NULL, race_writeback, &r), 0);
	ck_assert_int_eq(pthread_create(&rd_t, NULL, race_reader, &r), 0);
	for (i = 0; i < nt; i++)
		ck_assert_int_eq(pthread_create(&tier_t[i], NULL, tier_fn[i], &r), 0);
	for (i = 0; i < RT; i++)
		pthread_join(io_t[i], NULL);
	atomic_store(&r.stop, true);
	pthread_join(wb_t, NULL);
	pthread_join(rd_t, NULL);
	for (i = 0; i < nt; i++)
		pthread_join(tier_t[i], NULL);
	check_all(r.z, model, RP);
	for (i = 0; i < RP; i++)
		ck_assert_msg(!(flags_of(r.z, i) & (ZRAM_UNDER_WB | ZRAM_WB_CLAIM)),
			      "page %u still marked for writeback: flags %#x", i, flags_of(r.z, i));
	ck_assert_int_gt(r.wb_total, 0);
	/* Each block in use belongs to exactly one written-back page. */
	zram_bd_stat(r.z, &bd);
	for (i = 0; i < RP; i++)
		bd.bd_count -= page_on_backing(r.z, i) ? UNITS : 0;
	ck_assert_uint_eq(bd.bd_count, 0);
	zram_io_stat(r.z, &ios);
	ck_assert_uint_eq(ios.failed_reads + ios.failed_writes, 0);
	zram_destroy(r.z);
	tdisk_free(t);
}

START_TEST(test_race)
{
	race_run(_i == 1, ZPOOL_F_CHECKSUM, false);
}
END_TEST

START_TEST(test_race_tiers)
{
	race_run(_i == 1, ZPOOL_F_CHECKSUM, true);
}
END_TEST

START_TEST(test_race_tiers_multi)
{
	race_run(_i == 1, ZPOOL_F_CHECKSUM | ZPOOL_F_MULTI_PAGE, true);
}
END_TEST

START_TEST(test_race_multi)
{
	race_run(_i == 1, ZPOOL_F_CHECKSUM | ZPOOL_F_MULTI_PAGE, false);
}
END_TEST

int main(void)
{
	const TTest *const device[] = { test_modes, test_enospc, test_largest_first, test_limit,
					test_backing_rules,
					test_file_disk, test_batch, test_wait_sleeps,
					test_second_run_while_in_flight,
					test_block_pinned_while_read, test_multi_incompressible,
					test_group_waits_for_writeback,
					ZP_GROUP_PAGES > 1 ? test_regrouped_still_chosen : NULL, NULL };
	/* _i = 0: a disk that completes inside submit_bio; 1: on its own thread. */
	const TTest *const both[] = { test_partial_io, test_backing_fails, test_windows, test_reset,
				      test_race, test_multi_members, test_race_multi, test_race_tiers,
				      test_race_tiers_multi, NULL };
	/* _i = 0: page by page; 1: ZPOOL_F_MULTI_PAGE. */
	const TTest *const pool_modes[] = { test_recompress_then_writeback, NULL };
	/* _i = 0: a budget of 4 pages; 1: a backing disk of 4 blocks. */
	const TTest *const limits[] = { test_failed_writes_give_back, NULL };
	/*
	 * _i = 0: the page overwritten, 1: read, 2: discarded (in flight) or
	 * overwritten until its old handle comes back (passed over).
	 */
	const TTest *const used[] = { test_used_in_flight, test_used_passed_over, NULL };
	/* _i = 0: the page overwritten; 1: overwritten and written back again. */
	const TTest *const rmw[] = { test_rmw_page_changed, NULL };
	const struct test_group groups[] = {
		{ .name = "device", .tests = device, .timeout = 600 },
		{ .name = "sync_async", .tests = both, .timeout = 600, .loops = 2 },
		{ .name = "pool_modes", .tests = pool_modes, .timeout = 600, .loops = 2 },
		{ .name = "limits", .tests = limits, .timeout = 600, .loops = 2 },
		{ .name = "used", .tests = used, .timeout = 600, .loops = 3 },
		{ .name = "rmw", .tests = rmw, .timeout = 600, .loops = 2 },
		{ .name = NULL },
	};

	return test_main("zram_writeback", groups);
}

// SPDX-License-Identifier: MIT
/*
 * Every zram feature at once on the same pages: whole-page runs (groups
 * with ZPOOL_F_MULTI_PAGE), sub-page writes, discards and write-zeroes
 * with partial edges, while other threads flip mem_limit, mark pages idle,
 * recompress with two secondary algorithms, write back to an asynchronous
 * backing disk, compact and (in one mode) reset.  The other zram suites
 * race two or three of these; here they all meet, so a sub-page write
 * lands on a page that is at once being written back, regrouped and
 * refused at the limit.
 *
 * Every 512-byte sector carries its page's number, its own number and the
 * generation of the write that made it, and its other bytes follow from
 * those: a reader on any thread can tell a torn sector, another page's
 * data or a stale backing block from a page it may legitimately see.
 * Writers own alternate windows of a group, so without resets a flat
 * model of each page is kept and compared exactly.
 */
#include <pthread.h>

#include <libbvec/zram.h>

#include "pools.h"

#define GRP (ZP_GROUP_PAGES > 1 ? ZP_GROUP_PAGES : 2u)
#define NPAGES (16 * GRP)
#define SECT 512u
#define SPP ((unsigned int)(PG / SECT)) /* sectors a page */
#define UNITS (PG >= 4096 ? PG / 4096 : 1)
#define WRITERS 2u

/*
 * A sector's bytes from its header alone.  The generation picks how well
 * it compresses, so a page may be a group member, a compressed page, a
 * huge one or one recompression can shrink.
 */
static void sector_body(unsigned char *s, uint64_t head)
{
	struct rng r = { head * 0x9e3779b97f4a7c15ull | 1 };
	unsigned int i;

	memcpy(s, &head, sizeof(head));
	switch ((head & 0xffffff) % 4) {
	case 0: /* incompressible */
		for (i = 8; i < SECT; i += 8) {
			uint64_t v = rng_next(&r);

			memcpy(s + i, &v, 8);
		}
		break;
	case 3: /* mostly zeroes */
		memset(s + 8, 0, SECT - 8);
		for (i = 64; i < SECT; i += 64)
			memcpy(s + i, &head, sizeof(head));
		break;
	default: { /* text */
		static const char words[] = "bio vector zram sector page split chain block ";

		for (i = 8; i < SECT; i++)
			s[i] = (unsigned char)words[(i + (rng_next(&r) % 4 == 0 ? 3 : 0)) %
						  (sizeof(words) - 1)];
	}
	}
}

static uint64_t sector_head(uint64_t index, unsigned int sector, uint32_t gen)
{
	return index << 32 | (uint64_t)sector << 24 | (gen % 0xffffffu + 1);
}

/* Sectors [@first, @first + @n) of page @index, at @p, stamped with @gen. */
static void stamp(unsigned char *p, uint64_t index, unsigned int first, unsigned int n,
		  uint32_t gen)
{
	unsigned int k;

	for (k = 0; k < n; k++)
		sector_body(p + (size_t)k * SECT, sector_head(index, first + k, gen));
}

/*
 * 0 if sector @sector of page @index may be what @s holds: zeroes, or a
 * sector some write stamped for that very place.
 */
static int sector_check(const unsigned char *s, uint64_t index, unsigned int sector)
{
	unsigned char want[SECT];
	uint64_t head;

	memcpy(&head, s, sizeof(head));
	if (!head) {
		memset(want, 0, SECT);
		return memcmp(s, want, SECT) ? -EILSEQ : 0;
	}
	if (head >> 32 != index || (head >> 24 & 0xff) != sector)
		return -ENXIO; /* another page's, or another place's */
	sector_body(want, head);
	return memcmp(s, want, SECT) ? -EILSEQ : 0;
}

/* @n bytes read at byte @pos of the disk: every whole sector must pass. */
static void range_check(const unsigned char *buf, uint64_t pos, unsigned int n, const char *who)
{
	unsigned int k;

	for (k = 0; k < n; k += SECT) {
		uint64_t at = pos + k;
		int ret = sector_check(buf + k, at / PG, (unsigned int)(at % PG / SECT));

		ck_assert_msg(!ret, "%s: page %llu sector %u: %s", who,
			      (unsigned long long)(at / PG), (unsigned int)(at % PG / SECT),
			      ret == -ENXIO ? "foreign data" : "torn or corrupt");
	}
}

struct mix {
	struct zram *z;
	struct tdisk *t;	/* the backing disk */
	unsigned char *model;	/* NPAGES pages; each writer its own windows */
	bool limit;		/* mem_limit flips: writes may be refused */
	bool resets;		/* zram_reset() runs: no exact model, stamps only */
	atomic_bool stop;
	atomic_uint writers_done;
	atomic_bool want_reset;	/* writer 0 waits halfway for a reset */
	atomic_bool pin_low;	/* writer 0 holds mem_limit at a page */
	atomic_uint_fast64_t refused, wb_pages, recomp_pages, resets_done;
};

struct writer {
	struct mix *m;
	unsigned int id;
	unsigned int rounds;
};

/* A write's result; true if refused, which only a mem_limit may do. */
static bool refused(struct mix *m, int ret)
{
	if (ret && m->limit) {
		ck_assert_int_eq(ret, -EIO);
		atomic_fetch_add(&m->refused, 1);
		return true;
	}
	ck_assert_int_eq(ret, 0);
	return false;
}

/*
 * After a refused write of pages [@i, @i + @nr), whose new contents are at
 * @now: each page holds all its old bytes or all its new ones.  The model
 * takes what the device holds.
 */
static void settle(struct mix *m, uint64_t i, unsigned int nr, const unsigned char *now)
{
	unsigned char got[PG];
	unsigned int j;

	for (j = 0; j < nr; j++) {
		unsigned char *old = m->model + (i + j) * PG;

		ck_assert_int_eq(zram_pages_io(m->z, REQ_OP_READ, i + j, got, 1), 0);
		ck_assert_msg(!memcmp(got, old, PG) || !memcmp(got, now + (size_t)j * PG, PG),
			      "refused write: page %llu is neither old nor new",
			      (unsigned long long)(i + j));
		memcpy(old, got, PG);
	}
}

static void model_check(struct mix *m, uint64_t i, unsigned int nr, const unsigned char *buf)
{
	unsigned int j;

	if (m->resets)
		return;
	for (j = 0; j < nr; j++)
		ck_assert_msg(!memcmp(buf + (size_t)j * PG, m->model + (i + j) * PG, PG),
			      "page %llu differs from the model", (unsigned long long)(i + j));
}

static void *writer_fn(void *arg)
{
	struct writer *w = arg;
	struct mix *m = w->m;
	struct rng g = { 0x5eed + w->id * 7919 };
	unsigned char *buf = test_pages(GRP), *now = test_pages(GRP);
	uint32_t gen = w->id << 20;
	unsigned int k;

	for (k = 0; k < w->rounds; k++) {
		uint64_t win = rng_range(&g, 0, NPAGES / GRP / WRITERS - 1) * WRITERS + w->id;

		/*
		 * In the reset mode, one reset at least while the writers
		 * write: the random ones alone missed now and then where the
		 * writers are short (64 KiB pages), and then the mode raced
		 * nothing.  Writer 1 and the reader go on meanwhile.
		 */
		if (m->resets && w->id == 0 && k == w->rounds / 2) {
			atomic_store(&m->want_reset, true);
			while (!atomic_load(&m->resets_done))
				usleep(100);
		}
		/*
		 * In the limit modes, writes refused at least once while the
		 * others race: the random limits alone missed now and then
		 * where the writers are short (small scale, 64 KiB pages).
		 * From halfway until a write is refused, writer 0 holds the
		 * limit at one page, below what is in use, so every store
		 * that needs memory is refused; the control threads leave
		 * the limit alone meanwhile.  Set before each write, as a
		 * control thread may have been setting one as the pin began.
		 */
		if (m->limit && w->id == 0 && k == w->rounds / 2 && !atomic_load(&m->refused))
			atomic_store(&m->pin_low, true);
		if (atomic_load(&m->pin_low) && w->id == 0) {
			if (atomic_load(&m->refused))
				atomic_store(&m->pin_low, false);
			else
				zram_set_mem_limit(m->z, PG);
		}
		uint64_t i = win * GRP + rng_range(&g, 0, GRP - 1);
		unsigned int nr = rng_range(&g, 1, GRP - (unsigned int)(i % GRP));
		unsigned int op = rng_range(&g, 0, 11), j;
		unsigned char *mp = m->model + i * PG;

		gen++;
		switch (op) {
		case 0: case 1: case 2: { /* whole pages: a group when there are two or more */
			for (j = 0; j < nr; j++)
				stamp(now + (size_t)j * PG, i + j, 0, SPP, gen + j * 0x1000);
			if (refused(m, zram_pages_io(m->z, REQ_OP_WRITE, i, now, nr))) {
				if (!m->resets)
					settle(m, i, nr, now);
			} else {
				memcpy(mp, now, (size_t)nr * PG);
			}
			break;
		}
		case 3: case 4: { /* sectors of one page */
			unsigned int first = rng_range(&g, 0, SPP - 1);
			unsigned int n = rng_range(&g, 1, SPP - first);

			if (!first && n == SPP)
				n--;
			if (!n)
				break;
			memcpy(now, mp, PG);
			stamp(now + (size_t)first * SECT, i, first, n, gen);
			if (refused(m, zram_io(m->z, REQ_OP_WRITE, i * PG + first * SECT,
					       now + (size_t)first * SECT, n * SECT))) {
				if (!m->resets)
					settle(m, i, 1, now);
			} else {
				memcpy(mp, now, PG);
			}
			break;
		}
		case 5: /* discard whole pages: never refused */
			ck_assert_int_eq(zram_pages_io(m->z, REQ_OP_DISCARD, i, NULL, nr), 0);
			memset(mp, 0, (size_t)nr * PG);
			break;
		case 6: { /* write-zeroes with partial edges */
			uint64_t start = i * PG + rng_range(&g, 0, SPP - 1) * SECT;
			uint64_t end = (i + nr) * PG - rng_range(&g, 0, SPP - 1) * SECT;
			int ret;

			if (end <= start)
				break;
			memcpy(now, mp, (size_t)nr * PG);
			memset(now + (start - i * PG), 0, end - start);
			ret = zram_io(m->z, REQ_OP_WRITE_ZEROES, start, NULL,
				      (unsigned int)(end - start));
			if (refused(m, ret)) {
				/* Whole pages are freed whatever happens to the edges. */
				if (!m->resets)
					settle(m, i, nr, now);
			} else {
				memcpy(mp, now, (size_t)nr * PG);
			}
			break;
		}
		case 7: case 8: { /* sectors of one page, read */
			unsigned int first = rng_range(&g, 0, SPP - 1);
			unsigned int n = rng_range(&g, 1, SPP - first);

			ck_assert_int_eq(zram_io(m->z, REQ_OP_READ, i * PG + first * SECT, buf,
						 n * SECT), 0);
			range_check(buf, i * PG + first * SECT, n * SECT, "writer");
			if (!m->resets)
				ck_assert_msg(!memcmp(buf, mp + first * SECT, n * SECT),
					      "page %llu sectors %u+%u differ from the model",
					      (unsigned long long)i, first, n);
			break;
		}
		default: /* whole pages, read */
			ck_assert_int_eq(zram_pages_io(m->z, REQ_OP_READ, i, buf, nr), 0);
			range_check(buf, i * PG, nr * (unsigned int)PG, "writer");
			model_check(m, i, nr, buf);
		}
	}
	free(buf);
	free(now);
	atomic_fetch_add(&m->writers_done, 1);
	return NULL;
}

/* Reads runs that cross both writers' windows, checking only the stamps. */
static void *reader_fn(void *arg)
{
	struct mix *m = arg;
	struct rng g = { 0xbead };
	unsigned char *buf = test_pages(2 * GRP);

	while (!atomic_load(&m->stop)) {
		unsigned int n = rng_range(&g, 1, 2 * GRP * SPP);
		uint64_t pos = (uint64_t)rng_range(&g, 0, NPAGES * SPP - n) * SECT;

		ck_assert_int_eq(zram_io(m->z, REQ_OP_READ, pos, buf, n * SECT), 0);
		range_check(buf, pos, n * SECT, "reader");
	}
	free(buf);
	return NULL;
}

struct control {
	struct mix *m;
	unsigned int id;
};

static void *control_fn(void *arg)
{
	static const enum zram_wb_mode modes[] = { ZRAM_WB_ALL, ZRAM_WB_IDLE, ZRAM_WB_HUGE,
						   ZRAM_WB_HUGE_IDLE, ZRAM_WB_INCOMPRESSIBLE };
	struct control *c = arg;
	struct mix *m = c->m;
	struct rng g = { 0xc0de + c->id };
	int64_t ret;

	while (atomic_load(&m->writers_done) < WRITERS) {
		unsigned int what = rng_range(&g, 0, 15);
		bool force = m->resets && c->id == 0 && atomic_load(&m->want_reset) &&
			     !atomic_load(&m->resets_done);

		if (force)
			what = 13;

		if (what < 4) {
			uint64_t first = rng_range(&g, 0, NPAGES - 1);

			if (what == 0)
				zram_idle_mark(m->z, 0);
			ret = zram_writeback(m->z, modes[rng_next(&g) % 5], first,
					     rng_range(&g, 1, NPAGES));
			ck_assert_msg(ret >= 0 || ret == -ENOSPC, "writeback: %lld",
				      (long long)ret);
			if (ret > 0)
				atomic_fetch_add(&m->wb_pages, (uint64_t)ret);
		} else if (what < 7) {
			struct zram_recompress_params p = ZRAM_RECOMPRESS_PARAMS_INIT;

			if (what == 4)
				zram_idle_mark(m->z, 0);
			p.type = (enum zram_recomp_type)(rng_next(&g) % 4);
			p.priority = rng_range(&g, 0, 2);
			ret = zram_recompress(m->z, &p);
			ck_assert_msg(ret >= 0 || ret == -ENOMEM || ret == -EINVAL,
				      "recompress: %lld", (long long)ret);
			if (ret > 0)
				atomic_fetch_add(&m->recomp_pages, (uint64_t)ret);
		} else if (what < 10) {
			zram_compact(m->z);
		} else if (what < 13) {
			if (m->limit && !atomic_load(&m->pin_low)) {
				struct zpool_stats st;

				zram_mm_stat(m->z, &st);
				/* Now and then below what is in use: every store refused. */
				zram_set_mem_limit(m->z, rng_next(&g) % 3 == 0 ? 0 :
						   st.mem_used_total - PG +
						   rng_range(&g, 0, 6) * PG);
			}
		} else if (what < 14) {
			/* Reset drops the secondary algorithms: set them again. */
			if (m->resets && c->id == 0 && (force || rng_next(&g) % 4 == 0)) {
				/*
				 * With reads of written-back pages held up, so
				 * that the blocks they read are given out again
				 * to the pages written after the reset.
				 */
				atomic_store(&m->t->hold_reads, m->t->async);
				usleep(500);
				ck_assert_int_eq(zram_reset(m->z), 0);
				atomic_fetch_add(&m->resets_done, 1);
				ck_assert_int_eq(zram_set_recomp_algorithm(m->z, "lz4hc", 1), 0);
				ck_assert_int_eq(zram_set_recomp_algorithm(m->z, strong(), 2), 0);
				usleep(1000);
				ret = zram_writeback(m->z, ZRAM_WB_ALL, 0, UINT64_MAX);
				ck_assert_msg(ret >= 0 || ret == -ENOSPC, "writeback: %lld",
					      (long long)ret);
				atomic_store(&m->t->hold_reads, false);
			}
		} else if (c->id == 0 && m->t->async) {
			/*
			 * Reads of the backing disk wait while a writeback's
			 * writes go by, as a real disk may reorder them: a
			 * block given out again while a read of it is still
			 * queued would then hand that read another page's data.
			 */
			atomic_store(&m->t->hold_reads, true);
			ret = zram_writeback(m->z, ZRAM_WB_ALL, 0, UINT64_MAX);
			ck_assert_msg(ret >= 0 || ret == -ENOSPC, "writeback: %lld",
				      (long long)ret);
			atomic_store(&m->t->hold_reads, false);
		} else {
			zram_idle_mark(m->z, 0);
		}
	}
	return NULL;
}

static void check_quiet(struct zram *z)
{
	struct zram_bd_stat bd;
	struct zram_io_stat ios;
	uint64_t i;

	for (i = 0; i < NPAGES; i++)
		ck_assert_msg(!(flags_of(z, i) & (ZRAM_UNDER_WB | ZRAM_WB_CLAIM | ZRAM_LOCK)),
			      "page %llu: flags %#x left", (unsigned long long)i, flags_of(z, i));
	/* Each block in use belongs to exactly one written-back page: none leaked. */
	zram_bd_stat(z, &bd);
	for (i = 0; i < NPAGES; i++)
		bd.bd_count -= flags_of(z, i) & ZRAM_WB ? UNITS : 0;
	ck_assert_uint_eq(bd.bd_count, 0);
	zram_io_stat(z, &ios);
	ck_assert_uint_eq(ios.failed_reads, 0);
	check_accounting(z, NPAGES, UINT64_MAX);
}

/*
 * _i: 0 with mem_limit flips and an exact model, page by page; 1 the same
 * with ZPOOL_F_MULTI_PAGE; 2 with resets and groups, stamps only; 3 as 1
 * with a backing disk that completes inside submit_bio.
 */
START_TEST(test_everything)
{
	const uint32_t flags = ZPOOL_F_CHECKSUM | (_i ? ZPOOL_F_MULTI_PAGE : 0);
	struct tdisk *t = tdisk_new(2 * NPAGES, _i < 3);
	struct mix m = { .z = new_zram_dev(NPAGES, "lz4", flags), .t = t, .limit = _i != 2,
			 .resets = _i == 2 };
	struct writer w[WRITERS];
	struct control c[2];
	pthread_t wt[WRITERS], ct[2], rt;
	unsigned char *all = test_pages(NPAGES);
	unsigned int k;

	m.model = calloc(NPAGES, PG);
	ck_assert_ptr_nonnull(m.model);
	ck_assert_int_eq(zram_set_backing(m.z, t->disk), 0);
	ck_assert_int_eq(zram_set_recomp_algorithm(m.z, "lz4hc", 1), 0);
	ck_assert_int_eq(zram_set_recomp_algorithm(m.z, strong(), 2), 0);
	ck_assert_int_eq(zram_set_writeback_batch_size(m.z, 4), 0);
	for (k = 0; k < WRITERS; k++) {
		w[k] = (struct writer){ &m, k, test_scale(PG > 16384 ? 250 : 1800) };
		ck_assert_int_eq(pthread_create(&wt[k], NULL, writer_fn, &w[k]), 0);
	}
	for (k = 0; k < 2; k++) {
		c[k] = (struct control){ &m, k };
		ck_assert_int_eq(pthread_create(&ct[k], NULL, control_fn, &c[k]), 0);
	}
	ck_assert_int_eq(pthread_create(&rt, NULL, reader_fn, &m), 0);
	for (k = 0; k < WRITERS; k++)
		pthread_join(wt[k], NULL);
	for (k = 0; k < 2; k++)
		pthread_join(ct[k], NULL);
	atomic_store(&m.stop, true);
	pthread_join(rt, NULL);

	zram_set_mem_limit(m.z, 0);
	ck_assert_int_eq(zram_pages_io(m.z, REQ_OP_READ, 0, all, NPAGES), 0);
	range_check(all, 0, NPAGES * (unsigned int)PG, "final");
	if (!m.resets)
		ck_assert(!memcmp(all, m.model, (size_t)NPAGES * PG));
	check_quiet(m.z);
	/* The tiers must have run, or the race tested nothing. */
	ck_assert_uint_gt(atomic_load(&m.wb_pages), 0);
	if (m.limit)
		ck_assert_uint_gt(atomic_load(&m.refused), 0);
	if (m.resets)
		ck_assert_uint_gt(atomic_load(&m.resets_done), 0);

	/* Everything written back once more, then read through the disk. */
	ck_assert_int_ge(zram_writeback(m.z, ZRAM_WB_ALL, 0, UINT64_MAX), 0);
	memset(all, 0xa5, NPAGES * PG);
	ck_assert_int_eq(zram_pages_io(m.z, REQ_OP_READ, 0, all, NPAGES), 0);
	range_check(all, 0, NPAGES * (unsigned int)PG, "after writeback");
	if (!m.resets)
		ck_assert(!memcmp(all, m.model, (size_t)NPAGES * PG));
	check_quiet(m.z);

	ck_assert_int_eq(zram_reset(m.z), 0);
	check_quiet(m.z);
	ck_assert_int_eq(zram_pages_io(m.z, REQ_OP_READ, 0, all, NPAGES), 0);
	for (k = 0; k < NPAGES * PG; k++)
		ck_assert_msg(!all[k], "byte %u not zero after reset", k);
	zram_destroy(m.z);
	tdisk_free(t);
	free(m.model);
	free(all);
}
END_TEST

int main(void)
{
	const TTest *const mixed[] = { test_everything, NULL };
	const struct test_group groups[] = {
		{ .name = "mixed", .tests = mixed, .timeout = 600, .loops = 4 },
		{ .name = NULL },
	};

	return test_main("zram_mix", groups);
}

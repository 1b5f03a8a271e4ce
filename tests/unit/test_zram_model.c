// SPDX-License-Identifier: MIT
/*
 * Property test: a zram device with ZPOOL_F_MULTI_PAGE under random
 * sequences of whole-page runs (grouped), sub-page writes, discards and
 * write-zeroes with partial edges, reads, compaction (which stores the
 * pages of half-empty groups again alone), idle marks, writeback to a
 * backing disk, recompression and mem_limit changes, against a flat byte
 * model of the disk.  After every step each page read matches the model,
 * the pool's counters equal what the slots reference (check_accounting()),
 * and a mem_limit the device was under when it was set is never passed.
 * Seeded, so a failure reproduces.
 */
#include "pools.h"

#define GRP (ZP_GROUP_PAGES > 1 ? ZP_GROUP_PAGES : 2u)
/* One leaf of slots: no table page comes or goes, so the limit is the pool's. */
#define NPAGES (6 * GRP < SLOTS_PER_LEAF ? 6 * GRP : SLOTS_PER_LEAF)

struct model {
	unsigned char *bytes;	/* NPAGES pages */
	bool stored[NPAGES];	/* holds data: written, not discarded */
	uint64_t gen;
	uint64_t limit;		/* a limit the device must keep to; 0: none */
};

static unsigned char *page_of(struct model *m, uint64_t i)
{
	return m->bytes + i * PG;
}

/* Page @i of a write: mostly text (groups), some binary, random, repeated or zero. */
static void fill_page(struct rng *rng, unsigned char *p, uint64_t gen)
{
	unsigned int k = rng_range(rng, 0, 15);

	if (k < 9)
		make_page(p, PAGE_TEXT, gen, 0);
	else if (k < 11)
		make_page(p, PAGE_BINARY, gen, 0);
	else if (k < 13)
		make_page(p, PAGE_RANDOM, gen, 0);
	else if (k < 14)
		make_page(p, PAGE_SAME, gen, 0);
	else if (k < 15)
		make_page(p, PAGE_ZERO, gen, 0);
	else
		make_page(p, PAGE_SIZED, gen, rng_range(rng, 1, (unsigned int)PG));
}

/* Whether page @i holds data, from its slot (a handle, a zero mark, a backing block). */
static bool slot_stored(struct zram *z, uint64_t i)
{
	return handle_of(z, i) || (flags_of(z, i) & ZRAM_ZERO);
}

static void check_all(struct zram *z, struct model *m, uint64_t step)
{
	unsigned char *out = malloc(NPAGES * PG);
	uint64_t i, stored = 0;
	struct zpool_stats st;
	uint32_t f;

	ck_assert_ptr_nonnull(out);
	ck_assert_int_eq(zram_pages_io(z, REQ_OP_READ, 0, out, NPAGES), 0);
	for (i = 0; i < NPAGES; i++) {
		ck_assert_msg(!memcmp(out + i * PG, page_of(m, i), PG),
			      "step %llu: page %llu differs from the model",
			      (unsigned long long)step, (unsigned long long)i);
		ck_assert_msg(slot_stored(z, i) == m->stored[i],
			      "step %llu: page %llu stored %d, model %d", (unsigned long long)step,
			      (unsigned long long)i, slot_stored(z, i), m->stored[i]);
		stored += m->stored[i];
		/*
		 * A page in the pool (not same-filled) was written by the
		 * codec its recompression priority names, or the primary one.
		 */
		f = flags_of(z, i);
		if (handle_of(z, i) && !(f & ZRAM_WB) && zpool_obj_size(z->pool, handle_of(z, i))) {
			unsigned int prio = f & ZRAM_RECOMP ?
					    (f & ZRAM_PRIO_MASK) >> ZRAM_PRIO_SHIFT : 0;

			ck_assert_msg(codec_of(z, i) == (prio ? z->pool->codecs->slot[prio] : 0),
				      "step %llu: page %llu of priority %u written by codec %u",
				      (unsigned long long)step, (unsigned long long)i, prio,
				      codec_of(z, i));
		}
	}
	free(out);
	check_accounting(z, NPAGES, stored);
	zram_mm_stat(z, &st);
	if (m->limit) {
		ck_assert_msg(st.mem_used_total <= m->limit,
			      "step %llu: mem_used_total %llu past mem_limit %llu",
			      (unsigned long long)step, (unsigned long long)st.mem_used_total,
			      (unsigned long long)m->limit);
		ck_assert_uint_le(st.mem_used_max, m->limit);
	}
}

/*
 * A write that failed (mem_limit) wrote some pages and not others: each
 * page is all old or all new.  The model takes what the device holds.
 */
static void sync_failed(struct zram *z, struct model *m, uint64_t first, uint64_t n,
			const unsigned char *want, unsigned int off)
{
	unsigned char out[PG];
	uint64_t i;

	for (i = first; i < first + n; i++) {
		const unsigned char *w = want + (i - first) * PG;

		ck_assert_int_eq(zram_pages_io(z, REQ_OP_READ, i, out, 1), 0);
		if (memcmp(out, page_of(m, i), PG)) {
			ck_assert_msg(!memcmp(out, w, PG) ||
					      (off && !memcmp(out + off, w + off, PG - off)),
				      "page %llu is neither old nor new", (unsigned long long)i);
			memcpy(page_of(m, i), out, PG);
		}
		m->stored[i] = slot_stored(z, i);
	}
}

START_TEST(test_random_multi_page)
{
	struct zram_config cfg = ZRAM_CONFIG_INIT;
	struct tdisk *t = tdisk_new(NPAGES, false);
	/* ZRAM_MODEL_SEED=N runs other sequences (a soak), as NBD_MODEL_SEED does. */
	const char *seed = getenv("ZRAM_MODEL_SEED");
	struct rng rng = { 0x5eed0000ull + (uint64_t)_i +
			   (seed ? 1000 * strtoull(seed, NULL, 0) : 0) };
	unsigned int steps = test_scale(3000), step, refused = 0, wb = 0, recomp = 0;
	unsigned char *buf = malloc((size_t)(2 * GRP + 1) * PG);
	struct model m = { .gen = 1 };
	struct zpool_stats st;
	struct zram *z;

	m.bytes = calloc(NPAGES, PG);
	ck_assert(buf && m.bytes);
	cfg.disksize = NPAGES * PG;
	cfg.pool.flags = ZPOOL_F_MULTI_PAGE | (_i % 2 ? ZPOOL_F_CHECKSUM : 0);
	z = zram_create(&cfg);
	ck_assert_ptr_nonnull(z);
	ck_assert_uint_eq(z->depth, 0);
	ck_assert_int_eq(zram_set_backing(z, t->disk), 0);
	ck_assert_int_eq(zram_set_recomp_algorithm(z, strong(), 1), 0);
	ck_assert_int_eq(zram_set_recomp_algorithm(z, "lz4hc", 2), 0);

	for (step = 0; step < steps; step++) {
		unsigned int op = rng_range(&rng, 0, 99);
		uint64_t first = rng_range(&rng, 0, NPAGES - 1);
		int ret;

		if (op < 35) {
			/* A run of whole pages, in one segment: grouped where it can be. */
			unsigned int n = rng_range(&rng, 1, 2 * GRP), k;

			if (first + n > NPAGES)
				n = (unsigned int)(NPAGES - first);
			if (rng_range(&rng, 0, 1))
				first = first / GRP * GRP; /* a whole aligned group */
			for (k = 0; k < n; k++)
				fill_page(&rng, buf + (size_t)k * PG, m.gen++);
			ret = zram_pages_io(z, REQ_OP_WRITE, first, buf, n);
			if (ret) {
				ck_assert_int_eq(ret, -EIO);
				ck_assert_uint_ne(m.limit, 0);
				sync_failed(z, &m, first, n, buf, 0);
				refused++;
			} else {
				memcpy(page_of(&m, first), buf, (size_t)n * PG);
				for (k = 0; k < n; k++)
					m.stored[first + k] = true;
			}
		} else if (op < 45) {
			/* Part of a page: read, patch, store. */
			unsigned int sectors = (unsigned int)(PG / 512);
			unsigned int s0 = rng_range(&rng, 0, sectors - 1);
			unsigned int ns = rng_range(&rng, 1, sectors - s0);

			memcpy(buf, page_of(&m, first), PG);
			fill_page(&rng, buf + PG, m.gen++);
			memcpy(buf + s0 * 512, buf + PG + s0 * 512, ns * 512);
			ret = zram_io(z, REQ_OP_WRITE, first * PG + s0 * 512, buf + PG + s0 * 512,
				      ns * 512);
			if (ret) {
				ck_assert_int_eq(ret, -EIO);
				ck_assert_uint_ne(m.limit, 0);
				sync_failed(z, &m, first, 1, buf, 0);
				refused++;
			} else {
				memcpy(page_of(&m, first), buf, PG);
				m.stored[first] = true;
			}
		} else if (op < 55) {
			/* Discard or write-zeroes, from any sector to any sector. */
			uint64_t start = first * PG + rng_range(&rng, 0, (unsigned int)(PG / 512) - 1) * 512;
			uint64_t len = (uint64_t)rng_range(&rng, 1, (unsigned int)(3 * GRP * PG / 512)) * 512;
			uint64_t end, p;

			if (start + len > NPAGES * PG)
				len = NPAGES * PG - start;
			end = start + len;
			ret = zram_io(z, rng_range(&rng, 0, 1) ? REQ_OP_DISCARD : REQ_OP_WRITE_ZEROES,
				      start, NULL, (unsigned int)len);
			for (p = (start + PG - 1) / PG; p < end / PG; p++) {
				memset(page_of(&m, p), 0, PG);
				m.stored[p] = false;
			}
			if (ret) {
				/* An edge refused keeps its old bytes; resync the edges. */
				ck_assert_int_eq(ret, -EIO);
				ck_assert_uint_ne(m.limit, 0);
				refused++;
			}
			for (p = start / PG; p <= (end - 1) / PG; p++) {
				uint64_t a = p * PG > start ? p * PG : start;
				uint64_t b = (p + 1) * PG < end ? (p + 1) * PG : end;

				if (a == p * PG && b == (p + 1) * PG)
					continue; /* whole: done above */
				if (!ret) {
					memset(m.bytes + a, 0, (size_t)(b - a));
				} else {
					unsigned char out[PG], zeroed[PG];

					memcpy(zeroed, page_of(&m, p), PG);
					memset(zeroed + (a - p * PG), 0, (size_t)(b - a));
					ck_assert_int_eq(zram_pages_io(z, REQ_OP_READ, p, out, 1), 0);
					ck_assert(!memcmp(out, page_of(&m, p), PG) ||
						  !memcmp(out, zeroed, PG));
					memcpy(page_of(&m, p), out, PG);
				}
				m.stored[p] = slot_stored(z, p);
			}
		} else if (op < 70) {
			/* A read of any run, whole pages or not. */
			unsigned int n = rng_range(&rng, 1, 2 * GRP);

			if (first + n > NPAGES)
				n = (unsigned int)(NPAGES - first);
			ck_assert_int_eq(zram_pages_io(z, REQ_OP_READ, first, buf, n), 0);
			ck_assert_msg(!memcmp(buf, page_of(&m, first), (size_t)n * PG),
				      "step %u: read of %u pages at %llu", step, n,
				      (unsigned long long)first);
		} else if (op < 76) {
			zram_compact(z);
		} else if (op < 82) {
			zram_idle_mark(z, 0);
		} else if (op < 88) {
			static const enum zram_wb_mode modes[] = {
				ZRAM_WB_ALL, ZRAM_WB_IDLE, ZRAM_WB_HUGE, ZRAM_WB_HUGE_IDLE,
				ZRAM_WB_INCOMPRESSIBLE
			};
			int64_t n = zram_writeback(z, modes[rng_range(&rng, 0, 4)], first,
						   rng_range(&rng, 1, 3 * GRP));

			ck_assert_msg(n >= 0, "writeback: %lld", (long long)n);
			wb += (unsigned int)n;
		} else if (op < 94) {
			struct zram_recompress_params p = ZRAM_RECOMPRESS_PARAMS_INIT;
			int64_t n;

			p.type = (enum zram_recomp_type)rng_range(&rng, 0, 3);
			p.priority = rng_range(&rng, 0, 2);
			p.max_pages = rng_range(&rng, 0, 2 * GRP);
			p.threshold = rng_range(&rng, 0, 1) ? 0 : rng_range(&rng, 0, (unsigned int)PG);
			n = zram_recompress(z, &p);
			ck_assert_msg(n >= 0 || n == -ENOMEM, "recompress: %lld", (long long)n);
			if (n > 0)
				recomp += (unsigned int)n;
		} else {
			/* No limit, or a few pages over what is used now. */
			zram_mm_stat(z, &st);
			m.limit = rng_range(&rng, 0, 2) ? st.mem_used_total +
				  (uint64_t)rng_range(&rng, 0, 4) * PG : 0;
			zram_set_mem_limit(z, m.limit);
			zram_reset_mem_used_max(z);
		}
		check_all(z, &m, step);
	}
	/* Every tier really ran (a short run under valgrind may miss one). */
	if (steps >= 1000) {
		ck_assert_uint_gt(refused, 0);
		ck_assert_uint_gt(wb, 0);
		ck_assert_uint_gt(recomp, 0);
	}

	/* Everything discarded: only metadata is left, nothing on the backing disk. */
	m.limit = 0;
	zram_set_mem_limit(z, 0);
	ck_assert_int_eq(zram_io(z, REQ_OP_DISCARD, 0, NULL, (unsigned int)(NPAGES * PG)), 0);
	zram_compact(z);
	zram_mm_stat(z, &st);
	assert_no_data(&st);
	{
		struct zram_bd_stat bd;

		zram_bd_stat(z, &bd);
		ck_assert_uint_eq(bd.bd_count, 0);
	}
	zram_destroy(z);
	tdisk_free(t);
	free(m.bytes);
	free(buf);
}
END_TEST

int main(void)
{
	const TTest *const property[] = { test_random_multi_page, NULL };
	const struct test_group groups[] = {
		{ .name = "property", .tests = property, .timeout = 600, .loops = 4 },
		{ .name = NULL },
	};

	return test_main("zram_model", groups);
}

// SPDX-License-Identifier: MIT
/* zram_extents(): the allocation map against a model of every page's state. */
#include <stdio.h>
#include <time.h>

#include <libbvec/zram.h>

#include "pages.h"
#include "zpool/zram_internal.h" /* zram__slot_get(), to set a tier's flag */

#define DISK_PAGES 96

struct run {
	uint64_t off, len;
	enum zram_page_state st;
};

struct runs {
	struct run r[DISK_PAGES + 2];
	unsigned int n;
	unsigned int stop_after; /* return 7 from this call on; 0: never */
	struct zram *reset;	 /* reset this device from the first call */
};

static int collect(void *arg, uint64_t off, uint64_t len, enum zram_page_state st)
{
	struct runs *rs = arg;

	ck_assert_uint_lt(rs->n, DISK_PAGES + 2);
	rs->r[rs->n++] = (struct run){ off, len, st };
	if (rs->reset)
		ck_assert_int_eq(zram_reset(rs->reset), 0);
	return rs->stop_after && rs->n >= rs->stop_after ? 7 : 0;
}

static struct zram *new_zram_flags(uint64_t bytes, uint32_t flags)
{
	struct zram_config cfg = ZRAM_CONFIG_INIT;
	struct zram *z;

	cfg.disksize = bytes;
	cfg.pool.flags = flags;
	z = zram_create(&cfg);
	ck_assert_ptr_nonnull(z);
	return z;
}

static struct zram *new_zram(uint64_t bytes)
{
	return new_zram_flags(bytes, 0);
}

/* ZP_GROUP_PAGES, or 2 where a group is one page, so runs still span pages. */
#define GRP (ZP_GROUP_PAGES > 1 ? ZP_GROUP_PAGES : 2u)

/* Is page @index stored as a member of a group (ZPOOL_F_MULTI_PAGE)? */
static bool is_member(struct zram *z, uint64_t index)
{
	struct zram_slot *s = zram__slot_get(z, index, false);

	return s && s->handle && zpool_obj_size(z->pool, s->handle) &&
	       !zpool__obj_class_size(z->pool, s->handle);
}

static int io(struct zram *z, blk_opf_t op, uint64_t off, void *mem, unsigned int len)
{
	struct bio_vec bv;
	struct bio bio;

	bio_init(&bio, zram_disk(z)->part0, &bv, 1, op);
	bio.bi_iter.bi_sector = off >> BVEC_SECTOR_SHIFT;
	if (mem)
		ck_assert_int_eq(bio_add_virt(&bio, mem, len), (int)len);
	else
		bio.bi_iter.bi_size = len;
	return submit_bio_wait(&bio);
}

/* The runs the model says [off, off + len) must give, clipped to the disk. */
static unsigned int model_runs(const enum zram_page_state *m, uint64_t off, uint64_t len,
			       struct run *out)
{
	uint64_t end = off + len > DISK_PAGES * PG ? DISK_PAGES * PG : off + len, p;
	unsigned int n = 0;

	for (p = off / PG; p * PG < end; p++) {
		uint64_t a = p * PG > off ? p * PG : off, b = (p + 1) * PG < end ? (p + 1) * PG : end;

		if (n && out[n - 1].st == m[p])
			out[n - 1].len += b - a;
		else
			out[n++] = (struct run){ a, b - a, m[p] };
	}
	return n;
}

static void check_range(struct zram *z, const enum zram_page_state *m, uint64_t off,
			uint64_t len)
{
	struct run want[DISK_PAGES + 2];
	struct runs got = { .n = 0 };
	unsigned int n = model_runs(m, off, len, want), i;

	ck_assert_int_eq(zram_extents(z, off, len, collect, &got), 0);
	ck_assert_uint_eq(got.n, n);
	for (i = 0; i < n; i++) {
		ck_assert_uint_eq(got.r[i].off, want[i].off);
		ck_assert_uint_eq(got.r[i].len, want[i].len);
		ck_assert_int_eq(got.r[i].st, want[i].st);
	}
}

START_TEST(test_fresh_and_args)
{
	struct zram *z = new_zram(DISK_PAGES * PG);
	struct runs rs = { .n = 0 };

	ck_assert_int_eq(zram_extents(NULL, 0, PG, collect, &rs), -EINVAL);
	ck_assert_int_eq(zram_extents(z, 0, PG, NULL, &rs), -EINVAL);
	ck_assert_int_eq(zram_extents(z, DISK_PAGES * PG, 1, collect, &rs), -EINVAL);
	ck_assert_int_eq(zram_extents(z, 5, 0, collect, &rs), 0);
	ck_assert_uint_eq(rs.n, 0);
	/* Past the end is cut at the end; the first run starts at the byte asked. */
	ck_assert_int_eq(zram_extents(z, 1000, UINT64_MAX, collect, &rs), 0);
	ck_assert_uint_eq(rs.n, 1);
	ck_assert_uint_eq(rs.r[0].off, 1000);
	ck_assert_uint_eq(rs.r[0].len, DISK_PAGES * PG - 1000);
	ck_assert_int_eq(rs.r[0].st, ZRAM_PAGE_UNALLOCATED);
	zram_destroy(z);
}
END_TEST

/*
 * Random writes, zero writes, discards and sub-page writes against the
 * model.  Loops 3 to 5 run with ZPOOL_F_MULTI_PAGE and writes of up to two
 * groups and more: members of a group are data, never zero, and the zero
 * pages between them stay zero pages.
 */
START_TEST(test_model)
{
	const bool multi = _i >= 3;
	const unsigned int maxn = multi ? 2 * GRP + 1 : 3;
	enum zram_page_state m[DISK_PAGES];
	struct zram *z = new_zram_flags(DISK_PAGES * PG, multi ? ZPOOL_F_MULTI_PAGE : 0);
	unsigned char *buf = test_pages(maxn);
	struct rng r = { 0x5eed0000u + (unsigned int)_i };
	unsigned int step, steps = test_scale(400), i, members = 0;

	for (i = 0; i < DISK_PAGES; i++)
		m[i] = ZRAM_PAGE_UNALLOCATED;
	for (step = 0; step < steps; step++) {
		uint64_t p = rng_range(&r, 0, DISK_PAGES - maxn - 1);
		unsigned int n = rng_range(&r, 1, maxn), k, kind = rng_range(&r, 0, 5);

		switch (kind) {
		case 0: /* data: a repeated word other than 0 is data too */
		case 1: /* zeroes written as data are stored as a zero page */
			for (k = 0; k < n; k++) {
				enum page_kind pk = kind ? PAGE_ZERO : k ? PAGE_SAME : PAGE_TEXT;

				/* Runs of text, cut now and then by a zero page. */
				if (multi && !kind)
					pk = rng_range(&r, 0, 5) ? PAGE_TEXT : PAGE_ZERO;
				make_page(buf + k * PG, pk, step * 4 + k, 0);
				m[p + k] = pk == PAGE_ZERO ? ZRAM_PAGE_ZERO : ZRAM_PAGE_DATA;
			}
			ck_assert_int_eq(io(z, REQ_OP_WRITE, p * PG, buf, n * (unsigned int)PG), 0);
			for (k = 0; k < n; k++)
				members += is_member(z, p + k);
			break;
		case 2: /* both free whole pages */
		case 3:
			ck_assert_int_eq(io(z, kind == 2 ? REQ_OP_DISCARD : REQ_OP_WRITE_ZEROES,
					    p * PG, NULL, n * (unsigned int)PG), 0);
			for (k = 0; k < n; k++)
				m[p + k] = ZRAM_PAGE_UNALLOCATED;
			break;
		case 4: /* one sector of data into a page: the page holds data */
			memset(buf, 0x5a, BVEC_SECTOR_SIZE);
			ck_assert_int_eq(io(z, REQ_OP_WRITE, p * PG + BVEC_SECTOR_SIZE, buf,
					    BVEC_SECTOR_SIZE), 0);
			m[p] = ZRAM_PAGE_DATA;
			break;
		default: /* one zero sector into a page: stored as a zero page if it was empty */
			memset(buf, 0, BVEC_SECTOR_SIZE);
			ck_assert_int_eq(io(z, REQ_OP_WRITE, p * PG, buf, BVEC_SECTOR_SIZE), 0);
			if (m[p] == ZRAM_PAGE_UNALLOCATED)
				m[p] = ZRAM_PAGE_ZERO;
			break;
		}
		check_range(z, m, 0, DISK_PAGES * PG);
		check_range(z, m, rng_range(&r, 0, DISK_PAGES * (unsigned int)PG - 1),
			     rng_range(&r, 1, 8 * (unsigned int)PG));
	}
	if (multi && ZP_GROUP_PAGES > 1)
		ck_assert_uint_gt(members, 0);
	free(buf);
	zram_destroy(z);
}
END_TEST

/* A non-zero return stops the walk and is returned. */
START_TEST(test_stop)
{
	struct zram *z = new_zram(DISK_PAGES * PG);
	unsigned char *buf = test_pages(1);
	struct runs rs = { .stop_after = 2 };
	unsigned int i;

	make_page(buf, PAGE_TEXT, 1, 0);
	for (i = 0; i < DISK_PAGES; i += 2)
		ck_assert_int_eq(io(z, REQ_OP_WRITE, i * PG, buf, (unsigned int)PG), 0);
	ck_assert_int_eq(zram_extents(z, 0, DISK_PAGES * PG, collect, &rs), 7);
	ck_assert_uint_eq(rs.n, 2);
	ck_assert_int_eq(rs.r[0].st, ZRAM_PAGE_DATA);
	ck_assert_int_eq(rs.r[1].st, ZRAM_PAGE_UNALLOCATED);
	free(buf);
	zram_destroy(z);
}
END_TEST

/*
 * The callback runs with no lock held: a reset from inside it (which waits
 * for the device's lock exclusively) must not deadlock, and the walk goes on
 * over the emptied device.
 */
START_TEST(test_callback_unlocked)
{
	struct zram *z = new_zram(DISK_PAGES * PG);
	unsigned char *buf = test_pages(1);
	struct runs rs = { .n = 0 };

	rs.reset = z;
	make_page(buf, PAGE_TEXT, 2, 0);
	ck_assert_int_eq(io(z, REQ_OP_WRITE, 0, buf, (unsigned int)PG), 0);
	ck_assert_int_eq(io(z, REQ_OP_WRITE, 2 * PG, buf, (unsigned int)PG), 0);
	ck_assert_int_eq(zram_extents(z, 0, DISK_PAGES * PG, collect, &rs), 0);
	/* Page 0, then the reset: page 2 is gone by the time it is looked at. */
	ck_assert_uint_eq(rs.n, 2);
	ck_assert_int_eq(rs.r[0].st, ZRAM_PAGE_DATA);
	ck_assert_uint_eq(rs.r[1].off, PG);
	ck_assert_uint_eq(rs.r[1].len, (DISK_PAGES - 1) * PG);
	ck_assert_int_eq(rs.r[1].st, ZRAM_PAGE_UNALLOCATED);
	free(buf);
	zram_destroy(z);
}
END_TEST

/* A page a tier has flagged may live outside the pool: never a hole. */
START_TEST(test_tier_flag)
{
	struct zram *z = new_zram(DISK_PAGES * PG);
	struct zram_slot *s = zram__slot_get(z, 5, true);
	struct runs rs = { .n = 0 };

	ck_assert_ptr_nonnull(s);
	atomic_fetch_or(&s->flags, 1u << 2);
	ck_assert_int_eq(zram_extents(z, 4 * PG, 3 * PG, collect, &rs), 0);
	ck_assert_uint_eq(rs.n, 3);
	ck_assert_int_eq(rs.r[1].st, ZRAM_PAGE_DATA);
	ck_assert_uint_eq(rs.r[1].off, 5 * PG);
	ck_assert_uint_eq(rs.r[1].len, PG);
	atomic_fetch_and(&s->flags, ~(1u << 2));
	zram_destroy(z);
}
END_TEST

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * The largest disk one pool allows, written at both ends: the empty middle
 * is reported as one run, found by skipping missing table nodes.  Ten walks
 * take microseconds so; visiting each of its 2^28 pages (4 KiB pages) takes
 * seconds a walk, natively, so the bound of 2 s cannot be met that way.
 */
START_TEST(test_thin)
{
	uint64_t pages = zpool__max_objects(), bytes = pages * PG;
	struct zram *z = new_zram(bytes);
	unsigned char *buf = test_pages(1);
	struct runs rs = { .n = 0 };
	double t;
	int i;

	make_page(buf, PAGE_TEXT, 3, 0);
	ck_assert_int_eq(io(z, REQ_OP_WRITE, 0, buf, (unsigned int)PG), 0);
	ck_assert_int_eq(io(z, REQ_OP_WRITE, bytes - PG, buf, (unsigned int)PG), 0);
	t = now();
	for (i = 0; i < 10; i++) {
		rs.n = 0;
		ck_assert_int_eq(zram_extents(z, 0, bytes, collect, &rs), 0);
	}
	ck_assert_double_lt(now() - t, 2.0);
	ck_assert_uint_eq(rs.n, 3);
	ck_assert_int_eq(rs.r[0].st, ZRAM_PAGE_DATA);
	ck_assert_uint_eq(rs.r[1].off, PG);
	ck_assert_uint_eq(rs.r[1].len, bytes - 2 * PG);
	ck_assert_int_eq(rs.r[1].st, ZRAM_PAGE_UNALLOCATED);
	ck_assert_uint_eq(rs.r[2].off, bytes - PG);
	ck_assert_int_eq(rs.r[2].st, ZRAM_PAGE_DATA);
	free(buf);
	zram_destroy(z);
}
END_TEST

int main(void)
{
	const TTest *const map[] = { test_fresh_and_args, test_stop, test_callback_unlocked,
				     test_tier_flag, test_thin, NULL };
	const TTest *const model[] = { test_model, NULL };
	const struct test_group groups[] = {
		{ .name = "map", .tests = map, .timeout = 60 },
		{ .name = "model", .tests = model, .timeout = 300, .loops = 6 },
		{ .name = NULL },
	};

	return test_main("zram_extents", groups);
}

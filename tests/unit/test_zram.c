// SPDX-License-Identifier: MIT
/* zram device: bios of every shape against a flat model, limits, stats. */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>

#include <libbvec/zram.h>

#include "pages.h"
#include "pools.h"
#include "zpool/internal.h" /* zpool__max_objects() */
#include "zpool/zram_internal.h" /* a slot's handle */

#define DISK_PAGES 64
#define DISK_BYTES (DISK_PAGES * PG)

/* ZP_GROUP_PAGES, or 2 where a group is one page, so runs still span pages. */
#define GRP (ZP_GROUP_PAGES > 1 ? ZP_GROUP_PAGES : 2u)

static struct zram *new_zram_flags(uint64_t bytes, uint64_t limit, uint32_t flags)
{
	struct zram_config cfg = ZRAM_CONFIG_INIT;
	struct zram *z;

	cfg.disksize = bytes;
	cfg.pool.mem_limit = limit;
	cfg.pool.flags = flags;
	z = zram_create(&cfg);
	ck_assert_ptr_nonnull(z);
	return z;
}

static struct zram *new_zram(uint64_t bytes, uint64_t limit)
{
	return new_zram_flags(bytes, limit, ZPOOL_F_CHECKSUM);
}

/* Loop tests run each case without and with ZPOOL_F_MULTI_PAGE. */
static uint32_t loop_flags(int i, int loops)
{
	return ZPOOL_F_CHECKSUM | (i >= loops / 2 ? ZPOOL_F_MULTI_PAGE : 0);
}

static bool all_zero_page(const unsigned char *p)
{
	return !p[0] && !memcmp(p, p + 1, PG - 1);
}

/* What zpool stores as a same-filled page: one machine word repeated. */
static bool page_same(const unsigned char *p)
{
	return !memcmp(p, p + sizeof(unsigned long), PG - sizeof(unsigned long));
}

/* One bio over @len bytes at @mem (any alignment), in 1 to 3 pieces. */
static int do_io(struct zram *z, blk_opf_t op, uint64_t byte_off, void *mem,
		 unsigned int len, unsigned int pieces)
{
	struct bio_vec table[3];
	struct bio bio;
	unsigned int i, done = 0;

	bio_init(&bio, zram_disk(z)->part0, table, 3, op);
	bio.bi_iter.bi_sector = byte_off >> 9;
	if (mem) {
		for (i = 0; i < pieces; i++) {
			unsigned int n = i == pieces - 1 ? len - done : len / pieces;

			/* A gap between pieces keeps them separate bvecs. */
			if (n)
				ck_assert_int_eq(bio_add_virt(&bio, (char *)mem + done + i, n), (int)n);
			if (i < pieces - 1)
				memmove((char *)mem + done + i + n + 1, (char *)mem + done + i + n,
					len - done - n);
			done += n;
		}
	} else {
		bio.bi_iter.bi_size = len;
	}
	return submit_bio_wait(&bio);
}

START_TEST(test_invalid_config)
{
	struct zram_config cfg = ZRAM_CONFIG_INIT;

	errno = 0;
	ck_assert_ptr_null(zram_create(&cfg));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(zram_create(NULL));
	cfg.disksize = 1 << 20;
	cfg.pool.compressor = "nope";
	ck_assert_ptr_null(zram_create(&cfg));
	ck_assert_int_eq(errno, EINVAL);
	cfg.pool.compressor = NULL;
	cfg.pool.size = 1; /* the nested config has its own size rule */
	errno = 0;
	ck_assert_ptr_null(zram_create(&cfg));
	ck_assert_int_eq(errno, EINVAL);
	cfg.size = sizeof(cfg) + 8;
	ck_assert_ptr_null(zram_create(&cfg));
	cfg.size = offsetof(struct zram_config, pool) + 4;
	ck_assert_ptr_null(zram_create(&cfg));
	/* Without the pool part every pool setting is its default. */
	cfg.size = offsetof(struct zram_config, pool);
	{
		struct zram *z = zram_create(&cfg);

		ck_assert_ptr_nonnull(z);
		zram_destroy(z);
	}
	zram_destroy(NULL);
}
END_TEST

/*
 * Bytes [@start, @start + @len) of a disk whose pages are each of one
 * random kind, into @dst: with ZPOOL_F_MULTI_PAGE, runs of compressible
 * pages form groups, broken by same-filled and incompressible ones.
 */
static void fill_pages(struct rng *rng, unsigned char *dst, uint64_t start, unsigned int len)
{
	static const enum page_kind kinds[] = { PAGE_TEXT, PAGE_TEXT, PAGE_BINARY, PAGE_SIZED,
		PAGE_TEXT, PAGE_ZERO, PAGE_SAME, PAGE_RANDOM };
	unsigned char page[PG];
	uint64_t pos = start;

	while (pos < start + len) {
		unsigned int off = (unsigned int)(pos % PG);
		unsigned int n = (unsigned int)zpool__min(PG - off, start + len - pos);

		make_page(page, kinds[rng_range(rng, 0, 7)], rng_next(rng),
			  rng_range(rng, 0, (unsigned int)PG / 2));
		memcpy(dst + (pos - start), page + off, n);
		pos += n;
	}
}

/*
 * Random reads, writes, discards and zeroings against a flat model.  The
 * loops with ZPOOL_F_MULTI_PAGE write and read runs of up to two groups
 * and more, at every alignment, scattered or in one buffer, so groups get
 * overwritten in part, patched a sector at a time and discarded by member.
 */
START_TEST(test_model)
{
	const uint32_t flags = loop_flags(_i, 6);
	const bool multi = flags & ZPOOL_F_MULTI_PAGE;
	const unsigned int max_pages = multi ? 2 * GRP + 2 : 2;
	struct zram *z = new_zram_flags(DISK_BYTES - 1000, 0, flags); /* rounds up to a page */
	unsigned char *model = calloc(1, DISK_BYTES);
	unsigned char *buf = malloc((max_pages + 1) * PG), *got = malloc((max_pages + 1) * PG);
	bool stored[DISK_PAGES] = { false };
	struct rng rng = { 4242 + (uint64_t)_i };
	struct zpool_stats ms, empty;
	unsigned int step, i;

	ck_assert_uint_eq(get_capacity(zram_disk(z)), DISK_BYTES / 512);
	zram_mm_stat(z, &empty);
	for (step = 0; step < test_scale(3000); step++) {
		unsigned int sectors = rng_range(&rng, 1, (unsigned int)(max_pages * PG / 512));
		uint64_t start = (uint64_t)rng_range(&rng, 0, DISK_BYTES / 512 - sectors) * 512;
		unsigned int len = sectors * 512, op = rng_range(&rng, 0, 9);
		unsigned int pieces = rng_range(&rng, 1, 3);
		unsigned int mis = rng_range(&rng, 0, 7); /* memory misalignment */
		uint64_t n_stored = 0, n_same = 0;

		/* Whole groups, aligned, in one piece: a group stored or read at once. */
		if (multi && step % 4 == 0) {
			sectors = rng_range(&rng, 1, 2) * GRP * (unsigned int)(PG / 512);
			start = (uint64_t)rng_range(&rng, 0, DISK_PAGES / GRP - 2) * GRP * PG;
			len = sectors * 512;
			pieces = 1;
		}
		if (op < 4) {
			if (op == 0)
				for (i = 0; i < len; i++)
					buf[mis + i] = (unsigned char)(rng_next(&rng) % 2);
			else
				fill_pages(&rng, buf + mis, start, len);
			memcpy(model + start, buf + mis, len);
			ck_assert_int_eq(do_io(z, REQ_OP_WRITE, start, buf + mis, len, pieces), 0);
			for (i = (unsigned int)(start / PG); i <= (start + len - 1) / PG; i++)
				stored[i] = true;
		} else if (op < 8) {
			ck_assert_int_eq(do_io(z, REQ_OP_READ, start, got + mis, len,
					       op < 6 ? 1 : pieces), 0);
			if (op >= 6)
				/* do_io() left a byte between pieces; close the gaps. */
				for (i = 1; i < pieces; i++)
					memmove(got + mis + i * (len / pieces),
						got + mis + i * (len / pieces) + i,
						i < pieces - 1 ? len / pieces :
								 len - i * (len / pieces));
			ck_assert_mem_eq(got + mis, model + start, len);
		} else {
			blk_opf_t o = op == 8 ? REQ_OP_DISCARD : REQ_OP_WRITE_ZEROES;
			uint64_t p;

			ck_assert_int_eq(do_io(z, o, start, NULL, len, 1), 0);
			memset(model + start, 0, len);
			for (p = (start + PG - 1) / PG; (p + 1) * PG <= start + len; p++)
				stored[p] = false;
		}
		zram_mm_stat(z, &ms);
		for (i = 0; i < DISK_PAGES; i++) {
			n_stored += stored[i];
			n_same += stored[i] && page_same(model + (size_t)i * PG);
		}
		ck_assert_uint_eq(ms.orig_data_size, n_stored * PG);
		ck_assert_uint_eq(ms.objects, n_stored);
		ck_assert_uint_eq(ms.same_pages, n_same);
	}
	/* Everything, through one large bio. */
	free(got);
	got = malloc(DISK_BYTES + 8);
	ck_assert_int_eq(do_io(z, REQ_OP_READ, 0, got + 3, DISK_BYTES, 1), 0);
	ck_assert_mem_eq(got + 3, model, DISK_BYTES);
	/* Discarding everything gives every group back, whatever is left of it. */
	ck_assert_int_eq(do_io(z, REQ_OP_DISCARD, 0, NULL, DISK_BYTES, 1), 0);
	zram_compact(z);
	zram_mm_stat(z, &ms);
	assert_no_data(&ms);
	ck_assert_int_eq(zram_reset(z), 0);
	zram_mm_stat(z, &ms);
	ck_assert_uint_eq(ms.mem_used_total, empty.mem_used_total);
	zram_destroy(z);
	free(model);
	free(buf);
	free(got);
}
END_TEST

START_TEST(test_invalid_io)
{
	struct zram *z = new_zram(DISK_BYTES, 0);
	unsigned char buf[2048];
	struct zram_io_stat io;
	struct bio bio;

	ck_assert_int_eq(do_io(z, REQ_OP_WRITE, 0, buf, 700, 1), -EIO); /* not sectors */
	ck_assert_int_eq(do_io(z, REQ_OP_WRITE, DISK_BYTES - 512, buf, 1024, 1), -EIO);
	ck_assert_int_eq(do_io(z, REQ_OP_READ, DISK_BYTES, buf, 512, 1), -EIO);
	bio_init(&bio, zram_disk(z)->part0, NULL, 0, REQ_OP_FLUSH);
	ck_assert_int_eq(submit_bio_wait(&bio), 0);
	bio_init(&bio, zram_disk(z)->part0, NULL, 0, (blk_opf_t)7);
	ck_assert_int_eq(submit_bio_wait(&bio), -EOPNOTSUPP);
	zram_io_stat(z, &io);
	ck_assert_uint_eq(io.invalid_io, 4);
	ck_assert_uint_eq(io.failed_writes, 0);
	zram_destroy(z);
}
END_TEST

/* A write refused by mem_limit fails with EIO; old contents stay readable. */
START_TEST(test_mem_limit_keeps_old_data)
{
	struct zram *z = new_zram(256 * PG, 0);
	unsigned char page[PG], out[PG];
	struct zpool_stats ms;
	struct zram_io_stat io;
	unsigned int i, ok = 0;
	int ret = 0;

	zram_mm_stat(z, &ms);
	zram_set_mem_limit(z, ms.mem_used_total + 24 * PG);
	for (i = 0; i < 256; i++) {
		make_page(page, PAGE_RANDOM, i, 0);
		ret = do_io(z, REQ_OP_WRITE, (uint64_t)i * PG, page, (unsigned int)PG, 1);
		if (ret)
			break;
		ok++;
	}
	ck_assert_int_eq(ret, -EIO);
	ck_assert_uint_gt(ok, 5);
	/* Overwriting a stored page also fails, and keeps the old page. */
	make_page(page, PAGE_RANDOM, 1000, 0);
	ck_assert_int_eq(do_io(z, REQ_OP_WRITE, 0, page, (unsigned int)PG, 1), -EIO);
	for (i = 0; i < ok; i++) {
		make_page(page, PAGE_RANDOM, i, 0);
		ck_assert_int_eq(do_io(z, REQ_OP_READ, (uint64_t)i * PG, out, (unsigned int)PG, 1), 0);
		ck_assert_mem_eq(out, page, PG);
	}
	zram_io_stat(z, &io);
	ck_assert_uint_eq(io.failed_writes, 2);
	zram_destroy(z);
}
END_TEST

/*
 * ZPOOL_F_MULTI_PAGE through the device: a run of compressible pages takes
 * less than page by page; freeing members one at a time keeps the group
 * until its last member goes; a run cut in part by overwrites, sub-page
 * writes and discards still reads back as written, in one bio or many.
 */
START_TEST(test_multi_groups)
{
	const unsigned int n = 2 * GRP > 8 ? 2 * GRP : 8; /* pages 0 to 7 at least */
	struct zram *single = new_zram_flags(DISK_BYTES, 0, 0);
	struct zram *z = new_zram_flags(DISK_BYTES, 0, ZPOOL_F_MULTI_PAGE);
	unsigned char *model = calloc(1, DISK_BYTES), *got = malloc(DISK_BYTES);
	struct zpool_stats a, b;
	unsigned int i;

	for (i = 0; i < n; i++)
		make_page(model + (size_t)i * PG, PAGE_TEXT, i, 0);
	ck_assert_int_eq(do_io(single, REQ_OP_WRITE, 0, model, n * PG, 1), 0);
	ck_assert_int_eq(do_io(z, REQ_OP_WRITE, 0, model, n * PG, 1), 0);
	zram_mm_stat(single, &a);
	zram_mm_stat(z, &b);
	ck_assert_uint_eq(b.orig_data_size, (uint64_t)n * PG);
	ck_assert_uint_eq(b.objects, n);
	if (ZP_GROUP_PAGES > 1)
		ck_assert_uint_lt(b.compr_data_size, a.compr_data_size);

	/* A member discarded: its group's bytes stay while the others live. */
	ck_assert_int_eq(do_io(z, REQ_OP_DISCARD, 3 * PG, NULL, (unsigned int)PG, 1), 0);
	memset(model + 3 * PG, 0, PG);
	zram_mm_stat(z, &a);
	ck_assert_uint_eq(a.orig_data_size, (uint64_t)(n - 1) * PG);
	if (ZP_GROUP_PAGES > 1)
		ck_assert_uint_eq(a.compr_data_size, b.compr_data_size);
	/* Two members replaced by a group of their own, straddling nothing. */
	make_page(model + 1 * PG, PAGE_BINARY, 101, 0);
	make_page(model + 2 * PG, PAGE_BINARY, 102, 0);
	ck_assert_int_eq(do_io(z, REQ_OP_WRITE, PG, model + PG, 2 * (unsigned int)PG, 1), 0);
	/* A sector of a member patched: read, modify, store alone. */
	memset(model + 5 * PG + 512, 0x5a, 512);
	ck_assert_int_eq(do_io(z, REQ_OP_WRITE, 5 * PG + 512, model + 5 * PG + 512, 512, 1), 0);
	/* Write-zeroes of the last sector of a member, and of a whole member. */
	ck_assert_int_eq(do_io(z, REQ_OP_WRITE_ZEROES, 7 * PG - 512, NULL, 512, 1), 0);
	memset(model + 7 * PG - 512, 0, 512);
	ck_assert_int_eq(do_io(z, REQ_OP_WRITE_ZEROES, (GRP + 1) * PG, NULL, (unsigned int)PG, 1),
			 0);
	memset(model + (GRP + 1) * PG, 0, PG);
	/* Across the group boundary, from mid-page, in one buffer and in three. */
	make_page(got, PAGE_TEXT, 999, 0);
	make_page(got + PG, PAGE_TEXT, 998, 0);
	make_page(got + 2 * PG, PAGE_TEXT, 997, 0);
	memcpy(model + (GRP - 2) * PG + 1024, got, 3 * PG - 1024);
	ck_assert_int_eq(do_io(z, REQ_OP_WRITE, (GRP - 2) * PG + 1024, got,
			       3 * (unsigned int)PG - 1024, 1), 0);
	for (i = 1; i <= 3; i++) {
		memset(got, 0xee, 2 * n * PG / 2);
		ck_assert_int_eq(do_io(z, REQ_OP_READ, 0, got, n * PG, 1), 0);
		ck_assert_mem_eq(got, model, (size_t)n * PG);
		ck_assert_int_eq(do_io(z, REQ_OP_READ, PG / 2, got, (n - 1) * PG, 1), 0);
		ck_assert_mem_eq(got, model + PG / 2, (size_t)(n - 1) * PG);
		/* Every single page alone, a member decompressed for itself. */
		ck_assert_int_eq(do_io(z, REQ_OP_READ, (i + 3) * PG, got, (unsigned int)PG, 1), 0);
		ck_assert_mem_eq(got, model + (i + 3) * PG, PG);
		zram_compact(z);
	}
	/* Every member gone, one page at a time: the groups went with the last. */
	for (i = 0; i < n; i++)
		ck_assert_int_eq(do_io(z, REQ_OP_DISCARD, (uint64_t)(n - 1 - i) * PG, NULL,
				       (unsigned int)PG, 1), 0);
	zram_mm_stat(z, &a);
	ck_assert_uint_eq(a.orig_data_size, 0);
	ck_assert_uint_eq(a.compr_data_size, 0);
	ck_assert_uint_eq(a.objects, 0);
	zram_destroy(single);
	zram_destroy(z);
	free(model);
	free(got);
}
END_TEST

/* The handle in page @index's slot. */
static zpool_handle_t slot_handle(struct zram *z, uint64_t index)
{
	struct zram_slot *s = zram__slot_get(z, index, false);

	ck_assert_ptr_nonnull(s);
	return s->handle;
}

/*
 * zram_compact() stores again alone the pages left in a group of which at
 * most half is still in use, giving the group's memory back; a group with
 * more than half its pages left, and a corrupt group, stay as they are.
 */
START_TEST(test_multi_compact_regroups)
{
	const unsigned int g = ZP_GROUP_PAGES, n = 3 * g;
	struct zram *z = new_zram_flags(DISK_BYTES, 0, ZPOOL_F_MULTI_PAGE | ZPOOL_F_CHECKSUM);
	unsigned char *model = malloc((size_t)n * PG), *got = malloc((size_t)n * PG);
	struct zpool_stats a, b, c;
	zpool_handle_t kept;
	unsigned int i;

	if (g < 4) {
		/* Pages of 16 KiB or more: groups of 2 or none, nothing sparse to test. */
		zram_destroy(z);
		free(model);
		free(got);
		return;
	}
	ck_assert_uint_le(n, DISK_PAGES);
	for (i = 0; i < n; i++)
		make_page(model + (size_t)i * PG, PAGE_SIZED, 7000 + i, 64); /* whole groups fit */
	ck_assert_int_eq(do_io(z, REQ_OP_WRITE, 0, model, n * (unsigned int)PG, 1), 0);
	for (i = 0; i < n; i++)
		ck_assert_uint_eq(zpool__obj_class_size(z->pool, slot_handle(z, i)), 0);
	/* Group 0: half its pages overwritten one by one.  Group 1: one fewer. */
	for (i = 0; i < g / 2 + g / 2 - 1; i++) {
		unsigned int idx = i < g / 2 ? 2 * i : g + 2 * (i - g / 2);

		make_page(model + (size_t)idx * PG, PAGE_BINARY, 8000 + i, 0);
		ck_assert_int_eq(do_io(z, REQ_OP_WRITE, (uint64_t)idx * PG,
				       model + (size_t)idx * PG, (unsigned int)PG, 1), 0);
	}
	/* Group 2: half discarded, and its object corrupt. */
	for (i = 0; i < g / 2; i++)
		ck_assert_int_eq(do_io(z, REQ_OP_DISCARD, (uint64_t)(2 * g + 2 * i) * PG, NULL,
				       (unsigned int)PG, 1), 0);
	ck_assert_int_eq(zpool__corrupt(z->pool, slot_handle(z, 2 * g + 1), 20, 0x40), 0);
	ck_assert(zpool__group_sparse(z->pool, slot_handle(z, 1)));
	ck_assert(!zpool__group_sparse(z->pool, slot_handle(z, g + 1)));
	ck_assert(zpool__group_sparse(z->pool, slot_handle(z, 2 * g + 1)));
	kept = slot_handle(z, g + 1);
	zram_mm_stat(z, &a);

	zram_compact(z);
	zram_mm_stat(z, &b);
	/* Group 0's pages left each stand alone now, and its object is gone. */
	for (i = 1; i < g; i += 2) {
		ck_assert_uint_gt(zpool__obj_class_size(z->pool, slot_handle(z, i)), 0);
		ck_assert_uint_eq(zpool__obj_class_size(z->pool, slot_handle(z, 2 * g + i)), 0);
	}
	ck_assert_uint_eq(slot_handle(z, g + 1), kept);
	ck_assert_uint_eq(b.orig_data_size, a.orig_data_size);
	ck_assert_uint_eq(b.objects, a.objects);
	/*
	 * Not mem_used_total: the group's object leaves a hole in its zspage
	 * while the pages stored alone may take a new one (s390x's data did).
	 */
	ck_assert_uint_lt(b.compr_data_size, a.compr_data_size);

	/* Everything reads back; the corrupt group still says so. */
	ck_assert_int_eq(do_io(z, REQ_OP_READ, 0, got, 2 * g * (unsigned int)PG, 1), 0);
	ck_assert_mem_eq(got, model, (size_t)2 * g * PG);
	for (i = 0; i < g; i++) {
		int want = i % 2 ? -EIO : 0;

		ck_assert_int_eq(do_io(z, REQ_OP_READ, (uint64_t)(2 * g + i) * PG, got,
				       (unsigned int)PG, 1), want);
	}
	/* Nothing left to do the second time. */
	zram_compact(z);
	zram_mm_stat(z, &c);
	ck_assert_uint_eq(c.compr_data_size, b.compr_data_size);
	zram_destroy(z);
	free(model);
	free(got);
}
END_TEST

/*
 * The mem_limit rule with ZPOOL_F_MULTI_PAGE: a write the limit refuses
 * fails its bio, every page of the refused run keeps its old data and
 * failed_writes counts it.  A bio of several runs stops at the refused
 * one: the pages before it are new, those from it on are old.
 */
START_TEST(test_mem_limit_multi)
{
	enum { N = 256 };
	const unsigned int maxp = 2 * GRP + 1;
	struct zram *z = new_zram_flags(N * PG, 0, ZPOOL_F_MULTI_PAGE | ZPOOL_F_CHECKSUM);
	unsigned char *model = malloc((size_t)N * PG), *buf = malloc((maxp + 1) * PG);
	unsigned char *got = malloc((size_t)(maxp + 1) * PG), *nw = malloc((size_t)maxp * PG);
	struct rng rng = { 5150 };
	struct zpool_stats ms, before;
	struct zram_io_stat io;
	unsigned int i, k, step, failed = 0, whole_failed = 0, ok = 0;
	uint64_t limit;

	for (i = 0; i < N; i++)
		make_page(model + (size_t)i * PG, i % 5 ? PAGE_TEXT : PAGE_BINARY, i, 0);
	ck_assert_int_eq(do_io(z, REQ_OP_WRITE, 0, model, N * (unsigned int)PG, 1), 0);
	zram_mm_stat(z, &ms);
	limit = ms.mem_used_total + 8 * PG;
	zram_set_mem_limit(z, limit);
	for (step = 0; step < test_scale(400); step++) {
		unsigned int pages = rng_range(&rng, 2, maxp);
		uint64_t first = rng_range(&rng, 0, N - pages);
		unsigned int head = step % 3 ? 0 :
				    rng_range(&rng, 1, (unsigned int)(PG / 512 - 1)) * 512;
		unsigned int len = pages * (unsigned int)PG - head, p;
		uint64_t start = first * PG + head;
		int ret;

		if (step % 8 == 7) {
			/* Room for more, freed member by member. */
			ck_assert_int_eq(do_io(z, REQ_OP_DISCARD, first * PG, NULL,
					       pages * (unsigned int)PG, 1), 0);
			memset(model + first * PG, 0, (size_t)pages * PG);
			continue;
		}
		/* Some incompressible pages: they need room the limit lacks. */
		for (p = 0; p < pages; p++)
			make_page(nw + (size_t)p * PG, (p + step) % 4 ? PAGE_TEXT : PAGE_RANDOM,
				  1000 * step + p, 0);
		memcpy(buf, nw + head, len); /* do_io() moves bytes of buf apart */
		zram_mm_stat(z, &before);
		ret = do_io(z, REQ_OP_WRITE, start, buf, len, step % 4 ? 1 : 2);
		if (!ret) {
			memcpy(model + start, nw + head, len);
			ok++;
			continue;
		}
		ck_assert_int_eq(ret, -EIO);
		failed++;
		/*
		 * New bytes up to where the refused segment starts, old from
		 * there: a piece may end mid-page, so the cut is by byte.
		 */
		ck_assert_int_eq(do_io(z, REQ_OP_READ, first * PG, got, pages * (unsigned int)PG,
				       1), 0);
		ck_assert_mem_eq(got, model + first * PG, head);
		for (k = 0; k < len && got[head + k] == nw[head + k]; k++)
			;
		ck_assert_mem_eq(got + head + k, model + start + k, len - k);
		memcpy(model + first * PG, got, (size_t)pages * PG);
		/* Page-aligned, in one piece, within one group: one run, all or nothing. */
		if (ZP_GROUP_PAGES > 1 && !head && step % 4 && first % GRP + pages <= GRP) {
			ck_assert_mem_eq(got, model + start, len);
			zram_mm_stat(z, &ms);
			ck_assert_uint_eq(ms.orig_data_size, before.orig_data_size);
			ck_assert_uint_eq(ms.compr_data_size, before.compr_data_size);
			whole_failed++;
		}
		zram_mm_stat(z, &ms);
		ck_assert_uint_le(ms.mem_used_total, limit);
	}
	ck_assert_uint_gt(failed, 0);
	ck_assert_uint_gt(ok, 0);
	if (ZP_GROUP_PAGES > 1)
		ck_assert_uint_gt(whole_failed, 0);
	zram_io_stat(z, &io);
	ck_assert_uint_eq(io.failed_writes, failed);
	zram_set_mem_limit(z, 0);
	for (i = 0; i < N; i += maxp) {
		unsigned int n = N - i < maxp ? N - i : maxp;

		ck_assert_int_eq(do_io(z, REQ_OP_READ, (uint64_t)i * PG, got, n * (unsigned int)PG,
				       1), 0);
		ck_assert_mem_eq(got, model + (size_t)i * PG, (size_t)n * PG);
	}
	zram_destroy(z);
	free(model);
	free(buf);
	free(got);
	free(nw);
}
END_TEST

START_TEST(test_stats_idle_compact_reset)
{
	struct zram *z = new_zram(DISK_BYTES, 0);
	unsigned char page[PG], out[PG];
	char text[256];
	unsigned long long f[9];
	struct zpool_stats ms;
	struct zram_io_stat io;
	unsigned int i;

	for (i = 0; i < DISK_PAGES; i++) {
		make_page(page, (enum page_kind)(i % PAGE_KINDS), i, 100 * i);
		ck_assert_int_eq(do_io(z, REQ_OP_WRITE, (uint64_t)i * PG, page, (unsigned int)PG, 1), 0);
	}
	zram_mm_stat(z, &ms);
	ck_assert_int_gt(zram_format_mm_stat(&ms, text, sizeof(text)), 0);
	ck_assert_int_eq(sscanf(text, "%llu %llu %llu %llu %llu %llu %llu %llu %llu", &f[0],
				&f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7], &f[8]), 9);
	ck_assert_uint_eq(f[0], ms.orig_data_size);
	ck_assert_uint_eq(f[0], DISK_BYTES);
	ck_assert_uint_eq(f[2], ms.mem_used_total);
	ck_assert_uint_gt(ms.same_pages, 0);
	ck_assert_uint_gt(ms.huge_pages, 0);
	zram_io_stat(z, &io);
	ck_assert_int_gt(zram_format_io_stat(&io, text, sizeof(text)), 0);
	ck_assert_int_eq(sscanf(text, "%llu %llu %llu %llu", &f[0], &f[1], &f[2], &f[3]), 4);

	/* Same-filled pages are not marked, as in Linux. */
	ck_assert_uint_eq(zram_idle_mark(z, 0), DISK_PAGES - ms.same_pages);
	ck_assert_uint_eq(zram_idle_pages(z), DISK_PAGES - ms.same_pages);
	ck_assert_int_eq(5 % PAGE_KINDS, PAGE_SIZED);
	ck_assert_int_eq(do_io(z, REQ_OP_READ, 5 * PG, out, (unsigned int)PG, 1), 0);
	ck_assert_uint_eq(zram_idle_pages(z), DISK_PAGES - ms.same_pages - 1);
	/* A later call's marks are its own: nothing is an hour old, so none stays. */
	ck_assert_uint_eq(zram_idle_mark(z, 3600), 0);
	ck_assert_uint_eq(zram_idle_pages(z), 0);
	ck_assert_uint_eq(zram_idle_mark(z, 0), DISK_PAGES - ms.same_pages);

	for (i = 0; i < DISK_PAGES; i += 2)
		ck_assert_int_eq(do_io(z, REQ_OP_DISCARD, (uint64_t)i * PG, NULL, (unsigned int)PG, 1), 0);
	zram_compact(z);
	zram_io_stat(z, &io);
	ck_assert_uint_eq(io.notify_free, DISK_PAGES / 2);
	/* The peak outlives the data until the watermark is restarted. */
	zram_mm_stat(z, &ms);
	ck_assert_uint_gt(ms.mem_used_max, ms.mem_used_total);
	zram_reset_mem_used_max(z);
	zram_reset_mem_used_max(NULL);
	zram_mm_stat(z, &ms);
	ck_assert_uint_eq(ms.mem_used_max, ms.mem_used_total);
	zram_reset(z);
	zram_mm_stat(z, &ms);
	ck_assert_uint_eq(ms.orig_data_size, 0);
	ck_assert_int_eq(do_io(z, REQ_OP_READ, PG, out, (unsigned int)PG, 1), 0);
	memset(page, 0, PG);
	ck_assert_mem_eq(out, page, PG);
	zram_destroy(z);
}
END_TEST

/*
 * A page source over aligned_alloc() that fails on demand: always while
 * @fail is set, and at call number @fail_at.  @outstanding catches leaks.
 */
struct fail_source {
	atomic_long outstanding;
	atomic_long calls;
	atomic_bool fail;
	long fail_at;
};

static void *fs_alloc(void *ctx, size_t bytes)
{
	struct fail_source *f = ctx;
	long n = atomic_fetch_add(&f->calls, 1) + 1;
	void *p;

	if (atomic_load(&f->fail) || n == f->fail_at)
		return NULL;
	p = aligned_alloc(PG, bytes);
	if (p)
		atomic_fetch_add(&f->outstanding, 1);
	return p;
}

static void fs_free(void *ctx, void *mem, size_t bytes)
{
	struct fail_source *f = ctx;

	(void)bytes;
	atomic_fetch_sub(&f->outstanding, 1);
	free(mem);
}

static struct zram *new_zram_src(uint64_t bytes, struct fail_source *f,
				 struct zpool_page_source *src, uint32_t flags)
{
	struct zram_config cfg = ZRAM_CONFIG_INIT;

	memset(f, 0, sizeof(*f));
	src->alloc = fs_alloc;
	src->free = fs_free;
	src->discard = NULL;
	src->ctx = f;
	src->lazy = false;
	cfg.disksize = bytes;
	cfg.pool.flags = flags;
	cfg.pool.page_source = src;
	return zram_create(&cfg);
}

static void check_page(struct zram *z, uint64_t index, const unsigned char *want)
{
	unsigned char out[PG];

	ck_assert_int_eq(do_io(z, REQ_OP_READ, index * PG, out, (unsigned int)PG, 1), 0);
	ck_assert_mem_eq(out, want, PG);
}

/*
 * Issue 16 item 5: at mem_limit a DISCARD or WRITE_ZEROES that starts or ends
 * mid-page frees its whole pages; only the edges, which need a store, fail.
 */
START_TEST(test_discard_at_limit)
{
	static unsigned char model[DISK_PAGES][PG];
	unsigned char zero[PG] = { 0 };
	struct zram *z = new_zram(DISK_BYTES, 0);
	struct zpool_stats ms;
	struct zram_io_stat io;
	unsigned int i, op;

	for (i = 0; i < DISK_PAGES; i++) {
		make_page(model[i], PAGE_RANDOM, i, 0);
		ck_assert_int_eq(do_io(z, REQ_OP_WRITE, (uint64_t)i * PG, model[i],
				       (unsigned int)PG, 1), 0);
	}
	zram_set_mem_limit(z, 1); /* every store is now refused */
	for (op = 0; op < 2; op++) {
		blk_opf_t o = op ? REQ_OP_WRITE_ZEROES : REQ_OP_DISCARD;
		uint64_t base = op ? 20 : 0;

		/* From 512 bytes into page base to 512 bytes into page base + 8. */
		ck_assert_int_eq(do_io(z, o, base * PG + 512, NULL, (unsigned int)(8 * PG), 1),
				 -EIO);
		for (i = 1; i < 8; i++)
			memset(model[base + i], 0, PG);
	}
	zram_io_stat(z, &io);
	ck_assert_uint_eq(io.notify_free, 14);
	ck_assert_uint_eq(io.failed_writes, 4); /* both edges of both bios */
	zram_mm_stat(z, &ms);
	ck_assert_uint_eq(ms.orig_data_size, (DISK_PAGES - 14) * PG);
	for (i = 0; i < DISK_PAGES; i++)
		check_page(z, i, model[i]); /* freed pages zero, edges untouched */

	/* Zeroing bytes that are zero already needs no memory. */
	ck_assert_int_eq(do_io(z, REQ_OP_DISCARD, 2 * PG + 512, NULL, 1024, 1), 0);
	/* ...but a page with data to zero needs a store, refused here. */
	ck_assert_int_eq(do_io(z, REQ_OP_WRITE_ZEROES, 8 * PG - 512, NULL, 1024, 1), -EIO);
	zram_set_mem_limit(z, 0);
	memset(model[40] + PG / 2, 0, PG / 2);
	ck_assert_int_eq(do_io(z, REQ_OP_WRITE, 40 * PG, model[40], (unsigned int)PG, 1), 0);
	ck_assert_int_eq(do_io(z, REQ_OP_WRITE, 41 * PG, zero, (unsigned int)PG, 1), 0);
	memset(model[41], 0, PG);
	zram_set_mem_limit(z, 1);
	ck_assert_int_eq(do_io(z, REQ_OP_DISCARD, 40 * PG + PG / 2, NULL,
			       (unsigned int)(PG / 2 + PG), 1), 0);
	ck_assert_int_eq(do_io(z, REQ_OP_WRITE_ZEROES, 41 * PG + 512, NULL, 512, 1), 0);
	for (i = 0; i < DISK_PAGES; i++)
		check_page(z, i, model[i]);
	zram_io_stat(z, &io);
	ck_assert_uint_eq(io.failed_writes, 5);
	zram_destroy(z);
}
END_TEST

/* zram_extents() callback: the state of each page, into an array. */
static int page_states(void *arg, uint64_t off, uint64_t len, enum zram_page_state st)
{
	enum zram_page_state *m = arg;
	uint64_t p;

	for (p = off / PG; p < (off + len) / PG; p++)
		m[p] = st;
	return 0;
}

static enum zram_page_state state_of(struct zram *z, uint64_t index)
{
	enum zram_page_state m[DISK_PAGES];

	ck_assert_int_eq(zram_extents(z, 0, DISK_BYTES, page_states, m), 0);
	return m[index];
}

/*
 * A zero page is a mark in its slot, as the kernel's zram keeps a
 * same-filled page: no pool memory, so writes of zeroes succeed where every
 * store is refused, however they come (whole pages, a run of pages in one
 * bio, a partial write or WRITE_ZEROES edge that leaves a page all zero),
 * and the statistics count them as zram does.
 */
START_TEST(test_zero_pages)
{
	static unsigned char model[DISK_PAGES][PG];
	uint32_t flags = loop_flags(_i, 2);
	struct zram *z = new_zram_flags(DISK_BYTES, 0, flags);
	unsigned char *run = calloc(4, PG);
	struct zpool_stats before, ms;
	struct zram_io_stat io;
	unsigned int i;

	ck_assert_ptr_nonnull(run);
	for (i = 0; i < DISK_PAGES; i++) {
		make_page(model[i], PAGE_RANDOM, i, 0);
		ck_assert_int_eq(do_io(z, REQ_OP_WRITE, (uint64_t)i * PG, model[i],
				       (unsigned int)PG, 1), 0);
	}
	/* Page 9: data in its first sector only. */
	memset(model[9] + 512, 0, PG - 512);
	ck_assert_int_eq(do_io(z, REQ_OP_WRITE, 9 * PG, model[9], (unsigned int)PG, 1), 0);
	zram_mm_stat(z, &before);
	ck_assert_uint_eq(before.same_pages, 0);
	zram_set_mem_limit(z, 1); /* every store of the pool is refused now */

	/* A whole zero page over data: its memory goes, nothing is needed. */
	memset(model[3], 0, PG);
	ck_assert_int_eq(do_io(z, REQ_OP_WRITE, 3 * PG, model[3], (unsigned int)PG, 1), 0);
	ck_assert_uint_eq(flags_of(z, 3) & ZRAM_ZERO, ZRAM_ZERO);
	ck_assert_uint_eq(handle_of(z, 3), 0);
	ck_assert_int_eq(state_of(z, 3), ZRAM_PAGE_ZERO);
	zram_mm_stat(z, &ms);
	ck_assert_uint_eq(ms.same_pages, 1);
	ck_assert_uint_eq(ms.orig_data_size, before.orig_data_size);
	ck_assert_uint_eq(ms.objects, before.objects);
	ck_assert_uint_lt(ms.compr_data_size, before.compr_data_size);

	/* One bio of two zero pages, then data: the zeroes land, the data is refused. */
	make_page(run + 2 * PG, PAGE_RANDOM, 1000, 0);
	ck_assert_int_eq(do_io(z, REQ_OP_WRITE, 12 * PG, run, (unsigned int)(3 * PG), 1), -EIO);
	memset(model[12], 0, PG);
	memset(model[13], 0, PG);
	ck_assert_int_eq(state_of(z, 12), ZRAM_PAGE_ZERO);
	ck_assert_int_eq(state_of(z, 13), ZRAM_PAGE_ZERO);
	ck_assert_int_eq(state_of(z, 14), ZRAM_PAGE_DATA);

	/* A partial write, and a WRITE_ZEROES edge, that leave a page all zero. */
	ck_assert_int_eq(do_io(z, REQ_OP_WRITE, 9 * PG, run, 512, 1), 0);
	memset(model[9], 0, 512);
	ck_assert_int_eq(state_of(z, 9), ZRAM_PAGE_ZERO);
	memset(model[20] + 512, 0, PG - 512);
	zram_set_mem_limit(z, 0);
	ck_assert_int_eq(do_io(z, REQ_OP_WRITE, 20 * PG, model[20], (unsigned int)PG, 1), 0);
	zram_set_mem_limit(z, 1);
	ck_assert_int_eq(do_io(z, REQ_OP_WRITE_ZEROES, 20 * PG, NULL, 512, 1), 0);
	memset(model[20], 0, 512);
	ck_assert_int_eq(state_of(z, 20), ZRAM_PAGE_ZERO);
	/* Zeroing part of a page that keeps data still needs a store. */
	ck_assert_int_eq(do_io(z, REQ_OP_WRITE_ZEROES, 21 * PG, NULL, 512, 1), -EIO);
	/* Data over a zero page needs one too, and the zero page stays. */
	ck_assert_int_eq(do_io(z, REQ_OP_WRITE, 3 * PG + 512, run + 2 * PG, 512, 1), -EIO);
	ck_assert_int_eq(state_of(z, 3), ZRAM_PAGE_ZERO);
	for (i = 0; i < DISK_PAGES; i++)
		check_page(z, i, model[i]);
	zram_mm_stat(z, &ms);
	ck_assert_uint_eq(ms.same_pages, 5);
	check_accounting(z, DISK_PAGES, DISK_PAGES);

	/* Not idle, not written back or recompressed: there is nothing to move. */
	ck_assert_uint_eq(zram_idle_mark(z, 0), DISK_PAGES - 5);

	/* Freed: a discard of a zero page counts, and the page becomes a hole. */
	ck_assert_int_eq(do_io(z, REQ_OP_DISCARD, 12 * PG, NULL, (unsigned int)(2 * PG), 1), 0);
	ck_assert_int_eq(state_of(z, 12), ZRAM_PAGE_UNALLOCATED);
	ck_assert_uint_eq(flags_of(z, 12) & ZRAM_ZERO, 0);
	zram_io_stat(z, &io);
	ck_assert_uint_eq(io.notify_free, 2);
	check_accounting(z, DISK_PAGES, DISK_PAGES - 2);

	/* Data over a zero page, with room again: no longer counted as zero. */
	zram_set_mem_limit(z, 0);
	ck_assert_int_eq(do_io(z, REQ_OP_WRITE, 3 * PG, model[5], (unsigned int)PG, 1), 0);
	memcpy(model[3], model[5], PG);
	check_page(z, 3, model[3]);
	ck_assert_int_eq(state_of(z, 3), ZRAM_PAGE_DATA);
	zram_mm_stat(z, &ms);
	ck_assert_uint_eq(ms.same_pages, 2);
	check_accounting(z, DISK_PAGES, DISK_PAGES - 2);

	ck_assert_int_eq(zram_reset(z), 0);
	zram_mm_stat(z, &ms);
	ck_assert_uint_eq(ms.same_pages, 0);
	ck_assert_uint_eq(ms.orig_data_size, 0);
	ck_assert_int_eq(state_of(z, 9), ZRAM_PAGE_UNALLOCATED);
	free(run);
	zram_destroy(z);
}
END_TEST

/*
 * Issue 10: the slot table is sparse.  An empty 1 TiB disk costs under 1 MiB;
 * a page written far in costs its table pages (one per level) and no more.
 */
START_TEST(test_sparse_table)
{
	/* The largest disk: 1 TiB less a page with 4 KiB pages. */
	const uint64_t tib = zpool__max_objects() * PG;
	struct zram *big = new_zram(tib, 0), *small = new_zram(PG, 0);
	struct zpool_stats b0, b1, s0, s1;
	unsigned char page[PG];
	uint64_t grow;

	zram_mm_stat(big, &b0);
	ck_assert_uint_lt(b0.mem_used_total, 1 << 20);

	zram_mm_stat(small, &s0);
	make_page(page, PAGE_TEXT, 7, 0);
	ck_assert_int_eq(do_io(big, REQ_OP_WRITE, tib - PG, page, (unsigned int)PG, 1), 0);
	ck_assert_int_eq(do_io(small, REQ_OP_WRITE, 0, page, (unsigned int)PG, 1), 0);
	zram_mm_stat(big, &b1);
	zram_mm_stat(small, &s1);
	/* The small disk's table is its root leaf: its growth is the pool's. */
	grow = (b1.mem_used_total - b0.mem_used_total) - (s1.mem_used_total - s0.mem_used_total);
	ck_assert_uint_ge(grow, PG);	 /* at least a leaf, counted */
	ck_assert_uint_le(grow, 4 * PG); /* at most a page per level */
	check_page(big, tib / PG - 1, page);
	memset(page, 0, PG);
	check_page(big, tib / PG / 2, page); /* no leaf there: reads zeroes */

	/* A limit sized for a few pages lets a thin disk take a few pages. */
	zram_set_mem_limit(big, b1.mem_used_total + 16 * PG);
	make_page(page, PAGE_TEXT, 8, 0);
	ck_assert_int_eq(do_io(big, REQ_OP_WRITE, tib / PG / 2 * PG, page, (unsigned int)PG, 1), 0);
	check_page(big, tib / PG / 2, page);

	/* Reset gives the table back down to its root. */
	ck_assert_int_eq(zram_reset(big), 0);
	zram_mm_stat(big, &b1);
	ck_assert_uint_eq(b1.mem_used_total, b0.mem_used_total);
	zram_destroy(big);
	zram_destroy(small);
}
END_TEST

/* What zram_create() refuses, and why. */
START_TEST(test_create_refuses)
{
	struct zram_config cfg = ZRAM_CONFIG_INIT;
	struct zpool_page_source bad = { .alloc = NULL }, src;
	struct fail_source f;
	struct zram *z;
	long k;

	cfg.disksize = ZRAM_MAX_DISKSIZE + 1;
	errno = 0;
	ck_assert_ptr_null(zram_create(&cfg));
	ck_assert_int_eq(errno, EINVAL);
	/* One page more than a pool can store: its last page could fail. */
	cfg.disksize = (zpool__max_objects() + 1) * PG;
	errno = 0;
	ck_assert_ptr_null(zram_create(&cfg));
	ck_assert_int_eq(errno, EINVAL);
	cfg.disksize = zpool__max_objects() * PG - 1; /* rounds up to the most */
	z = zram_create(&cfg);
	ck_assert_ptr_nonnull(z);
	zram_destroy(z);
	cfg.disksize = ZRAM_MAX_DISKSIZE + 1;
	errno = 0;
	ck_assert_ptr_null(zram_create(&cfg));
	ck_assert_int_eq(errno, EINVAL);
	cfg.disksize = UINT64_MAX;
	errno = 0;
	ck_assert_ptr_null(zram_create(&cfg));
	ck_assert_int_eq(errno, EINVAL);
	cfg.disksize = PG;
	cfg.pool.page_source = &bad;
	errno = 0;
	ck_assert_ptr_null(zram_create(&cfg));
	ck_assert_int_eq(errno, EINVAL);

	/* Every allocation creation makes fails in turn: ENOMEM, nothing leaked. */
	for (k = 1;; k++) {
		z = new_zram_src(zpool__max_objects() * PG, &f, &src, ZPOOL_F_CHECKSUM);
		ck_assert_ptr_nonnull(z);
		zram_destroy(z);
		ck_assert_int_eq(atomic_load(&f.outstanding), 0);
		if (k > atomic_load(&f.calls))
			break;
		memset(&f, 0, sizeof(f));
		f.fail_at = k;
		src.ctx = &f;
		cfg.disksize = zpool__max_objects() * PG;
		cfg.pool.flags = 0;
		cfg.pool.page_source = &src;
		errno = 0;
		ck_assert_ptr_null(zram_create(&cfg));
		ck_assert_int_eq(errno, ENOMEM);
		ck_assert_int_eq(atomic_load(&f.outstanding), 0);
	}
	ck_assert_int_gt(k, 2); /* the table's root and at least the pool */
}
END_TEST

/*
 * Issue 10: when the page source fails during writes, those writes fail
 * with EIO and every other page reads back as it was.  With
 * ZPOOL_F_MULTI_PAGE a third of the writes are runs of whole pages within
 * one group, in one piece: all of the run is stored or none of it.
 */
START_TEST(test_page_source_failure)
{
	enum { N = 1024 };
	const uint32_t flags = loop_flags(_i, 2);
	static unsigned char model[N][PG];
	unsigned char buf[GRP * PG + 8], want[GRP * PG];
	struct zpool_page_source src;
	struct fail_source f;
	struct zram *z = new_zram_src((uint64_t)N * PG, &f, &src, flags);
	struct rng rng = { 99 };
	struct zram_io_stat io;
	unsigned int i, step, failed = 0;

	ck_assert_ptr_nonnull(z);
	memset(model, 0, sizeof(model));
	/* The upper half stays unwritten: its table leaves do not exist yet. */
	for (i = 0; i < N / 2; i += 3) {
		make_page(model[i], (enum page_kind)(i % PAGE_KINDS), i, 50 * i);
		ck_assert_int_eq(do_io(z, REQ_OP_WRITE, (uint64_t)i * PG, model[i],
				       (unsigned int)PG, 1), 0);
	}
	if (flags & ZPOOL_F_MULTI_PAGE) {
		/* Groups to fail over, in the lower half. */
		for (i = N / 4; i < N / 4 + 4 * GRP; i++)
			make_page(model[i], PAGE_TEXT, i, 0);
		ck_assert_int_eq(do_io(z, REQ_OP_WRITE, (uint64_t)N / 4 * PG, model[N / 4],
				       4 * GRP * (unsigned int)PG, 1), 0);
	}
	atomic_store(&f.fail, true);
	for (step = 0; step < test_scale(600); step++) {
		uint64_t idx = rng_range(&rng, 0, N - 1);
		unsigned int kind = rng_range(&rng, 0, PAGE_KINDS - 1), off = 0, len = (unsigned int)PG;
		unsigned int pieces = rng_range(&rng, 1, 3), p, k;
		int ret;

		make_page(want, (enum page_kind)kind, 1000 + step, rng_range(&rng, 0, (unsigned int)PG));
		if (step % 3 == 0) {
			off = rng_range(&rng, 0, (unsigned int)(PG / 512 - 1)) * 512;
			len = rng_range(&rng, 1, (unsigned int)((PG - off) / 512)) * 512;
		} else if (step % 3 == 1 && (flags & ZPOOL_F_MULTI_PAGE)) {
			unsigned int n = rng_range(&rng, 2, GRP);

			idx = (idx % (N / 2)) / GRP * GRP + rng_range(&rng, 0, GRP - n);
			for (p = 1; p < n; p++)
				make_page(want + p * PG, p % 2 ? PAGE_TEXT : PAGE_BINARY, step + p,
					  0);
			len = n * (unsigned int)PG;
			pieces = 1;
		}
		memcpy(buf, want, len); /* do_io() moves bytes apart for its gaps */
		ret = do_io(z, REQ_OP_WRITE, idx * PG + off, buf, len, pieces);
		ck_assert_msg(ret == 0 || ret == -EIO, "write: %d", ret);
		if (ret) {
			/*
			 * A piece before the refused one is written (the bio
			 * stops there): new bytes up to a point, old after it.
			 * In one piece of whole pages that point is where a
			 * group may start: the first page, an aligned group
			 * boundary, or the page after a zero page (which is
			 * written alone); a group goes in whole or not at all.
			 */
			ck_assert_int_eq(do_io(z, REQ_OP_READ, idx * PG, buf,
					       (off + len + PG - 1) / PG * (unsigned int)PG, 1), 0);
			for (k = 0; k < len && buf[off + k] == want[k]; k++)
				;
			if (pieces == 1 && (len <= PG || ZP_GROUP_PAGES > 1)) {
				unsigned int j = k / (unsigned int)PG;

				k = j * (unsigned int)PG;
				ck_assert_msg(!j || (idx + j) % ZP_GROUP_PAGES == 0 ||
						      all_zero_page(want + (size_t)(j - 1) * PG),
					      "a group of pages %llu.. torn at %u",
					      (unsigned long long)idx, j);
			}
			ck_assert_mem_eq(buf, model[idx], off);
			for (p = off + k; k < len && buf[p] == model[idx + p / PG][p % PG]; p++)
				k++;
			ck_assert_uint_eq(k, len);
		}
		for (k = 0; k < len; k++)
			model[idx + (off + k) / PG][(off + k) % PG] = ret ? buf[off + k] : want[k];
		failed += ret != 0;
	}
	ck_assert_uint_gt(failed, 0);
	zram_io_stat(z, &io);
	ck_assert_uint_eq(io.failed_writes, failed);
	for (i = 0; i < N; i++)
		check_page(z, i, model[i]);
	atomic_store(&f.fail, false);
	for (i = 0; i < N; i++)
		check_page(z, i, model[i]);
	atomic_store(&f.fail, true);
	/* A reset that cannot make its pool says so and can be retried. */
	ck_assert_int_eq(zram_reset(z), -ENOMEM);
	memset(buf, 0, PG);
	check_page(z, 3, buf);
	ck_assert_int_eq(do_io(z, REQ_OP_WRITE, 3 * PG, model[3], (unsigned int)PG, 1), -EIO);
	atomic_store(&f.fail, false);
	ck_assert_int_eq(zram_reset(z), 0);
	ck_assert_int_eq(do_io(z, REQ_OP_WRITE, 3 * PG, model[3], (unsigned int)PG, 1), 0);
	check_page(z, 3, model[3]);
	zram_destroy(z);
	ck_assert_int_eq(atomic_load(&f.outstanding), 0);
}
END_TEST

/* Two threads write disjoint halves of the same pages: no lost update. */
struct half {
	struct zram *z;
	unsigned int which, rounds;
	int err;
};

static void *write_half(void *arg)
{
	struct half *h = arg;
	unsigned char buf[PG / 2];
	unsigned int r, p;

	for (r = 0; r < h->rounds; r++)
		for (p = 0; p < 8; p++) {
			memset(buf, (int)(h->which * 100 + r % 50 + 1), sizeof(buf));
			h->err |= do_io(h->z, REQ_OP_WRITE, p * PG + h->which * PG / 2, buf,
					(unsigned int)(PG / 2), 1);
		}
	return NULL;
}

START_TEST(test_concurrent_sub_page_writes)
{
	struct zram *z = new_zram(8 * PG, 0);
	struct half h[2];
	pthread_t t[2];
	unsigned char out[PG];
	unsigned int i, p, rounds = test_scale(400);

	for (i = 0; i < 2; i++) {
		h[i].z = z;
		h[i].which = i;
		h[i].rounds = rounds;
		h[i].err = 0;
		pthread_create(&t[i], NULL, write_half, &h[i]);
	}
	for (i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		ck_assert_int_eq(h[i].err, 0);
	}
	for (p = 0; p < 8; p++) {
		ck_assert_int_eq(do_io(z, REQ_OP_READ, p * PG, out, (unsigned int)PG, 1), 0);
		for (i = 0; i < PG; i++)
			ck_assert_uint_eq(out[i], (i < PG / 2 ? 0 : 100) + (rounds - 1) % 50 + 1);
	}
	zram_destroy(z);
}
END_TEST

/*
 * Issue 16 item 8: I/O on two threads while two others change mem_limit,
 * read statistics, compact, mark idle pages and reset the device.  Under
 * ThreadSanitizer (scripts/test's TSan step) any unsynchronised field of
 * struct zram is a failure; without it, a reset racing I/O crashed.
 */
struct racer {
	struct zram *z;
	atomic_int *stop;
	unsigned int id;
	unsigned int max_pages;
	int err;
};

static void *race_io(void *arg)
{
	struct racer *r = arg;
	struct rng rng = { 77 + r->id };
	unsigned char *buf = malloc((size_t)r->max_pages * PG + 8);
	unsigned int n = 0, p;

	while (!atomic_load(r->stop) || n < 50) {
		unsigned int sectors = rng_range(&rng, 1, (unsigned int)(r->max_pages * PG / 512));
		uint64_t start = (uint64_t)rng_range(&rng, 0, DISK_BYTES / 512 - sectors) * 512;
		unsigned int op = rng_range(&rng, 0, 5), len = sectors * 512;
		int ret;

		for (p = 0; p < r->max_pages; p++)
			make_page(buf + (size_t)p * PG, (enum page_kind)((op + p / 2) % PAGE_KINDS),
				  n + p, 100);
		memset(buf + (size_t)r->max_pages * PG, 0, 8);
		if (op < 3)
			ret = do_io(r->z, REQ_OP_WRITE, start, buf, len, rng_range(&rng, 1, 3));
		else if (op < 5)
			ret = do_io(r->z, REQ_OP_READ, start, buf, len, 1);
		else
			ret = do_io(r->z, n % 2 ? REQ_OP_DISCARD : REQ_OP_WRITE_ZEROES, start,
				    NULL, len, 1);
		/* Only a store refused at the limit may fail. */
		if (ret && !(ret == -EIO && op != 3 && op != 4))
			r->err = ret;
		n++;
	}
	free(buf);
	return NULL;
}

static void *race_control(void *arg)
{
	struct racer *r = arg;
	unsigned int i, rounds = test_scale(300);
	struct zpool_stats ms;
	struct zram_io_stat io;
	char text[256];

	for (i = 0; i < rounds; i++) {
		zram_set_mem_limit(r->z, i % 3 ? 0 : (uint64_t)(16 + i % 32) * PG);
		zram_mm_stat(r->z, &ms);
		zram_io_stat(r->z, &io);
		zram_format_mm_stat(&ms, text, sizeof(text));
		if (ms.mem_limit && ms.mem_limit % PG)
			r->err = -ERANGE; /* a torn limit */
		if (r->id == 0) {
			zram_compact(r->z);
			zram_idle_mark(r->z, i % 2);
			zram_idle_pages(r->z);
		} else if (i % 50 == 49 && zram_reset(r->z)) {
			r->err = -ENOMEM;
		}
	}
	return NULL;
}

START_TEST(test_races)
{
	const uint32_t flags = loop_flags(_i, 2);
	struct zram *z = new_zram_flags(DISK_BYTES, 0, flags);
	atomic_int stop = 0;
	struct racer r[4];
	pthread_t t[4];
	unsigned char page[PG];
	unsigned int i;

	for (i = 0; i < 4; i++) {
		r[i].z = z;
		r[i].stop = &stop;
		r[i].id = i % 2;
		r[i].max_pages = flags & ZPOOL_F_MULTI_PAGE ? 2 * GRP + 1 : 2;
		r[i].err = 0;
		ck_assert_int_eq(pthread_create(&t[i], NULL, i < 2 ? race_io : race_control,
						&r[i]), 0);
	}
	pthread_join(t[2], NULL);
	pthread_join(t[3], NULL);
	atomic_store(&stop, 1);
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	for (i = 0; i < 4; i++)
		ck_assert_msg(r[i].err == 0, "thread %u: %d", i, r[i].err);
	zram_set_mem_limit(z, 0);
	make_page(page, PAGE_TEXT, 1, 0);
	ck_assert_int_eq(do_io(z, REQ_OP_WRITE, 0, page, (unsigned int)PG, 1), 0);
	check_page(z, 0, page);
	zram_destroy(z);
}
END_TEST

/*
 * Two threads that create the same slot-table leaf at once both allocate
 * it, and the loser frees its copy.  The pool's share of mem_limit must
 * not keep counting the loser's page: after every race it is exactly the
 * device's limit less the table the device holds.  Every round is made to
 * race the same way: a page source holds each thread's leaf allocation
 * until the other's arrives; the test holds the device's limit lock until
 * both copies are counted, so the winner's update counts the loser's page;
 * and the source holds the loser's free until that update is done.
 */
struct leaf_race {
	struct zram *z;
	pthread_barrier_t gate, round;
	atomic_bool armed;
	unsigned int leaves;
	_Atomic uint64_t pool_limit;	/* the pool's limit before this round's update */
	atomic_int bad;
};

static void *gate_alloc(void *ctx, size_t bytes)
{
	struct leaf_race *lr = ctx;

	if (atomic_load(&lr->armed) && bytes == PG)
		pthread_barrier_wait(&lr->gate);
	return aligned_alloc(PG, bytes);
}

/* Bounded waits: a device that changed its ways fails the test, not hangs it. */
static void gate_free(void *ctx, void *mem, size_t bytes)
{
	struct leaf_race *lr = ctx;
	struct zpool_stats st;
	int waits;

	for (waits = 0; atomic_load(&lr->armed) && bytes == PG && waits < 20000; waits++) {
		zpool_stats(lr->z->pool, &st);
		if (st.mem_limit != atomic_load(&lr->pool_limit))
			break;
		usleep(100);
	}
	free(mem);
}

struct leaf_racer {
	struct leaf_race *lr;
	unsigned int id;
};

static void *race_leaves(void *arg)
{
	struct leaf_racer *r = arg;
	struct leaf_race *lr = r->lr;
	unsigned char zero[PG];
	unsigned int k;

	memset(zero, 0, PG);
	for (k = 1; k <= lr->leaves; k++) {
		uint64_t index = (uint64_t)k * SLOTS_PER_LEAF + r->id;

		pthread_barrier_wait(&lr->round);
		/* A zero page costs no pool memory, only its slot. */
		if (do_io(lr->z, REQ_OP_WRITE, index * PG, zero, (unsigned int)PG, 1))
			atomic_store(&lr->bad, -1);
		pthread_barrier_wait(&lr->round);
	}
	return NULL;
}

START_TEST(test_table_race_limit)
{
	const uint64_t limit = (uint64_t)1 << 40;
	struct leaf_race lr = { .bad = 0 };
	struct zpool_page_source src = { .alloc = gate_alloc, .free = gate_free, .ctx = &lr };
	struct zram_config cfg = ZRAM_CONFIG_INIT;
	struct leaf_racer r[2];
	struct zpool_stats st;
	pthread_t t[2];
	uint64_t table;
	unsigned int i, k;
	int waits;

	/*
	 * One level under the root, so a new leaf is the only page a write
	 * allocates; large pages make few leaves fit the largest disk.
	 */
	lr.leaves = (unsigned int)(zpool__max_objects() / SLOTS_PER_LEAF - 1);
	lr.leaves = test_scale(lr.leaves < 128 ? lr.leaves : 128);
	if (lr.leaves > PTRS_PER_NODE - 1)
		lr.leaves = (unsigned int)PTRS_PER_NODE - 1;
	cfg.disksize = ((uint64_t)lr.leaves + 1) * SLOTS_PER_LEAF * PG;
	cfg.pool.mem_limit = limit;
	cfg.pool.page_source = &src;
	lr.z = zram_create(&cfg);
	ck_assert_ptr_nonnull(lr.z);
	ck_assert_uint_eq(lr.z->depth, 1);
	ck_assert_int_eq(pthread_barrier_init(&lr.gate, NULL, 2), 0);
	ck_assert_int_eq(pthread_barrier_init(&lr.round, NULL, 3), 0);
	atomic_store(&lr.armed, true);
	for (i = 0; i < 2; i++) {
		r[i] = (struct leaf_racer){ .lr = &lr, .id = i };
		ck_assert_int_eq(pthread_create(&t[i], NULL, race_leaves, &r[i]), 0);
	}
	for (k = 1; k <= lr.leaves; k++) {
		zpool_stats(lr.z->pool, &st);
		atomic_store(&lr.pool_limit, st.mem_limit);
		table = atomic_load(&lr.z->table_pages);
		zpool__mutex_lock(lr.z->limit_lock);
		pthread_barrier_wait(&lr.round);
		for (waits = 0; atomic_load(&lr.z->table_pages) < table + 2 && waits < 20000; waits++)
			usleep(100);
		zpool__mutex_unlock(lr.z->limit_lock);
		pthread_barrier_wait(&lr.round);
		ck_assert_int_eq(atomic_load(&lr.bad), 0);
		ck_assert_uint_eq(atomic_load(&lr.z->table_pages), table + 1);
		zpool_stats(lr.z->pool, &st);
		ck_assert_msg(st.mem_limit == limit - (table + 1) * ZP_PAGE_SIZE,
			      "round %u: the pool's limit %llu counts %llu table pages, not %llu", k,
			      (unsigned long long)st.mem_limit,
			      (unsigned long long)((limit - st.mem_limit) / ZP_PAGE_SIZE),
			      (unsigned long long)(table + 1));
	}
	for (i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
	atomic_store(&lr.armed, false);
	zram_destroy(lr.z);
	pthread_barrier_destroy(&lr.gate);
	pthread_barrier_destroy(&lr.round);
}
END_TEST

/*
 * Runs of whole pages over overlapping groups on three threads, with
 * ZPOOL_F_MULTI_PAGE or not: every page read is a whole page some write
 * gave that very page (its number and generation head it), or zeroes from
 * a discard, never a mix, never a neighbour's.  Writes and reads start at
 * any page and may cross a group; discards free members of live groups.
 */
struct stamper {
	struct zram *z;
	unsigned int id, rounds;
	int err;
};

#define ATOMIC_PAGES (4 * GRP)

static void stamp_page(unsigned char *p, uint64_t index, uint64_t gen)
{
	uint64_t head = index << 32 | gen;

	make_page(p, PAGE_TEXT, head, 0);
	memcpy(p, &head, sizeof(head));
}

/* 0 if @p is zeroes or a page stamped for @index. */
static int stamp_check(const unsigned char *p, uint64_t index)
{
	unsigned char want[PG];
	uint64_t head;

	memcpy(&head, p, sizeof(head));
	if (!head)
		return all_zero_page(p) ? 0 : -EILSEQ;
	if (head >> 32 != index)
		return -ENXIO;
	stamp_page(want, index, head & 0xffffffffu);
	return memcmp(p, want, PG) ? -EILSEQ : 0;
}

static void *stamp_io(void *arg)
{
	struct stamper *t = arg;
	struct rng rng = { 31 + t->id };
	unsigned char *buf = malloc((size_t)(2 * GRP + 1) * PG);
	unsigned int r, p;

	for (r = 0; r < t->rounds && !t->err; r++) {
		unsigned int n = rng_range(&rng, 1, 2 * GRP + 1);
		uint64_t first = rng_range(&rng, 0, ATOMIC_PAGES - n);
		unsigned int op = rng_range(&rng, 0, 9);
		int ret;

		if (op < 4) {
			for (p = 0; p < n; p++)
				stamp_page(buf + (size_t)p * PG, first + p,
					   (uint64_t)t->id << 24 | r);
			ret = do_io(t->z, REQ_OP_WRITE, first * PG, buf, n * (unsigned int)PG, 1);
		} else if (op < 9) {
			ret = do_io(t->z, REQ_OP_READ, first * PG, buf, n * (unsigned int)PG, 1);
			for (p = 0; !ret && p < n; p++)
				ret = stamp_check(buf + (size_t)p * PG, first + p);
		} else {
			ret = do_io(t->z, r % 2 ? REQ_OP_DISCARD : REQ_OP_WRITE_ZEROES, first * PG,
				    NULL, n * (unsigned int)PG, 1);
		}
		t->err = ret;
	}
	free(buf);
	return NULL;
}

/* Compaction beside the stampers: it stores pages of sparse groups again. */
struct compactor {
	struct zram *z;
	atomic_bool stop;
	unsigned long passes;
};

static void *compact_loop(void *arg)
{
	struct compactor *c = arg;

	while (!atomic_load(&c->stop)) {
		zram_compact(c->z);
		c->passes++;
	}
	return NULL;
}

static void check_stamped(struct zram *z, uint64_t index)
{
	unsigned char page[PG];

	ck_assert_int_eq(do_io(z, REQ_OP_READ, index * PG, page, (unsigned int)PG, 1), 0);
	ck_assert_int_eq(stamp_check(page, index), 0);
}

START_TEST(test_multi_atomic)
{
	const uint32_t flags = loop_flags(_i, 2);
	struct zram *z = new_zram_flags(ATOMIC_PAGES * PG, 0, flags);
	struct compactor cp = { .z = z };
	struct stamper t[3];
	pthread_t th[3], ct;
	struct zpool_stats ms;
	unsigned int i;

	atomic_init(&cp.stop, false);
	ck_assert_int_eq(pthread_create(&ct, NULL, compact_loop, &cp), 0);
	for (i = 0; i < 3; i++) {
		t[i] = (struct stamper){ z, i + 1, test_scale(1500), 0 };
		ck_assert_int_eq(pthread_create(&th[i], NULL, stamp_io, &t[i]), 0);
	}
	for (i = 0; i < 3; i++) {
		pthread_join(th[i], NULL);
		ck_assert_msg(t[i].err == 0, "thread %u: %d", i, t[i].err);
	}
	atomic_store(&cp.stop, true);
	pthread_join(ct, NULL);
	ck_assert_uint_gt(cp.passes, 0);
	for (i = 0; i < ATOMIC_PAGES; i++) {
		check_stamped(z, i);
	}
	ck_assert_int_eq(do_io(z, REQ_OP_DISCARD, 0, NULL, ATOMIC_PAGES * (unsigned int)PG, 1), 0);
	zram_mm_stat(z, &ms);
	ck_assert_uint_eq(ms.orig_data_size, 0);
	ck_assert_uint_eq(ms.compr_data_size, 0);
	zram_destroy(z);
}
END_TEST

/* Two devices reported as one: the sums are field by field; NULL follows one rule. */
START_TEST(test_stats_sum)
{
	struct zram *a = new_zram(16 * PG, 0), *b = new_zram(16 * PG, 1 << 20);
	unsigned char *page = malloc(PG);
	struct zpool_stats sa, sb, sum = { 0 };
	struct zram_io_stat ia, ib, isum = { 0 };
	char line[256], want[256];
	unsigned int i;

	for (i = 0; i < PG; i++)
		page[i] = (unsigned char)(i * 7 / 13);
	ck_assert_int_eq(do_io(a, REQ_OP_WRITE, 0, page, (unsigned int)PG, 1), 0);
	ck_assert_int_eq(do_io(b, REQ_OP_WRITE, PG, page, (unsigned int)PG, 1), 0);
	ck_assert_int_eq(do_io(b, REQ_OP_WRITE, 3 * PG, page, (unsigned int)PG, 1), 0);
	ck_assert_int_eq(do_io(b, REQ_OP_WRITE, 0, page, 700, 1), -EIO); /* counted */
	zram_mm_stat(a, &sa);
	zram_mm_stat(b, &sb);
	zram_io_stat(a, &ia);
	zram_io_stat(b, &ib);
	zpool_stats_add(&sum, &sa);
	zpool_stats_add(&sum, &sb);
	zram_io_stat_add(&isum, &ia);
	zram_io_stat_add(&isum, &ib);
	ck_assert_uint_eq(sum.orig_data_size, 3 * PG);
	ck_assert_uint_eq(sum.compr_data_size, sa.compr_data_size + sb.compr_data_size);
	ck_assert_uint_eq(sum.mem_used_total, sa.mem_used_total + sb.mem_used_total);
	ck_assert_uint_eq(sum.mem_limit, 1 << 20);
	ck_assert_uint_eq(sum.metadata_bytes, sa.metadata_bytes + sb.metadata_bytes);
	ck_assert_uint_eq(sum.objects, 3);
	ck_assert_uint_eq(isum.invalid_io, 1);
	snprintf(want, sizeof(want), "%8llu", (unsigned long long)(3 * PG));
	zram_format_mm_stat(&sum, line, sizeof(line));
	ck_assert_int_eq(strncmp(line, want, strlen(want)), 0);
	zpool_stats_add(NULL, &sa);
	zpool_stats_add(&sum, NULL);
	zram_io_stat_add(NULL, &ia);
	zram_mm_stat(NULL, &sa);
	zram_io_stat(NULL, &ia);
	ck_assert_uint_eq(sum.orig_data_size, 3 * PG);
	/* The NULL rule of every zram_ and zpool_ function (doc/porting.md). */
	errno = 0;
	ck_assert_ptr_null(zram_disk(NULL));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(zram_reset(NULL), -EINVAL);
	ck_assert_uint_eq(zram_compact(NULL), 0);
	ck_assert_uint_eq(zram_idle_mark(NULL, 0), 0);
	ck_assert_uint_eq(zram_idle_pages(NULL), 0);
	zram_set_mem_limit(NULL, 1);
	ck_assert_int_eq(zram_format_mm_stat(NULL, line, sizeof(line)), -EINVAL);
	ck_assert_int_eq(zram_format_io_stat(NULL, line, sizeof(line)), -EINVAL);
	ck_assert_int_eq(zram_format_io_stat(&isum, NULL, 8), -EINVAL);
	ck_assert_uint_eq(zpool_compact(NULL), 0);
	ck_assert_int_eq(zpool_store(NULL, page, &(zpool_handle_t){ 0 }), -EINVAL);
	zram_destroy(a);
	zram_destroy(b);
	free(page);
}
END_TEST

int main(void)
{
	const TTest *const device[] = {
		test_invalid_config,
		test_invalid_io,
		test_mem_limit_keeps_old_data,
		test_multi_groups,
		test_multi_compact_regroups,
		test_mem_limit_multi,
		test_stats_idle_compact_reset,
		test_concurrent_sub_page_writes,
		test_discard_at_limit,
		test_sparse_table,
		test_create_refuses,
		test_stats_sum,
		test_table_race_limit,
		NULL
	};
	const TTest *const flags[] = { test_page_source_failure, test_races, test_multi_atomic,
		test_zero_pages, NULL };
	const TTest *const model[] = { test_model, NULL };
	const struct test_group groups[] = {
		{ .name = "device", .tests = device, .timeout = 600 },
		{ .name = "flags", .tests = flags, .timeout = 600, .loops = 2 },
		{ .name = "model", .tests = model, .timeout = 600, .loops = 6 },
		{ .name = NULL },
	};

	return test_main("zram", groups);
}

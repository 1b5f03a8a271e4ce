// SPDX-License-Identifier: MIT
/* bio.h: building, cursors, split/clone/trim/truncate/copy, chains, refs. */
#include <pthread.h>

#include <libbvec/bio.h>

#include "testutil.h"

#define PS ((unsigned int)BVEC_PAGE_SIZE)

static struct test_alloc ta;
static struct bio_set bs;

static void setup(void)
{
	struct bvec_allocator a = test_allocator(&ta);

	ck_assert_int_eq(bvec_bioset_init(&bs, 4, 0, BIOSET_NEED_BVECS, &a), 0);
}

static void teardown(void)
{
	bioset_exit(&bs);
	ck_assert_int_eq(atomic_load(&ta.outstanding), 0);
}

START_TEST(test_add_page_merges_only_contiguous)
{
	unsigned char buf[256];
	struct bio *bio = bio_alloc_bioset(NULL, 4, REQ_OP_WRITE, GFP_KERNEL, &bs);

	ck_assert_ptr_nonnull(bio);
	ck_assert_uint_eq(bio->bi_max_vecs, BIO_INLINE_VECS);
	ck_assert_int_eq(bio_add_virt(bio, buf, 10), 10);
	ck_assert_int_eq(bio_add_virt(bio, buf + 10, 20), 20);	/* merges */
	ck_assert_uint_eq(bio->bi_vcnt, 1);
	ck_assert_uint_eq(bio->bi_io_vec[0].bv_len, 30);
	ck_assert_int_eq(bio_add_virt(bio, buf + 31, 5), 5);	/* gap: no merge */
	ck_assert_int_eq(bio_add_virt(bio, buf + 100, 5), 5);
	ck_assert_int_eq(bio_add_virt(bio, buf + 200, 5), 5);
	ck_assert_uint_eq(bio->bi_vcnt, 4);
	ck_assert_int_eq(bio_add_virt(bio, buf + 250, 5), 0);	/* table full */
	ck_assert_int_eq(bio_add_virt(bio, buf + 205, 5), 5);	/* still merges */
	ck_assert_int_eq(bio_add_virt(bio, buf + 220, 0), 0);	/* zero length */
	ck_assert_uint_eq(bio->bi_iter.bi_size, 30 + 5 + 5 + 10);
	bio_put(bio);
}
END_TEST

START_TEST(test_add_page_size_overflow)
{
	struct bio_vec table[2];
	unsigned char buf[16];
	struct bio bio;

	bio_init(&bio, NULL, table, 2, REQ_OP_WRITE);
	bio.bi_iter.bi_size = UINT32_MAX - 8;
	ck_assert_int_eq(bio_add_virt(&bio, buf, 16), 0);
	ck_assert_uint_eq(bio.bi_vcnt, 0);
	ck_assert_int_eq(bio_add_virt(&bio, buf, 8), 8);
	bio_uninit(&bio);
}
END_TEST

START_TEST(test_predicates)
{
	unsigned char *mem = test_pages(3);
	struct bio_vec table[2], first;
	struct bio bio;

	ck_assert(!bio_has_data(NULL));
	bio_init(&bio, NULL, table, 2, REQ_OP_WRITE | REQ_FUA);
	ck_assert(!bio_has_data(&bio));
	ck_assert_int_eq(bio_op(&bio), REQ_OP_WRITE);
	ck_assert_int_eq(bio_data_dir(&bio), 1);
	ck_assert_int_eq(bio_add_virt(&bio, mem + 100, 2 * PS), (int)(2 * PS));
	bio.bi_iter.bi_sector = 1000;
	ck_assert(bio_has_data(&bio));
	ck_assert_uint_eq(bio_sectors(&bio), 2 * PS / 512);
	ck_assert_uint_eq(bio_end_sector(&bio), 1000 + 2 * PS / 512);
	ck_assert_uint_eq(bio_segments(&bio), 3);
	first = bio_iovec(&bio);
	ck_assert_ptr_eq(bvec_virt(&first), mem + 100);
	ck_assert_uint_eq(first.bv_len, PS - 100);

	bio.bi_opf = REQ_OP_DISCARD;
	ck_assert(!bio_has_data(&bio));
	ck_assert_uint_eq(bio_segments(&bio), 0);
	ck_assert_int_eq(bio_data_dir(&bio), 1);
	bio.bi_opf = REQ_OP_READ;
	ck_assert_int_eq(bio_data_dir(&bio), 0);
	bio_uninit(&bio);
	free(mem);
}
END_TEST

START_TEST(test_advance_iter_ops)
{
	unsigned char buf[2048];
	struct bio_vec table[1];
	struct bvec_iter iter;
	struct bio bio;

	bio_init(&bio, NULL, table, 1, REQ_OP_WRITE);
	bio_add_virt(&bio, buf, 2048);
	iter = bio.bi_iter;
	bio_advance_iter(&bio, &iter, 1024);
	ck_assert_uint_eq(iter.bi_sector, 2);
	ck_assert_uint_eq(iter.bi_bvec_done, 1024);

	/* No-data operations only shrink bi_size; the table is not touched. */
	bio.bi_opf = REQ_OP_WRITE_ZEROES;
	bio.bi_io_vec = NULL;
	iter = bio.bi_iter;
	bio_advance_iter(&bio, &iter, 1536);
	ck_assert_uint_eq(iter.bi_size, 512);
	ck_assert_uint_eq(iter.bi_sector, 3);
	ck_assert_uint_eq(iter.bi_bvec_done, 0);
	bio_advance_iter(&bio, &iter, 4096);
	ck_assert_uint_eq(iter.bi_size, 0);
	bio_uninit(&bio);
}
END_TEST

static struct bio *make_bio(unsigned char *mem, unsigned int nseg, unsigned int seglen)
{
	struct bio *bio = bio_alloc_bioset(NULL, (unsigned short)nseg, REQ_OP_WRITE,
					   GFP_KERNEL, &bs);
	unsigned int i;

	ck_assert_ptr_nonnull(bio);
	for (i = 0; i < nseg; i++) /* gaps keep the segments apart */
		ck_assert_int_eq(bio_add_virt(bio, mem + i * (seglen + 512), seglen),
				 (int)seglen);
	return bio;
}

START_TEST(test_split_shares_table)
{
	unsigned char *mem = test_pages(16);
	struct bio *bio = make_bio(mem, 8, 1024);
	struct bio *split;

	bio->bi_iter.bi_sector = 100;
	bio_advance(bio, 512); /* partly completed */
	split = bio_split(bio, 3, GFP_NOIO, &bs);
	ck_assert_ptr_nonnull(split);
	ck_assert_ptr_eq(split->bi_io_vec, bio->bi_io_vec);
	ck_assert(bio_flagged(split, BIO_CLONED));
	ck_assert_uint_eq(split->bi_vcnt, 0);
	ck_assert_uint_eq(split->bi_iter.bi_sector, 101);
	ck_assert_uint_eq(split->bi_iter.bi_size, 1536);
	ck_assert_uint_eq(split->bi_iter.bi_idx, 0);
	ck_assert_uint_eq(split->bi_iter.bi_bvec_done, 512);
	ck_assert_uint_eq(bio->bi_iter.bi_sector, 104);
	ck_assert_uint_eq(bio->bi_iter.bi_size, 8 * 1024 - 2048);
	ck_assert_uint_eq(bio->bi_iter.bi_idx, 2);
	ck_assert_uint_eq(bio->bi_iter.bi_bvec_done, 0);
	ck_assert_int_eq(bio_add_virt(split, mem, 512), 0); /* clones are read-only */
	bio_put(split);
	bio_put(bio);
	free(mem);
}
END_TEST

START_TEST(test_split_invalid)
{
	unsigned char *mem = test_pages(4);
	struct bio *bio = make_bio(mem, 2, 1024);
	struct bvec_iter before = bio->bi_iter;
	static const int bad[] = { 0, -1, 4, 5, INT32_MIN };
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		ck_assert_ptr_null(bio_split(bio, bad[i], GFP_KERNEL, &bs));
		ck_assert_int_eq(errno, EINVAL);
		ck_assert_mem_eq(&bio->bi_iter, &before, sizeof(before));
	}
	bio_put(bio);
	free(mem);
}
END_TEST

START_TEST(test_clone)
{
	unsigned char *mem = test_pages(4);
	struct bio *bio = make_bio(mem, 3, 1024);
	struct bio *clone;

	bio->bi_iter.bi_sector = 9;
	bio_advance(bio, 1536);
	clone = bio_alloc_clone(NULL, bio, GFP_KERNEL, &bs);
	ck_assert_ptr_nonnull(clone);
	ck_assert_mem_eq(&clone->bi_iter, &bio->bi_iter, sizeof(bio->bi_iter));
	ck_assert_ptr_eq(clone->bi_io_vec, bio->bi_io_vec);
	ck_assert_int_eq(clone->bi_opf, bio->bi_opf);
	bio_put(clone);
	bio_put(bio);
	free(mem);
}
END_TEST

/*
 * Clones of a caller's bio (bio_init_clone) share the table and copy the
 * cursor, as allocated clones do; the source's integrity payload comes too.
 */
START_TEST(test_init_clone)
{
	unsigned char *mem = test_pages(4), pi[16];
	struct bio *bio = make_bio(mem, 3, 1024);
	struct bio clone;

	memset(&clone, 0xa5, sizeof(clone)); /* whatever it held before */
	bio->bi_iter.bi_sector = 9;
	bio->bi_ioprio = 3;
	bio_advance(bio, 1536);
	ck_assert_int_eq(bio_init_clone(NULL, &clone, bio, GFP_KERNEL), 0);
	ck_assert(bio_flagged(&clone, BIO_CLONED));
	ck_assert_mem_eq(&clone.bi_iter, &bio->bi_iter, sizeof(bio->bi_iter));
	ck_assert_ptr_eq(clone.bi_io_vec, bio->bi_io_vec);
	ck_assert_uint_eq(clone.bi_vcnt, 0);
	ck_assert_int_eq(clone.bi_opf, bio->bi_opf);
	ck_assert_uint_eq(clone.bi_ioprio, 3);
	ck_assert_ptr_null(clone.bi_integrity);
	ck_assert_ptr_null(clone.bi_end_io);
	bio_uninit(&clone);

	ck_assert_ptr_nonnull(bio_integrity_alloc(bio, GFP_KERNEL, 1));
	ck_assert_int_eq(bio_integrity_add_page(bio, virt_to_page(pi), 16, offset_in_page(pi)), 16);
	ck_assert_int_eq(bio_init_clone(NULL, &clone, bio, GFP_KERNEL), 0);
	ck_assert_ptr_nonnull(clone.bi_integrity);
	ck_assert_ptr_ne(clone.bi_integrity, bio->bi_integrity);
	ck_assert_ptr_eq(clone.bi_integrity->bip_vec, bio->bi_integrity->bip_vec);
	bio_uninit(&clone);
	ck_assert_ptr_null(clone.bi_integrity);
	bio_put(bio);
	free(mem);
}
END_TEST

/*
 * The own-table accessors see bi_io_vec[0..bi_vcnt), never a clone's
 * borrowed table; bio_iter_last() marks only the final segment.
 */
START_TEST(test_table_accessors)
{
	unsigned char *mem = test_pages(4);
	struct bio *bio = make_bio(mem, 3, 1024);
	struct bio *clone, *empty;
	struct bio_vec *bvl, bv;
	struct bvec_iter iter;
	unsigned int lasts = 0, segs = 0, bytes = 0;
	int i;

	ck_assert_ptr_eq(bio_first_bvec_all(bio), &bio->bi_io_vec[0]);
	ck_assert_ptr_eq(bio_last_bvec_all(bio), &bio->bi_io_vec[2]);
	ck_assert_ptr_eq(bio_first_page_all(bio), virt_to_page(mem));
	bio_for_each_bvec_all(bvl, bio, i) {
		ck_assert_ptr_eq(bvl, &bio->bi_io_vec[i]);
		bytes += bvl->bv_len;
	}
	ck_assert_int_eq(i, 3);
	ck_assert_uint_eq(bytes, 3072);
	ck_assert_uint_eq(bvec_iter_sectors(bio->bi_iter), 6);

	bio_advance(bio, 512); /* the cursor moves; the table walk does not */
	bio_for_each_segment(bv, bio, iter) {
		segs++;
		if (bio_iter_last(bv, iter)) {
			lasts++;
			ck_assert_ptr_eq(bvec_virt(&bv), mem + 2 * (1024 + 512));
		}
	}
	ck_assert_uint_eq(segs, 3);
	ck_assert_uint_eq(lasts, 1);
	i = 0;
	bio_for_each_bvec_all(bvl, bio, i)
		;
	ck_assert_int_eq(i, 3);

	clone = bio_alloc_clone(NULL, bio, GFP_KERNEL, &bs);
	ck_assert_ptr_nonnull(clone);
	ck_assert_ptr_null(bio_first_bvec_all(clone));
	ck_assert_ptr_null(bio_first_page_all(clone));
	ck_assert_ptr_null(bio_last_bvec_all(clone));
	bio_for_each_bvec_all(bvl, clone, i)
		ck_abort_msg("a clone has no table of its own");
	empty = bio_alloc_bioset(NULL, 2, REQ_OP_READ, GFP_KERNEL, &bs);
	ck_assert_ptr_nonnull(empty);
	ck_assert_ptr_null(bio_last_bvec_all(empty));
	ck_assert_ptr_null(bio_first_page_all(empty));
	bio_put(empty);
	bio_put(clone);
	bio_put(bio);
	free(mem);
}
END_TEST

START_TEST(test_trim)
{
	unsigned char *mem = test_pages(8);
	struct bio *bio = make_bio(mem, 4, 2048); /* 16 sectors */
	struct bvec_iter before = bio->bi_iter;

	ck_assert_int_eq(bio_trim(bio, 10, 7), -EINVAL);
	ck_assert_int_eq(bio_trim(bio, UINT64_MAX, 2), -EINVAL);
	ck_assert_mem_eq(&bio->bi_iter, &before, sizeof(before));
	ck_assert_int_eq(bio_trim(bio, 0, 16), 0);
	ck_assert_int_eq(bio_trim(bio, 5, 6), 0);
	ck_assert_uint_eq(bio->bi_iter.bi_sector, 5);
	ck_assert_uint_eq(bio->bi_iter.bi_size, 6 * 512);
	ck_assert_uint_eq(bio->bi_iter.bi_idx, 1);
	ck_assert_uint_eq(bio->bi_iter.bi_bvec_done, 512);
	bio_put(bio);
	free(mem);
}
END_TEST

START_TEST(test_truncate_zeroes_read_tail)
{
	unsigned char *mem = test_pages(4);
	struct bio *bio = make_bio(mem, 2, 1024);
	unsigned char *a = mem, *b = mem + 1024 + 512;

	memset(mem, 0xaa, 4 * PS);
	bio->bi_opf = REQ_OP_READ;
	bio_truncate(bio, 700);
	ck_assert_uint_eq(bio->bi_iter.bi_size, 700);
	ck_assert_uint_eq(a[699], 0xaa);
	ck_assert_uint_eq(a[700], 0);
	ck_assert_uint_eq(a[1023], 0);
	ck_assert_uint_eq(b[0], 0);
	ck_assert_uint_eq(b[1023], 0);
	ck_assert_uint_eq(b[1024], 0xaa); /* outside the bio */
	bio_truncate(bio, 900);		  /* growing is a no-op */
	ck_assert_uint_eq(bio->bi_iter.bi_size, 700);

	memset(mem, 0xaa, 4 * PS);
	bio->bi_opf = REQ_OP_WRITE;
	bio_truncate(bio, 100);
	ck_assert_uint_eq(bio->bi_iter.bi_size, 100);
	ck_assert_uint_eq(a[600], 0xaa); /* a write's tail is the caller's data */
	bio_put(bio);
	free(mem);
}
END_TEST

START_TEST(test_copy_data)
{
	unsigned char *src_mem = test_pages(8), *dst_mem = test_pages(8);
	struct bio *src, *dst;
	struct bvec_iter si, di, src_before, dst_before;
	unsigned int i;

	for (i = 0; i < 8 * PS; i++)
		src_mem[i] = (unsigned char)(i * 7 + 3);
	memset(dst_mem, 0, 8 * PS);
	src = make_bio(src_mem, 5, 1000);
	dst = make_bio(dst_mem, 3, 1300);
	src_before = src->bi_iter;
	dst_before = dst->bi_iter;
	bio_copy_data(dst, src);
	ck_assert_mem_eq(&src->bi_iter, &src_before, sizeof(src_before));
	ck_assert_mem_eq(&dst->bi_iter, &dst_before, sizeof(dst_before));
	/* Byte k of dst's stream is byte k of src's stream. */
	for (i = 0; i < 3900; i++) {
		unsigned char want = src_mem[(i / 1000) * 1512 + i % 1000];
		unsigned char got = dst_mem[(i / 1300) * 1812 + i % 1300];

		ck_assert_uint_eq(got, want);
	}
	si = src->bi_iter;
	di = dst->bi_iter;
	bio_advance_iter(dst, &di, 3000);
	bio_copy_data_iter(dst, &di, src, &si);
	ck_assert_uint_eq(di.bi_size, 0);
	ck_assert_uint_eq(si.bi_size, 5000 - 900);

	zero_fill_bio(src);
	for (i = 0; i < 5; i++)
		ck_assert_uint_eq(src_mem[i * 1512 + 999], 0);
	ck_assert_uint_ne(src_mem[1000], 0); /* gap untouched */
	bio_put(src);
	bio_put(dst);
	free(src_mem);
	free(dst_mem);
}
END_TEST

struct done {
	atomic_int calls;
	blk_status_t status;
};

static void count_end_io(struct bio *bio)
{
	struct done *d = bio->bi_private;

	d->status = bio->bi_status;
	atomic_fetch_add(&d->calls, 1);
}

/* A data-less bio whose completions are counted in @d. */
static void init_counted(struct bio *bio, struct done *d)
{
	d->status = 0;
	atomic_init(&d->calls, 0);
	bio_init(bio, NULL, NULL, 0, REQ_OP_WRITE);
	bio->bi_end_io = count_end_io;
	bio->bi_private = d;
}

START_TEST(test_chain_completes_once)
{
	struct bio parent, c[3];
	struct done d = { 0, 0 };
	int i;

	init_counted(&parent, &d);
	for (i = 0; i < 3; i++) {
		bio_init(&c[i], NULL, NULL, 0, REQ_OP_WRITE);
		ck_assert_int_eq(bio_chain(&c[i], &parent), 0);
	}
	ck_assert_int_eq(bio_chain(&c[0], &parent), -EINVAL); /* has end_io */
	bio_endio(&parent);
	c[1].bi_status = BLK_STS_NOSPC;
	bio_endio(&c[1]);
	c[0].bi_status = BLK_STS_IOERR;
	bio_endio(&c[0]);
	ck_assert_int_eq(atomic_load(&d.calls), 0);
	bio_endio(&c[2]);
	ck_assert_int_eq(atomic_load(&d.calls), 1);
	ck_assert_int_eq(d.status, BLK_STS_NOSPC); /* first error wins */
	ck_assert(!bio_flagged(&parent, BIO_CHAIN));
}
END_TEST

START_TEST(test_chain_keeps_parent_error)
{
	struct bio parent, child;
	struct done d = { 0, 0 };

	init_counted(&parent, &d);
	bio_init(&child, NULL, NULL, 0, REQ_OP_READ);
	bio_chain(&child, &parent);
	parent.bi_status = BLK_STS_TIMEOUT;
	child.bi_status = BLK_STS_IOERR;
	bio_endio(&child);
	bio_endio(&parent);
	ck_assert_int_eq(d.status, BLK_STS_TIMEOUT);
}
END_TEST

/* Regression (2025): calling bi_end_io of a chained bio directly. */
START_TEST(test_chain_direct_end_io)
{
	struct bio parent, child;
	struct done d = { 0, 0 };

	init_counted(&parent, &d);
	bio_init(&child, NULL, NULL, 0, REQ_OP_READ);
	bio_chain(&child, &parent);
	child.bi_status = BLK_STS_MEDIUM;
	child.bi_end_io(&child);
	ck_assert_int_eq(atomic_load(&d.calls), 0);
	bio_endio(&parent);
	ck_assert_int_eq(atomic_load(&d.calls), 1);
	ck_assert_int_eq(d.status, BLK_STS_MEDIUM);
}
END_TEST

/* Regression: a million chained pieces complete without recursion. */
START_TEST(test_million_link_chain)
{
	const unsigned int n = 1000000;
	struct bio *bios = calloc(n, sizeof(*bios));
	struct done d = { 0, 0 };
	unsigned int i;

	ck_assert_ptr_nonnull(bios);
	init_counted(&bios[0], &d);
	/* Each link is the parent of the next: a chain n deep. */
	for (i = 1; i < n; i++) {
		bio_init(&bios[i], NULL, NULL, 0, REQ_OP_WRITE);
		bio_chain(&bios[i], &bios[i - 1]);
	}
	for (i = 0; i + 1 < n; i++)
		bio_endio(&bios[i]);
	ck_assert_int_eq(atomic_load(&d.calls), 0);
	bios[n / 2].bi_status = BLK_STS_AGAIN;
	bio_endio(&bios[n - 1]);
	ck_assert_int_eq(atomic_load(&d.calls), 1);
	ck_assert_int_eq(d.status, BLK_STS_AGAIN);
	free(bios);
}
END_TEST

struct race {
	struct bio *children;
	unsigned int first, count;
	pthread_barrier_t *barrier;
};

static void *complete_children(void *arg)
{
	struct race *r = arg;
	unsigned int i;

	pthread_barrier_wait(r->barrier);
	for (i = r->first; i < r->first + r->count; i++)
		bio_endio(&r->children[i]);
	return NULL;
}

/*
 * Regression: the chain status check-then-set raced (fixed 2021).  Children
 * completed on two threads: the parent completes exactly once and its
 * status is one of its children's errors, never overwritten by a success.
 */
START_TEST(test_chain_threads)
{
	enum { KIDS = 64 };
	unsigned int rounds = test_scale(400), r, i;
	struct bio parent, children[KIDS];
	pthread_barrier_t barrier;
	pthread_t t[2];
	struct race arg[2];

	pthread_barrier_init(&barrier, NULL, 2);
	for (r = 0; r < rounds; r++) {
		struct done d = { 0, 0 };

		bio_init(&parent, NULL, NULL, 0, REQ_OP_WRITE);
		parent.bi_end_io = count_end_io;
		parent.bi_private = &d;
		for (i = 0; i < KIDS; i++) {
			bio_init(&children[i], NULL, NULL, 0, REQ_OP_WRITE);
			bio_chain(&children[i], &parent);
			/* Two failing children, one on each thread. */
			if (i == 5)
				children[i].bi_status = BLK_STS_IOERR;
			if (i == KIDS / 2 + 5)
				children[i].bi_status = BLK_STS_NOSPC;
		}
		bio_endio(&parent);
		for (i = 0; i < 2; i++) {
			arg[i].children = children;
			arg[i].first = i * (KIDS / 2);
			arg[i].count = KIDS / 2;
			arg[i].barrier = &barrier;
			pthread_create(&t[i], NULL, complete_children, &arg[i]);
		}
		for (i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
		ck_assert_int_eq(atomic_load(&d.calls), 1);
		ck_assert(d.status == BLK_STS_IOERR || d.status == BLK_STS_NOSPC);
	}
	pthread_barrier_destroy(&barrier);
}
END_TEST

START_TEST(test_refcount)
{
	struct bio *bio = bio_alloc_bioset(NULL, 0, REQ_OP_READ, GFP_KERNEL, &bs);
	long before;

	ck_assert_ptr_nonnull(bio);
	before = atomic_load(&ta.outstanding);
	bio_get(bio);
	bio_get(bio);
	bio_put(bio);
	bio_put(bio);
	/* Still alive: the reserve did not get it back yet. */
	ck_assert_int_eq(atomic_load(&bio->__bi_cnt), 1);
	bio_put(bio);
	ck_assert_int_le(atomic_load(&ta.outstanding), before);
	bio_put(NULL);
}
END_TEST

START_TEST(test_reset_keeps_table)
{
	struct bio *bio = bio_alloc_bioset(NULL, 40, REQ_OP_READ, GFP_KERNEL, &bs);
	struct bio_vec *table;
	unsigned char buf[64];

	ck_assert_ptr_nonnull(bio);
	table = bio->bi_io_vec;
	ck_assert_uint_eq(bio->bi_max_vecs, 64);
	bio_add_virt(bio, buf, 64);
	ck_assert_ptr_nonnull(bio_integrity_alloc(bio, GFP_KERNEL, 1));
	bio->bi_status = BLK_STS_IOERR;
	bio_reset(bio, NULL, REQ_OP_WRITE);
	ck_assert_ptr_eq(bio->bi_io_vec, table);
	ck_assert_uint_eq(bio->bi_max_vecs, 64);
	ck_assert_ptr_eq(bio->bi_pool, &bs);
	ck_assert_uint_eq(bio->bi_vcnt, 0);
	ck_assert_uint_eq(bio->bi_iter.bi_size, 0);
	ck_assert_int_eq(bio->bi_status, 0);
	ck_assert_ptr_null(bio->bi_integrity);
	ck_assert_int_eq(bio_op(bio), REQ_OP_WRITE);
	bio_put(bio);
}
END_TEST

START_TEST(test_integrity_moves_in_intervals)
{
	unsigned char *mem = test_pages(16), pi[64];
	struct bio *bio = make_bio(mem, 4, 4096); /* 4 x 4 KiB */
	struct bio_integrity_payload *bip;
	struct bio *split;

	bio->bi_iter.bi_sector = 64;
	bip = bio_integrity_alloc(bio, GFP_KERNEL, 2);
	ck_assert_ptr_nonnull(bip);
	ck_assert_ptr_null(bio_integrity_alloc(bio, GFP_KERNEL, 2));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert(bio->bi_opf & REQ_INTEGRITY);
	bip->bip_interval_exp = 12; /* 4 KiB intervals, 8-byte tuples */
	bip->bip_tuple_size = 8;
	bip->bip_iter.bi_sector = 64 >> 3;
	ck_assert_int_eq(bio_integrity_add_page(bio, virt_to_page(pi),
						32, offset_in_page(pi)), 32);
	ck_assert_uint_eq(bip->bip_iter.bi_size, 32);

	split = bio_split(bio, 8, GFP_KERNEL, &bs); /* one interval */
	ck_assert_ptr_nonnull(split);
	ck_assert_ptr_nonnull(split->bi_integrity);
	ck_assert_ptr_eq(split->bi_integrity->bip_vec, bip->bip_vec);
	ck_assert_uint_eq(split->bi_integrity->bip_iter.bi_size, 8);
	ck_assert_uint_eq(split->bi_integrity->bip_iter.bi_sector, 8);
	/* The original moved by one interval, not by eight sectors. */
	ck_assert_uint_eq(bip->bip_iter.bi_sector, 9);
	ck_assert_uint_eq(bip->bip_iter.bi_size, 24);
	ck_assert_uint_eq(bip->bip_iter.bi_bvec_done, 8);
	ck_assert_int_eq(bio_trim(bio, 8, 8), 0);
	ck_assert_uint_eq(bip->bip_iter.bi_sector, 10);
	ck_assert_uint_eq(bip->bip_iter.bi_size, 8);
	bio_put(split);
	bio_put(bio);
	free(mem);
}
END_TEST

/* bio_list as Linux's: FIFO order, a head insert, merge, take-all. */
START_TEST(test_bio_lists)
{
	struct bio b[5];
	struct bio_list l, l2;
	struct bio *p;
	int i = 0;

	for (i = 0; i < 5; i++)
		bio_init(&b[i], NULL, NULL, 0, REQ_OP_READ);
	bio_list_init(&l);
	bio_list_init(&l2);
	ck_assert_uint_eq(bio_list_size(&l), 0);
	ck_assert_ptr_null(bio_list_peek(&l));
	bio_list_merge(&l, &l2); /* empty into empty */
	ck_assert(bio_list_empty(&l));
	bio_list_add_head(&l, &b[1]); /* head insert into an empty list sets the tail */
	bio_list_add(&l, &b[2]);
	bio_list_add_head(&l, &b[0]);
	ck_assert_ptr_eq(bio_list_peek(&l), &b[0]);
	ck_assert_uint_eq(bio_list_size(&l), 3);
	bio_list_add(&l2, &b[3]);
	bio_list_add(&l2, &b[4]);
	bio_list_merge(&l, &l2);
	ck_assert_uint_eq(bio_list_size(&l), 5);
	i = 0;
	bio_list_for_each(p, &l)
		ck_assert_ptr_eq(p, &b[i++]);
	ck_assert_int_eq(i, 5);
	bio_list_init(&l2);
	bio_list_merge(&l2, &l); /* into an empty list */
	ck_assert_ptr_eq(bio_list_peek(&l2), &b[0]);
	p = bio_list_get(&l);
	ck_assert(bio_list_empty(&l));
	ck_assert_ptr_eq(p, &b[0]);
	for (i = 0; p; i++, p = p->bi_next)
		ck_assert_ptr_eq(p, &b[i]);
	ck_assert_int_eq(i, 5);
	bio_list_add(&l, &b[2]); /* a taken list works again */
	ck_assert_ptr_eq(bio_list_pop(&l), &b[2]);
	ck_assert_ptr_null(bio_list_pop(&l));

	/* [3 4] before [0 1 2], then all of it moved out, leaving it empty. */
	bio_list_init(&l);
	bio_list_init(&l2);
	for (i = 0; i < 3; i++)
		bio_list_add(&l, &b[i]);
	bio_list_add(&l2, &b[3]);
	bio_list_add(&l2, &b[4]);
	bio_list_merge_head(&l, &l2);
	ck_assert_ptr_eq(bio_list_peek(&l), &b[3]);
	ck_assert_uint_eq(bio_list_size(&l), 5);
	bio_list_init(&l2);
	bio_list_merge_head(&l2, &l); /* into an empty list: its tail too */
	ck_assert_ptr_eq(l2.tail, &b[2]);
	bio_list_init(&l);
	bio_list_merge_init(&l, &l2);
	ck_assert(bio_list_empty(&l2));
	ck_assert_ptr_eq(bio_list_peek(&l), &b[3]);
	ck_assert_ptr_eq(l.tail, &b[2]);
	ck_assert_uint_eq(bio_list_size(&l), 5);
}
END_TEST

START_TEST(test_status_conversions)
{
	ck_assert_int_eq(blk_status_to_errno(BLK_STS_OK), 0);
	ck_assert_int_eq(blk_status_to_errno(BLK_STS_IOERR), -EIO);
	ck_assert_int_eq(blk_status_to_errno(BLK_STS_NOSPC), -ENOSPC);
	ck_assert_int_eq(blk_status_to_errno(200), -EIO);
	ck_assert_int_eq(errno_to_blk_status(-ENOMEM), BLK_STS_RESOURCE);
	ck_assert_int_eq(errno_to_blk_status(EIO), BLK_STS_IOERR);
	ck_assert_int_eq(errno_to_blk_status(0), BLK_STS_OK);
	ck_assert_int_eq(errno_to_blk_status(-E2BIG), BLK_STS_IOERR);
	ck_assert_str_eq(blk_status_to_str(BLK_STS_IOERR), "I/O");
	ck_assert_int_eq(bvec_major_version(), 0);
	ck_assert(bvec_check_version(0, 1));
	ck_assert(!bvec_check_version(1, 0));
	ck_assert_str_eq(bvec_version_string(), "0.1.0");
}
END_TEST

int main(void)
{
	const TTest *const core[] = {
		test_add_page_merges_only_contiguous,
		test_add_page_size_overflow,
		test_predicates,
		test_advance_iter_ops,
		test_split_shares_table,
		test_split_invalid,
		test_clone,
		test_init_clone,
		test_table_accessors,
		test_bio_lists,
		test_trim,
		test_truncate_zeroes_read_tail,
		test_copy_data,
		test_refcount,
		test_reset_keeps_table,
		test_integrity_moves_in_intervals,
		test_status_conversions,
		NULL
	};
	const TTest *const chain[] = {
		test_chain_completes_once,
		test_chain_keeps_parent_error,
		test_chain_direct_end_io,
		test_million_link_chain,
		test_chain_threads,
		NULL
	};
	const struct test_group groups[] = {
		{ .name = "core", .tests = core, .setup = setup, .teardown = teardown },
		{ .name = "chain", .tests = chain, .timeout = 120 },
		{ .name = NULL },
	};

	return test_main("bio", groups);
}

// SPDX-License-Identifier: MIT
/*
 * Property tests: random bios (scattered, unaligned, multi-page pieces,
 * hand-built tables with zero-length entries) under random sequences of
 * advance/split/trim/truncate/clone/copy, checked after every step against
 * a flat model: the runs of memory (address, length) each bio still covers,
 * in stream order.
 */
#include <libbvec/blkdev.h>

#include "testutil.h"

#define PS ((unsigned int)BVEC_PAGE_SIZE)
#define ARENA_PAGES 64
#define MAX_LIVE 10
#define MIN(a, b) ((a) < (b) ? (a) : (b))

struct run {
	unsigned char *p;
	unsigned int len;
};

struct model {
	struct run *runs;
	unsigned int nruns;
	unsigned int len; /* bytes in all runs */
	sector_t sector;
};

struct live {
	struct bio *bio;
	struct model m;
	bool root;	       /* owns its table (and maybe its memory) */
	struct bio_vec *table; /* hand-built table, or NULL */
};

static struct rng rng;
static unsigned char *arena, *arena2;
static struct live live[MAX_LIVE];
static unsigned int nlive;

static void model_copy(struct model *m, const struct model *from)
{
	*m = *from;
	m->runs = malloc((from->nruns + 1) * sizeof(*m->runs));
	ck_assert_ptr_nonnull(m->runs);
	memcpy(m->runs, from->runs, from->nruns * sizeof(*m->runs));
}

/* Keep the first @len bytes. */
static void model_cut(struct model *m, unsigned int len)
{
	unsigned int i, done = 0;

	for (i = 0; i < m->nruns && done < len; i++) {
		if (done + m->runs[i].len > len)
			m->runs[i].len = len - done;
		done += m->runs[i].len;
	}
	m->nruns = i;
	m->len = len;
}

static void model_drop_front(struct model *m, unsigned int n)
{
	unsigned int i = 0;

	m->len -= n;
	while (n && n >= m->runs[i].len)
		n -= m->runs[i++].len;
	memmove(m->runs, m->runs + i, (m->nruns - i) * sizeof(*m->runs));
	m->nruns -= i;
	if (n) {
		m->runs[0].p += n;
		m->runs[0].len -= n;
	}
}

/* Walks a model; expect() checks that the bio's next bytes are at @p. */
struct cursor {
	const struct model *m;
	unsigned int idx, off, pos;
};

static void expect(struct cursor *c, unsigned char *p, unsigned int len)
{
	c->pos += len;
	while (len) {
		const struct run *r;
		unsigned int take;

		ck_assert_uint_lt(c->idx, c->m->nruns);
		r = &c->m->runs[c->idx];
		ck_assert_ptr_eq(p, r->p + c->off);
		take = MIN(len, r->len - c->off);
		p += take;
		len -= take;
		c->off += take;
		if (c->off == r->len) {
			c->idx++;
			c->off = 0;
		}
	}
}

/* The byte at stream position @pos. */
static unsigned char *model_addr(const struct model *m, unsigned int pos)
{
	unsigned int i;

	for (i = 0; pos >= m->runs[i].len; i++)
		pos -= m->runs[i].len;
	return m->runs[i].p + pos;
}

/* A random run of memory: anywhere, any alignment, up to 2+ pages. */
static unsigned char *random_run(unsigned char *base, unsigned int *len)
{
	unsigned int max = (ARENA_PAGES - 4) * PS;
	unsigned int off = rng_range(&rng, 0, max);

	switch (rng_range(&rng, 0, 3)) {
	case 0:
		*len = rng_range(&rng, 1, 64);
		break;
	case 1:
		*len = rng_range(&rng, 1, PS);
		break;
	default:
		*len = rng_range(&rng, PS - 100, 2 * PS + 300);
	}
	return base + off;
}

/* Build a bio over random runs whose total is a multiple of 512 bytes. */
static void new_root(unsigned char *base, struct live *l)
{
	unsigned int nseg = rng_range(&rng, 1, 20), i, total = 0, n = 0;
	bool by_hand = rng_range(&rng, 0, 3) == 0;
	struct run *runs;
	struct bio_vec *table = NULL;
	struct bio *bio;
	blk_opf_t op = rng_range(&rng, 0, 1) ? REQ_OP_READ : REQ_OP_WRITE;

	runs = malloc((nseg + 1) * sizeof(*runs));
	ck_assert_ptr_nonnull(runs);
	if (by_hand) {
		/* Room for zero-length entries between the real ones. */
		table = calloc(2 * (nseg + 1), sizeof(*table));
		bio = malloc(sizeof(*bio));
		bio_init(bio, NULL, table, (unsigned short)(2 * (nseg + 1)), op);
	} else {
		bio = bio_alloc(NULL, (unsigned short)(nseg + 1), op, GFP_KERNEL);
	}
	ck_assert_ptr_nonnull(bio);
	for (i = 0; i <= nseg; i++) {
		unsigned int len;
		unsigned char *p;

		if (i == nseg) { /* pad to whole sectors */
			if (!(total % 512) && total)
				break;
			len = 512 - total % 512;
			p = base + rng_range(&rng, 0, (ARENA_PAGES - 4) * PS);
		} else {
			p = random_run(base, &len);
		}
		if (by_hand) {
			if (rng_range(&rng, 0, 2) == 0)
				bvec_set_virt(&table[bio->bi_vcnt++], p, 0);
			bvec_set_virt(&table[bio->bi_vcnt++], p, len);
			bio->bi_iter.bi_size += len;
		} else {
			ck_assert_int_eq(bio_add_virt(bio, p, len), (int)len);
		}
		runs[n].p = p;
		runs[n++].len = len;
		total += len;
	}
	ck_assert_uint_eq(total % 512, 0);
	bio->bi_iter.bi_sector = rng_range(&rng, 0, 1 << 20);
	l->bio = bio;
	l->root = true;
	l->table = table;
	l->m.runs = runs;
	l->m.nruns = n;
	l->m.len = total;
	l->m.sector = bio->bi_iter.bi_sector;
}

static void check_bio(const struct live *l)
{
	const struct bio *bio = l->bio;
	struct cursor c = { &l->m, 0, 0, 0 };
	struct bvec_iter iter;
	struct bio_vec bv;
	unsigned int segs = 0, i;
	struct iovec iov[512];
	int n;

	ck_assert_uint_eq(bio->bi_iter.bi_size, l->m.len);
	ck_assert_uint_eq(bio->bi_iter.bi_sector, l->m.sector);
	ck_assert_uint_eq(bio_sectors(bio), l->m.len >> 9);
	bio_for_each_segment(bv, bio, iter) {
		ck_assert_uint_gt(bv.bv_len, 0);
		ck_assert_uint_le(bv.bv_offset + bv.bv_len, PS);
		expect(&c, bvec_virt(&bv), bv.bv_len);
		segs++;
	}
	ck_assert_uint_eq(c.pos, l->m.len);
	ck_assert_uint_eq(segs, bio_segments(bio));
	memset(&c, 0, sizeof(c));
	c.m = &l->m;
	bio_for_each_bvec(bv, bio, iter) {
		ck_assert_uint_gt(bv.bv_len, 0);
		expect(&c, bvec_virt(&bv), bv.bv_len);
	}
	ck_assert_uint_eq(c.pos, l->m.len);
	n = bvec_bio_to_iovec(bio, bio->bi_iter, iov, 512);
	ck_assert_int_ge(n, 0);
	ck_assert_int_eq(n, bvec_bio_iovec_count(bio, bio->bi_iter));
	memset(&c, 0, sizeof(c));
	c.m = &l->m;
	for (i = 0; i < (unsigned int)n; i++)
		expect(&c, iov[i].iov_base, (unsigned int)iov[i].iov_len);
	ck_assert_uint_eq(c.pos, l->m.len);
}

static void add_live(struct bio *bio, const struct model *from, unsigned int len)
{
	struct live *l = &live[nlive++];

	l->bio = bio;
	l->root = false;
	l->table = NULL;
	model_copy(&l->m, from);
	model_cut(&l->m, len);
}

static void op_advance(struct live *l)
{
	unsigned int n = rng_range(&rng, 0, l->m.len);

	bio_advance(l->bio, n);
	model_drop_front(&l->m, n);
	l->m.sector += n >> 9;
}

static void op_split(struct live *l)
{
	unsigned int sectors = l->m.len >> 9, s;
	struct bio *split;

	if (sectors < 2 || nlive == MAX_LIVE || l->m.len % 512)
		return;
	s = rng_range(&rng, 1, sectors - 1);
	split = bio_split(l->bio, (int)s, GFP_KERNEL, NULL);
	ck_assert_ptr_nonnull(split);
	add_live(split, &l->m, s << 9);
	model_drop_front(&l->m, s << 9);
	l->m.sector += s;
}

static void op_trim(struct live *l)
{
	unsigned int sectors = l->m.len >> 9, off, size;

	if (!sectors || l->m.len % 512) {
		ck_assert_int_eq(bio_trim(l->bio, sectors + 1, 0), -EINVAL);
		return;
	}
	off = rng_range(&rng, 0, sectors);
	size = rng_range(&rng, 0, sectors - off);
	ck_assert_int_eq(bio_trim(l->bio, off, size), 0);
	if (off == 0 && size == sectors)
		return;
	model_drop_front(&l->m, off << 9);
	l->m.sector += off;
	model_cut(&l->m, size << 9);
}

static void op_truncate(struct live *l)
{
	unsigned int n = rng_range(&rng, 0, l->m.len), i;

	unsigned int nonzero = 0;

	bio_truncate(l->bio, n);
	if (bio_op(l->bio) == REQ_OP_READ)
		for (i = n; i < l->m.len; i++)
			nonzero += *model_addr(&l->m, i) != 0;
	ck_assert_uint_eq(nonzero, 0);
	if (n < l->m.len)
		model_cut(&l->m, n);
}

static void op_clone(struct live *l)
{
	struct bio *clone;

	if (nlive == MAX_LIVE)
		return;
	clone = bio_alloc_clone(NULL, l->bio, GFP_KERNEL, NULL);
	ck_assert_ptr_nonnull(clone);
	add_live(clone, &l->m, l->m.len);
}

/* Read a model's bytes in stream order. */
static unsigned char *model_bytes(const struct model *m)
{
	unsigned char *out = malloc(m->len + 1), *q = out;
	unsigned int i;

	ck_assert_ptr_nonnull(out);
	for (i = 0; i < m->nruns; i++) {
		memcpy(q, m->runs[i].p, m->runs[i].len);
		q += m->runs[i].len;
	}
	return out;
}

/*
 * Copy into a fresh bio over the second arena, segmented differently.  The
 * destination's runs may overlap each other; the copy goes in stream order,
 * so each destination byte holds the last source byte written to it.
 */
static void op_copy(struct live *l)
{
	static unsigned char want[ARENA_PAGES * 65536];
	struct live dst;
	struct bvec_iter before_src, before_dst;
	unsigned char *snap = model_bytes(&l->m);
	unsigned int i, n, wrong = 0;

	new_root(arena2, &dst);
	before_src = l->bio->bi_iter;
	before_dst = dst.bio->bi_iter;
	bio_copy_data(dst.bio, l->bio);
	ck_assert_mem_eq(&l->bio->bi_iter, &before_src, sizeof(before_src));
	ck_assert_mem_eq(&dst.bio->bi_iter, &before_dst, sizeof(before_dst));
	n = MIN(l->m.len, dst.m.len);
	for (i = 0; i < n; i++)
		want[model_addr(&dst.m, i) - arena2] = snap[i];
	for (i = 0; i < n; i++) {
		unsigned char *p = model_addr(&dst.m, i);

		wrong += *p != want[p - arena2];
	}
	ck_assert_uint_eq(wrong, 0);
	free(snap);
	bio_put(dst.bio);
	if (dst.table) {
		free(dst.table);
		free(dst.bio);
	}
	free(dst.m.runs);
}

static void fill(unsigned char *base)
{
	size_t i;

	for (i = 0; i < ARENA_PAGES * (size_t)PS; i++)
		base[i] = (unsigned char)(rng_next(&rng) | 1); /* never 0 */
}

static void free_live(void)
{
	unsigned int i;

	/* Derived bios first: they share their root's table. */
	for (i = nlive; i-- > 0;) {
		if (live[i].root)
			continue;
		bio_put(live[i].bio);
		free(live[i].m.runs);
	}
	for (i = 0; i < nlive; i++) {
		if (!live[i].root)
			continue;
		bio_put(live[i].bio);
		if (live[i].table) {
			free(live[i].table);
			free(live[i].bio);
		}
		free(live[i].m.runs);
	}
	nlive = 0;
}

START_TEST(test_random_sequences)
{
	unsigned int rounds = test_scale(300), r, step;

	rng.s = 0x9e3779b97f4a7c15ull + (uint64_t)_i;
	arena = test_pages(ARENA_PAGES);
	arena2 = test_pages(ARENA_PAGES);
	for (r = 0; r < rounds; r++) {
		fill(arena);
		new_root(arena, &live[nlive++]);
		if (rng_range(&rng, 0, 1))
			new_root(arena, &live[nlive++]);
		check_bio(&live[0]);
		for (step = 0; step < 25; step++) {
			struct live *l = &live[rng_range(&rng, 0, nlive - 1)];

			switch (rng_range(&rng, 0, 9)) {
			case 0:
			case 1:
				op_advance(l);
				break;
			case 2:
			case 3:
			case 4:
				op_split(l);
				break;
			case 5:
				op_trim(l);
				break;
			case 6:
				op_truncate(l);
				break;
			case 7:
				op_clone(l);
				break;
			default:
				op_copy(l);
			}
			check_bio(l);
			if (nlive > 1)
				check_bio(&live[nlive - 1]);
		}
		free_live();
	}
	free(arena);
	free(arena2);
}
END_TEST

/*
 * Split a bio into random pieces, chain each to the original, complete the
 * pieces in random order with random errors: the original completes once,
 * after the last piece, with the first error in completion order.
 */
struct completion {
	int calls;
	blk_status_t status;
};

static void parent_done(struct bio *bio)
{
	struct completion *c = bio->bi_private;

	c->calls++;
	c->status = bio->bi_status;
}

START_TEST(test_random_chains)
{
	unsigned int rounds = test_scale(300), r;

	rng.s = 0x51ed270b27f01ull;
	arena = test_pages(ARENA_PAGES);
	for (r = 0; r < rounds; r++) {
		struct bio *pieces[64];
		struct completion c = { 0, 0 };
		struct live root;
		blk_status_t first = BLK_STS_OK;
		unsigned int n = 0, i;

		new_root(arena, &root);
		root.bio->bi_end_io = parent_done;
		root.bio->bi_private = &c;
		while (n < 63 && bio_sectors(root.bio) > 1) {
			unsigned int s = rng_range(&rng, 1, bio_sectors(root.bio) - 1);

			pieces[n] = bio_split(root.bio, (int)s, GFP_KERNEL, NULL);
			ck_assert_ptr_nonnull(pieces[n]);
			ck_assert_int_eq(bio_chain(pieces[n], root.bio), 0);
			n++;
		}
		pieces[n++] = root.bio;
		for (i = n; i > 1; i--) { /* shuffle */
			unsigned int j = rng_range(&rng, 0, i - 1);
			struct bio *t = pieces[i - 1];

			pieces[i - 1] = pieces[j];
			pieces[j] = t;
		}
		for (i = 0; i < n; i++) {
			blk_status_t st = rng_range(&rng, 0, 4) ? BLK_STS_OK :
				(blk_status_t)rng_range(&rng, 1, 13);

			/* The root's status already holds its children's errors. */
			if (pieces[i] != root.bio) {
				if (st && !first)
					first = st;
				pieces[i]->bi_status = st;
			}
			ck_assert_int_eq(c.calls, 0);
			bio_endio(pieces[i]);
		}
		ck_assert_int_eq(c.calls, 1);
		ck_assert_int_eq(c.status, first);
		bio_put(root.bio);
		if (root.table) {
			free(root.table);
			free(root.bio);
		}
		free(root.m.runs);
	}
	free(arena);
}
END_TEST

int main(void)
{
	const TTest *const sequences[] = {
		test_random_sequences,
		NULL
	};
	const TTest *const chains[] = {
		test_random_chains,
		NULL
	};
	const struct test_group groups[] = {
		{ .name = "sequences", .tests = sequences, .timeout = 600, .loops = 4 },
		{ .name = "chains", .tests = chains, .timeout = 600 },
		{ .name = NULL },
	};

	return test_main("model", groups);
}

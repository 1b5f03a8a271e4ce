// SPDX-License-Identifier: MIT
/*
 * libzpool's ZPOOL_F_MULTI_PAGE: zpool_store_pages() and zpool_load_pages()
 * against every page kind, every run length, partial and reordered loads,
 * statistics through frees in every order, corruption, mem_limit, page
 * source failures, compaction, dictionaries and threads (frees of one
 * page racing included).  Each test but the call checks runs once per
 * compressor built, with and without ZPOOL_F_CHECKSUM.  CI also runs
 * this program under valgrind and ThreadSanitizer.
 */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include <libbvec/zpool.h>

#include "../../src/zpool/internal.h" /* groups, corruption, codec slots */
#include "pools.h"
#include "pages.h"

static const char *const comps[] = { "lz4", "lz4hc", "zstd" };

#define NCONFIGS 6 /* comps x {no checksum, checksum} */
#define MAX_RUN 20

/* Configuration @i of NCONFIGS; false if its compressor is not built. */
static bool config(int i, const char **comp, unsigned int *flags)
{
	*comp = comps[i / 2];
	*flags = i % 2 ? ZPOOL_F_CHECKSUM : 0;
	return zpool_has_compressor(*comp);
}

/* A multi-page pool of configuration @i, or NULL if it is not built in. */
static struct zpool *group_pool(int i)
{
	const char *comp;
	unsigned int flags;

	return config(i, &comp, &flags) ? new_pool(comp, flags | ZPOOL_F_MULTI_PAGE, NULL) : NULL;
}

enum pattern {
	PAT_CYCLE,	/* text, binary, random, sized, zero, same, in turn */
	PAT_SMALL,	/* small sized pages: full groups of ZP_GROUP_PAGES */
	PAT_ANY,	/* a kind drawn at random for each page */
	PATTERNS
};

/* Page @i of run @seed in @pat; the same arguments make the same bytes. */
static void pattern_page(unsigned char *p, enum pattern pat, unsigned int seed, unsigned int i)
{
	static const enum page_kind cycle[] = { PAGE_TEXT, PAGE_BINARY, PAGE_RANDOM,
						PAGE_SIZED, PAGE_ZERO, PAGE_SAME };
	uint64_t s = (uint64_t)seed * 1000 + i;
	struct rng r = { s * 31 + 7 };

	switch (pat) {
	case PAT_CYCLE:
		make_page(p, cycle[(seed + i) % 6], s, 64 + i * 97 % 1500);
		break;
	case PAT_SMALL:
		make_page(p, PAGE_SIZED, s, 40 + i * 13 % 200);
		break;
	default:
		make_page(p, (enum page_kind)rng_range(&r, 0, PAGE_KINDS - 1), s,
			  rng_range(&r, 16, (unsigned int)PG));
		break;
	}
}

static void make_run(unsigned char *in, enum pattern pat, unsigned int seed, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		pattern_page(in + (size_t)i * PG, pat, seed, i);
}

/* Under valgrind (BVEC_TEST_SCALE=small): loops shrink to what stays quick. */
static bool small_scale(void)
{
	return test_scale(20) == 1;
}

static bool is_same_filled(const unsigned char *p)
{
	return !memcmp(p, p + sizeof(long), PG - sizeof(long));
}

/* Group of @h (0 if it is not a member), and its place in the group. */
static uint32_t group_of_handle(struct zpool *pool, zpool_handle_t h, unsigned int *nr)
{
	uint64_t e = zpool__table_get(&pool->handles, (uint32_t)h);

	if (!zp_entry_is_member(e))
		return 0;
	if (nr)
		*nr = zp_entry_member_nr(e);
	return zp_entry_same_index(e);
}

static uint64_t group_word(struct zpool *pool, uint32_t g)
{
	return zpool__table_get(&pool->groups, g);
}

/*
 * The layout store_pages promises for a run just stored: same-filled pages
 * alone, groups of 2..ZP_GROUP_PAGES consecutive non-same pages numbered
 * in order, every reference held, one handle per page.  Returns the groups.
 */
static unsigned int check_layout(struct zpool *pool, const unsigned char *in,
				 const zpool_handle_t *h, unsigned int n, bool multi)
{
	unsigned int i = 0, groups = 0, nr, j, pages;
	uint32_t g;
	uint64_t w;

	for (i = 0; i < n; i++) {
		ck_assert_uint_ne(h[i], 0);
		for (j = 0; j < i; j++)
			ck_assert_uint_ne(h[i], h[j]);
	}
	i = 0;
	while (i < n) {
		g = group_of_handle(pool, h[i], &nr);
		if (!g) {
			i++;
			continue;
		}
		ck_assert(multi);
		ck_assert_uint_eq(nr, 0);
		w = group_word(pool, g);
		pages = zp_group_pages(w);
		ck_assert_uint_ge(pages, 2);
		ck_assert_uint_le(pages, ZP_GROUP_PAGES);
		ck_assert_uint_le(i + pages, n);
		ck_assert_uint_eq(zp_group_refs(w), pages);
		for (j = 0; j < pages; j++) {
			unsigned int nr2 = 99;

			ck_assert_uint_eq(group_of_handle(pool, h[i + j], &nr2), g);
			ck_assert_uint_eq(nr2, j);
			ck_assert(!is_same_filled(in + (size_t)(i + j) * PG));
			ck_assert_uint_eq(zpool_obj_size(pool, h[i + j]), zpool_obj_size(pool, h[i]));
		}
		ck_assert_uint_le(zpool_obj_size(pool, h[i]), zpool_huge_class_size(pool));
		groups++;
		i += pages;
	}
	return groups;
}

static void assert_page(struct zpool *pool, zpool_handle_t h, const unsigned char *want)
{
	unsigned char out[PG];

	memset(out, 0xa5, PG);
	ck_assert_int_eq(zpool_load(pool, h, out), 0);
	ck_assert_mem_eq(out, want, PG);
}

/* zpool_load_pages() of handles @idx[0..k) of @h must give those pages of @in. */
static void assert_pages(struct zpool *pool, const zpool_handle_t *h, const unsigned char *in,
			 const unsigned int *idx, unsigned int k, unsigned char *out)
{
	zpool_handle_t hs[4 * MAX_RUN];
	unsigned int i;

	ck_assert_uint_le(k, 4 * MAX_RUN);
	for (i = 0; i < k; i++)
		hs[i] = h[idx[i]];
	memset(out, 0x5a, (size_t)k * PG);
	ck_assert_int_eq(zpool_load_pages(pool, hs, k, out), 0);
	for (i = 0; i < k; i++)
		ck_assert_msg(!memcmp(out + (size_t)i * PG, in + (size_t)idx[i] * PG, PG),
			      "load_pages: page %u (index %u of %u) differs", i, idx[i], k);
}

static void shuffle(unsigned int *a, unsigned int n, struct rng *r)
{
	unsigned int i, j, t;

	for (i = n; i > 1; i--) {
		j = rng_range(r, 0, i - 1);
		t = a[i - 1];
		a[i - 1] = a[j];
		a[j] = t;
	}
}

static void assert_empty(struct zpool *pool, const struct zpool_stats *base)
{
	struct zpool_stats st;

	zpool_stats(pool, &st);
	assert_no_data(&st);
	ck_assert_uint_eq(st.mem_used_total, base->mem_used_total);
	ck_assert_uint_eq(st.metadata_bytes, base->metadata_bytes);
}

/* Every statistic of @b equal to @a's; @what names the call for the message. */
static void assert_same_stats(const struct zpool_stats *a, const struct zpool_stats *b,
			      const char *what, unsigned int k)
{
	ck_assert_msg(!memcmp(a, b, sizeof(*a)),
		      "%s %u changed the statistics: orig %llu -> %llu, compr %llu -> %llu, "
		      "used %llu -> %llu, max %llu -> %llu, same %llu -> %llu, huge %llu -> %llu, "
		      "huge_since %llu -> %llu, objects %llu -> %llu", what, k,
		      (unsigned long long)a->orig_data_size, (unsigned long long)b->orig_data_size,
		      (unsigned long long)a->compr_data_size, (unsigned long long)b->compr_data_size,
		      (unsigned long long)a->mem_used_total, (unsigned long long)b->mem_used_total,
		      (unsigned long long)a->mem_used_max, (unsigned long long)b->mem_used_max,
		      (unsigned long long)a->same_pages, (unsigned long long)b->same_pages,
		      (unsigned long long)a->huge_pages, (unsigned long long)b->huge_pages,
		      (unsigned long long)a->huge_pages_since, (unsigned long long)b->huge_pages_since,
		      (unsigned long long)a->objects, (unsigned long long)b->objects);
}

/*
 * Runs of every length 1..MAX_RUN in every pattern: each page read back
 * alone, all together, every sub-range (partial groups, ranges across
 * group boundaries), reversed and shuffled; then freed in a random order.
 */
START_TEST(test_round_trip_runs)
{
	unsigned char *in = test_pages(MAX_RUN), *out = test_pages(MAX_RUN);
	zpool_handle_t h[MAX_RUN];
	unsigned int idx[MAX_RUN], n, i, a, b, pat, grouped = 0, small_runs = 0;
	struct zpool_stats base, st;
	struct rng r = { 99 + (uint64_t)_i };
	struct zpool *pool;

	pool = group_pool(_i);
	if (!pool)
		goto out;
	zpool_stats(pool, &base);
	for (pat = 0; pat < PATTERNS; pat++)
		for (n = 1; n <= MAX_RUN; n += small_scale() ? 4 : 1) {
			unsigned int same = 0;

			make_run(in, (enum pattern)pat, n, n);
			small_runs += pat == PAT_SMALL && n >= 2;
			ck_assert_int_eq(zpool_store_pages(pool, in, n, h), 0);
			grouped += check_layout(pool, in, h, n, true);
			zpool_stats(pool, &st);
			for (i = 0; i < n; i++)
				same += is_same_filled(in + (size_t)i * PG);
			ck_assert_uint_eq(st.orig_data_size, (uint64_t)n * PG);
			ck_assert_uint_eq(st.objects, n);
			ck_assert_uint_eq(st.same_pages, same);
			for (i = 0; i < n; i++)
				assert_page(pool, h[i], in + (size_t)i * PG);
			/*
			 * Sub-ranges [a, b), in order: every one where all
			 * pages group, a quarter of them elsewhere, a
			 * sixteenth under valgrind.
			 */
			for (a = 0; a < n; a++)
				for (b = a + 1; b <= n; b++) {
					if (small_scale() ? rng_range(&r, 0, 15) != 0 :
					    pat != PAT_SMALL && rng_range(&r, 0, 3) != 0)
						continue;
					for (i = a; i < b; i++)
						idx[i - a] = i;
					assert_pages(pool, h, in, idx, b - a, out);
				}
			/* Reversed, then shuffled. */
			for (i = 0; i < n; i++)
				idx[i] = n - 1 - i;
			assert_pages(pool, h, in, idx, n, out);
			for (i = 0; i < (small_scale() ? 1u : 3u); i++) {
				shuffle(idx, n, &r);
				assert_pages(pool, h, in, idx, n, out);
			}
			/* One page several times over, and a group read twice in a row. */
			if (n >= 3) {
				unsigned int rep[] = { 1, 1, 0, 1, 2, 0, 1, 2 };

				assert_pages(pool, h, in, rep, 8, out);
			}
			for (i = 0; i < n; i++)
				idx[i] = i;
			shuffle(idx, n, &r);
			for (i = 0; i < n; i++) {
				zpool_free(pool, h[idx[i]]);
				/* The rest of the run still reads back. */
				if (i + 1 < n && (!small_scale() || i % 4 == 0))
					assert_page(pool, h[idx[i + 1]], in + (size_t)idx[i + 1] * PG);
			}
			assert_empty(pool, &base);
		}
	/* PAT_SMALL alone makes a group in every run of two pages or more. */
	if (ZP_GROUP_PAGES >= 2)
		ck_assert_uint_ge(grouped, small_runs);
	zpool_destroy(pool);
out:
	free(in);
	free(out);
}
END_TEST

/* Without the flag, store_pages is zpool_store() page by page. */
START_TEST(test_without_flag_is_store)
{
	unsigned char *in = test_pages(MAX_RUN), *out = test_pages(MAX_RUN);
	zpool_handle_t h[MAX_RUN], s[MAX_RUN];
	struct zpool *pa, *pb, *pm;
	struct zpool_stats sa, sb, sm;
	unsigned int n, i, pat;
	const char *comp;
	unsigned int flags;

	if (!config(_i, &comp, &flags))
		goto out;
	pa = new_pool(comp, flags, NULL);
	pb = new_pool(comp, flags, NULL);
	pm = new_pool(comp, flags | ZPOOL_F_MULTI_PAGE, NULL);
	for (pat = 0; pat < PATTERNS; pat++)
		for (n = 1; n <= MAX_RUN; n += small_scale() ? 4 : 1) {
			make_run(in, (enum pattern)pat, n + 100, n);
			ck_assert_int_eq(zpool_store_pages(pa, in, n, h), 0);
			ck_assert_uint_eq(check_layout(pa, in, h, n, false), 0);
			for (i = 0; i < n; i++) {
				ck_assert_int_eq(zpool_store(pb, in + (size_t)i * PG, &s[i]), 0);
				ck_assert_uint_eq(zpool_obj_size(pa, h[i]), zpool_obj_size(pb, s[i]));
			}
			ck_assert_int_eq(zpool_load_pages(pa, h, n, out), 0);
			ck_assert_mem_eq(out, in, (size_t)n * PG);
			zpool_stats(pa, &sa);
			zpool_stats(pb, &sb);
			ck_assert_uint_eq(sa.orig_data_size, sb.orig_data_size);
			ck_assert_uint_eq(sa.compr_data_size, sb.compr_data_size);
			ck_assert_uint_eq(sa.same_pages, sb.same_pages);
			ck_assert_uint_eq(sa.huge_pages, sb.huge_pages);
			ck_assert_uint_eq(sa.mem_used_total, sb.mem_used_total);
			/* With the flag, a single page is stored as by zpool_store() too. */
			ck_assert_int_eq(zpool_store_pages(pm, in + (size_t)(n - 1) * PG, 1, h), 0);
			ck_assert_uint_eq(group_of_handle(pm, h[0], NULL), 0);
			ck_assert_uint_eq(zpool_obj_size(pm, h[0]), zpool_obj_size(pb, s[n - 1]));
			zpool_free(pm, h[0]);
		}
	zpool_stats(pm, &sm);
	ck_assert_uint_eq(sm.objects, 0);
	zpool_destroy(pa);
	zpool_destroy(pb);
	zpool_destroy(pm);
out:
	free(in);
	free(out);
}
END_TEST

/*
 * The flag groups compressible pages: the group is smaller than its pages
 * stored one by one, each member reports the group's size, larger than
 * any one page's; incompressible pages halve down to raw singles.
 */
START_TEST(test_grouping_happens)
{
	const unsigned int n = 4 * ZP_GROUP_PAGES;
	unsigned char *in = test_pages(n), *out = test_pages(n);
	zpool_handle_t *h = calloc(n, sizeof(*h)), *s = calloc(n, sizeof(*s));
	struct zpool *pm, *pp;
	struct zpool_stats sm, sp;
	unsigned int i, j;
	const char *comp;
	unsigned int flags;

	ck_assert(h && s);
	if (!config(_i, &comp, &flags) || ZP_GROUP_PAGES < 2)
		goto out;
	pm = new_pool(comp, flags | ZPOOL_F_MULTI_PAGE, NULL);
	pp = new_pool(comp, flags, NULL);
	make_run(in, PAT_SMALL, 7, n);
	ck_assert_int_eq(zpool_store_pages(pm, in, n, h), 0);
	ck_assert_int_eq(zpool_store_pages(pp, in, n, s), 0);
	ck_assert_uint_eq(check_layout(pm, in, h, n, true), n / ZP_GROUP_PAGES);
	zpool_stats(pm, &sm);
	zpool_stats(pp, &sp);
	ck_assert_uint_eq(sm.orig_data_size, sp.orig_data_size);
	ck_assert_uint_eq(sm.objects, n);
	ck_assert_uint_lt(sm.compr_data_size, sp.compr_data_size);
	for (i = 0; i < n; i += ZP_GROUP_PAGES) {
		size_t gsize = zpool_obj_size(pm, h[i]);

		ck_assert_uint_gt(gsize, 0);
		for (j = i; j < i + ZP_GROUP_PAGES; j++) {
			ck_assert_uint_eq(zpool_obj_size(pm, h[j]), gsize);
			ck_assert_uint_gt(gsize, zpool_obj_size(pp, s[j]));
		}
	}
	/* compr_data_size counts each group once. */
	{
		uint64_t sum = 0;

		for (i = 0; i < n; i += ZP_GROUP_PAGES)
			sum += zpool_obj_size(pm, h[i]);
		ck_assert_uint_eq(sm.compr_data_size, sum);
	}
	ck_assert_int_eq(zpool_load_pages(pm, h, n, out), 0);
	ck_assert_mem_eq(out, in, (size_t)n * PG);
	for (i = 0; i < n; i++) {
		zpool_free(pm, h[i]);
		zpool_free(pp, s[i]);
	}

	/* Incompressible: every page ends up raw, alone. */
	for (i = 0; i < n; i++)
		make_page(in + (size_t)i * PG, PAGE_RANDOM, 500 + i, 0);
	ck_assert_int_eq(zpool_store_pages(pm, in, n, h), 0);
	ck_assert_uint_eq(check_layout(pm, in, h, n, true), 0);
	zpool_stats(pm, &sm);
	ck_assert_uint_eq(sm.huge_pages, n);
	ck_assert_uint_eq(sm.compr_data_size, (uint64_t)n * PG);
	for (i = 0; i < n; i++)
		ck_assert_uint_eq(zpool_obj_size(pm, h[i]), PG);
	ck_assert_int_eq(zpool_load_pages(pm, h, n, out), 0);
	ck_assert_mem_eq(out, in, (size_t)n * PG);
	for (i = 0; i < n; i++)
		zpool_free(pm, h[i]);

	/*
	 * Raw pages among small ones: the halving keeps the small pages in
	 * groups and only the raw ones alone.  A group of ZP_GROUP_PAGES with
	 * one raw page in its second half: the first half still groups.
	 */
	make_run(in, PAT_SMALL, 8, ZP_GROUP_PAGES);
	make_page(in + (size_t)(ZP_GROUP_PAGES - 1) * PG, PAGE_RANDOM, 77, 0);
	ck_assert_int_eq(zpool_store_pages(pm, in, ZP_GROUP_PAGES, h), 0);
	if (ZP_GROUP_PAGES >= 4)
		ck_assert_uint_ge(check_layout(pm, in, h, ZP_GROUP_PAGES, true), 1);
	ck_assert_uint_eq(group_of_handle(pm, h[ZP_GROUP_PAGES - 1], NULL), 0);
	ck_assert_uint_eq(zpool_obj_size(pm, h[ZP_GROUP_PAGES - 1]), PG);
	if (ZP_GROUP_PAGES >= 4)
		ck_assert_uint_ne(group_of_handle(pm, h[0], NULL), 0);
	zpool_stats(pm, &sm);
	ck_assert_uint_eq(sm.huge_pages, 1);
	ck_assert_int_eq(zpool_load_pages(pm, h, ZP_GROUP_PAGES, out), 0);
	ck_assert_mem_eq(out, in, (size_t)ZP_GROUP_PAGES * PG);
	for (i = 0; i < ZP_GROUP_PAGES; i++)
		zpool_free(pm, h[i]);
	zpool_stats(pm, &sm);
	ck_assert_uint_eq(sm.huge_pages, 0);
	ck_assert_uint_eq(sm.compr_data_size, 0);
	zpool_destroy(pm);
	zpool_destroy(pp);
out:
	free(h);
	free(s);
	free(in);
	free(out);
}
END_TEST

/*
 * Frees in every order: forward, reverse, random, and members of several
 * groups interleaved.  orig_data_size, objects and same_pages follow each
 * free; a group's compressed bytes stay until its last member goes; every
 * counter and page is back to the empty pool's at the end.
 */
START_TEST(test_stats_free_orders)
{
	const unsigned int runs = small_scale() ? 2 : 6, n = MAX_RUN, total = runs * MAX_RUN;
	unsigned char *in = test_pages(total);
	zpool_handle_t *h = calloc(total, sizeof(*h));
	unsigned int *order = calloc(total, sizeof(*order));
	bool *live = calloc(total, sizeof(*live));
	struct zpool_stats base, st, prev;
	struct rng r = { 4242 + (uint64_t)_i };
	unsigned int mode, i, j, k, left;
	struct zpool *pool;

	ck_assert(h && order && live);
	pool = group_pool(_i);
	if (!pool)
		goto out;
	zpool_stats(pool, &base);
	for (mode = 0; mode < 4; mode++) {
		uint64_t same = 0;

		for (j = 0; j < runs; j++) {
			make_run(in + (size_t)j * n * PG, (enum pattern)(j % PATTERNS), 300 + j, n);
			ck_assert_int_eq(zpool_store_pages(pool, in + (size_t)j * n * PG, n,
							   h + j * n), 0);
		}
		for (i = 0; i < total; i++) {
			live[i] = true;
			same += is_same_filled(in + (size_t)i * PG);
		}
		switch (mode) {
		case 0: /* forward */
			for (i = 0; i < total; i++)
				order[i] = i;
			break;
		case 1: /* reverse */
			for (i = 0; i < total; i++)
				order[i] = total - 1 - i;
			break;
		case 2: /* random */
			for (i = 0; i < total; i++)
				order[i] = i;
			shuffle(order, total, &r);
			break;
		default: /* round robin over the runs: every group loses a page in turn */
			for (i = 0, k = 0; k < n; k++)
				for (j = 0; j < runs; j++)
					order[i++] = j * n + (k * 7 + j) % n; /* 7: coprime to n */
			break;
		}
		zpool_stats(pool, &prev);
		for (i = 0, left = total; i < total; i++) {
			zpool_handle_t victim = h[order[i]];
			uint32_t g = group_of_handle(pool, victim, NULL);
			unsigned int refs = g ? zp_group_refs(group_word(pool, g)) : 0;
			size_t size = zpool_obj_size(pool, victim);
			bool was_same = is_same_filled(in + (size_t)order[i] * PG);

			zpool_free(pool, victim);
			live[order[i]] = false;
			left--;
			same -= was_same;
			zpool_stats(pool, &st);
			ck_assert_uint_eq(st.orig_data_size, (uint64_t)left * PG);
			ck_assert_uint_eq(st.objects, left);
			ck_assert_uint_eq(st.same_pages, same);
			/* Bytes go only with a group's last member. */
			if (g && refs > 1)
				ck_assert_uint_eq(st.compr_data_size, prev.compr_data_size);
			else
				ck_assert_uint_eq(st.compr_data_size, prev.compr_data_size - size);
			if (g && refs > 1)
				ck_assert_uint_eq(zp_group_refs(group_word(pool, g)), refs - 1);
			/* Freed twice: ignored, the group's count included. */
			zpool_free(pool, victim);
			zpool_stats(pool, &prev);
			ck_assert_uint_eq(prev.compr_data_size, st.compr_data_size);
			ck_assert_uint_eq(prev.objects, st.objects);
			if (g && refs > 1)
				ck_assert_uint_eq(zp_group_refs(group_word(pool, g)), refs - 1);
			/* Now and then, everything still live reads back. */
			if (i % (small_scale() ? 97 : 37) == 0)
				for (k = 0; k < total; k++)
					if (live[k])
						assert_page(pool, h[k], in + (size_t)k * PG);
		}
		assert_empty(pool, &base);
	}
	zpool_destroy(pool);
out:
	free(in);
	free(h);
	free(order);
	free(live);
}
END_TEST

/*
 * A corrupted group: with checksums every member and every load_pages()
 * touching it fails with -EIO and leaves zpool_load()'s page alone; other
 * groups are unaffected; freeing still works.  Without checksums the
 * decoder still refuses it or the bytes differ.
 */
START_TEST(test_corrupt_group)
{
	const unsigned int n = 3 * ZP_GROUP_PAGES;
	unsigned char *in = test_pages(n), *out = test_pages(n), sentinel[PG], page[PG];
	zpool_handle_t *h = calloc(n, sizeof(*h));
	unsigned int i, bad_first = ZP_GROUP_PAGES, bad_end = 2 * ZP_GROUP_PAGES;
	struct zpool_stats base;
	struct zpool *pool;
	const char *comp;
	unsigned int flags;
	size_t len;
	int ret;

	ck_assert_ptr_nonnull(h);
	if (!config(_i, &comp, &flags) || ZP_GROUP_PAGES < 2)
		goto out;
	pool = new_pool(comp, flags | ZPOOL_F_MULTI_PAGE, NULL);
	zpool_stats(pool, &base);
	make_run(in, PAT_SMALL, 11, n);
	ck_assert_int_eq(zpool_store_pages(pool, in, n, h), 0);
	ck_assert_uint_eq(check_layout(pool, in, h, n, true), 3);
	/* Through a member in the middle of the second group. */
	len = zpool_obj_size(pool, h[bad_first + 1]);
	ck_assert_int_eq(zpool__corrupt(pool, h[bad_first + 1], len, 0x20), -EINVAL);
	ck_assert_int_eq(zpool__corrupt(pool, h[bad_first + 1], 0, 0x20), 0);
	ck_assert_int_eq(zpool__corrupt(pool, h[bad_first + 1], len - 1, 0x20), 0);
	memset(sentinel, 0x5c, PG);
	if (flags & ZPOOL_F_CHECKSUM) {
		for (i = bad_first; i < bad_end; i++) {
			memcpy(page, sentinel, PG);
			ck_assert_int_eq(zpool_load(pool, h[i], page), -EIO);
			ck_assert_mem_eq(page, sentinel, PG);
		}
		ck_assert_int_eq(zpool_load_pages(pool, h + bad_first, ZP_GROUP_PAGES, out), -EIO);
		ck_assert_int_eq(zpool_load_pages(pool, h + bad_first + 1, 1, out), -EIO);
		ck_assert_int_eq(zpool_load_pages(pool, h, n, out), -EIO);
		ck_assert_int_eq(zpool_load_pages(pool, h + bad_first - 1, 2, out), -EIO);
		ck_assert_int_eq(zpool_load_pages(pool, h + bad_end - 1, 2, out), -EIO);
	} else {
		ret = zpool_load_pages(pool, h + bad_first, ZP_GROUP_PAGES, out);
		ck_assert(ret == -EIO ||
			  memcmp(out, in + (size_t)bad_first * PG, (size_t)ZP_GROUP_PAGES * PG));
	}
	/* The other groups, whole and in part. */
	ck_assert_int_eq(zpool_load_pages(pool, h, ZP_GROUP_PAGES, out), 0);
	ck_assert_mem_eq(out, in, (size_t)ZP_GROUP_PAGES * PG);
	ck_assert_int_eq(zpool_load_pages(pool, h + bad_end, ZP_GROUP_PAGES, out), 0);
	ck_assert_mem_eq(out, in + (size_t)bad_end * PG, (size_t)ZP_GROUP_PAGES * PG);
	for (i = 0; i < n; i++)
		if (i < bad_first || i >= bad_end)
			assert_page(pool, h[i], in + (size_t)i * PG);
	/* Corrupting it back restores it: the bytes were the group's, nothing else. */
	ck_assert_int_eq(zpool__corrupt(pool, h[bad_end - 1], 0, 0x20), 0);
	ck_assert_int_eq(zpool__corrupt(pool, h[bad_first], len - 1, 0x20), 0);
	ck_assert_int_eq(zpool_load_pages(pool, h, n, out), 0);
	ck_assert_mem_eq(out, in, (size_t)n * PG);
	for (i = 0; i < n; i++)
		zpool_free(pool, h[i]);
	assert_empty(pool, &base);
	/* Freed members are not corruptible: no object behind them. */
	ck_assert_int_eq(zpool__corrupt(pool, h[0], 0, 1), -EINVAL);
	zpool_destroy(pool);
out:
	free(h);
	free(in);
	free(out);
}
END_TEST

/*
 * mem_limit: a store_pages() that would pass it is refused whole, leaving
 * every statistic as it was (mem_used_max and huge_pages_since included)
 * and every earlier handle readable.  A run is a same-filled page, raw
 * pages that each need a page of their own, then small pages that group;
 * with a few pages of room many are refused after storing part of it.
 *
 * With a lazy source (the default) a part stored and taken back may leave
 * a zspage page touched, counted in mem_used_total until compaction trims
 * it (zsmalloc.c never untouches a page on free): that counter is only
 * held to the limit there, and mem_used_max, the peak of what is held,
 * follows it.  An eager source pays for a zspage whole, so with the arena
 * every counter must come back.
 */
START_TEST(test_mem_limit_all_or_nothing)
{
	const unsigned int keep_max = 40 * MAX_RUN;
	size_t arena_bytes = 4096 * PG;
	unsigned char *in = test_pages(keep_max), *out = test_pages(MAX_RUN);
	unsigned char *mem = malloc(arena_bytes), *all = test_pages(keep_max);
	zpool_handle_t *h = calloc(keep_max, sizeof(*h));
	unsigned int kept, refused = 0, partial = 0, raw_back = 0, room, k, i, lazy;
	struct zpool_page_source arena;
	struct zpool_stats st, st2;
	struct zpool *pool;
	const char *comp;
	unsigned int flags;

	ck_assert(h && mem);
	if (!config(_i, &comp, &flags))
		goto out;
	for (lazy = 0; lazy < 2; lazy++) {
		ck_assert_int_eq(zpool_arena_init(mem, arena_bytes, &arena), 0);
		pool = new_pool(comp, flags | ZPOOL_F_MULTI_PAGE, lazy ? NULL : &arena);
		/* Some data first, so the classes have partly used zspages. */
		make_run(in, PAT_CYCLE, 1, MAX_RUN);
		ck_assert_int_eq(zpool_store_pages(pool, in, MAX_RUN, h), 0);
		kept = MAX_RUN;
		for (k = 0; k < (small_scale() ? 18u : 40u) && kept + MAX_RUN <= keep_max; k++) {
			unsigned char *run = in + (size_t)kept * PG;
			unsigned int nraw = 1 + k / 2 % 4, n = MAX_RUN - k % 5;
			int ret;

			make_run(run, PAT_SMALL, 600 + k, n);
			make_page(run, PAGE_SAME, k, 0);
			for (i = 1; i <= nraw; i++)
				make_page(run + (size_t)i * PG, PAGE_RANDOM, 900 + k * 8 + i, 0);
			zpool_stats(pool, &st);
			/* An eager source pays a whole zspage (up to 8 pages) at once. */
			room = k % 6 * (lazy ? 3 : 8);
			zpool_set_mem_limit(pool, st.mem_used_total + room * PG);
			/* The peak at what is held now: a tight bound to keep. */
			zpool_reset_mem_used_max(pool);
			zpool_stats(pool, &st);
			memset(h + kept, 0, n * sizeof(*h));
			ret = zpool_store_pages(pool, run, n, h + kept);
			zpool_stats(pool, &st2);
			ck_assert_uint_le(st2.mem_used_total, st2.mem_limit);
			/* Whatever was refused, the peak is never below what is held. */
			ck_assert_msg(st2.mem_used_max >= st2.mem_used_total,
				      "store_pages %u (%d): mem_used_max %llu below mem_used_total %llu",
				      k, ret, (unsigned long long)st2.mem_used_max,
				      (unsigned long long)st2.mem_used_total);
			if (ret) {
				ck_assert_int_eq(ret, -ENOMEM);
				if (lazy) {
					/* The touched page is held: the peak follows it. */
					ck_assert_uint_eq(st2.mem_used_max, st2.mem_used_total);
					st2.mem_used_total = st.mem_used_total;
					st2.mem_used_max = st.mem_used_max;
				}
				assert_same_stats(&st, &st2, "refused store_pages", k);
				/* Handles written before the refusal were taken back. */
				for (i = 0; i < n; i++)
					if (h[kept + i]) {
						partial++;
						raw_back += i >= 1 && i <= nraw;
					}
				refused++;
			} else {
				ck_assert_uint_le(st2.mem_used_max, st2.mem_limit);
				ck_assert_int_eq(zpool_load_pages(pool, h + kept, n, out), 0);
				ck_assert_mem_eq(out, run, (size_t)n * PG);
				kept += n;
			}
			/* What was kept before still reads back: the first run here. */
			for (i = 0; i < MAX_RUN; i++)
				assert_page(pool, h[i], in + (size_t)i * PG);
		}
		/* ...and all of it at the end. */
		ck_assert_int_eq(zpool_load_pages(pool, h, kept, all), 0);
		ck_assert(!memcmp(all, in, (size_t)kept * PG));
		zpool_set_mem_limit(pool, 0);
		for (i = 0; i < kept; i++)
			zpool_free(pool, h[i]);
		zpool_stats(pool, &st);
		ck_assert_uint_eq(st.objects, 0);
		ck_assert_uint_eq(st.compr_data_size, 0);
		ck_assert_uint_eq(st.huge_pages, 0);
		zpool_destroy(pool);
	}
	ck_assert_uint_ge(refused, 8);
	/* Some refusals came after part of the run had been stored... */
	ck_assert_uint_gt(partial, 0);
	/* ...some after a raw page of it had been (huge_pages_since). */
	ck_assert_uint_gt(raw_back, 0);
out:
	free(h);
	free(in);
	free(out);
	free(mem);
	free(all);
}
END_TEST

#define FAIL_RUNS 12

/*
 * A fixed mix of store_pages() and frees; each refused store must change
 * nothing.  Returns the refusals.  @in holds FAIL_RUNS runs of MAX_RUN.
 */
static unsigned int fail_scenario(struct zpool *pool, const unsigned char *in,
				  zpool_handle_t *h, bool *live)
{
	unsigned int r, i, refused = 0;
	struct zpool_stats st, st2;

	for (r = 0; r < FAIL_RUNS; r++) {
		unsigned int n = 1 + r * 7 % MAX_RUN;
		zpool_handle_t *hr = h + r * MAX_RUN;
		int ret;

		zpool_stats(pool, &st);
		ret = zpool_store_pages(pool, in + (size_t)r * MAX_RUN * PG, n, hr);
		zpool_stats(pool, &st2);
		if (ret) {
			ck_assert_int_eq(ret, -ENOMEM);
			assert_same_stats(&st, &st2, "failed store_pages of run", r);
			refused++;
		}
		for (i = 0; i < n; i++)
			live[r * MAX_RUN + i] = !ret;
		/* Frees of part of an earlier run: groups lose members, pages go back. */
		if (r >= 2)
			for (i = 0; i < MAX_RUN; i += 2 + r % 3) {
				unsigned int k = (r - 2) * MAX_RUN + i;

				if (live[k]) {
					zpool_free(pool, h[k]);
					live[k] = false;
				}
			}
	}
	return refused;
}

/*
 * Page source failures at every allocation index of the scenario: the
 * failing store is refused whole, the pool stays consistent, and freeing
 * everything gives back every page (valgrind and ASan see the heap).
 */
START_TEST(test_page_source_failures)
{
	size_t arena_bytes = 1024 * PG;
	unsigned char *mem = malloc(arena_bytes), *in = test_pages(FAIL_RUNS * MAX_RUN);
	zpool_handle_t *h = calloc(FAIL_RUNS * MAX_RUN, sizeof(*h));
	bool *live = calloc(FAIL_RUNS * MAX_RUN, sizeof(*live));
	struct zpool_page_source src = { 0 };
	struct failing_source f;
	long total = 0, at, step, start;
	unsigned int r, i;
	const char *comp;
	unsigned int flags;

	ck_assert(mem && h && live);
	if (!config(_i, &comp, &flags))
		goto out;
	src.alloc = failing_alloc;
	src.free = failing_free;
	src.ctx = &f;
	for (r = 0; r < FAIL_RUNS; r++)
		make_run(in + (size_t)r * MAX_RUN * PG, (enum pattern)(r % PATTERNS), 700 + r,
			 MAX_RUN);
	/* at 0: the dry run that counts the calls; then each call fails once. */
	step = small_scale() ? 31 : 1;
	for (at = 0; at == 0 || at <= total; at += at ? step : 1) {
		struct zpool_stats base, st;
		struct zpool *pool;
		unsigned int refused;

		memset(&f, 0, sizeof(f));
		ck_assert_int_eq(zpool_arena_init(mem, arena_bytes, &f.arena_src), 0);
		pool = new_pool(comp, flags | ZPOOL_F_MULTI_PAGE, &src);
		zpool_stats(pool, &base);
		start = f.calls;
		f.fail_at = at ? start + at : 0;
		refused = fail_scenario(pool, in, h, live);
		if (!at) {
			total = f.calls - start;
			ck_assert_uint_eq(refused, 0);
			ck_assert_int_gt(total, 10);
		} else {
			/* Each allocation a store needs is one it cannot do without. */
			ck_assert_uint_eq(refused, 1);
		}
		zpool_compact(pool);
		zpool_stats(pool, &st);
		for (i = 0; i < FAIL_RUNS * MAX_RUN; i++)
			if (live[i])
				assert_page(pool, h[i], in + (size_t)i * PG);
		for (i = 0; i < FAIL_RUNS * MAX_RUN; i++)
			if (live[i])
				zpool_free(pool, h[i]);
		zpool_stats(pool, &st);
		ck_assert_uint_eq(st.objects, 0);
		ck_assert_uint_eq(st.compr_data_size, 0);
		ck_assert_uint_eq(st.mem_used_total, base.mem_used_total);
		zpool_destroy(pool);
		ck_assert_int_eq(f.outstanding, 0);
	}
out:
	free(mem);
	free(in);
	free(h);
	free(live);
}
END_TEST

START_TEST(test_invalid_calls)
{
	unsigned char *in = test_pages(4), *out = test_pages(4);
	zpool_handle_t h[4], g[4], bad[3];
	struct zpool_stats st;
	uint32_t gid;
	struct zpool *pool = new_pool(NULL, ZPOOL_F_MULTI_PAGE | ZPOOL_F_CHECKSUM, NULL);

	make_run(in, PAT_SMALL, 5, 4);
	ck_assert_int_eq(zpool_store_pages(NULL, in, 4, h), -EINVAL);
	ck_assert_int_eq(zpool_store_pages(pool, NULL, 4, h), -EINVAL);
	ck_assert_int_eq(zpool_store_pages(pool, in, 4, NULL), -EINVAL);
	ck_assert_int_eq(zpool_store_pages(pool, in, 0, h), -EINVAL);
	zpool_stats(pool, &st);
	ck_assert_uint_eq(st.objects, 0);
	ck_assert_int_eq(zpool_store_pages(pool, in, 4, h), 0);
	ck_assert_int_eq(zpool_store_pages(pool, in, 4, g), 0);
	if (ZP_GROUP_PAGES >= 4)
		ck_assert_uint_eq(check_layout(pool, in, h, 4, true), 1);
	ck_assert_int_eq(zpool_load_pages(NULL, h, 4, out), -EINVAL);
	ck_assert_int_eq(zpool_load_pages(pool, NULL, 4, out), -EINVAL);
	ck_assert_int_eq(zpool_load_pages(pool, h, 4, NULL), -EINVAL);
	/* nr 0 reads nothing (the header does not call it an error). */
	memset(out, 0x33, PG);
	ck_assert_int_le(zpool_load_pages(pool, h, 0, out), 0);
	ck_assert_uint_eq(out[0], 0x33);
	ck_assert_uint_eq(out[PG - 1], 0x33);
	ck_assert_int_eq(zpool_load(pool, h[0], NULL), -EINVAL);
	bad[0] = 0;
	ck_assert_int_eq(zpool_load_pages(pool, bad, 1, out), -EINVAL);
	bad[0] = ~0ul;
	ck_assert_int_eq(zpool_load_pages(pool, bad, 1, out), -EINVAL);
	bad[0] = h[0];
	bad[1] = 12345;
	ck_assert_int_eq(zpool_load_pages(pool, bad, 2, out), -EINVAL);
	/* A freed member: alone, inside a run of its group, and twice freed. */
	zpool_free(pool, h[1]);
	ck_assert_int_eq(zpool_load(pool, h[1], out), -EINVAL);
	ck_assert_uint_eq(zpool_obj_size(pool, h[1]), 0);
	ck_assert_int_eq(zpool_load_pages(pool, h + 1, 1, out), -EINVAL);
	ck_assert_int_eq(zpool_load_pages(pool, h, 4, out), -EINVAL);
	zpool_free(pool, h[1]);
	zpool_free(pool, h[1]);
	/* The double frees dropped no reference: one for each page still in the group. */
	gid = group_of_handle(pool, h[0], NULL);
	if (gid)
		ck_assert_uint_eq(zp_group_refs(group_word(pool, gid)),
				  zp_group_pages(group_word(pool, gid)) - 1);
	zpool_free(pool, h[0]);
	zpool_free(pool, h[0]);
	zpool_free(pool, h[3]);
	zpool_free(pool, h[3]);
	assert_page(pool, h[2], in + 2 * PG);
	bad[0] = h[2];
	ck_assert_int_eq(zpool_load_pages(pool, bad, 1, out), 0);
	ck_assert_mem_eq(out, in + 2 * PG, PG);
	/* The other run is untouched. */
	ck_assert_int_eq(zpool_load_pages(pool, g, 4, out), 0);
	ck_assert_mem_eq(out, in, 4 * PG);
	zpool_free(pool, h[2]);
	zpool_free(pool, h[2]);
	zpool_stats(pool, &st);
	ck_assert_uint_eq(st.objects, 4);
	ck_assert_int_eq(zpool_load_pages(pool, g, 4, out), 0);
	ck_assert_mem_eq(out, in, 4 * PG);
	zpool_free(NULL, g[0]);
	zpool_destroy(pool);
	free(in);
	free(out);
}
END_TEST

/*
 * Compaction with groups live, some with members freed and some with the
 * object already gone: what is left reads back, alone and together.
 */
START_TEST(test_compaction)
{
	const unsigned int runs = small_scale() ? 6 : 60, n = MAX_RUN, total = runs * n;
	unsigned char *in = test_pages(total), *out = test_pages(n);
	zpool_handle_t *h = calloc(total, sizeof(*h)), *single = calloc(total, sizeof(*h));
	bool *live = calloc(total, sizeof(*live));
	struct zpool_stats st;
	struct rng r = { 31337 + (uint64_t)_i };
	unsigned int i, j, round;
	size_t given = 0;
	struct zpool *pool;

	ck_assert(h && single && live);
	pool = group_pool(_i);
	if (!pool)
		goto out;
	for (round = 0; round < 3; round++) {
		/* A third of the runs are stored afresh each round. */
		for (j = 0; j < runs; j++) {
			unsigned char *run = in + (size_t)j * n * PG;

			if (round && (j + round) % 3)
				continue;
			for (i = 0; i < n; i++)
				if (live[j * n + i]) {
					zpool_free(pool, h[j * n + i]);
					live[j * n + i] = false;
				}
			zpool_free(pool, single[j]);
			make_run(run, (enum pattern)((j + round) % PATTERNS), 1000 * round + j, n);
			ck_assert_int_eq(zpool_store_pages(pool, run, n, h + j * n), 0);
			for (i = 0; i < n; i++)
				live[j * n + i] = true;
			/* Single stores between the runs share their classes. */
			ck_assert_int_eq(zpool_store(pool, run, &single[j]), 0);
		}
		/* Free most pages: whole groups, and parts of others. */
		for (i = 0; i < total; i++)
			if (live[i] && rng_range(&r, 0, 3)) {
				zpool_free(pool, h[i]);
				live[i] = false;
			}
		for (j = 0; j < runs; j += 2) {
			zpool_free(pool, single[j]);
			single[j] = 0;
		}
		given += zpool_compact(pool);
		for (j = 0; j < runs; j++) {
			unsigned int idx[MAX_RUN], k = 0;

			for (i = 0; i < n; i++)
				if (live[j * n + i])
					idx[k++] = i;
			assert_pages(pool, h + j * n, in + (size_t)j * n * PG, idx, k, out);
			for (i = 0; i < k; i++)
				assert_page(pool, h[j * n + idx[i]],
					    in + ((size_t)j * n + idx[i]) * PG);
			if (single[j])
				assert_page(pool, single[j], in + (size_t)j * n * PG);
		}
	}
	ck_assert_uint_gt(given, 0);
	for (i = 0; i < total; i++)
		if (live[i])
			zpool_free(pool, h[i]);
	for (j = 0; j < runs; j++)
		zpool_free(pool, single[j]);
	zpool_compact(pool);
	zpool_stats(pool, &st);
	ck_assert_uint_eq(st.objects, 0);
	ck_assert_uint_eq(st.compr_data_size, 0);
	zpool_destroy(pool);
out:
	free(in);
	free(out);
	free(h);
	free(single);
	free(live);
}
END_TEST

/*
 * A multi-page pool whose slot 0 codec has a dictionary of two pages, at a
 * level its compressor takes, with room for @n pages in and out.
 */
struct dict_case {
	struct zpool *pool;
	unsigned char *in, *out, *dict;
	zpool_handle_t *h;
	int level;
};

/* Set up @dc for config @i; false (nothing to free) if it is not built in. */
static bool dict_case_init(struct dict_case *dc, int i, unsigned int n)
{
	dc->pool = group_pool(i);
	if (!dc->pool)
		return false;
	dc->in = test_pages(n);
	dc->out = test_pages(n);
	dc->dict = test_pages(2);
	dc->h = calloc(n, sizeof(*dc->h));
	ck_assert_ptr_nonnull(dc->h);
	make_page(dc->dict, PAGE_TEXT, 1, 0);
	make_page(dc->dict + PG, PAGE_BINARY, 2, 0);
	dc->level = dc->pool->comp == ZP_COMP_LZ4 ? 1 : dc->pool->comp == ZP_COMP_LZ4HC ? 9 : 3;
	ck_assert_int_eq(zpool__codec_slot_set(dc->pool, 0, dc->pool->comp, dc->level, dc->dict,
					       2 * PG), 0);
	return true;
}

/* Free @n handles of @dc, then everything else. */
static void dict_case_destroy(struct dict_case *dc, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		zpool_free(dc->pool, dc->h[i]);
	zpool_destroy(dc->pool);
	free(dc->h);
	free(dc->in);
	free(dc->out);
	free(dc->dict);
}

/*
 * Objects written by a codec with a dictionary (zram's algorithm
 * parameters) carry a codec byte: groups must too, and read back.
 */
START_TEST(test_groups_with_dictionary)
{
	const unsigned int n = 3 * ZP_GROUP_PAGES;
	struct dict_case dc;
	struct zpool_stats st;
	unsigned int i;

	if (!dict_case_init(&dc, _i, n))
		return;
	make_run(dc.in, PAT_SMALL, 21, n);
	for (i = 0; i < n; i += 3)
		make_page(dc.in + (size_t)i * PG, PAGE_TEXT, 40 + i, 0);
	ck_assert_int_eq(zpool_store_pages(dc.pool, dc.in, n, dc.h), 0);
	check_layout(dc.pool, dc.in, dc.h, n, true);
	ck_assert_int_eq(zpool_load_pages(dc.pool, dc.h, n, dc.out), 0);
	ck_assert_mem_eq(dc.out, dc.in, (size_t)n * PG);
	for (i = 0; i < n; i++)
		assert_page(dc.pool, dc.h[i], dc.in + (size_t)i * PG);
	/* The objects keep their codec after the slot changes. */
	ck_assert_int_eq(zpool__codec_slot_set(dc.pool, 0, dc.pool->comp, dc.level, NULL, 0), 0);
	ck_assert_int_eq(zpool_load_pages(dc.pool, dc.h, n, dc.out), 0);
	ck_assert_mem_eq(dc.out, dc.in, (size_t)n * PG);
	for (i = 0; i < n; i++)
		zpool_free(dc.pool, dc.h[i]);
	zpool_stats(dc.pool, &st);
	ck_assert_uint_eq(st.compr_data_size, 0);
	dict_case_destroy(&dc, 0);
}
END_TEST

/*
 * An object written with a dictionary starts with its codec's id.  A
 * corrupt id may name no codec at all: loads must fail with -EIO, with or
 * without checksums, never follow it.
 */
START_TEST(test_corrupt_codec_byte)
{
	const unsigned int n = 2 * ZP_GROUP_PAGES;
	struct dict_case dc;
	unsigned int i;

	if (!dict_case_init(&dc, _i, n + 1))
		return;
	make_run(dc.in, PAT_SMALL, 23, n);
	make_page(dc.in + (size_t)n * PG, PAGE_TEXT, 24, 0);
	ck_assert_int_eq(zpool_store_pages(dc.pool, dc.in, n, dc.h), 0);
	ck_assert_int_eq(zpool_store(dc.pool, dc.in + (size_t)n * PG, &dc.h[n]), 0);
	/* The first group (or page) and the single page: id 1 becomes 0x81, no codec. */
	ck_assert_int_eq(zpool__corrupt(dc.pool, dc.h[0], 0, 0x80), 0);
	ck_assert_int_eq(zpool__corrupt(dc.pool, dc.h[n], 0, 0x80), 0);
	for (i = 0; i < n + 1; i++) {
		bool hit = i == n || i < ZP_GROUP_PAGES;

		if (hit)
			ck_assert_int_eq(zpool_load(dc.pool, dc.h[i], dc.out), -EIO);
		else
			assert_page(dc.pool, dc.h[i], dc.in + (size_t)i * PG);
	}
	ck_assert_int_eq(zpool_load_pages(dc.pool, dc.h, n, dc.out), -EIO);
	ck_assert_int_eq(zpool_load_pages(dc.pool, dc.h + n, 1, dc.out), -EIO);
	/* Put back, it reads again. */
	ck_assert_int_eq(zpool__corrupt(dc.pool, dc.h[0], 0, 0x80), 0);
	ck_assert_int_eq(zpool__corrupt(dc.pool, dc.h[n], 0, 0x80), 0);
	ck_assert_int_eq(zpool_load_pages(dc.pool, dc.h, n + 1, dc.out), 0);
	ck_assert_mem_eq(dc.out, dc.in, (size_t)(n + 1) * PG);
	dict_case_destroy(&dc, n + 1);
}
END_TEST

/*
 * Threads: workers store runs, read them back alone and together, then
 * hand them over: in the second phase every worker frees a stride of all
 * the pages (members of the same groups freed on different threads at
 * once, some freed twice at once) and reads the rest, while two threads
 * compact throughout.
 */
#define T_WORKERS 3
#define T_RUNS 8

struct mp_shared {
	struct zpool *pool;
	pthread_barrier_t barrier;
	zpool_handle_t h[T_WORKERS][T_RUNS][MAX_RUN];
	unsigned int n[T_WORKERS][T_RUNS];
	unsigned int rounds, runs;	/* runs: per worker and round, up to T_RUNS */
	atomic_int stop;
};

struct mp_worker {
	struct mp_shared *sh;
	unsigned int id;
	long bad;
};

static unsigned int t_run_len(unsigned int id, unsigned int round, unsigned int r)
{
	return 1 + (id * 7 + round * 3 + r * 5) % MAX_RUN;
}

static void t_run(unsigned char *in, unsigned int id, unsigned int round, unsigned int r,
		  unsigned int n)
{
	make_run(in, (enum pattern)((id + r) % PATTERNS), (id * 100 + round) * 16 + r, n);
}

static void *mp_work(void *arg)
{
	struct mp_worker *w = arg;
	struct mp_shared *sh = w->sh;
	unsigned char *in = test_pages(MAX_RUN), *out = test_pages(MAX_RUN);
	struct rng rng = { 1234 + w->id };
	unsigned int round, r, i, k, o, other, m, mine[MAX_RUN];
	zpool_handle_t hs[MAX_RUN];

	for (round = 0; round < sh->rounds; round++) {
		for (r = 0; r < sh->runs; r++) {
			unsigned int n = t_run_len(w->id, round, r);
			zpool_handle_t *h = sh->h[w->id][r];

			t_run(in, w->id, round, r, n);
			sh->n[w->id][r] = n;
			if (zpool_store_pages(sh->pool, in, n, h)) {
				w->bad++;
				sh->n[w->id][r] = 0;
				continue;
			}
			if (zpool_load_pages(sh->pool, h, n, out) ||
			    memcmp(out, in, (size_t)n * PG))
				w->bad++;
			i = rng_range(&rng, 0, n - 1);
			if (zpool_load(sh->pool, h[i], out) || memcmp(out, in + (size_t)i * PG, PG))
				w->bad++;
		}
		pthread_barrier_wait(&sh->barrier);
		/* Phase 2: every worker's pages; stride by id, overlap on k % 5 == 0. */
		for (o = 0; o < T_WORKERS; o++) {
			other = (w->id + o) % T_WORKERS;
			for (r = 0; r < sh->runs; r++) {
				unsigned int n = sh->n[other][r];
				zpool_handle_t *h = sh->h[other][r];

				if (!n)
					continue;
				t_run(in, other, round, r, n);
				/*
				 * Pages k % 5 == 0 are freed by every worker at
				 * once; the rest only by worker k % T_WORKERS,
				 * which alone may read them, while the others
				 * free the rest of their groups.
				 */
				for (k = 0, m = 0; k < n; k++)
					if (k % T_WORKERS == w->id && k % 5)
						mine[m++] = k;
				for (i = 0; i < m; i++) {
					k = mine[i];
					if (zpool_load(sh->pool, h[k], out) ||
					    memcmp(out, in + (size_t)k * PG, PG))
						w->bad++;
					hs[i] = h[k];
				}
				if (m && zpool_load_pages(sh->pool, hs, m, out))
					w->bad++;
				for (i = 0; i < m; i++)
					if (memcmp(out + (size_t)i * PG, in + (size_t)mine[i] * PG, PG))
						w->bad++;
				for (k = 0; k < n; k++)
					if (k % T_WORKERS == w->id || k % 5 == 0)
						zpool_free(sh->pool, h[k]);
			}
		}
		pthread_barrier_wait(&sh->barrier);
	}
	free(in);
	free(out);
	return NULL;
}

static void *mp_compactor(void *arg)
{
	struct mp_shared *sh = arg;

	struct timespec pause = { 0, 1000000 };

	while (!atomic_load(&sh->stop)) {
		zpool_compact(sh->pool);
		/* valgrind runs one thread at a time: leave the workers room. */
		if (small_scale())
			nanosleep(&pause, NULL);
	}
	return NULL;
}

START_TEST(test_threads)
{
	struct mp_shared *sh = calloc(1, sizeof(*sh));
	struct mp_worker w[T_WORKERS];
	pthread_t t[T_WORKERS], c[2];
	struct zpool_stats base, st;
	unsigned int i;

	ck_assert_ptr_nonnull(sh);
	sh->pool = group_pool(_i);
	if (!sh->pool)
		goto out;
	sh->rounds = small_scale() ? 2 : 12;
	sh->runs = small_scale() ? 4 : T_RUNS;
	zpool_stats(sh->pool, &base);
	ck_assert_int_eq(pthread_barrier_init(&sh->barrier, NULL, T_WORKERS), 0);
	pthread_create(&c[0], NULL, mp_compactor, sh);
	pthread_create(&c[1], NULL, mp_compactor, sh);
	for (i = 0; i < T_WORKERS; i++) {
		w[i].sh = sh;
		w[i].id = i;
		w[i].bad = 0;
		pthread_create(&t[i], NULL, mp_work, &w[i]);
	}
	for (i = 0; i < T_WORKERS; i++) {
		pthread_join(t[i], NULL);
		ck_assert_int_eq(w[i].bad, 0);
	}
	atomic_store(&sh->stop, 1);
	pthread_join(c[0], NULL);
	pthread_join(c[1], NULL);
	pthread_barrier_destroy(&sh->barrier);
	zpool_stats(sh->pool, &st);
	assert_no_data(&st);
	zpool_compact(sh->pool);
	zpool_stats(sh->pool, &st);
	ck_assert_uint_eq(st.mem_used_total, base.mem_used_total);
	zpool_destroy(sh->pool);
out:
	free(sh);
}
END_TEST

/*
 * Two threads free the same handles at once, as zpool_free() allows ("not
 * in use" is ignored): each page is freed once whatever its kind (same-
 * filled, a group's member, alone), the counters go down once, and the
 * table's pages go back, even when a chunk empties under the second free.
 */
struct df_arg {
	struct zpool *pool;
	const zpool_handle_t *h;
	unsigned int n;
	pthread_barrier_t *barrier;
};

static void *df_free(void *arg)
{
	struct df_arg *a = arg;
	unsigned int i;

	pthread_barrier_wait(a->barrier);
	for (i = 0; i < a->n; i++)
		zpool_free(a->pool, a->h[i]);
	return NULL;
}

START_TEST(test_concurrent_double_free)
{
	const unsigned int n = 3 * MAX_RUN;
	unsigned char *in = test_pages(n);
	zpool_handle_t h[3 * MAX_RUN];
	unsigned int round, j;
	pthread_barrier_t barrier;
	struct zpool_stats base;
	struct df_arg a[2];
	pthread_t t[2];
	struct zpool *pool;

	pool = group_pool(_i);
	if (!pool)
		goto out;
	zpool_stats(pool, &base);
	for (j = 0; j < 3; j++)
		make_run(in + (size_t)j * MAX_RUN * PG, (enum pattern)j, 50 + j, MAX_RUN);
	ck_assert_int_eq(pthread_barrier_init(&barrier, NULL, 2), 0);
	for (round = 0; round < (small_scale() ? 3u : 40u); round++) {
		for (j = 0; j < 3; j++)
			ck_assert_int_eq(zpool_store_pages(pool, in + (size_t)j * MAX_RUN * PG,
							   MAX_RUN, h + j * MAX_RUN), 0);
		for (j = 0; j < 2; j++) {
			a[j].pool = pool;
			a[j].h = h;
			a[j].n = n;
			a[j].barrier = &barrier;
			pthread_create(&t[j], NULL, df_free, &a[j]);
		}
		for (j = 0; j < 2; j++)
			pthread_join(t[j], NULL);
		assert_empty(pool, &base);
	}
	pthread_barrier_destroy(&barrier);
	zpool_destroy(pool);
out:
	free(in);
}
END_TEST

int main(void)
{
	const TTest *const configs[] = {
		test_round_trip_runs,
		test_without_flag_is_store,
		test_grouping_happens,
		test_stats_free_orders,
		test_corrupt_group,
		test_mem_limit_all_or_nothing,
		test_page_source_failures,
		test_compaction,
		test_groups_with_dictionary,
		test_corrupt_codec_byte,
		NULL
	};
	const TTest *const once[] = { test_invalid_calls, NULL };
	const TTest *const threads[] = { test_threads, test_concurrent_double_free, NULL };
	const struct test_group groups[] = {
		{ .name = "configs", .tests = configs, .timeout = 300, .loops = NCONFIGS },
		{ .name = "calls", .tests = once, .timeout = 60 },
		{ .name = "threads", .tests = threads, .timeout = 300, .loops = NCONFIGS },
		{ .name = NULL },
	};

	return test_main("zpool_multi_page", groups);
}

// SPDX-License-Identifier: MIT
/*
 * libzpool's mem_used_total against what the process really holds: the
 * growth of its anonymous resident memory (/proc/self/smaps_rollup) since
 * just before the pool was made, after storing pages, freeing a third,
 * compacting and freeing everything.
 *
 * Pages are the corpus (/tmp/anon-64m.bin, real anonymous memory) when it
 * is there, else a deterministic mix of the kinds in pages.h.  Skips (77)
 * where the figure means nothing: no smaps_rollup, or under valgrind, ASan
 * or TSan, whose shadow memory and allocators move RSS on their own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <libbvec/zpool.h>

#include "rss.h"

#include "pages.h"

#ifndef __has_feature
#define __has_feature(x) 0
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) || \
	__has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

#ifndef CORPUS
#define CORPUS "/tmp/anon-64m.bin"
#endif
#define CORPUS_BYTES ((size_t)64 << 20)

/*
 * What may be resident for the pool without being pool pages: this
 * thread's compression context (lz4's 16 KiB state and the output buffer,
 * malloc'd on the first store), the mmap source's own bookkeeping (its
 * struct, the list of 2 MiB chunks and one pointer per run it carved:
 * about 20 KiB for this corpus), and glibc heap pages those mallocs
 * touch.  256 KiB covers them with room; it is 1 % of the pool's ~25 MiB
 * at the full mark and a fraction of a page per MiB once everything is
 * freed, where the old code was 7 MiB off.
 */
#define ALLOWANCE ((int64_t)256 << 10)

static unsigned char *pages;
static size_t npages;
static const char *source = "no pages yet"; /* load_pages() names the source */

/* valgrind runs the program on its own loader: its preload is mapped. */
static bool under_valgrind(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, "vgpreload") != NULL;
	fclose(f);
	return found;
}

static bool load_pages(void)
{
	FILE *f = fopen(CORPUS, "rb");
	size_t i;

	npages = CORPUS_BYTES / PG;
	pages = malloc(npages * PG);
	if (!pages) {
		if (f)
			fclose(f);
		return false;
	}
	if (f && fread(pages, PG, npages, f) == npages) {
		source = CORPUS;
	} else {
		/* Mostly compressible, some zero, same-filled and raw pages. */
		static const enum page_kind mix[] = { PAGE_TEXT, PAGE_BINARY, PAGE_TEXT,
			PAGE_BINARY, PAGE_ZERO, PAGE_TEXT, PAGE_SAME, PAGE_BINARY,
			PAGE_TEXT, PAGE_RANDOM };

		for (i = 0; i < npages; i++)
			make_page(pages + i * PG, mix[i % 10], i, 0);
		source = "generated pages";
	}
	if (f)
		fclose(f);
	return true;
}

static void check_phase(struct zpool *pool, int64_t base, const char *phase)
{
	struct zpool_stats st;
	int64_t grown = rss_anon() - base, used, slack;
	bool used_may_exceed = false;

	zpool_stats(pool, &st);
	used = (int64_t)st.mem_used_total;
	slack = (used > grown ? used : grown) / 50 + ALLOWANCE;
	printf("%-22s mem_used %10lld  RSS growth %10lld  RSS/mem_used %.3f\n", phase,
	       (long long)used, (long long)grown, (double)grown / (double)used);
	fflush(stdout);
	/*
	 * With pool pages larger than the kernel's (a 64 KiB build on 4 KiB
	 * pages) a pool page counts whole once touched while the kernel
	 * makes only the written part resident: there mem_used_total may
	 * run above RSS, but never below it.
	 */
	if (PG > (size_t)sysconf(_SC_PAGESIZE))
		used_may_exceed = true;
	ck_assert_msg(grown - used <= slack && (used_may_exceed || used - grown <= slack),
		      "%s: mem_used_total %lld bytes but anonymous RSS grew %lld bytes "
		      "(allowed: 2 %% + %lld)", phase, (long long)used, (long long)grown,
		      (long long)ALLOWANCE);
}

START_TEST(test_mem_used_is_resident_memory)
{
	zpool_handle_t *h = malloc(npages * sizeof(*h));
	unsigned char *out = test_pages(1);
	struct zpool *pool;
	int64_t base;
	size_t i;

	/* Everything the test itself writes is resident before the baseline. */
	ck_assert_ptr_nonnull(h);
	memset(h, 0, npages * sizeof(*h));
	memset(out, 0, PG);
	printf("zpool_rss: %zu pages from %s\n", npages, source);
	base = rss_anon();
	ck_assert_int_ge(base, 0);
	pool = zpool_create(NULL);
	ck_assert_ptr_nonnull(pool);
	for (i = 0; i < npages; i++)
		ck_assert_int_eq(zpool_store(pool, pages + i * PG, &h[i]), 0);
	check_phase(pool, base, "stored");

	for (i = 0; i < npages; i += 3) {
		zpool_free(pool, h[i]);
		h[i] = 0;
	}
	check_phase(pool, base, "freed a third");

	zpool_compact(pool);
	check_phase(pool, base, "compacted");
	for (i = 1; i < npages; i += 7) {
		if (!h[i])
			continue;
		ck_assert_int_eq(zpool_load(pool, h[i], out), 0);
		ck_assert_mem_eq(out, pages + i * PG, PG);
	}

	for (i = 0; i < npages; i++)
		zpool_free(pool, h[i]);
	check_phase(pool, base, "freed all");

	zpool_destroy(pool);
	free(out);
	free(h);
}
END_TEST

int main(void)
{
	const TTest *const rss[] = { test_mem_used_is_resident_memory, NULL };
	const struct test_group groups[] = {
		{ .name = "rss", .tests = rss, .timeout = 300 },
		{ .name = NULL },
	};
	int ret;

	if (getenv("BVEC_TEST_EMULATED")) {
		printf("zpool_rss: skipped: under qemu-user the RSS is the emulator's, not the pool's\n");
		return 77;
	}
	if (SANITIZED || under_valgrind()) {
		printf("zpool_rss: skipped: a sanitizer or valgrind owns RSS here\n");
		return 77;
	}
	if (rss_anon() < 0) {
		printf("zpool_rss: skipped: no Anonymous line in /proc/self/smaps_rollup\n");
		return 77;
	}
	if (!load_pages()) {
		printf("zpool_rss: out of memory for %zu pages\n", npages);
		return EXIT_FAILURE;
	}
	ret = test_main("zpool_rss", groups);
	free(pages);
	return ret;
}

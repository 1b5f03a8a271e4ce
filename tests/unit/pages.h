/* SPDX-License-Identifier: MIT */
/* Deterministic test pages of every kind libzpool treats differently. */
#ifndef BVEC_TEST_PAGES_H
#define BVEC_TEST_PAGES_H

#include <stdio.h>

#include "testutil.h"

#define PG ((size_t)BVEC_PAGE_SIZE)

enum page_kind {
	PAGE_ZERO,
	PAGE_SAME,	 /* one repeated machine word */
	PAGE_TEXT,	 /* words from a small vocabulary */
	PAGE_BINARY,	 /* small structured integers */
	PAGE_RANDOM,	 /* incompressible: stored raw */
	PAGE_SIZED,	 /* @param random bytes, then zeros: aims at a size */
	PAGE_KINDS
};

static inline void make_page(unsigned char *p, enum page_kind kind, uint64_t seed,
			     unsigned int param)
{
	static const char *const words[] = { "block ", "bio ", "vector ", "page ",
		"zram ", "sector ", "split ", "chain ", "{\"k\": ", "1234, " };
	struct rng r = { seed * 0x9e3779b97f4a7c15ull + 1 };
	size_t i = 0;

	switch (kind) {
	case PAGE_ZERO:
		memset(p, 0, PG);
		break;
	case PAGE_SAME: {
		unsigned long w = (unsigned long)rng_next(&r) | 1;

		for (i = 0; i < PG; i += sizeof(w))
			memcpy(p + i, &w, sizeof(w));
		break;
	}
	case PAGE_TEXT:
		while (i < PG) {
			const char *w = words[rng_next(&r) % 10];
			size_t n = strlen(w);

			if (n > PG - i)
				n = PG - i;
			memcpy(p + i, w, n);
			i += n;
		}
		break;
	case PAGE_BINARY:
		for (i = 0; i < PG; i += 4) {
			uint32_t v = (uint32_t)(rng_next(&r) % 300) + (uint32_t)(i & 0xff00);

			memcpy(p + i, &v, 4);
		}
		break;
	case PAGE_RANDOM:
		for (i = 0; i < PG; i += 8) {
			uint64_t v = rng_next(&r);

			memcpy(p + i, &v, 8);
		}
		break;
	case PAGE_SIZED:
		memset(p, 0, PG);
		for (i = 0; i < param && i < PG; i++)
			p[i] = (unsigned char)rng_next(&r);
		p[PG - 1] = 1; /* never same-filled */
		break;
	default:
		break;
	}
}

/*
 * Text of zram's own vocabulary, headed by @index and @gen so that every
 * page and generation differs: compresses well, better still with zstd,
 * so recompression has something to gain.
 */
static inline void text_page(unsigned char *p, uint64_t index, uint32_t gen)
{
	static const char *const words[] = {
		"the ", "zram ", "device ", "page ", "compressed ", "memory ", "of ", "a ",
		"block ", "to ", "and ", "size ", "class ", "object ", "pool ", "handle ",
		"write ", "read ", "in ", "is ", "with ", "idle ", "huge ", "slot ",
	};
	struct rng r = { index * 7919 + gen * 104729 + 1 };
	size_t off;

	memcpy(p, &index, sizeof(index));
	memcpy(p + sizeof(index), &gen, sizeof(gen));
	for (off = 12; off < PG;) {
		const char *w = words[rng_next(&r) % (sizeof(words) / sizeof(words[0]))];
		size_t n = strlen(w);

		if (n > PG - off)
			n = PG - off;
		memcpy(p + off, w, n);
		off += n;
	}
}

/* 512 bytes of text_page() repeated: lz4 stores a whole group of them as one object. */
static inline void rep_page(unsigned char *p, uint64_t index, uint32_t gen)
{
	unsigned char t[PG];
	size_t off;

	text_page(t, index, gen);
	for (off = 0; off < PG; off += 512)
		memcpy(p + off, t, 512);
}

/*
 * Numbered 32-byte lines naming @index and @gen: compresses so well that
 * lz4 fits a whole group of them below the huge class.
 */
static inline void line_page(unsigned char *p, uint64_t index, uint32_t gen)
{
	char line[64];
	size_t off;

	for (off = 0; off < PG; off += 32) {
		snprintf(line, sizeof(line), "p %8llu g %8u l %5zu ...",
			 (unsigned long long)index % 100000000, gen % 100000000, off / 32 % 100000);
		memcpy(p + off, line, 32);
	}
}

#endif

// SPDX-License-Identifier: MIT
/*
 * Fuzz target: a pool built from the input's first bytes (compressor,
 * level, checksum flag, zspage chain length) runs a sequence of operations
 * decoded from the rest (store pages of chosen kinds, load, free, compact,
 * set or lift mem_limit, corrupt a stored object) against a model that
 * holds a copy of every stored page.  Every load of an intact object must
 * give the model's page back; a corrupted one must be refused (-EIO) or
 * give the model's page when the pool checksums, and must at least not
 * crash or return anything but 0 or -EIO when it does not.  A store that
 * fails (-ENOMEM under mem_limit) must leave the pool as it was.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <libbvec/zpool.h>

#include "../../src/zpool/internal.h"

#include "fuzz.h"

#define PS ((size_t)BVEC_PAGE_SIZE)
#define SLOTS 24

struct slot {
	zpool_handle_t h;
	bool live;
	bool corrupt;
	unsigned char *page; /* the model's copy */
};

/* Deterministic so a reproducer replays the same pages. */
static uint32_t xorshift(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/*
 * The kinds of page zram sees: same-filled words (stored without an object),
 * text-like runs (small objects), random bytes (huge, stored raw), and pages
 * half random (mid-size objects), so every size class range gets objects.
 */
static void make_page(unsigned char *page, unsigned int kind, unsigned int arg)
{
	uint32_t s = arg * 2654435761u | 1;
	size_t i, cut;
	unsigned long w;

	switch (kind % 6) {
	case 0: /* same-filled word, any value */
		w = (unsigned long)arg * 0x01000193ul;
		for (i = 0; i < PS; i += sizeof(w))
			memcpy(page + i, &w, sizeof(w));
		break;
	case 1: /* compressible: a short alphabet in runs */
		for (i = 0; i < PS; i++)
			page[i] = (unsigned char)('a' + (i / (1 + arg % 13) + arg) % (1 + arg % 7));
		break;
	case 2: /* incompressible */
		for (i = 0; i < PS; i++)
			page[i] = (unsigned char)xorshift(&s);
		break;
	case 3: /* a random prefix of chosen length, then zeros */
		cut = (size_t)arg % PS;
		for (i = 0; i < PS; i++)
			page[i] = i < cut ? (unsigned char)xorshift(&s) : 0;
		break;
	case 4: /* all zeros but one byte: almost same-filled */
		memset(page, 0, PS);
		page[(size_t)arg % PS] = (unsigned char)(arg >> 8 | 1);
		break;
	default: /* zeros */
		memset(page, 0, PS);
	}
}

static void check_load(struct zpool *pool, const struct slot *s, bool summed,
		       unsigned char *out)
{
	int ret = zpool_load(pool, s->h, out);

	if (!s->corrupt) {
		if (ret != 0 || memcmp(out, s->page, PS))
			abort();
	} else if (summed) {
		if (ret != -EIO && (ret != 0 || memcmp(out, s->page, PS)))
			abort(); /* wrong bytes must never come back */
	} else if (ret != 0 && ret != -EIO) {
		abort();
	}
}

static void check_stats(struct zpool *pool, const struct slot *slots)
{
	struct zpool_stats st;
	uint64_t live = 0;
	int i;

	for (i = 0; i < SLOTS; i++)
		live += slots[i].live;
	zpool_stats(pool, &st);
	if (st.objects != live || st.orig_data_size != live * PS ||
	    st.mem_used_max < st.mem_used_total)
		abort();
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static const char *const comps[] = { "lz4", "lz4hc", "zstd", NULL };
	static struct slot slots[SLOTS];
	static unsigned char *page, *out;
	struct zpool_config cfg = ZPOOL_CONFIG_INIT;
	struct input in = { data, size };
	struct zpool *pool;
	unsigned int c;
	bool summed;
	int i;

	if (!page) {
		page = malloc(PS);
		out = malloc(PS);
		for (i = 0; i < SLOTS; i++)
			slots[i].page = malloc(PS);
		if (!page || !out)
			abort();
		for (i = 0; i < SLOTS; i++)
			if (!slots[i].page)
				abort();
	}
	c = take(&in, 1);
	cfg.compressor = comps[c % 4];
	if (cfg.compressor && !zpool_has_compressor(cfg.compressor))
		cfg.compressor = NULL;
	/* Small levels keep lz4hc and zstd fast enough to explore. */
	cfg.level = (int)(c / 4 % 4);
	cfg.flags = take(&in, 1) & 1 ? ZPOOL_F_CHECKSUM : 0;
	cfg.max_pages_per_zspage = take(&in, 1) % 17;
	summed = cfg.flags & ZPOOL_F_CHECKSUM;
	pool = zpool_create(&cfg);
	if (!pool)
		abort();
	for (i = 0; i < SLOTS; i++)
		slots[i].live = slots[i].corrupt = false;

	while (in.left) {
		unsigned int op = take(&in, 1), n = take(&in, 1) % SLOTS;
		struct slot *s = &slots[n];
		struct zpool_stats before, after;
		zpool_handle_t h;
		unsigned int arg;
		size_t len;
		int ret;

		switch (op % 8) {
		case 0: /* store, into a free slot so the model stays simple */
		case 1:
			arg = take(&in, 2);
			if (s->live)
				break;
			make_page(page, take(&in, 1), arg);
			zpool_stats(pool, &before);
			ret = zpool_store(pool, page, &h);
			if (ret == -ENOMEM) {
				zpool_stats(pool, &after);
				if (after.objects != before.objects ||
				    after.orig_data_size != before.orig_data_size)
					abort();
				break;
			}
			if (ret || !h)
				abort();
			memcpy(s->page, page, PS);
			s->h = h;
			s->live = true;
			s->corrupt = false;
			len = zpool_obj_size(pool, h);
			if (len > PS)
				abort();
			break;
		case 2:
			if (s->live)
				check_load(pool, s, summed, out);
			else if (zpool_load(pool, 0, out) != -EINVAL)
				abort();
			break;
		case 3:
			if (s->live) {
				zpool_free(pool, s->h);
				s->live = false;
			}
			break;
		case 4:
			zpool_compact(pool);
			break;
		case 5: /* a limit near what is in use, so stores start failing */
			arg = take(&in, 2);
			zpool_stats(pool, &before);
			zpool_set_mem_limit(pool, arg & 1 ? 0 : before.mem_used_total + (arg >> 1) * 64);
			break;
		case 6: /* corrupt: XOR a nonzero mask into one byte of the object */
			arg = take(&in, 2);
			c = take(&in, 1) | 1;
			if (!s->live)
				break;
			len = zpool_obj_size(pool, s->h);
			if (!len) /* same-filled: no object to corrupt */
				break;
			if (zpool__corrupt(pool, s->h, arg % len, (unsigned char)c))
				abort();
			s->corrupt = true;
			break;
		default:
			check_stats(pool, slots);
		}
	}
	check_stats(pool, slots);
	for (i = 0; i < SLOTS; i++)
		if (slots[i].live)
			check_load(pool, &slots[i], summed, out);
	zpool_destroy(pool);
	return 0;
}

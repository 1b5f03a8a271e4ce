// SPDX-License-Identifier: MIT
/*
 * Fuzz target: zpool_create() and zram_create() with configurations built
 * from the input: struct sizes around the known ones, compressor names
 * (known, misspelled, arbitrary bytes), any level, flags, chain lengths,
 * limits, disk sizes, and page sources that are missing a call or run out
 * of memory after a chosen number of allocations.  The oracle is the
 * documented contract: a configuration the headers call invalid gives NULL
 * with errno EINVAL; a valid one gives a working object (a page stored and
 * read back) or, only when the page source ran dry, NULL with ENOMEM; and
 * every byte the page source handed out is given back by the time create
 * fails or destroy returns.
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <libbvec/zram.h>

#include "fuzz.h"

#define PS ((size_t)BVEC_PAGE_SIZE)

/* A page source that counts what is out and fails after a budget. */
struct counting {
	size_t out_bytes;
	long budget; /* allocations left; negative for no limit */
	bool failed;
};

static void *count_alloc(void *ctx, size_t bytes)
{
	struct counting *c = ctx;
	void *mem;

	if (!bytes || bytes % PS)
		abort(); /* the documented contract of alloc */
	if (c->budget == 0) {
		c->failed = true;
		return NULL;
	}
	if (c->budget > 0)
		c->budget--;
	mem = aligned_alloc(PS, bytes);
	if (mem)
		c->out_bytes += bytes;
	return mem;
}

static void count_free(void *ctx, void *mem, size_t bytes)
{
	struct counting *c = ctx;

	if (!mem || bytes > c->out_bytes)
		abort();
	c->out_bytes -= bytes;
	free(mem);
}

static const size_t zpool_fields[] = {
	offsetof(struct zpool_config, compressor),
	offsetof(struct zpool_config, level),
	offsetof(struct zpool_config, mem_limit),
	offsetof(struct zpool_config, flags),
	offsetof(struct zpool_config, max_pages_per_zspage),
	offsetof(struct zpool_config, page_source),
	sizeof(struct zpool_config),
};

static const size_t zram_fields[] = {
	offsetof(struct zram_config, pool),
	offsetof(struct zram_config, pool) + offsetof(struct zpool_config, compressor),
	offsetof(struct zram_config, pool) + offsetof(struct zpool_config, mem_limit),
	sizeof(struct zram_config),
};

static bool level_ok(const char *name, long level)
{
	if (!level)
		return true;
	if (!strcmp(name, "lz4"))
		return level >= 1 && level <= 65537;
	if (!strcmp(name, "lz4hc"))
		return level >= 1 && level <= 12;
	return level >= -7 && level <= 22; /* zstd */
}

/* The compressor name: known ones, near misses, or bytes from the input. */
static const char *pick_name(struct input *in, char *buf, size_t len)
{
	static const char *const names[] = {
		"lz4", "lz4hc", "zstd", "LZ4", "lz4 ", "", "lzo", "zstdx", "deflate",
	};
	unsigned int c = take(in, 1), i;

	if (c < 16)
		return NULL;
	if (c < 200)
		return names[c % (sizeof(names) / sizeof(names[0]))];
	for (i = 0; i + 1 < len && in->left && (c = take(in, 1)); i++)
		buf[i] = (char)c;
	buf[i] = '\0';
	return buf;
}

/*
 * A struct size as some caller's sizeof: a field boundary, or out of range.
 * A size inside a field (half a pointer) is no caller's sizeof; the library
 * cannot tell it from a valid one, so it is not tried.
 */
static size_t pick_size(struct input *in, const size_t *fields, size_t n, size_t full)
{
	unsigned int c = take(in, 1);

	if (c < 128)
		return full;
	if (c < 160)
		return full + 1 + c % 64;
	if (c < 176)
		return c % (fields[0] + 1); /* below the first optional field */
	return fields[c % n];
}

static int64_t pick_level(struct input *in)
{
	unsigned int c = take(in, 1);

	if (c < 64)
		return 0;
	if (c < 224)
		return (int)(c % 40) - 12;
	return (int)take(in, 4); /* anything, INT_MIN and INT_MAX included */
}

static void use_pool(struct zpool *pool)
{
	unsigned char *page = malloc(PS), *out = malloc(PS);
	const char *name = zpool_compressor(pool);
	zpool_handle_t h;
	size_t i;
	int ret;

	if (!page || !out)
		abort();
	if (strcmp(name, "lz4") && strcmp(name, "lz4hc") && strcmp(name, "zstd"))
		abort();
	for (i = 0; i < PS; i++)
		page[i] = (unsigned char)(i * 7 / 300);
	ret = zpool_store(pool, page, &h);
	if (ret == 0) {
		if (zpool_load(pool, h, out) || memcmp(page, out, PS))
			abort();
		zpool_free(pool, h);
	} else if (ret != -ENOMEM) {
		abort();
	}
	free(page);
	free(out);
}

static void fuzz_zpool(struct input *in)
{
	struct zpool_config cfg = ZPOOL_CONFIG_INIT, eff = ZPOOL_CONFIG_INIT;
	struct counting cnt = { 0, -1, false };
	struct zpool_page_source src = { .alloc = count_alloc, .free = count_free, .ctx = &cnt };
	char name[24];
	unsigned int c;
	int64_t level;
	bool valid;
	struct zpool *pool;

	cfg.size = pick_size(in, zpool_fields, sizeof(zpool_fields) / sizeof(zpool_fields[0]),
			     sizeof(cfg));
	cfg.compressor = pick_name(in, name, sizeof(name));
	level = pick_level(in);
	cfg.level = (int)level;
	cfg.mem_limit = take(in, 1) < 200 ? 0 : (uint64_t)take(in, 4) << (take(in, 1) % 32);
	c = take(in, 1);
	cfg.flags = c < 192 ? c % 2 : (unsigned int)1 << (c % 32);
	c = take(in, 1);
	cfg.max_pages_per_zspage = c < 224 ? c % 66 : take(in, 4);
	c = take(in, 1);
	if (c % 4 == 1) {
		cfg.page_source = &src;
		cnt.budget = c & 0x80 ? (long)(c >> 2 & 31) : -1;
	} else if (c % 4 == 2) {
		src.alloc = c & 4 ? NULL : count_alloc;
		src.free = c & 4 ? count_free : NULL;
		cfg.page_source = &src;
	}
	if (cfg.size >= offsetof(struct zpool_config, compressor) && cfg.size <= sizeof(cfg))
		memcpy(&eff, &cfg, cfg.size);
	valid = cfg.size >= offsetof(struct zpool_config, compressor) && cfg.size <= sizeof(cfg) &&
		zpool_has_compressor(eff.compressor ? eff.compressor : "lz4") &&
		level_ok(eff.compressor ? eff.compressor : "lz4", eff.level) &&
		eff.max_pages_per_zspage <= 64 && !(eff.flags & ~(ZPOOL_F_CHECKSUM | ZPOOL_F_MULTI_PAGE)) &&
		(!eff.page_source || (eff.page_source->alloc && eff.page_source->free));

	errno = 0;
	pool = zpool_create(&cfg);
	if (!pool) {
		if (valid ? errno != ENOMEM || !cnt.failed : errno != EINVAL)
			abort();
	} else {
		if (!valid)
			abort();
		use_pool(pool);
		zpool_destroy(pool);
	}
	if (cnt.out_bytes)
		abort(); /* the pool kept memory from its source */
}

static void fuzz_zram(struct input *in)
{
	static const uint64_t sizes[] = {
		0, 1, 511, 512, 4096, 65536, 65537, (uint64_t)1 << 20,
		((uint64_t)UINT32_MAX << BVEC_PAGE_SHIFT) + 1, UINT64_MAX,
	};
	struct zram_config cfg = ZRAM_CONFIG_INIT, eff = ZRAM_CONFIG_INIT;
	char name[24];
	unsigned int c;
	struct zram *z;
	bool valid;

	cfg.size = pick_size(in, zram_fields, sizeof(zram_fields) / sizeof(zram_fields[0]),
			     sizeof(cfg));
	c = take(in, 1);
	/* Valid sizes stay small: the slot table is allocated whole. */
	cfg.disksize = c < 128 ? sizes[c % 10] : (uint64_t)take(in, 3) * 16;
	cfg.pool.compressor = pick_name(in, name, sizeof(name));
	cfg.pool.level = (int)pick_level(in);
	cfg.pool.mem_limit = take(in, 1) < 200 ? 0 : take(in, 4);
	c = take(in, 1);
	cfg.pool.flags = c < 192 ? c % 2 : (unsigned int)1 << (c % 32);
	c = take(in, 1);
	cfg.pool.max_pages_per_zspage = c < 224 ? c % 66 : take(in, 4);
	/* The whole struct, or only up to the pool (every pool default). */
	if (cfg.size == offsetof(struct zram_config, pool))
		eff.disksize = cfg.disksize;
	else if (cfg.size == sizeof(cfg))
		eff = cfg;
	valid = (cfg.size == offsetof(struct zram_config, pool) || cfg.size == sizeof(cfg)) &&
		eff.disksize && eff.disksize <= (uint64_t)UINT32_MAX << BVEC_PAGE_SHIFT &&
		zpool_has_compressor(eff.pool.compressor ? eff.pool.compressor : "lz4") &&
		level_ok(eff.pool.compressor ? eff.pool.compressor : "lz4", eff.pool.level) &&
		eff.pool.max_pages_per_zspage <= 64 && !(eff.pool.flags & ~(ZPOOL_F_CHECKSUM | ZPOOL_F_MULTI_PAGE));

	errno = 0;
	z = zram_create(&cfg);
	if (!z) {
		if (valid || errno != EINVAL)
			abort();
		return;
	}
	if (!valid || get_capacity(zram_disk(z)) !=
		      (eff.disksize + PS - 1) / PS * PS >> BVEC_SECTOR_SHIFT)
		abort();
	{
		unsigned char *buf = calloc(1, BVEC_SECTOR_SIZE);
		struct bio_vec bv;
		struct bio bio;
		int ret;

		if (!buf)
			abort();
		memset(buf, 0x3c, BVEC_SECTOR_SIZE);
		bio_init(&bio, zram_disk(z)->part0, &bv, 1, REQ_OP_WRITE);
		bio_add_virt(&bio, buf, BVEC_SECTOR_SIZE);
		ret = submit_bio_wait(&bio);
		bio_uninit(&bio);
		if (ret && (ret != -EIO || !eff.pool.mem_limit))
			abort(); /* only a tiny mem_limit may refuse a write */
		memset(buf, 0, BVEC_SECTOR_SIZE);
		bio_init(&bio, zram_disk(z)->part0, &bv, 1, REQ_OP_READ);
		bio_add_virt(&bio, buf, BVEC_SECTOR_SIZE);
		if (submit_bio_wait(&bio) || buf[0] != (ret ? 0 : 0x3c) ||
		    buf[BVEC_SECTOR_SIZE - 1] != buf[0])
			abort();
		bio_uninit(&bio);
		free(buf);
	}
	zram_destroy(z);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct input in = { data, size };

	if (take(&in, 1) & 1)
		fuzz_zram(&in);
	else
		fuzz_zpool(&in);
	return 0;
}

// SPDX-License-Identifier: MIT
/*
 * Compressors and their contexts.  What a compression needs (lz4's state,
 * an lz4hc stream, a zstd context, an output buffer) is a stream, and what
 * a zstd decompression needs a context: both shared by every thread, at
 * most one per CPU (see zcache_get()), as the kernel's zcomp streams.
 */
#include <lz4.h>
#include <lz4hc.h>
#include <stdlib.h>
#ifdef ZPOOL_HAVE_ZSTD
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_createCDict_advanced: a dictionary's own cParams */
#include <zdict.h>
#include <zstd.h>
#endif

#include "internal.h"

/* At least LZ4_COMPRESSBOUND and ZSTD_COMPRESSBOUND of one page. */
#define OUT_BOUND (ZP_PAGE_SIZE + ZP_PAGE_SIZE / 8 + 64)

static const struct {
	const char *name;
	int comp;
	int def_level, min_level, max_level;
} compressors[] = {
	{ "lz4", ZP_COMP_LZ4, 1, 1, 65537 },
	{ "lz4hc", ZP_COMP_LZ4HC, LZ4HC_CLEVEL_DEFAULT, 1, LZ4HC_CLEVEL_MAX },
#ifdef ZPOOL_HAVE_ZSTD
	{ "zstd", ZP_COMP_ZSTD, 3, -7, 22 },
#endif
};

#define N_COMPRESSORS (sizeof(compressors) / sizeof(compressors[0]))

int zpool__comp_lookup(const char *name, int level, int *comp, int *out_level)
{
	size_t i;

	if (!name)
		name = "lz4";
	for (i = 0; i < N_COMPRESSORS; i++) {
		if (strcmp(name, compressors[i].name))
			continue;
		if (!level)
			level = compressors[i].def_level;
		if (level < compressors[i].min_level || level > compressors[i].max_level)
			return -EINVAL;
		*comp = compressors[i].comp;
		*out_level = level;
		return 0;
	}
	return -EINVAL;
}

const char *zpool__comp_name(int comp)
{
	size_t i;

	for (i = 0; i < N_COMPRESSORS; i++)
		if (compressors[i].comp == comp)
			return compressors[i].name;
	return "?";
}

bool zpool_has_compressor(const char *name)
{
	int comp, level;

	return name && !zpool__comp_lookup(name, 0, &comp, &level);
}

/*
 * Things each used within one call (zstd's contexts, group buffers), shared
 * by every thread, as the kernel's zcomp keeps one stream per CPU: at most
 * one per CPU is ever made (up to ZCACHE_SLOTS), and a call that finds none
 * free yields until one comes back.  More would run no faster, since the
 * CPUs bound the calls running at once, but each would stay resident: made
 * on demand, nbdkit's 16 workers on 2 CPUs kept five zstd contexts (460
 * KiB, a third of the plugin's overhead over its pool).  A thing is held
 * for one call and no lock is taken while holding one, except a group
 * buffer's holder taking a decompression context, so waiting cannot
 * deadlock.  Each slot is taken by an atomic exchange and filled by a
 * compare-exchange from NULL, so a thing is never in two hands; the
 * acquire and release orders hand its contents from one thread to the
 * next.  Things stay reachable from the slots until the process exits.
 */
#define ZCACHE_SLOTS 8

struct zcache {
	_Atomic(void *) slots[ZCACHE_SLOTS];
	atomic_uint made;
};

static unsigned int zcache_cap(void)
{
	static atomic_uint cap;
	unsigned int n = atomic_load_explicit(&cap, memory_order_relaxed);

	if (!n) {
		n = (unsigned int)zpool__min(zpool__os_cpus(), ZCACHE_SLOTS);
		atomic_store_explicit(&cap, n, memory_order_relaxed);
	}
	return n;
}

static void *zcache_take(struct zcache *zc)
{
	void *p;
	int i;

	for (i = 0; i < ZCACHE_SLOTS; i++) {
		/* A plain load first: an empty slot is not worth a locked exchange. */
		if (!atomic_load_explicit(&zc->slots[i], memory_order_relaxed))
			continue;
		p = atomic_exchange_explicit(&zc->slots[i], NULL, memory_order_acquire);
		if (p)
			return p;
	}
	return NULL;
}

/* One from @zc, or a new one from @make while there are fewer than the cap. */
static void *zcache_get(struct zcache *zc, void *(*make)(void))
{
	unsigned int n;
	void *p;

	for (;;) {
		p = zcache_take(zc);
		if (p)
			return p;
		n = atomic_load_explicit(&zc->made, memory_order_relaxed);
		if (n >= zcache_cap()) {
			zpool__os_yield();
			continue;
		}
		if (!atomic_compare_exchange_weak_explicit(&zc->made, &n, n + 1,
							   memory_order_relaxed,
							   memory_order_relaxed))
			continue;
		p = make();
		if (!p)
			atomic_fetch_sub_explicit(&zc->made, 1, memory_order_relaxed);
		return p;
	}
}

/*
 * Never more made than slots, and the caller holds one: a slot is free,
 * though a racing put may take the one this scan was about to.
 */
static void zcache_put(struct zcache *zc, void *p)
{
	void *empty;
	int i;

	for (i = 0;; i = (i + 1) % ZCACHE_SLOTS) {
		empty = NULL;
		if (atomic_compare_exchange_strong_explicit(&zc->slots[i], &empty, p,
							    memory_order_release,
							    memory_order_relaxed))
			return;
	}
}

static struct zcache group_bufs;

static void *group_buf_new(void)
{
	return zpool__os_alloc(ZP_GROUP_PAGES * ZP_PAGE_SIZE);
}

void *zpool__group_buf_get(void)
{
	return zcache_get(&group_bufs, group_buf_new);
}

void zpool__group_buf_put(void *buf)
{
	zcache_put(&group_bufs, buf);
}

/*
 * A compression stream.  Its parts are made on first use, so a stream that
 * only ever ran zstd has no lz4 state; a thread holds one for a call and
 * the output it read, never two at once.  Made per thread, they cost each
 * thread that ever stored a page: with nbdkit's 16 workers, 16 lz4 states
 * and buffers (330 KiB), 16 lz4hc streams (4 MiB), where a CPU runs one
 * compression at a time.
 */
struct zpool__stream {
	void *lz4;		/* LZ4_stream_t */
	LZ4_streamHC_t *lz4hc;
#ifdef ZPOOL_HAVE_ZSTD
	ZSTD_CCtx *zc;
	bool plain;		/* zc holds the plain frame parameters at level... */
	bool group;		/* ...for a group of pages, not one page */
	int level;
#endif
	unsigned char out[OUT_BOUND];
};

static struct zcache streams;

static void *stream_new(void)
{
	struct zpool__stream *st = zpool__os_alloc(sizeof(*st));

	if (st)
		memset(st, 0, offsetof(struct zpool__stream, out));
	return st;
}

void zpool__stream_put(struct zpool__stream *st)
{
	zcache_put(&streams, st);
}

static void *lz4_state(struct zpool__stream *st)
{
	if (!st->lz4)
		st->lz4 = zpool__os_alloc((size_t)LZ4_sizeofState());
	return st->lz4;
}

static LZ4_streamHC_t *lz4hc_state(struct zpool__stream *st)
{
	if (!st->lz4hc) {
		st->lz4hc = zpool__os_alloc(sizeof(*st->lz4hc));
		if (st->lz4hc && !LZ4_initStreamHC(st->lz4hc, sizeof(*st->lz4hc))) {
			zpool__os_free(st->lz4hc);
			st->lz4hc = NULL;
		}
	}
	return st->lz4hc;
}

#ifdef ZPOOL_HAVE_ZSTD
/*
 * zstd's contexts are large even sized for one page (ZSTD_compress2() sizes
 * a CCtx for its input: 88 KiB at level 3 for 4 KiB, 650 KiB for 64 KiB; a
 * DCtx is 94 KiB whatever the input), and each is used only within one call.
 * Kept per thread they cost that much for every thread that ever touched
 * the pool: with nbdkit's 16 workers, 2.9 MiB over a 14 MiB pool.  So a
 * CCtx lives in a stream, a DCtx in the cache of its own below.
 */
static struct zcache dctxs;

static void *dctx_new(void)
{
	return ZSTD_createDCtx();
}

/*
 * zstd frames are stored without the 4-byte magic and without the content
 * size (a page is always ZP_PAGE_SIZE): 5 bytes less per object, +0.65% to
 * zstd's ratio on anon-64m.bin (doc/performance.md).  The object's codec
 * already names the format, and no dictionary id is needed either.
 */
static int zstd_compress(struct zpool__stream *st, int level, const ZSTD_CDict *cdict,
			 size_t limit, const void *src, size_t bytes)
{
	bool group = bytes > ZP_PAGE_SIZE;
	ZSTD_CCtx *zc;
	size_t r;

	if (!st->zc && !(st->zc = ZSTD_createCCtx()))
		return -ENOMEM;
	zc = st->zc;
	/* Setting the parameters per page would cost 2-3% of the time. */
	if (cdict || !st->plain || st->level != level || st->group != group) {
		ZSTD_CCtx_reset(zc, ZSTD_reset_session_and_parameters);
		ZSTD_CCtx_setParameter(zc, ZSTD_c_format, ZSTD_f_zstd1_magicless);
		ZSTD_CCtx_setParameter(zc, ZSTD_c_contentSizeFlag, 0);
		ZSTD_CCtx_setParameter(zc, ZSTD_c_dictIDFlag, 0);
		if (cdict) {
			ZSTD_CCtx_refCDict(zc, cdict); /* the dictionary's own parameters */
		} else {
			ZSTD_CCtx_setParameter(zc, ZSTD_c_compressionLevel, level);
			/*
			 * A group gets a 16 KiB window and 1 KiB-entry match
			 * tables, not those zstd picks for 32 KiB: the context
			 * is 92 KiB instead of 541 KiB at level 3 (as much as
			 * a page's), and anon-64m.bin comes out 12.34 MiB
			 * instead of 12.33.  Contexts stay resident (see
			 * above), so their size is the pool's overhead.
			 */
			if (group) {
				ZSTD_CCtx_setParameter(zc, ZSTD_c_windowLog, 14);
				ZSTD_CCtx_setParameter(zc, ZSTD_c_hashLog, 10);
				ZSTD_CCtx_setParameter(zc, ZSTD_c_chainLog, 10);
			}
		}
		st->plain = !cdict;
		st->group = group;
		st->level = level;
	}
	r = ZSTD_compress2(zc, st->out, limit, src, bytes);
	/* Not kept: a codec, and with it its CDict, may be freed before the next page. */
	if (cdict)
		ZSTD_CCtx_reset(zc, ZSTD_reset_session_and_parameters);
	return ZSTD_isError(r) ? 0 : (int)r;
}

/*
 * Frames with the magic, as written before, still decode: a magicless
 * frame never starts with it, since its first byte (0x28) as a frame
 * header descriptor would have the reserved bit set.
 */
static int zstd_decompress(const ZSTD_DDict *ddict, const void *src, size_t len, void *dst,
			   size_t bytes)
{
	static const unsigned char magic[4] = { 0x28, 0xb5, 0x2f, 0xfd };
	ZSTD_DCtx *zd = zcache_get(&dctxs, dctx_new);
	size_t r;

	if (!zd)
		return -ENOMEM;

	ZSTD_DCtx_reset(zd, ZSTD_reset_session_and_parameters);
	ZSTD_DCtx_setParameter(zd, ZSTD_d_format,
			       len >= 4 && !memcmp(src, magic, 4) ? ZSTD_f_zstd1 :
								    ZSTD_f_zstd1_magicless);
	if (ddict)
		ZSTD_DCtx_refDDict(zd, ddict);
	r = ZSTD_decompressDCtx(zd, dst, bytes, src, len);
	zcache_put(&dctxs, zd); /* a DDict referenced is dropped by the next user's reset, unread */
	return !ZSTD_isError(r) && r == bytes ? 0 : -EIO;
}
#endif

/* Compress with @st: the length (past @limit for lz4 on a page), or -errno. */
static int plain_compress(struct zpool__stream *st, int comp, int level, const void *src,
			  size_t bytes, size_t limit)
{
	switch (comp) {
	case ZP_COMP_LZ4:
		if (!lz4_state(st))
			return -ENOMEM;
		/* A full-size output takes lz4's unchecked fast path; a bounded
		 * one would check every write (about 10% slower on this data).
		 * A group's bound is @limit, below a page. */
		return LZ4_compress_fast_extState(st->lz4, src, (char *)st->out, (int)bytes,
						  (int)(bytes == ZP_PAGE_SIZE ? OUT_BOUND : limit),
						  level);
	case ZP_COMP_LZ4HC:
		if (!lz4hc_state(st))
			return -ENOMEM;
		/* Resetting the stream, not re-initialising it, keeps each page
		 * independent without clearing 256 KiB per page. */
		LZ4_resetStreamHC_fast(st->lz4hc, level);
		return LZ4_compress_HC_continue(st->lz4hc, src, (char *)st->out, (int)bytes,
						(int)limit);
#ifdef ZPOOL_HAVE_ZSTD
	case ZP_COMP_ZSTD:
		return zstd_compress(st, level, NULL, limit, src, bytes);
#endif
	default:
		return -EINVAL;
	}
}

/*
 * @n from a compression with @st: a length within @limit is the caller's,
 * with @st holding it; anything else gives @st back.
 */
static int hand_over(struct zpool__stream *st, int n, size_t limit, struct zpool__stream **sp,
		     const unsigned char **out)
{
	if (n > 0 && (size_t)n <= limit) {
		*sp = st;
		*out = st->out;
		return n;
	}
	zpool__stream_put(st);
	return n < 0 ? n : 0; /* -errno is not "incompressible" */
}

int zpool__compress(int comp, int level, const void *src, size_t bytes, size_t limit,
		    struct zpool__stream **sp, const unsigned char **out)
{
	struct zpool__stream *st = zcache_get(&streams, stream_new);

	if (!st)
		return -ENOMEM;
	return hand_over(st, plain_compress(st, comp, level, src, bytes, limit), limit, sp, out);
}

int zpool__decompress(int comp, const void *src, size_t len, void *dst, size_t bytes)
{
	switch (comp) {
	case ZP_COMP_LZ4:
	case ZP_COMP_LZ4HC:
		return LZ4_decompress_safe(src, dst, (int)len, (int)bytes) == (int)bytes ? 0 : -EIO;
#ifdef ZPOOL_HAVE_ZSTD
	case ZP_COMP_ZSTD:
		return zstd_decompress(NULL, src, len, dst, bytes);
#endif
	default:
		return -EINVAL;
	}
}

/*
 * A codec: an algorithm with its level and, optionally, a dictionary.  Its
 * tables are made once here and only read afterwards, so any number of
 * threads compress and decompress with one codec at once: lz4 and lz4hc
 * copy a stream that has the dictionary loaded (cheaper than loading 64 KiB
 * per page), zstd uses digested CDict/DDict.
 */
struct zpool__codec *zpool__codec_new(int comp, int level, const void *dict, size_t len)
{
	struct zpool__codec *c = zpool__os_alloc(sizeof(*c));
	size_t keep = len;

	if (!c)
		return NULL;
	memset(c, 0, sizeof(*c));
	c->comp = comp;
	c->level = level;
	if (!len)
		return c;
	/* lz4 reaches back 64 KiB at most: only the tail of a dictionary is of use. */
	if (comp != ZP_COMP_ZSTD && keep > 65536)
		keep = 65536;
	c->dict = zpool__os_alloc(keep);
	if (!c->dict)
		goto fail;
	memcpy(c->dict, (const unsigned char *)dict + (len - keep), keep);
	c->dict_len = keep;
	switch (comp) {
	case ZP_COMP_LZ4:
		c->lz4 = zpool__os_alloc(sizeof(LZ4_stream_t));
		if (!c->lz4 || !LZ4_initStream(c->lz4, sizeof(LZ4_stream_t)))
			goto fail;
		LZ4_loadDict(c->lz4, (const char *)c->dict, (int)keep);
		break;
	case ZP_COMP_LZ4HC:
		c->lz4hc = zpool__os_alloc(sizeof(LZ4_streamHC_t));
		if (!c->lz4hc || !LZ4_initStreamHC(c->lz4hc, sizeof(LZ4_streamHC_t)))
			goto fail;
		LZ4_resetStreamHC_fast(c->lz4hc, level);
		LZ4_loadDictHC(c->lz4hc, (const char *)c->dict, (int)keep);
		break;
#ifdef ZPOOL_HAVE_ZSTD
	case ZP_COMP_ZSTD: {
		ZSTD_compressionParameters cp = ZSTD_getCParams(level, ZP_PAGE_SIZE, keep);

		/*
		 * Pages of anonymous memory gain from a dictionary only with a
		 * lazy search and 4-byte matches: zstd's own choice for a page
		 * and a dictionary (dfast, 5-byte matches) made objects 13%
		 * larger than no dictionary at all on anon-64m.bin.
		 */
		if (cp.strategy < ZSTD_lazy2)
			cp.strategy = ZSTD_lazy2;
		if (cp.minMatch > 4)
			cp.minMatch = 4;
		c->cdict = ZSTD_createCDict_advanced(c->dict, keep, ZSTD_dlm_byRef, ZSTD_dct_auto,
						     cp, ZSTD_defaultCMem);
		c->ddict = ZSTD_createDDict_byReference(c->dict, keep);
		if (!c->cdict || !c->ddict)
			goto fail;
		break;
	}
#endif
	default:
		goto fail;
	}
	return c;
fail:
	zpool__codec_free(c);
	return NULL;
}

void zpool__codec_free(struct zpool__codec *c)
{
	if (!c)
		return;
#ifdef ZPOOL_HAVE_ZSTD
	ZSTD_freeCDict(c->cdict);
	ZSTD_freeDDict(c->ddict);
#endif
	zpool__os_free(c->lz4);
	zpool__os_free(c->lz4hc);
	zpool__os_free(c->dict);
	zpool__os_free(c);
}

int zpool__codec_compress(const struct zpool__codec *c, const void *src, size_t bytes,
			  size_t limit, struct zpool__stream **sp, const unsigned char **out)
{
	struct zpool__stream *st;
	int n;

	if (!c->dict_len)
		return zpool__compress(c->comp, c->level, src, bytes, limit, sp, out);
	st = zcache_get(&streams, stream_new);
	if (!st)
		return -ENOMEM;
	switch (c->comp) {
	case ZP_COMP_LZ4:
		if (!lz4_state(st)) {
			n = -ENOMEM;
			break;
		}
		memcpy(st->lz4, c->lz4, sizeof(LZ4_stream_t));
		n = LZ4_compress_fast_continue(st->lz4, src, (char *)st->out, (int)bytes,
					       (int)limit, c->level);
		break;
	case ZP_COMP_LZ4HC:
		if (!lz4hc_state(st)) {
			n = -ENOMEM;
			break;
		}
		/* A whole copy: the plain path's fast reset then finds a valid stream. */
		memcpy(st->lz4hc, c->lz4hc, sizeof(*st->lz4hc));
		n = LZ4_compress_HC_continue(st->lz4hc, src, (char *)st->out, (int)bytes,
					     (int)limit);
		break;
#ifdef ZPOOL_HAVE_ZSTD
	case ZP_COMP_ZSTD:
		n = zstd_compress(st, c->level, c->cdict, limit, src, bytes);
		break;
#endif
	default:
		n = -EINVAL;
	}
	return hand_over(st, n, limit, sp, out);
}

int zpool__codec_decompress(const struct zpool__codec *c, const void *src, size_t len,
			    void *dst, size_t bytes)
{
	if (!c->dict_len)
		return zpool__decompress(c->comp, src, len, dst, bytes);
	switch (c->comp) {
	case ZP_COMP_LZ4:
	case ZP_COMP_LZ4HC:
		return LZ4_decompress_safe_usingDict(src, dst, (int)len, (int)bytes,
						     (const char *)c->dict,
						     (int)c->dict_len) == (int)bytes ? 0 : -EIO;
#ifdef ZPOOL_HAVE_ZSTD
	case ZP_COMP_ZSTD:
		return zstd_decompress(c->ddict, src, len, dst, bytes);
#endif
	default:
		return -EINVAL;
	}
}

int zpool__train_dict(const void *pages, size_t nr_pages, void *dict, size_t cap)
{
#ifdef ZPOOL_HAVE_ZSTD
	size_t *sizes, i, r;

	if (!nr_pages || !cap)
		return -EINVAL;
	sizes = zpool__os_alloc(nr_pages * sizeof(*sizes));
	if (!sizes)
		return -ENOMEM;
	for (i = 0; i < nr_pages; i++)
		sizes[i] = ZP_PAGE_SIZE;
	r = ZDICT_trainFromBuffer(dict, cap, pages, sizes, (unsigned int)nr_pages);
	zpool__os_free(sizes);
	/* ZDICT fails when the samples are too few or too alike to learn from. */
	return ZDICT_isError(r) ? -EINVAL : (int)r;
#else
	(void)pages;
	(void)nr_pages;
	(void)dict;
	(void)cap;
	return -EOPNOTSUPP;
#endif
}

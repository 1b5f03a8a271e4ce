// SPDX-License-Identifier: MIT
/*
 * The page store: zram's page logic (same-filled pages, huge pages,
 * checksums) on top of the allocator, and the pool's life and statistics.
 * Unlike zram, mem_limit is checked before anything is allocated, so a
 * refused store changes nothing.
 */
#include <xxhash.h>

#include "internal.h"

static uint64_t mem_used(struct zpool *pool)
{
	return atomic_load(&pool->pages_total) * ZP_PAGE_SIZE;
}

static uint32_t checksum(const void *p, size_t len)
{
	return (uint32_t)XXH3_64bits(p, len);
}

static size_t csum_bytes(const struct zpool *pool)
{
	return pool->flags & ZPOOL_F_CHECKSUM ? ZP_CSUM_BYTES : 0;
}

/* zram's test: one machine word repeated; the last word first, for speed. */
static bool same_filled(const void *page, unsigned long *word)
{
	const unsigned char *p = page;
	unsigned long first, w;
	size_t i;

	memcpy(&first, p, sizeof(first));
	memcpy(&w, p + ZP_PAGE_SIZE - sizeof(w), sizeof(w));
	if (w != first)
		return false;
	for (i = sizeof(w); i < ZP_PAGE_SIZE - sizeof(w); i += sizeof(w)) {
		memcpy(&w, p + i, sizeof(w));
		if (w != first)
			return false;
	}
	*word = first;
	return true;
}

static void fill_page(void *page, unsigned long word)
{
	unsigned char *p = page;
	size_t i;

	if (!word) {
		memset(page, 0, ZP_PAGE_SIZE);
		return;
	}
	for (i = 0; i < ZP_PAGE_SIZE; i += sizeof(word))
		memcpy(p + i, &word, sizeof(word));
}

/*
 * Codecs.  An id's codec lives while a slot names it or an object uses it:
 * a store takes a reference under the read lock before compressing, so a
 * slot changed meanwhile cannot free the dictionary under it; the last put
 * frees it under the write lock, where no store can be between its lookup
 * and its reference.
 */
static int codecs_init(struct zpool *pool)
{
	struct zp_codecs *cx = zpool__os_zalloc(sizeof(*cx));
	unsigned int i;

	if (!cx)
		return -ENOMEM;
	cx->lock = zpool__rwlock_new();
	if (!cx->lock) {
		zpool__os_free(cx);
		return -ENOMEM;
	}
	for (i = 0; i < ZP_CODEC_SLOTS; i++)
		cx->slot_comp[i] = -1;
	pool->codecs = cx;
	return 0;
}

static void codecs_destroy(struct zpool *pool)
{
	struct zp_codecs *cx = pool->codecs;
	unsigned int i;

	if (!cx)
		return;
	for (i = 1; i < ZP_CODECS; i++)
		zpool__codec_free(atomic_load_explicit(&cx->tab[i], memory_order_relaxed));
	zpool__rwlock_free(cx->lock);
	zpool__os_free(cx);
	pool->codecs = NULL;
}

static void codec_put(struct zpool *pool, struct zpool__codec *c)
{
	struct zp_codecs *cx = pool->codecs;
	unsigned int id = c->id;

	if (atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1)
		return;
	zpool__write_lock(cx->lock);
	/* A store may have taken it again between our put and the lock. */
	if (atomic_load_explicit(&cx->tab[id], memory_order_relaxed) == c &&
	    !atomic_load_explicit(&c->refs, memory_order_relaxed))
		atomic_store_explicit(&cx->tab[id], NULL, memory_order_relaxed);
	else
		c = NULL;
	zpool__rw_unlock(cx->lock);
	zpool__codec_free(c);
}

/* The codec named by an object's first byte; its object keeps it alive. */
static const struct zpool__codec *obj_codec(struct zpool *pool, const unsigned char *obj)
{
	return atomic_load_explicit(&pool->codecs->tab[obj[0]], memory_order_acquire);
}

int zpool__codec_slot_set(struct zpool *pool, unsigned int slot, int comp, int level,
			  const void *dict, size_t len)
{
	struct zp_codecs *cx = pool->codecs;
	struct zpool__codec *c = NULL, *old = NULL;
	unsigned int id;

	if (slot >= ZP_CODEC_SLOTS)
		return -EINVAL;
	/* The primary algorithm without a dictionary needs no codec byte. */
	if (!slot && !len && comp == pool->comp) {
		zpool__write_lock(cx->lock);
		if (cx->slot[0])
			old = atomic_load_explicit(&cx->tab[cx->slot[0]], memory_order_relaxed);
		cx->slot[0] = 0;
		atomic_store(&pool->level, level);
		zpool__rw_unlock(cx->lock);
		if (old)
			codec_put(pool, old);
		return 0;
	}
	c = zpool__codec_new(comp, level, dict, len);
	if (!c)
		return len ? -EINVAL : -ENOMEM;
	atomic_store_explicit(&c->refs, 1, memory_order_relaxed);
	zpool__write_lock(cx->lock);
	for (id = 1; id < ZP_CODECS; id++)
		if (!atomic_load_explicit(&cx->tab[id], memory_order_relaxed))
			break;
	if (id == ZP_CODECS) {
		zpool__rw_unlock(cx->lock);
		zpool__codec_free(c);
		return -EBUSY;
	}
	c->id = id;
	atomic_store_explicit(&cx->tab[id], c, memory_order_release);
	if (cx->slot[slot])
		old = atomic_load_explicit(&cx->tab[cx->slot[slot]], memory_order_relaxed);
	cx->slot[slot] = id;
	cx->slot_comp[slot] = comp;
	zpool__rw_unlock(cx->lock);
	if (old)
		codec_put(pool, old);
	return 0;
}

int zpool__codec_slot_info(struct zpool *pool, unsigned int slot, int *comp, int *level)
{
	struct zp_codecs *cx = pool->codecs;
	int ret = 0;

	if (slot >= ZP_CODEC_SLOTS)
		return -EINVAL;
	zpool__read_lock(cx->lock);
	if (cx->slot[slot]) {
		const struct zpool__codec *c =
			atomic_load_explicit(&cx->tab[cx->slot[slot]], memory_order_relaxed);

		*comp = c->comp;
		*level = c->level;
	} else if (!slot) {
		*comp = pool->comp;
		*level = atomic_load(&pool->level);
	} else {
		ret = -ENOENT;
	}
	zpool__rw_unlock(cx->lock);
	return ret;
}

void zpool__codec_slot_clear(struct zpool *pool, unsigned int slot)
{
	struct zp_codecs *cx = pool->codecs;
	struct zpool__codec *old = NULL;

	if (!slot || slot >= ZP_CODEC_SLOTS)
		return;
	zpool__write_lock(cx->lock);
	if (cx->slot[slot])
		old = atomic_load_explicit(&cx->tab[cx->slot[slot]], memory_order_relaxed);
	cx->slot[slot] = 0;
	cx->slot_comp[slot] = -1;
	zpool__rw_unlock(cx->lock);
	if (old)
		codec_put(pool, old);
}

/* Slot @slot's codec, referenced; NULL for the plain compressor. */
static struct zpool__codec *slot_codec(struct zpool *pool, unsigned int slot)
{
	struct zp_codecs *cx = pool->codecs;
	struct zpool__codec *c = NULL;
	unsigned int id;

	zpool__read_lock(cx->lock);
	id = cx->slot[slot];
	if (id) {
		c = atomic_load_explicit(&cx->tab[id], memory_order_relaxed);
		atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
	}
	zpool__rw_unlock(cx->lock);
	return c;
}

static void destroy(struct zpool *pool)
{
	struct zpool_page_source src = pool->src;
	bool own_source = pool->own_source;

	codecs_destroy(pool);
	zpool__classes_destroy(pool);
	zpool__table_destroy(pool, &pool->handles);
	zpool__table_destroy(pool, &pool->zspages);
	zpool__table_destroy(pool, &pool->same);
	zpool__table_destroy(pool, &pool->groups);
	zpool__mutex_free(pool->desc_lock);
	src.free(src.ctx, pool, pool->self_bytes);
	if (own_source)
		zpool__mmap_source_delete(&src);
}

int zpool__config_copy(struct zpool_config *dst, const struct zpool_config *cfg)
{
	const struct zpool_config defaults = ZPOOL_CONFIG_INIT;

	*dst = defaults;
	if (!cfg)
		return 0;
	/* A caller built against an older header passes a shorter struct. */
	if (cfg->size < offsetof(struct zpool_config, compressor) || cfg->size > sizeof(*dst))
		return -EINVAL;
	memcpy(dst, cfg, cfg->size);
	dst->size = sizeof(*dst);
	return 0;
}

struct zpool *zpool_create(const struct zpool_config *cfg)
{
	struct zpool_config c;
	struct zpool_page_source src;
	struct zpool *pool;
	size_t self;
	int comp, level;

	if (zpool__config_copy(&c, cfg)) {
		errno = EINVAL;
		return NULL;
	}
	if (!c.max_pages_per_zspage)
		c.max_pages_per_zspage = !c.page_source || c.page_source->lazy ?
					 ZP_DEFAULT_CHAIN_LAZY : ZP_DEFAULT_CHAIN_EAGER;
	if (c.max_pages_per_zspage > ZP_MAX_CHAIN_CFG ||
	    zpool__comp_lookup(c.compressor, c.level, &comp, &level) ||
	    (c.flags & ~(ZPOOL_F_CHECKSUM | ZPOOL_F_MULTI_PAGE)) ||
	    (c.page_source && (!c.page_source->alloc || !c.page_source->free))) {
		errno = EINVAL;
		return NULL;
	}
	if (c.page_source)
		src = *c.page_source;
	else if (zpool__mmap_source_new(&src)) {
		errno = ENOMEM;
		return NULL;
	}
	/* The pool itself lives in pages from its own source, and counts them. */
	self = (sizeof(*pool) + ZP_PAGE_SIZE - 1) / ZP_PAGE_SIZE * ZP_PAGE_SIZE;
	pool = src.alloc(src.ctx, self);
	if (!pool) {
		if (!c.page_source)
			zpool__mmap_source_delete(&src);
		errno = ENOMEM;
		return NULL;
	}
	memset(pool, 0, sizeof(*pool));
	pool->src = src;
	pool->self_bytes = self;
	pool->own_source = !c.page_source;
	/* Accepted everywhere, capped by bytes: the same config works at any page size. */
	pool->max_chain = (unsigned int)zpool__min(c.max_pages_per_zspage, ZP_MAX_CHAIN);
	pool->flags = c.flags;
	pool->comp = comp;
	pool->level = level;
	zpool__account(pool, (long)(self / ZP_PAGE_SIZE), true);
	atomic_store(&pool->mem_limit, c.mem_limit);
	if (zpool__table_init(&pool->handles) ||
	    zpool__table_init(&pool->zspages) ||
	    zpool__table_init(&pool->same) || zpool__table_init(&pool->groups) ||
	    !(pool->desc_lock = zpool__mutex_new()) ||
	    zpool__classes_init(pool) || codecs_init(pool)) {
		destroy(pool);
		errno = ENOMEM;
		return NULL;
	}
	zpool__update_max(pool);
	return pool;
}

void zpool_destroy(struct zpool *pool)
{
	if (pool)
		destroy(pool);
}

/*
 * Would @pages more pages pass @limit (0: none)?  Asked before anything is
 * allocated, so a refused store changes nothing, and with @pages 0 after,
 * for what another thread took in between.
 */
static bool over_limit(struct zpool *pool, uint64_t limit, size_t pages)
{
	return limit && mem_used(pool) + (uint64_t)pages * ZP_PAGE_SIZE > limit;
}

/*
 * A same-filled page that finds room in the tables takes no memory, so the
 * limit never refuses it, as zram never refuses one; only the table pages
 * it may make are checked, whatever the pool holds past the limit already
 * (a lowered limit, or a store on another thread briefly over it).
 */
static int store_same(struct zpool *pool, unsigned long word, zpool_handle_t *handle)
{
	uint64_t limit = atomic_load(&pool->mem_limit);
	/* The cost takes both tables' locks: only worth it under a limit. */
	size_t cost = limit ? zpool__table_alloc_cost(&pool->same) +
				      zpool__table_alloc_cost(&pool->handles) : 0;
	size_t same_pages = 0, handle_pages = 0;
	uint32_t idx, h;

	if (cost && over_limit(pool, limit, cost))
		return -ENOMEM;
	idx = zpool__table_alloc_pages(pool, &pool->same, word, &same_pages);
	if (!idx)
		return -ENOMEM;
	h = zpool__table_alloc_pages(pool, &pool->handles,
				     (uint64_t)idx << ZP_TAG_BITS | ZP_TAG_SAME, &handle_pages);
	/*
	 * No class lock orders this store with others: one on another thread
	 * may have taken the room between the check above and the tables'
	 * new pages.  Checked again, as store_obj() does, if pages were made.
	 */
	if (!h || (same_pages + handle_pages && over_limit(pool, limit, 0))) {
		if (h)
			zpool__table_free(pool, &pool->handles, h);
		zpool__table_free(pool, &pool->same, idx);
		return -ENOMEM;
	}
	atomic_fetch_add(&pool->orig_pages, 1);
	atomic_fetch_add(&pool->same_pages, 1);
	*handle = h;
	return 0;
}

static uint64_t lookup(struct zpool *pool, zpool_handle_t handle);

/*
 * Put an object of @len bytes in class @c: @data, after @codec's id byte
 * when @codec is not NULL (then @len counts that byte).  Returns 0 with
 * *@handle, or -ENOMEM; the caller counts the pages it holds.  Takes a
 * reference on @codec for the object.
 */
static int store_obj(struct zpool *pool, struct size_class *c, struct zpool__codec *codec,
		     const unsigned char *data, size_t len, uint32_t *handle)
{
	size_t extra = csum_bytes(pool), hdr = codec ? 1 : 0;
	struct zspage *zsp;
	unsigned char *dst;
	unsigned int slot;
	uint64_t limit;
	bool unlocked;
	uint32_t h;

	zpool__write_lock(c->lock);
	limit = atomic_load(&pool->mem_limit);
	if (limit && over_limit(pool, limit, zpool__obj_alloc_cost(pool, c) +
						 zpool__table_alloc_cost(&pool->handles))) {
		zpool__rw_unlock(c->lock);
		return -ENOMEM;
	}
	h = zpool__table_alloc(pool, &pool->handles, 0);
	if (!h) {
		zpool__rw_unlock(c->lock);
		return -ENOMEM;
	}
	dst = zpool__obj_alloc(pool, c, &zsp, &slot);
	if (!dst)
		goto nomem;
	/*
	 * zram's order, allocate then check, still catches what a store on
	 * another thread took between the estimate above and now.
	 */
	if (over_limit(pool, limit, 0)) {
		zpool__obj_free(pool, c, zsp, slot);
		goto nomem;
	}
	if (hdr)
		atomic_fetch_add_explicit(&codec->refs, 1, memory_order_relaxed);
	/*
	 * The copy, and the first-touch page fault it often takes, happen
	 * with the class lock dropped, as zsmalloc writes an object outside
	 * its class lock: held across them, the lock made every other store
	 * and load of the class wait out a fault.  The slot is ours and no
	 * handle names it yet; what could touch it is compaction, which
	 * leaves a zspage with writers alone.  The handle is published
	 * before the writer count drops, so compaction never plans around
	 * an object it cannot find.  A full count keeps the lock instead.
	 */
	unlocked = atomic_load_explicit(&zsp->writers, memory_order_relaxed) < UINT8_MAX;
	if (unlocked) {
		atomic_fetch_add_explicit(&zsp->writers, 1, memory_order_relaxed);
		zpool__rw_unlock(c->lock);
	}
	if (hdr)
		dst[0] = (unsigned char)codec->id;
	memcpy(dst + hdr, data, len - hdr);
	if (extra) {
		uint32_t sum = checksum(dst, len);

		if (c->huge)
			zsp->huge_csum = sum;
		else
			memcpy(dst + len, &sum, sizeof(sum));
	}
	atomic_store_explicit(zpool__table_slot(&pool->handles, h),
			      zp_entry_obj(c->index, slot,
					   (unsigned int)len | (hdr ? ZP_LEN_CODEC : 0), zsp->id),
			      memory_order_release);
	if (unlocked)
		atomic_fetch_sub_explicit(&zsp->writers, 1, memory_order_release);
	else
		zpool__rw_unlock(c->lock);

	atomic_fetch_add(&pool->compr_bytes, len);
	if (c->huge) {
		atomic_fetch_add(&pool->huge_pages, 1);
		atomic_fetch_add(&pool->huge_since, 1);
	}
	*handle = h;
	return 0;
nomem:
	zpool__table_free(pool, &pool->handles, h);
	zpool__rw_unlock(c->lock);
	return -ENOMEM;
}

/*
 * Compress @bytes at @src with @codec, or the plain compressor when NULL;
 * a length > 0 is at *@out in the stream *@st, for zpool__stream_put().
 */
static int compress(struct zpool *pool, struct zpool__codec *codec, const void *src,
		    size_t bytes, struct zpool__stream **st, const unsigned char **out)
{
	size_t limit = pool->huge_class_size - csum_bytes(pool) - (codec ? 1 : 0);

	return codec ? zpool__codec_compress(codec, src, bytes, limit, st, out)
		     : zpool__compress(pool->comp,
				       atomic_load_explicit(&pool->level, memory_order_relaxed),
				       src, bytes, limit, st, out);
}

/*
 * Store @page, which @codec (NULL: the plain compressor) compressed to @n
 * bytes at @data, or 0 if they would not fit a non-huge class.
 * @below_class, when not 0, is a recompression's bound: the object must
 * land in a class smaller than that, and not raw; 1 if it would not.
 * Takes a reference on @codec for the object it stores.
 */
static int store_compressed(struct zpool *pool, struct zpool__codec *codec, const void *page,
			    int n, const unsigned char *data, size_t below_class,
			    zpool_handle_t *handle)
{
	struct size_class *c;
	size_t len;
	uint32_t h;
	int ret;

	if (n) {
		len = (size_t)n + (codec ? 1 : 0);
	} else {
		/* Would not fit a non-huge class: keep the page raw. */
		if (below_class)
			return 1;
		data = page;
		len = ZP_PAGE_SIZE;
		codec = NULL;
	}
	c = zpool__class_for(pool, n ? len + csum_bytes(pool) : ZP_PAGE_SIZE);
	if (below_class && c->size >= below_class)
		return 1;
	ret = store_obj(pool, c, codec, data, len, &h);
	if (ret)
		return ret;
	atomic_fetch_add(&pool->orig_pages, 1);
	*handle = h;
	return 0;
}

/* Compress @page with @codec (NULL: the plain compressor) and store it. */
static int store_with(struct zpool *pool, struct zpool__codec *codec, const void *page,
		      size_t below_class, zpool_handle_t *handle)
{
	struct zpool__stream *st = NULL;
	const unsigned char *data;
	int n = compress(pool, codec, page, ZP_PAGE_SIZE, &st, &data), ret;

	if (n < 0)
		return n;
	ret = store_compressed(pool, codec, page, n, data, below_class, handle);
	if (st)
		zpool__stream_put(st);
	return ret;
}

static bool free_obj(struct zpool *pool, zpool_handle_t handle);

/*
 * Take back a page that a failing zpool_store_pages() stored: all or
 * nothing covers huge_pages_since too, so a raw page counts as never stored.
 */
static void unstore(struct zpool *pool, zpool_handle_t handle)
{
	uint64_t e = lookup(pool, handle);

	if (zp_entry_tag(e) == ZP_TAG_OBJ && pool->classes[zp_entry_class(e)]->huge)
		atomic_fetch_sub(&pool->huge_since, 1);
	zpool_free(pool, handle);
}

/*
 * @nr (2..ZP_GROUP_PAGES) pages at @pages, none same-filled, compressed as
 * one object that each page's handle references.  1 if they do not fit a
 * class below the huge one together; nothing is stored then.
 */
static int store_group(struct zpool *pool, struct zpool__codec *codec, const unsigned char *pages,
		       unsigned int nr, zpool_handle_t *handles)
{
	struct zpool__stream *st;
	const unsigned char *data;
	uint64_t limit;
	unsigned int i;
	uint32_t gh, g;
	int n, ret;

	n = compress(pool, codec, pages, nr * ZP_PAGE_SIZE, &st, &data);
	if (n <= 0)
		return n < 0 ? n : 1;
	ret = store_obj(pool, zpool__class_for(pool, (size_t)n + (codec ? 1 : 0) +
							     csum_bytes(pool)),
			codec, data, (size_t)n + (codec ? 1 : 0), &gh);
	zpool__stream_put(st);
	if (ret)
		return ret;
	g = zpool__table_alloc(pool, &pool->groups, zp_group_word(gh, nr));
	for (i = 0; g && i < nr; i++) {
		handles[i] = zpool__table_alloc(pool, &pool->handles, zp_entry_member(g, i));
		if (!handles[i])
			break;
	}
	/* The tables' new pages, if any, count against the limit too. */
	limit = atomic_load(&pool->mem_limit);
	if (!g || i < nr || over_limit(pool, limit, 0)) {
		while (i--)
			zpool__table_free(pool, &pool->handles, (uint32_t)handles[i]);
		if (g)
			zpool__table_free(pool, &pool->groups, g);
		if (free_obj(pool, gh))
			zpool__table_free(pool, &pool->handles, gh);
		return -ENOMEM;
	}
	atomic_fetch_add(&pool->orig_pages, nr);
	return 0;
}

/*
 * @nr pages at @pages, none same-filled: together if they fit one object,
 * else in halves, down to single pages (which may be stored raw).  All or
 * nothing: on failure no handle is left.
 */
static int store_run(struct zpool *pool, struct zpool__codec *codec, const unsigned char *pages,
		     unsigned int nr, zpool_handle_t *handles)
{
	unsigned int half = nr / 2, i;
	int ret;

	if (nr == 1)
		return store_with(pool, codec, pages, 0, handles);
	ret = store_group(pool, codec, pages, nr, handles);
	if (ret <= 0)
		return ret;
	ret = store_run(pool, codec, pages, half, handles);
	if (ret)
		return ret;
	ret = store_run(pool, codec, pages + half * ZP_PAGE_SIZE, nr - half, handles + half);
	if (ret)
		for (i = 0; i < half; i++)
			unstore(pool, handles[i]);
	return ret;
}

int zpool_store(struct zpool *pool, const void *page, zpool_handle_t *handle)
{
	struct zpool__codec *codec;
	unsigned long word;
	int ret;

	if (!pool || !page || !handle)
		return -EINVAL;
	if (same_filled(page, &word)) {
		ret = store_same(pool, word, handle);
	} else {
		codec = slot_codec(pool, 0);
		ret = store_with(pool, codec, page, 0, handle);
		if (codec)
			codec_put(pool, codec);
	}
	/* Only once the store is whole: a refused one leaves mem_used_max alone. */
	if (!ret)
		zpool__update_max(pool);
	return ret;
}

/*
 * The first of @nr pages at @pages (none same-filled) and as many after it
 * as a group takes: the first page compressed alone says how many, the
 * most, in a power of two, that fit below the huge class at its size less
 * a sixteenth (what grouping gains, about: 7% on anon-64m.bin), so that a
 * group seldom fails to fit and is halved.  Halving from the most pages
 * every time compressed each byte of anon-64m.bin 2.29 times, and of data
 * compressing to 40% 4 times; this, 1.40 and 2.5 times, for a corpus 0.2%
 * larger (12.35 MiB, zstd).  Returns the pages stored, or -errno.
 */
static int store_next(struct zpool *pool, struct zpool__codec *codec, const unsigned char *pages,
		      unsigned int nr, zpool_handle_t *handles)
{
	size_t room = pool->huge_class_size - csum_bytes(pool) - (codec ? 1 : 0);
	struct zpool__stream *st = NULL;
	const unsigned char *data;
	unsigned int k = 1;
	int n, ret = 0;

	n = compress(pool, codec, pages, ZP_PAGE_SIZE, &st, &data);
	if (n < 0)
		return n;
	while (n && k * 2 <= nr && (size_t)n * k * 2 * 15 / 16 <= room)
		k *= 2;
	if (k == 1)
		ret = store_compressed(pool, codec, pages, n, data, 0, handles);
	/* Given back before the group takes one: a thread never holds two. */
	if (st)
		zpool__stream_put(st);
	if (k > 1)
		ret = store_run(pool, codec, pages, k, handles);
	return ret ? ret : (int)k;
}

/* zpool_store_pages() with @codec (NULL: the plain compressor). */
static int store_pages(struct zpool *pool, struct zpool__codec *codec, const unsigned char *p,
		       unsigned int nr, zpool_handle_t *handles)
{
	unsigned int done = 0, run, max;
	unsigned long word;
	int ret = 0;

	max = pool->flags & ZPOOL_F_MULTI_PAGE ? ZP_GROUP_PAGES : 1;
	while (done < nr) {
		if (same_filled(p + (size_t)done * ZP_PAGE_SIZE, &word)) {
			ret = store_same(pool, word, &handles[done]);
			if (ret)
				break;
			done++;
			continue;
		}
		/* Same-filled pages stay out of groups: they cost nothing alone. */
		for (run = 1; run < max && done + run < nr &&
			      !same_filled(p + (size_t)(done + run) * ZP_PAGE_SIZE, &word);
		     run++)
			;
		ret = store_next(pool, codec, p + (size_t)done * ZP_PAGE_SIZE, run, &handles[done]);
		if (ret < 0)
			break;
		done += (unsigned int)ret;
		ret = 0;
	}
	if (ret)
		while (done--)
			unstore(pool, handles[done]);
	/*
	 * Refused or not: a part stored and taken back may leave a zspage
	 * page touched, which a lazy source's pool counts until compaction
	 * trims it, and the peak is never below what is held.
	 */
	zpool__update_max(pool);
	return ret;
}

int zpool_store_pages(struct zpool *pool, const void *pages, unsigned int nr,
		      zpool_handle_t *handles)
{
	struct zpool__codec *codec;
	int ret;

	if (!pool || !pages || !handles || !nr)
		return -EINVAL;
	codec = slot_codec(pool, 0);
	ret = store_pages(pool, codec, pages, nr, handles);
	if (codec)
		codec_put(pool, codec);
	return ret;
}

int zpool__store_pages_slot(struct zpool *pool, unsigned int slot, const void *pages,
			    unsigned int nr, zpool_handle_t *handles)
{
	struct zpool__codec *codec;
	unsigned int i;
	int ret;

	if (slot >= ZP_CODEC_SLOTS || !nr)
		return -EINVAL;
	codec = slot_codec(pool, slot);
	if (!codec && slot)
		return -ENOENT;
	ret = store_pages(pool, codec, pages, nr, handles);
	if (codec)
		codec_put(pool, codec);
	/* A page kept raw would count as a new huge page: refused whole instead. */
	for (i = 0; !ret && i < nr; i++) {
		uint64_t e = lookup(pool, handles[i]);

		if (zp_entry_tag(e) == ZP_TAG_OBJ && pool->classes[zp_entry_class(e)]->huge) {
			while (nr--)
				unstore(pool, handles[nr]);
			return 1;
		}
	}
	return ret;
}

int zpool__store_slot(struct zpool *pool, unsigned int slot, const void *page,
		      size_t below_class, zpool_handle_t *handle)
{
	struct zpool__codec *codec;
	int ret;

	if (slot >= ZP_CODEC_SLOTS || !below_class)
		return -EINVAL;
	codec = slot_codec(pool, slot);
	if (!codec && slot)
		return -ENOENT;
	ret = store_with(pool, codec, page, below_class, handle);
	if (codec)
		codec_put(pool, codec);
	if (!ret)
		zpool__update_max(pool);
	return ret;
}

size_t zpool__obj_class_size(struct zpool *pool, zpool_handle_t handle)
{
	uint64_t e = lookup(pool, handle);

	return zp_entry_tag(e) == ZP_TAG_OBJ ? pool->classes[zp_entry_class(e)]->size : 0;
}

/* The entry of a handle in use, or 0. */
static uint64_t lookup(struct zpool *pool, zpool_handle_t handle)
{
	uint64_t e;

	if (!pool || handle > UINT32_MAX)
		return 0;
	e = zpool__table_get(&pool->handles, (uint32_t)handle);
	return zp_entry_tag(e) == ZP_TAG_OBJ || zp_entry_tag(e) == ZP_TAG_SAME ? e : 0;
}

/* With the class lock of @c held: the entry again, if it is still there. */
static uint64_t relookup(struct zpool *pool, zpool_handle_t handle, const struct size_class *c)
{
	uint64_t e = zpool__table_get(&pool->handles, (uint32_t)handle);

	return zp_entry_tag(e) == ZP_TAG_OBJ && pool->classes[zp_entry_class(e)] == c ? e : 0;
}

/*
 * Whether the @len bytes of object @src in @zsp of @c match their checksum;
 * true for a pool without checksums.  With the class lock held.
 */
static bool csum_ok(struct zpool *pool, const struct size_class *c, const struct zspage *zsp,
		    const unsigned char *src, size_t len)
{
	uint32_t want;

	if (!(pool->flags & ZPOOL_F_CHECKSUM))
		return true;
	if (c->huge)
		want = zsp->huge_csum;
	else
		memcpy(&want, src + len, sizeof(want));
	return checksum(src, len) == want;
}

/* The object of @handle decompressed into @bytes at @dst (a raw page is copied). */
static int load_obj(struct zpool *pool, zpool_handle_t handle, void *dst, size_t bytes)
{
	uint64_t e = lookup(pool, handle);
	struct size_class *c;
	const unsigned char *src;
	struct zspage *zsp;
	size_t len;
	int ret = 0;

	if (zp_entry_tag(e) != ZP_TAG_OBJ)
		return -EINVAL;
	c = pool->classes[zp_entry_class(e)];
	zpool__read_lock(c->lock);
	/* Compaction may have moved the object before we got the lock. */
	e = relookup(pool, handle, c);
	if (!e) {
		ret = -EINVAL;
		goto out;
	}
	zsp = zpool__zspage(pool, zp_entry_zspage(e));
	src = zpool__obj_addr(c, zsp, zp_entry_slot(e));
	len = zp_entry_obj_len(e);
	if (!csum_ok(pool, c, zsp, src, len)) {
		ret = -EIO;
		goto out;
	}
	if (c->huge) {
		ret = bytes == ZP_PAGE_SIZE ? (memcpy(dst, src, ZP_PAGE_SIZE), 0) : -EIO;
	} else if (zp_entry_has_codec(e)) {
		const struct zpool__codec *codec = obj_codec(pool, src);

		/* Unchecked, a corrupt id byte may name no codec at all. */
		ret = codec ? zpool__codec_decompress(codec, src + 1, len - 1, dst, bytes) : -EIO;
	} else {
		ret = zpool__decompress(pool->comp, src, len, dst, bytes);
	}
	/*
	 * lz4 and zstd decode into @dst and find a broken stream only where
	 * it breaks, leaving what came before: clear it, since an -EIO page
	 * holds no data from the object (without checksums the first bytes
	 * of a corrupt object are as suspect as the rest).
	 */
	if (ret == -EIO && !c->huge)
		memset(dst, 0, bytes);
out:
	zpool__rw_unlock(c->lock);
	return ret;
}

/*
 * The group of member entry @e; the member's reference keeps the entry
 * and the object it names.
 */
static uint64_t group_of(struct zpool *pool, uint64_t e)
{
	return atomic_load_explicit(zpool__table_slot(&pool->groups, zp_entry_same_index(e)),
				    memory_order_acquire);
}

size_t zpool__obj_share(struct zpool *pool, zpool_handle_t handle)
{
	uint64_t e = lookup(pool, handle), w;

	if (!zp_entry_is_member(e))
		return zpool__obj_class_size(pool, handle);
	w = group_of(pool, e);
	return zpool__obj_class_size(pool, zp_group_handle(w)) / zp_group_pages(w);
}

size_t zpool__pages_freed(struct zpool *pool, const zpool_handle_t *handles, unsigned int nr,
			  bool *shared)
{
	uint64_t grp[ZP_GROUP_PAGES]; /* a member's group plus one, 0 for none */
	unsigned int i, j, in;
	size_t sum = 0;

	*shared = false;
	for (i = 0; i < nr; i++) {
		uint64_t e = lookup(pool, handles[i]);

		grp[i] = zp_entry_is_member(e) ? (uint64_t)zp_entry_same_index(e) + 1 : 0;
	}
	for (i = 0; i < nr; i++) {
		uint64_t w;

		if (!grp[i]) {
			sum += zpool__obj_class_size(pool, handles[i]);
			continue;
		}
		for (j = 0; j < i && grp[j] != grp[i]; j++)
			;
		if (j < i)
			continue; /* counted with its first page */
		for (in = 0, j = i; j < nr; j++)
			in += grp[j] == grp[i];
		w = group_of(pool, lookup(pool, handles[i]));
		/* Its other pages may go meanwhile, never come: refs only fall. */
		if (zp_group_refs(w) <= in)
			sum += zpool__obj_class_size(pool, zp_group_handle(w));
		else
			*shared = true;
	}
	return sum;
}

bool zpool__group_sparse(struct zpool *pool, zpool_handle_t handle)
{
	uint64_t e = lookup(pool, handle), w;

	if (!zp_entry_is_member(e))
		return false;
	w = group_of(pool, e);
	return zp_group_refs(w) * 2 <= zp_group_pages(w);
}

/*
 * Pages @first..@first + @nr - 1 of group @w into @dst: straight there when
 * they are the whole group, else through a group buffer.
 */
static int load_group(struct zpool *pool, uint64_t w, unsigned int first, unsigned int nr,
		      unsigned char *dst)
{
	unsigned int pages = zp_group_pages(w);
	unsigned char *buf;
	int ret;

	if (first + nr > pages)
		return -EIO;
	if (nr == pages)
		return load_obj(pool, zp_group_handle(w), dst, pages * ZP_PAGE_SIZE);
	buf = zpool__group_buf_get();
	if (!buf)
		return -ENOMEM;
	ret = load_obj(pool, zp_group_handle(w), buf, pages * ZP_PAGE_SIZE);
	if (!ret)
		memcpy(dst, buf + (size_t)first * ZP_PAGE_SIZE, (size_t)nr * ZP_PAGE_SIZE);
	zpool__group_buf_put(buf);
	return ret;
}

int zpool_load(struct zpool *pool, zpool_handle_t handle, void *page)
{
	uint64_t e = lookup(pool, handle);

	if (!e || !page)
		return -EINVAL;
	if (zp_entry_is_member(e))
		return load_group(pool, group_of(pool, e), zp_entry_member_nr(e), 1, page);
	if (zp_entry_tag(e) == ZP_TAG_SAME) {
		fill_page(page, (unsigned long)zpool__table_get(&pool->same,
								zp_entry_same_index(e)));
		return 0;
	}
	return load_obj(pool, handle, page, ZP_PAGE_SIZE);
}

int zpool_load_pages(struct zpool *pool, const zpool_handle_t *handles, unsigned int nr,
		     void *pages)
{
	unsigned char *dst = pages;
	unsigned int i = 0, run;
	int ret;

	if (!pool || !handles || !pages)
		return -EINVAL;
	while (i < nr) {
		uint64_t e = lookup(pool, handles[i]), f;

		if (!zp_entry_is_member(e)) {
			ret = zpool_load(pool, handles[i], dst + (size_t)i * ZP_PAGE_SIZE);
			if (ret)
				return ret;
			i++;
			continue;
		}
		/* The next pages of the same group, in order, share one decompression. */
		for (run = 1; i + run < nr; run++) {
			f = lookup(pool, handles[i + run]);
			if (!zp_entry_is_member(f) ||
			    zp_entry_same_index(f) != zp_entry_same_index(e) ||
			    zp_entry_member_nr(f) != zp_entry_member_nr(e) + run)
				break;
		}
		ret = load_group(pool, group_of(pool, e), zp_entry_member_nr(e), run,
				 dst + (size_t)i * ZP_PAGE_SIZE);
		if (ret)
			return ret;
		i += run;
	}
	return 0;
}

/*
 * Free the object of @handle, but not its handle-table entry; false if
 * another thread freed it meanwhile.
 */
static bool free_obj(struct zpool *pool, zpool_handle_t handle)
{
	uint64_t e = lookup(pool, handle);
	struct zpool__codec *codec = NULL;
	struct size_class *c;
	struct zspage *zsp;

	if (zp_entry_tag(e) != ZP_TAG_OBJ)
		return false;
	c = pool->classes[zp_entry_class(e)];
	zpool__write_lock(c->lock);
	e = relookup(pool, handle, c);
	if (!e) {
		zpool__rw_unlock(c->lock);
		return false;
	}
	/* Dead before unlocking, so compaction never moves a freed slot. */
	atomic_store_explicit(zpool__table_slot(&pool->handles, (uint32_t)handle), 0,
			      memory_order_release);
	zsp = zpool__zspage(pool, zp_entry_zspage(e));
	/*
	 * The object's first byte names the codec its reference is on.  A
	 * corrupt one may name another codec, whose reference would then be
	 * dropped for an object that never held it: that codec would be
	 * freed while its own objects still need it, and they would read
	 * back as -EIO (or, once its id is reused, be decoded by a stranger).
	 * With checksums, a byte that fails its check is not trusted, and
	 * the reference is left to the pool's end, where every codec goes.
	 */
	if (zp_entry_has_codec(e)) {
		const unsigned char *obj = zpool__obj_addr(c, zsp, zp_entry_slot(e));

		if (csum_ok(pool, c, zsp, obj, zp_entry_obj_len(e)))
			codec = (struct zpool__codec *)obj_codec(pool, obj);
	}
	zpool__obj_free(pool, c, zsp, zp_entry_slot(e));
	zpool__rw_unlock(c->lock);
	if (codec)
		codec_put(pool, codec);
	atomic_fetch_sub(&pool->compr_bytes, zp_entry_obj_len(e));
	if (c->huge)
		atomic_fetch_sub(&pool->huge_pages, 1);
	return true;
}

/*
 * Clear entry @e of @handle for the one of several threads freeing it at
 * once that gets there first; false for the others.  Under the table lock,
 * which a chunk is only given back under: the first may have freed the
 * handle and emptied its chunk, which the others must then not touch.
 */
static bool claim(struct zpool *pool, zpool_handle_t handle, uint64_t e)
{
	struct zp_table *t = &pool->handles;
	uint32_t idx = (uint32_t)handle - 1;
	_Atomic(uint64_t) *chunk;
	bool mine = false;

	zpool__mutex_lock(t->lock);
	chunk = zpool__table_chunk(t, (uint32_t)(idx / ZP_TABLE_CHUNK));
	if (chunk)
		mine = atomic_compare_exchange_strong(&chunk[idx % ZP_TABLE_CHUNK], &e, 0);
	zpool__mutex_unlock(t->lock);
	return mine;
}

/*
 * A page of a group drops its reference; the last one frees the group's
 * object.  The entry is claimed first, so a page freed twice at once drops
 * one reference, not two.
 */
static void free_member(struct zpool *pool, zpool_handle_t handle, uint64_t e)
{
	uint64_t w;

	if (!claim(pool, handle, e))
		return;
	w = atomic_fetch_sub_explicit(zpool__table_slot(&pool->groups, zp_entry_same_index(e)),
				      ZP_GROUP_REF, memory_order_acq_rel);
	if (zp_group_refs(w) == 1) {
		if (free_obj(pool, zp_group_handle(w)))
			zpool__table_free(pool, &pool->handles, zp_group_handle(w));
		zpool__table_free(pool, &pool->groups, zp_entry_same_index(e));
	}
	atomic_fetch_sub(&pool->orig_pages, 1);
	zpool__table_free(pool, &pool->handles, (uint32_t)handle);
}

void zpool_free(struct zpool *pool, zpool_handle_t handle)
{
	uint64_t e = lookup(pool, handle);

	if (!e)
		return;
	if (zp_entry_is_member(e)) {
		free_member(pool, handle, e);
		return;
	}
	if (zp_entry_tag(e) == ZP_TAG_SAME) {
		if (!claim(pool, handle, e))
			return; /* freed by another thread meanwhile */
		zpool__table_free(pool, &pool->same, zp_entry_same_index(e));
		atomic_fetch_sub(&pool->same_pages, 1);
	} else if (!free_obj(pool, handle)) {
		return; /* freed by another thread meanwhile: nothing left to do */
	}
	atomic_fetch_sub(&pool->orig_pages, 1);
	zpool__table_free(pool, &pool->handles, (uint32_t)handle);
}

size_t zpool_obj_size(struct zpool *pool, zpool_handle_t handle)
{
	uint64_t e = lookup(pool, handle);

	if (zp_entry_is_member(e))
		e = lookup(pool, zp_group_handle(group_of(pool, e)));
	return zp_entry_tag(e) == ZP_TAG_OBJ ? zp_entry_obj_len(e) : 0;
}

size_t zpool_compact(struct zpool *pool)
{
	return pool ? zpool__compact(pool) : 0;
}

void zpool_set_mem_limit(struct zpool *pool, uint64_t bytes)
{
	if (pool)
		atomic_store(&pool->mem_limit, bytes);
}

void zpool_reset_mem_used_max(struct zpool *pool)
{
	if (pool)
		atomic_store(&pool->mem_used_max, mem_used(pool));
}

void zpool_stats(struct zpool *pool, struct zpool_stats *st)
{
	if (!pool || !st)
		return;
	memset(st, 0, sizeof(*st));
	st->orig_data_size = atomic_load(&pool->orig_pages) * ZP_PAGE_SIZE;
	st->compr_data_size = atomic_load(&pool->compr_bytes);
	st->mem_used_total = mem_used(pool);
	st->mem_limit = atomic_load(&pool->mem_limit);
	st->mem_used_max = atomic_load(&pool->mem_used_max);
	st->same_pages = atomic_load(&pool->same_pages);
	st->pages_compacted = atomic_load(&pool->pages_compacted);
	st->huge_pages = atomic_load(&pool->huge_pages);
	st->huge_pages_since = atomic_load(&pool->huge_since);
	st->metadata_bytes = atomic_load(&pool->meta_pages) * ZP_PAGE_SIZE;
	st->objects = atomic_load(&pool->orig_pages);
}

void zpool_stats_add(struct zpool_stats *sum, const struct zpool_stats *st)
{
	if (!sum || !st)
		return;
	sum->orig_data_size += st->orig_data_size;
	sum->compr_data_size += st->compr_data_size;
	sum->mem_used_total += st->mem_used_total;
	sum->mem_limit += st->mem_limit;
	sum->mem_used_max += st->mem_used_max;
	sum->same_pages += st->same_pages;
	sum->pages_compacted += st->pages_compacted;
	sum->huge_pages += st->huge_pages;
	sum->huge_pages_since += st->huge_pages_since;
	sum->metadata_bytes += st->metadata_bytes;
	sum->objects += st->objects;
}

const char *zpool_compressor(const struct zpool *pool)
{
	return pool ? zpool__comp_name(pool->comp) : NULL;
}

size_t zpool_huge_class_size(const struct zpool *pool)
{
	return pool ? pool->huge_class_size - csum_bytes(pool) : 0;
}

int zpool__corrupt(struct zpool *pool, zpool_handle_t handle, size_t offset,
		   unsigned char mask)
{
	uint64_t e = lookup(pool, handle);
	struct size_class *c;
	struct zspage *zsp;

	if (zp_entry_is_member(e)) {
		/* A page of a group: its group's object. */
		handle = zp_group_handle(group_of(pool, e));
		e = lookup(pool, handle);
	}
	if (zp_entry_tag(e) != ZP_TAG_OBJ || offset >= zp_entry_obj_len(e))
		return -EINVAL;
	c = pool->classes[zp_entry_class(e)];
	zpool__write_lock(c->lock);
	e = relookup(pool, handle, c);
	if (!e || offset >= zp_entry_obj_len(e)) {
		zpool__rw_unlock(c->lock);
		return -EINVAL;
	}
	zsp = zpool__zspage(pool, zp_entry_zspage(e));
	zpool__obj_addr(c, zsp, zp_entry_slot(e))[offset] ^= mask;
	zpool__rw_unlock(c->lock);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * libzpool internals: the handle encoding, the tables (table.c), the
 * allocator's structures (zsmalloc.c) and the compressors (compress.c),
 * shared by its source files and reachable by tests through the static
 * build.  zpool__ names are internal but not static.
 */
#ifndef ZPOOL_INTERNAL_H
#define ZPOOL_INTERNAL_H

#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include <libbvec/zpool.h>

#include "os.h"

#define ZP_PAGE_SIZE ((size_t)BVEC_PAGE_SIZE)
#define ZP_PAGE_SHIFT BVEC_PAGE_SHIFT
#define ZP_MIN_OBJ 32u
#define ZP_CLASS_DELTA 16u
/*
 * Zspage length.  max_pages_per_zspage may be 1 to ZP_MAX_CHAIN_CFG; a
 * pool uses at most ZP_MAX_CHAIN pages, the most that fit in 1 MiB (64
 * with 4 and 16 KiB pages, 16 with 64 KiB pages): the default source
 * carves runs from 2 MiB mappings, and a 1 MiB zspage of the smallest
 * objects has exactly as many slots as ZP_SLOT_BITS can name at 64 KiB
 * pages.  Elsewhere a class's zspage is kept short enough for its slots
 * to fit the field (ZP_MAX_SLOTS).  The default is long where untouched
 * pages are free (a lazy source) and short where a zspage costs all its
 * pages at once.
 */
#define ZP_MAX_CHAIN_CFG 64u
#define ZP_MAX_ZSPAGE_BYTES ((size_t)1 << 20)
#define ZP_MAX_CHAIN (ZP_MAX_ZSPAGE_BYTES / ZP_PAGE_SIZE < ZP_MAX_CHAIN_CFG ? \
		      (unsigned int)(ZP_MAX_ZSPAGE_BYTES / ZP_PAGE_SIZE) : ZP_MAX_CHAIN_CFG)
#define ZP_DEFAULT_CHAIN_LAZY 64u
#define ZP_DEFAULT_CHAIN_EAGER 8u
#define ZP_NR_CLASSES ((unsigned int)((ZP_PAGE_SIZE - ZP_MIN_OBJ) / ZP_CLASS_DELTA + 1))
#define ZP_CSUM_BYTES 4u

/*
 * A handle-table entry is one 64-bit word, so a load needs one atomic read
 * to find its object:
 *   tag (2 bits) | class | slot in zspage | length | zspage id
 * The widths follow from the page size: 255 classes and 13-bit lengths for
 * 4 KiB pages, 4095 classes and 17-bit lengths for 64 KiB pages.
 */
enum zp_tag { ZP_TAG_OBJ = 1, ZP_TAG_SAME = 2, ZP_TAG_FREE = 3 };
#define ZP_TAG_BITS 2
#define ZP_CLASS_BITS (ZP_PAGE_SHIFT - 4)
#define ZP_SLOT_BITS (ZP_PAGE_SHIFT + 4 - 5) /* 16 pages of 32-byte objects */
#define ZP_LEN_BITS (ZP_PAGE_SHIFT + 1)
#define ZP_ZSPAGE_BITS (64 - ZP_TAG_BITS - ZP_CLASS_BITS - ZP_SLOT_BITS - ZP_LEN_BITS)
/* Slots one zspage may have: every slot index fits ZP_SLOT_BITS. */
#define ZP_MAX_SLOTS (1u << ZP_SLOT_BITS)

#define ZP_CLASS_SHIFT ZP_TAG_BITS
#define ZP_SLOT_SHIFT (ZP_CLASS_SHIFT + ZP_CLASS_BITS)
#define ZP_LEN_SHIFT (ZP_SLOT_SHIFT + ZP_SLOT_BITS)
#define ZP_ZSPAGE_SHIFT (ZP_LEN_SHIFT + ZP_LEN_BITS)
#define ZP_FIELD(e, shift, bits) ((unsigned int)(((e) >> (shift)) & ((1ull << (bits)) - 1)))

static inline uint64_t zp_entry_obj(unsigned int cls, unsigned int slot,
				    unsigned int len, uint32_t zspage)
{
	return ZP_TAG_OBJ | (uint64_t)cls << ZP_CLASS_SHIFT |
	       (uint64_t)slot << ZP_SLOT_SHIFT | (uint64_t)len << ZP_LEN_SHIFT |
	       (uint64_t)zspage << ZP_ZSPAGE_SHIFT;
}

#define zp_entry_tag(e) ((enum zp_tag)((e) & 3))
#define zp_entry_class(e) ZP_FIELD(e, ZP_CLASS_SHIFT, ZP_CLASS_BITS)
#define zp_entry_slot(e) ZP_FIELD(e, ZP_SLOT_SHIFT, ZP_SLOT_BITS)
#define zp_entry_len(e) ZP_FIELD(e, ZP_LEN_SHIFT, ZP_LEN_BITS)
#define zp_entry_zspage(e) ((uint32_t)((e) >> ZP_ZSPAGE_SHIFT))
#define zp_entry_same_index(e) ((uint32_t)((e) >> ZP_TAG_BITS))

/*
 * Pages compressed together (ZPOOL_F_MULTI_PAGE): up to 32 KiB, the block
 * nbdkit's zstd allocator compresses and where zstd's gain on anonymous
 * memory levels off; none where one page is that big already.
 */
#define ZP_GROUP_PAGES (ZP_PAGE_SIZE >= 32768 ? 1u : (unsigned int)(32768 / ZP_PAGE_SIZE))

/*
 * A page of such a group has a handle of its own whose entry is tagged
 * ZP_TAG_SAME with ZP_MEMBER set: instead of a repeated word it names an
 * entry of the pool's group table (same bits) and its place in the group.
 * The group table entry holds the group object's handle, the references
 * its pages hold and its page count:
 *   handle (32 bits) | references (16) | pages (8)
 */
#define ZP_MEMBER ((uint64_t)1 << 63)
#define ZP_MEMBER_NR_SHIFT (ZP_TAG_BITS + 32)
#define zp_entry_is_member(e) (zp_entry_tag(e) == ZP_TAG_SAME && ((e) & ZP_MEMBER))
#define zp_entry_member_nr(e) ZP_FIELD(e, ZP_MEMBER_NR_SHIFT, 8)

static inline uint64_t zp_entry_member(uint32_t group, unsigned int nr)
{
	return ZP_MEMBER | (uint64_t)nr << ZP_MEMBER_NR_SHIFT | (uint64_t)group << ZP_TAG_BITS |
	       ZP_TAG_SAME;
}

#define ZP_GROUP_REF ((uint64_t)1 << 32)
#define zp_group_handle(w) ((uint32_t)(w))
#define zp_group_refs(w) ZP_FIELD(w, 32, 16)
#define zp_group_pages(w) ZP_FIELD(w, 48, 8)

static inline uint64_t zp_group_word(uint32_t handle, unsigned int pages)
{
	return (uint64_t)pages << 48 | (uint64_t)pages * ZP_GROUP_REF | handle;
}

/*
 * A growable table of atomic 64-bit words addressed by a 1-based 32-bit
 * index: a fixed-depth radix of pages from the page source, so it reaches
 * every 32-bit index without moving or copying anything:
 *
 *   top[] (in the table) -> mid page -> dir page -> chunk page of entries
 *
 * Each chunk keeps its own free list threaded through its free entries
 * (tag ZP_TAG_FREE) and its own count, in the dir page beside the chunk
 * pointers.  A chunk whose entries are all free goes back to the page
 * source, and so does a dir or mid left with nothing under it, so freeing
 * every object returns every page.  Readers walk the radix without a lock:
 * an index in use keeps its pages alive, and a lookup of an index that is
 * not (a stale handle) is checked against @gen, which moves before any page
 * is given back, so it reads 0 rather than whatever reused the page.
 */
struct zp_chunk_info {
	uint32_t next, prev;	/* on the partial list: chunk + 1, 0 = none */
	uint16_t in_use;	/* entries allocated */
	uint16_t free_head;	/* first free entry + 1, 0 = none */
	uint16_t bump;		/* entries handed out since the chunk was made */
	uint16_t partial;	/* on the partial list */
};

#define ZP_TABLE_CHUNK (ZP_PAGE_SIZE / sizeof(uint64_t))
#define ZP_TABLE_DIRN ((ZP_PAGE_SIZE - sizeof(uint64_t)) / \
		       (sizeof(void *) + sizeof(struct zp_chunk_info)))
#define ZP_TABLE_MIDN ((ZP_PAGE_SIZE - sizeof(uint64_t)) / sizeof(void *))
/* Chunks needed for every index 1..UINT32_MAX (the chunk size is a power of two). */
#define ZP_TABLE_MAX_CHUNKS ((uint32_t)(((uint64_t)1 << 32) / ZP_TABLE_CHUNK))
#define ZP_TABLE_TOP ((ZP_TABLE_MAX_CHUNKS + ZP_TABLE_DIRN * ZP_TABLE_MIDN - 1) / \
		      (ZP_TABLE_DIRN * ZP_TABLE_MIDN))
/* Indices a table can hand out: every nonzero 32-bit value. */
#define ZP_TABLE_MAX_INDEX UINT32_MAX

struct zp_table_dir {
	uint64_t live;		/* chunks present; under the table lock */
	_Atomic(_Atomic(uint64_t) *) chunk[ZP_TABLE_DIRN];
	struct zp_chunk_info info[ZP_TABLE_DIRN];	/* under the table lock */
};

struct zp_table_mid {
	uint64_t live;		/* dirs present; under the table lock */
	_Atomic(struct zp_table_dir *) dir[ZP_TABLE_MIDN];
};

struct zp_table {
	_Atomic(struct zp_table_mid *) top[ZP_TABLE_TOP];
	_Atomic(uint32_t) nchunks; /* chunk positions ever used; only grows */
	_Atomic(uint32_t) gen;	/* moves before a page of the table is freed */
	uint32_t partial;	/* chunks with entries in use and room: chunk + 1 */
	uint32_t hole;		/* no free chunk position below this */
	struct zpool__mutex *lock;
};

/* The smaller of two counts or sizes: the one min of libzpool. */
static inline uint64_t zpool__min(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/**
 * zpool__max_objects() - the most objects one pool can hold at once
 *
 * A stored page takes one handle (a 32-bit table index); a compressed or
 * raw page also lives in a zspage, whose id has ZP_ZSPAGE_BITS bits, and a
 * raw ("huge") page fills a zspage by itself.  So this many pages can be
 * stored whatever their contents: 1,073,741,823 with 4 KiB pages (4 TiB),
 * 262,143 with 64 KiB pages (16 GiB).  zram sizes its disks against it.
 *
 * Return: the count; constant for the build.  No locking.
 */
static inline uint64_t zpool__max_objects(void)
{
	uint64_t zspages = ((uint64_t)1 << ZP_ZSPAGE_BITS) - 1;

	return zpool__min(zspages, ZP_TABLE_MAX_INDEX);
}

struct size_class;

/*
 * A zspage: pages_per_zspage contiguous pages holding objs_per_zspage
 * slots of the class size.  Slots never used yet are handed out in order
 * (bump), so with a lazy page source only pages up to the highest slot ever
 * used are real.  Freed slots form a list through their first two bytes.
 */
struct zspage {
	struct zspage *next, *prev; /* fullness list of the class */
	unsigned char *mem;
	uint32_t id;		    /* index in the pool's zspage table */
	uint16_t inuse;
	uint16_t bump;
	uint16_t free_head;	    /* slot index, ZP_NO_SLOT if none */
	uint8_t fullness;
	uint8_t pages_touched;
	uint32_t huge_csum;	    /* checksum of the one object of a huge zspage */
	uint8_t compacting;	    /* ZP_EVACUATE or ZP_TRIM during compaction */
	_Atomic(uint8_t) writers;   /* stores copying into a slot, lock dropped */
	uint16_t trim_target;	    /* ZP_TRIM: slots that will remain */
};

enum { ZP_EVACUATE = 1, ZP_TRIM = 2 };

#define ZP_NO_SLOT 0xffffu
#define ZP_FULLNESS_GROUPS 12 /* 0 empty, 1..10 by tenths in use, 11 full */

struct size_class {
	struct zpool__rwlock *lock;
	unsigned int size;
	unsigned int index;
	unsigned int objs_per_zspage;
	unsigned int pages_per_zspage;
	bool huge;
	struct zspage *fullness[ZP_FULLNESS_GROUPS];
	uint64_t zspages;
	uint64_t objs_used;
	uint64_t pages_used; /* pages counted in mem_used_total */
	/* Compaction, under the class lock: its sources, and objects to move. */
	struct zspage *compact_sources;
	uint64_t compact_pending;
};

/*
 * A page of zspage descriptors; this header takes the first descriptor's
 * place.  Pages with a free descriptor come first on the pool's list, and
 * a page with none in use goes back to the page source.
 */
struct zp_desc_page {
	struct zp_desc_page *next, *prev;
	struct zspage *free;	/* free descriptors of this page */
	unsigned int used;
};

struct zpool {
	struct zpool_page_source src;
	struct size_class *classes[ZP_NR_CLASSES]; /* by size index; merged share */
	struct size_class *class_storage;
	size_t class_pages;	 /* pages of class_storage */
	unsigned int nr_distinct; /* classes in it whose lock was made */
	unsigned int max_chain;
	unsigned int flags;
	int comp;		 /* enum zp_comp */
	_Atomic(int) level;	 /* zram_set_algorithm_params() may change it */
	size_t huge_class_size;	 /* largest compressed length kept compressed */
	struct zp_table handles;
	struct zp_table zspages; /* id -> struct zspage * */
	struct zp_table same;	 /* index -> the repeated word */
	struct zp_table groups;	 /* index -> a group of pages (zp_group_word()) */
	struct zpool__mutex *desc_lock;
	struct zp_desc_page *desc_pages; /* those with a free descriptor first */

	atomic_uint_fast64_t pages_total; /* every page held: data and metadata */
	atomic_uint_fast64_t meta_pages;
	atomic_uint_fast64_t mem_used_max;
	atomic_uint_fast64_t mem_limit;
	atomic_uint_fast64_t orig_pages;
	atomic_uint_fast64_t compr_bytes;
	atomic_uint_fast64_t same_pages;
	atomic_uint_fast64_t huge_pages;
	atomic_uint_fast64_t huge_since;
	atomic_uint_fast64_t pages_compacted;
	/* Handle-table entries compaction has read: its cost, which the unit
	 * tests bound by count rather than by a clock. */
	atomic_uint_fast64_t compact_reads;
	size_t self_bytes;	 /* pages holding this struct */
	struct zp_codecs *codecs; /* compress.c's codecs by id; heap */
	bool own_source;	 /* the default mmap source, made by the pool */
};

/* table.c: tables.  Alloc and free take the table lock (after any class lock). */
int zpool__table_init(struct zp_table *t);
void zpool__table_destroy(struct zpool *pool, struct zp_table *t);
/* An index holding @value, or 0 when memory or indices ran out. */
uint32_t zpool__table_alloc(struct zpool *pool, struct zp_table *t, uint64_t value);
/* zpool__table_alloc(), and on success the pages it added in *@pages. */
uint32_t zpool__table_alloc_pages(struct zpool *pool, struct zp_table *t, uint64_t value,
				  size_t *pages);
void zpool__table_free(struct zpool *pool, struct zp_table *t, uint32_t idx);
/* Pages the next zpool__table_alloc() would add to mem_used_total. */
size_t zpool__table_alloc_cost(struct zp_table *t);

/* Chunk positions ever used: chunks at or past it do not exist. */
static inline uint32_t zpool__table_nchunks(struct zp_table *t)
{
	return atomic_load_explicit(&t->nchunks, memory_order_acquire);
}

/*
 * Chunk @n, or NULL if it is not there.  Safe without a lock only while
 * something keeps the chunk (an index in use in it, or the table lock).
 */
static inline _Atomic(uint64_t) *zpool__table_chunk(struct zp_table *t, uint32_t n)
{
	struct zp_table_mid *mid = atomic_load_explicit(
		&t->top[n / (ZP_TABLE_DIRN * ZP_TABLE_MIDN)], memory_order_acquire);
	struct zp_table_dir *dir;

	if (!mid)
		return NULL;
	dir = atomic_load_explicit(&mid->dir[n / ZP_TABLE_DIRN % ZP_TABLE_MIDN],
				   memory_order_acquire);
	if (!dir)
		return NULL;
	return atomic_load_explicit(&dir->chunk[n % ZP_TABLE_DIRN], memory_order_acquire);
}

/* Entry @idx, which is in use (so its chunk stays): no lock needed. */
static inline _Atomic(uint64_t) *zpool__table_slot(struct zp_table *t, uint32_t idx)
{
	idx--;
	return &zpool__table_chunk(t, (uint32_t)(idx / ZP_TABLE_CHUNK))[idx % ZP_TABLE_CHUNK];
}

/*
 * The value of entry @idx, any index at all (callers' handles), or 0 if it
 * has no chunk.  Lock-free: if a page of the table was given back while
 * it looked, it looks again, so it never returns bytes of a reused page.
 */
static inline uint64_t zpool__table_get(struct zp_table *t, uint32_t idx)
{
	uint32_t n = (uint32_t)((idx - 1u) / ZP_TABLE_CHUNK);

	if (!idx)
		return 0;
	for (;;) {
		uint32_t gen = atomic_load_explicit(&t->gen, memory_order_acquire);
		struct zp_table_mid *mid;
		struct zp_table_dir *dir;
		_Atomic(uint64_t) *chunk;
		uint64_t v;

		/*
		 * Each pointer is checked against gen before it is followed;
		 * the loads are acquires, so each gen check comes after the
		 * load it vouches for (no fence: ThreadSanitizer has none).
		 */
		if (n >= zpool__table_nchunks(t))
			return 0;
		mid = atomic_load_explicit(&t->top[n / (ZP_TABLE_DIRN * ZP_TABLE_MIDN)],
					   memory_order_acquire);
		if (!mid)
			return 0;
		dir = atomic_load_explicit(&mid->dir[n / ZP_TABLE_DIRN % ZP_TABLE_MIDN],
					   memory_order_acquire);
		if (atomic_load_explicit(&t->gen, memory_order_acquire) != gen)
			continue;
		if (!dir)
			return 0;
		chunk = atomic_load_explicit(&dir->chunk[n % ZP_TABLE_DIRN], memory_order_acquire);
		if (atomic_load_explicit(&t->gen, memory_order_acquire) != gen)
			continue;
		if (!chunk)
			return 0;
		v = atomic_load_explicit(&chunk[(idx - 1u) % ZP_TABLE_CHUNK], memory_order_acquire);
		if (atomic_load_explicit(&t->gen, memory_order_acquire) == gen)
			return v;
	}
}

/*
 * Calls @fn on every entry of every chunk of @t (entries in use, free and
 * never used alike: @fn looks at the tag), until it returns false.  Each
 * chunk is walked under the table lock, so a chunk emptied by a free
 * meanwhile is not given back under @fn; @fn may store to the entry but
 * must not allocate or free in @t.
 */
void zpool__table_for_each(struct zp_table *t,
			   bool (*fn)(_Atomic(uint64_t) *slotp, uint64_t e, void *arg),
			   void *arg);

/* Every change of the pages held goes through here. */
void zpool__account(struct zpool *pool, long pages, bool meta);
/*
 * Raises mem_used_max to mem_used_total if that is higher; called only once
 * a store has succeeded, so a refused store leaves the maximum alone.
 */
void zpool__update_max(struct zpool *pool);

/* Pages from the source, counted in mem_used_total. */
void *zpool__pages_alloc(struct zpool *pool, size_t pages, bool meta);
void zpool__pages_free(struct zpool *pool, void *mem, size_t pages, bool meta);

/* zsmalloc.c: the allocator */
int zpool__classes_init(struct zpool *pool);
void zpool__classes_destroy(struct zpool *pool);
struct size_class *zpool__class_for(struct zpool *pool, size_t size);
/* With the class write lock held: a slot for one object, or NULL. */
unsigned char *zpool__obj_alloc(struct zpool *pool, struct size_class *c,
				struct zspage **zsp, unsigned int *slot);
/* With the class write lock held. */
void zpool__obj_free(struct zpool *pool, struct size_class *c,
		     struct zspage *zsp, unsigned int slot);
/* With the class write lock held: pages zpool__obj_alloc() would add. */
size_t zpool__obj_alloc_cost(struct zpool *pool, struct size_class *c);
static inline unsigned char *zpool__obj_addr(const struct size_class *c,
					     const struct zspage *zsp,
					     unsigned int slot)
{
	return zsp->mem + (size_t)slot * c->size;
}
struct zspage *zpool__zspage(struct zpool *pool, uint32_t id);
size_t zpool__compact(struct zpool *pool);

/*
 * zpool.c: @cfg (NULL for all defaults) as this version of the library
 * knows it: fields past cfg->size get their defaults.  -EINVAL for a size
 * no version of the header had.
 */
int zpool__config_copy(struct zpool_config *dst, const struct zpool_config *cfg);

/* compress.c */
enum zp_comp { ZP_COMP_LZ4, ZP_COMP_LZ4HC, ZP_COMP_ZSTD };
int zpool__comp_lookup(const char *name, int level, int *comp, int *out_level);
const char *zpool__comp_name(int comp);
/*
 * Compress @bytes (a page, or up to ZP_GROUP_PAGES pages): the length, with
 * *@out in the compression stream *@sp, which the caller gives back with
 * zpool__stream_put() once done with *@out (and before it compresses
 * anything else: streams are one per CPU, and a thread waiting for a second
 * while holding one could wait for ever); 0 if the length would pass
 * @limit (which must be below a page for more than one), or -ENOMEM, and
 * then nothing is held.
 */
struct zpool__stream;
int zpool__compress(int comp, int level, const void *src, size_t bytes, size_t limit,
		    struct zpool__stream **sp, const unsigned char **out);
void zpool__stream_put(struct zpool__stream *st);
/* 0, or -EIO if @src does not decode to exactly @bytes. */
int zpool__decompress(int comp, const void *src, size_t len, void *dst, size_t bytes);
/*
 * A buffer of ZP_GROUP_PAGES pages to decompress a group into, from a small
 * cache shared by all threads; NULL when memory is short.  Give it back.
 */
void *zpool__group_buf_get(void);
void zpool__group_buf_put(void *buf);

/*
 * A codec: what wrote an object and can read it back (algorithm, level,
 * dictionary).  Immutable once made; shared by every thread.  A pool keeps
 * up to 255 of them (zpool.c); an object written by one other than the
 * pool's plain compressor starts with a byte naming it, and its entry's
 * length has ZP_LEN_CODEC set (never set otherwise: only a huge object,
 * raw and codec-less, is a whole page long).
 */
struct zpool__codec {
	int comp, level;
	unsigned char *dict;
	size_t dict_len;
	void *lz4;		/* LZ4_stream_t with the dictionary loaded */
	void *lz4hc;		/* LZ4_streamHC_t likewise */
	void *cdict, *ddict;	/* ZSTD_CDict, ZSTD_DDict */
	atomic_uint refs;	/* holders (codec slots) and objects */
	unsigned int id;
};

#define ZP_LEN_CODEC ((unsigned int)ZP_PAGE_SIZE)
/* A raw object is exactly ZP_LEN_CODEC long; one with a codec byte is longer. */
#define zp_entry_has_codec(e) (zp_entry_len(e) > ZP_LEN_CODEC)
#define zp_entry_obj_len(e) (zp_entry_has_codec(e) ? zp_entry_len(e) - ZP_LEN_CODEC : \
			     zp_entry_len(e))
#define ZP_CODECS 256u		/* ids 1..255; 0 is the plain compressor */
#define ZP_CODEC_SLOTS 4u	/* zram's priorities: 0 primary, 1..3 recompression */

/* NULL with errno-free failure: out of memory or an unusable dictionary. */
struct zpool__codec *zpool__codec_new(int comp, int level, const void *dict, size_t len);
void zpool__codec_free(struct zpool__codec *c);
/* As zpool__compress() and zpool__decompress(), with the codec's dictionary. */
int zpool__codec_compress(const struct zpool__codec *c, const void *src, size_t bytes,
			  size_t limit, struct zpool__stream **sp, const unsigned char **out);
int zpool__codec_decompress(const struct zpool__codec *c, const void *src, size_t len,
			    void *dst, size_t bytes);
/* zstd's ZDICT on @nr_pages pages: the dictionary's length, or -errno. */
int zpool__train_dict(const void *pages, size_t nr_pages, void *dict, size_t cap);

/* zpool.c: codecs of a pool, by id, and the slots naming the ones in use. */
struct zp_codecs {
	struct zpool__rwlock *lock;
	_Atomic(struct zpool__codec *) tab[ZP_CODECS];
	unsigned int slot[ZP_CODEC_SLOTS];	/* ids, each holding a reference; 0 none */
	int slot_comp[ZP_CODEC_SLOTS];		/* algorithm of a slot, -1 none */
};

/*
 * Install a codec of @comp, @level, @dict in slot @slot (0: what new stores
 * use); objects written by the codec it replaces keep theirs.  0 or -errno
 * (-EBUSY: 255 codecs alive).
 */
int zpool__codec_slot_set(struct zpool *pool, unsigned int slot, int comp, int level,
			  const void *dict, size_t len);
/* Slot @slot's algorithm and level; -ENOENT if it has none. */
int zpool__codec_slot_info(struct zpool *pool, unsigned int slot, int *comp, int *level);
/* Forget slot @slot (1..3). */
void zpool__codec_slot_clear(struct zpool *pool, unsigned int slot);
/*
 * Store @page with slot @slot's codec only if it lands in a size class
 * smaller than @below_class bytes and not the huge class: 0 with *@handle,
 * 1 if it would not, or -errno.
 */
int zpool__store_slot(struct zpool *pool, unsigned int slot, const void *page,
		      size_t below_class, zpool_handle_t *handle);
/*
 * zpool_store_pages() with slot @slot's codec, grouped under
 * ZPOOL_F_MULTI_PAGE: 0 with @nr handles, 1 if a page would be kept raw
 * (nothing is stored then), -ENOENT if the slot has no algorithm, or
 * -errno.
 */
int zpool__store_pages_slot(struct zpool *pool, unsigned int slot, const void *pages,
			    unsigned int nr, zpool_handle_t *handles);
/*
 * The size-class memory of @handle's page: a page of a group counts its
 * share of the group's object, a same-filled page nothing.  The caller
 * keeps the handle alive.
 */
size_t zpool__obj_share(struct zpool *pool, zpool_handle_t handle);
/*
 * The memory that freeing @nr (at most ZP_GROUP_PAGES) live handles would
 * give back now: a page alone its class, a group's object only when every
 * page still in it is among them.  *@shared: some group also holds a page
 * outside them, so it stays whole.  The caller keeps the handles alive.
 */
size_t zpool__pages_freed(struct zpool *pool, const zpool_handle_t *handles, unsigned int nr,
			  bool *shared);
/* Size of the class holding @handle's object, 0 for none (same-filled). */
size_t zpool__obj_class_size(struct zpool *pool, zpool_handle_t handle);
/*
 * True if @handle is a page of a group (ZPOOL_F_MULTI_PAGE) of which at
 * most half the pages are still in use: stored again alone, it would give
 * the group's memory back sooner.  The caller keeps @handle alive.
 */
bool zpool__group_sparse(struct zpool *pool, zpool_handle_t handle);

/* Test hook: XOR @mask into byte @offset of a stored object (tests, fuzzing). */
int zpool__corrupt(struct zpool *pool, zpool_handle_t handle, size_t offset,
		   unsigned char mask);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * libzpool internals: the allocator's structures and the handle encoding,
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
#define ZP_MAX_CHAIN 16u
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
 * A growable table of atomic 64-bit words addressed by a 1-based index,
 * with a free list threaded through free entries (tag ZP_TAG_FREE).  Its
 * chunks are pages that never move, so a reader needs no lock; the
 * directory of chunks is replaced, never freed, when it grows.
 */
struct zp_table {
	_Atomic(_Atomic(uint64_t) **) dir;
	size_t dir_cap;		/* chunk pointers the directory holds */
	size_t nchunks;
	_Atomic(uint32_t) next_unused; /* 1-based index of the first never-used entry */
	uint32_t free_head;	/* 1-based, 0 = empty */
	uint32_t in_use;
	void *retired;		/* old directories, freed at destroy */
	struct zp_mutex lock;
};

#define ZP_TABLE_CHUNK (ZP_PAGE_SIZE / sizeof(uint64_t))

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
	uint16_t trim_target;	    /* ZP_TRIM: slots that will remain */
};

enum { ZP_EVACUATE = 1, ZP_TRIM = 2 };

#define ZP_NO_SLOT 0xffffu
#define ZP_FULLNESS_GROUPS 12 /* 0 empty, 1..10 by tenths in use, 11 full */

struct size_class {
	struct zp_rwlock lock;
	unsigned int size;
	unsigned int index;
	unsigned int objs_per_zspage;
	unsigned int pages_per_zspage;
	bool huge;
	struct zspage *fullness[ZP_FULLNESS_GROUPS];
	uint64_t zspages;
	uint64_t objs_used;
	uint64_t pages_used; /* pages counted in mem_used_total */
};

/* Slab of zspage descriptors carved from pool pages. */
struct zp_desc_page {
	struct zp_desc_page *next;
};

struct zpool {
	struct zpool_page_source src;
	struct size_class *classes[ZP_NR_CLASSES]; /* by size index; merged share */
	struct size_class *class_storage;
	unsigned int nr_distinct;
	unsigned int max_chain;
	unsigned int flags;
	int comp;		 /* enum zp_comp */
	int level;
	size_t huge_class_size;	 /* largest compressed length kept compressed */
	struct zp_table handles;
	struct zp_table zspages; /* id -> struct zspage * */
	struct zp_table same;	 /* index -> the repeated word */
	struct zp_mutex desc_lock;
	struct zspage *free_descs;
	struct zp_desc_page *desc_pages;

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
	size_t self_bytes;	 /* pages holding this struct */
	bool own_source;	 /* the default mmap source, made by the pool */
};

/* handle.c: tables */
int zpool__table_init(struct zp_table *t);
void zpool__table_destroy(struct zpool *pool, struct zp_table *t);
uint32_t zpool__table_alloc(struct zpool *pool, struct zp_table *t, uint64_t value);
void zpool__table_free(struct zp_table *t, uint32_t idx);

/* Entry @idx (1-based, allocated): reader-safe without locks. */
static inline _Atomic(uint64_t) *zpool__table_slot(struct zp_table *t, uint32_t idx)
{
	_Atomic(uint64_t) **dir = atomic_load_explicit(&t->dir, memory_order_acquire);

	idx--;
	return &dir[idx / ZP_TABLE_CHUNK][idx % ZP_TABLE_CHUNK];
}

/* Bounds check for indices that come from callers. */
bool zpool__table_valid(struct zp_table *t, uint32_t idx);

/* Every change of the pages held goes through here (and mem_used_max). */
void zpool__account(struct zpool *pool, long pages, bool meta);

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
static inline unsigned char *zpool__obj_addr(const struct size_class *c,
					     const struct zspage *zsp,
					     unsigned int slot)
{
	return zsp->mem + (size_t)slot * c->size;
}
struct zspage *zpool__zspage(struct zpool *pool, uint32_t id);
size_t zpool__compact(struct zpool *pool);

/* compress.c */
enum zp_comp { ZP_COMP_LZ4, ZP_COMP_LZ4HC, ZP_COMP_ZSTD };
int zpool__comp_lookup(const char *name, int level, int *comp, int *out_level);
const char *zpool__comp_name(int comp);
/* Compress one page into a thread-local buffer; returns length, or 0 if it
 * would exceed @limit, or -ENOMEM.  *out points at the buffer. */
int zpool__compress(int comp, int level, const void *page, size_t limit,
		    const unsigned char **out);
/* 0, or -EIO if @src does not decode to exactly one page. */
int zpool__decompress(int comp, const void *src, size_t len, void *page);

/* Test hook: XOR @mask into byte @offset of a stored object (tests, fuzzing). */
int zpool__corrupt(struct zpool *pool, zpool_handle_t handle, size_t offset,
		   unsigned char mask);

#endif

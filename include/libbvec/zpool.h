/* SPDX-License-Identifier: MIT */
/**
 * DOC: libbvec/zpool.h - a compressed page store on a zsmalloc-class allocator
 *
 * A pool stores pages of BVEC_PAGE_SIZE bytes and hands back a handle for
 * each.  A page that is one repeated machine word is kept as that word; any
 * other page is compressed (lz4 by default) and the result is placed in a
 * size class 16 bytes wide, inside a zspage of 1 to 64 contiguous pages
 * (at most 1 MiB) where objects may straddle page boundaries.  A page that does not compress
 * below the largest class is kept raw, one per page ("huge").  Handles are
 * indirect, so zpool_compact() can move objects and give pages back.
 *
 * All memory, data and metadata alike, comes from a page source: by default
 * page-aligned mmap chunks whose untouched pages cost nothing, or a caller's
 * fixed arena (no mmap, no malloc).  mem_used_total counts all of it, and
 * pages the pool no longer needs (a freed zspage, an emptied piece of the
 * handle table) go back to the source, so with the default source it
 * follows the process's resident memory down as well as up.
 *
 * Limits: one pool holds up to 2^32 - 1 handles (a group of pages stored
 * by zpool_store_pages() takes one more than its pages), and up to 2^N - 1 zspages
 * at once, where N is 30 with 4 KiB pages and 18 with 64 KiB pages.  An
 * incompressible page fills a zspage of its own, so 1,073,741,823 pages
 * (4 TiB) with 4 KiB pages, or 262,143 pages (16 GiB) with 64 KiB pages,
 * can be stored whatever their contents; compressible pages share zspages
 * and go further.  Past a limit a store fails with -ENOMEM.
 *
 * Locking: every function is thread-safe.  Compression contexts (and
 * zstd's decompression contexts) are shared by all threads and pools, one
 * per CPU as the kernel's zcomp streams: a store waits, yielding, only when
 * more threads compress at once than there are CPUs.  Loads of objects in
 * different size classes never share a lock, loads in the same class share
 * a reader lock.  The order is: class lock, then the pool's table lock.
 */
#ifndef LIBBVEC_ZPOOL_H
#define LIBBVEC_ZPOOL_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include <libbvec/bvec.h>
#include <libbvec/compiler.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * typedef zpool_handle_t - names one stored page; 0 is never a valid handle
 */
typedef unsigned long zpool_handle_t;

/**
 * struct zpool_page_source - where a pool gets its memory
 * @alloc: return @bytes (a multiple of BVEC_PAGE_SIZE, a zspage of up to
 *	&zpool_config.max_pages_per_zspage pages and 1 MiB) of memory aligned
 *	to BVEC_PAGE_SIZE, or NULL
 * @free: give back memory from @alloc, with the same @bytes; it must stay
 *	readable while the source lives (a lookup of a stale handle racing
 *	with a free may read a freed table page before it sees the change
 *	and looks again); the default and arena sources never unmap it
 * @discard: optional, for lazy sources: the pages [@mem, @mem + @bytes)
 *	inside an allocated run are no longer needed and cost nothing until
 *	written again (madvise(MADV_DONTNEED)); lets compaction trim zspages
 * @ctx: passed to each call
 * @lazy: true if memory costs nothing until it is first written (demand
 *	paging); the pool then counts only pages it has touched
 * @bvec_reserved: private: leave zero (designated initialisers do); room to
 *	add callbacks without an ABI break
 *
 * Calls come with the pool's internal locks held: they must not call back
 * into the pool.  The pool and the zram device copy the struct at creation.
 */
struct zpool_page_source {
	void *(*alloc)(void *ctx, size_t bytes);
	void (*free)(void *ctx, void *mem, size_t bytes);
	void (*discard)(void *ctx, void *mem, size_t bytes);
	void *ctx;
	bool lazy;
	void *bvec_reserved[2];
};

/**
 * zpool_arena_init() - make a page source out of a fixed block of memory
 * @mem: the memory; it need not be aligned.  The arena keeps its own small
 *	state (under 1 KiB) at the start of @mem; pages begin at the first
 *	page boundary after it.  @mem must outlive every pool using the source.
 * @bytes: its size
 * @source: receives the page source to put in &struct zpool_config
 *
 * The memory is never returned to anyone: pages freed by the pool are
 * reused by the pool.  Nothing here calls mmap or malloc.  The source may
 * be shared by several pools; its calls take a spin lock.
 *
 * Return: 0, or -EINVAL if a pointer is NULL or fewer than 16 whole pages
 * remain after the state.
 */
BVEC_API int zpool_arena_init(void *mem, size_t bytes, struct zpool_page_source *source);

/* zpool_config.flags */
#define ZPOOL_F_CHECKSUM (1u << 0) /* XXH3 checksum per object, checked on load */
/*
 * zpool_store_pages() compresses up to 32 KiB of consecutive pages together
 * (a page at a time where pages are 32 KiB or more): smaller on real data
 * (zstd: 7% on anon-64m.bin), but loading one page decompresses its group.
 */
#define ZPOOL_F_MULTI_PAGE (1u << 1)

/**
 * struct zpool_config - how to build a pool
 * @size: sizeof(struct zpool_config) as the caller knows it (ABI growth)
 * @compressor: "lz4" (default when NULL), "lz4hc", or "zstd" where built
 * @level: 0 for the default; lz4: acceleration (1 fastest ratio..65537);
 *	lz4hc: 1..12; zstd: -7..22
 * @mem_limit: bytes the pool may use in all; 0 for no limit
 * @flags: ZPOOL_F_* flags
 * @max_pages_per_zspage: longest zspage chain, 1 to 64; 0 for the default:
 *	64 with a lazy page source (the default one), 8 with an eager one,
 *	which pays for a zspage's pages all at once.  A pool never makes a
 *	zspage over 1 MiB: with pages over 16 KiB the chain is capped at
 *	1 MiB / BVEC_PAGE_SIZE (16 with 64 KiB pages), so one configuration
 *	works at every page size.  Each class takes the length up to this
 *	that wastes least (ties to the shorter), keeping a zspage's slots
 *	within what a handle can address: classes under 128 bytes stay at
 *	16 pages or less with 4 KiB pages.  Longer chains waste less per
 *	zspage (1.030x the payload on real anonymous memory at 64 against
 *	1.042x at 8) and cost nothing per store or load; an arena must have
 *	room for a whole zspage of the longest chain a class uses.
 * @page_source: where memory comes from; NULL for page-aligned mmap chunks
 */
struct zpool_config {
	size_t size;
	const char *compressor;
	int level;
	uint64_t mem_limit;
	unsigned int flags;
	unsigned int max_pages_per_zspage;
	const struct zpool_page_source *page_source;
};

/**
 * ZPOOL_CONFIG_INIT - a zpool_config with every field at its default
 */
#define ZPOOL_CONFIG_INIT { sizeof(struct zpool_config), NULL, 0, 0, 0, 0, NULL }

/**
 * struct zpool_stats - zram's mm_stat, and what it leaves out
 * @orig_data_size: bytes of pages stored (same-filled pages included)
 * @compr_data_size: bytes of their compressed forms (huge pages count as a
 *	whole page; same-filled pages count 0)
 * @mem_used_total: bytes the pool holds: touched zspage pages, metadata
 *	pages (handle table, zspage descriptors, class table) and the pool
 * @mem_limit: the current limit, 0 for none
 * @mem_used_max: highest @mem_used_total a successful store left (a store
 *	refused by @mem_limit never raises it, as in zram)
 * @same_pages: pages stored as one repeated word
 * @pages_compacted: pages given back by compaction, in all
 * @huge_pages: pages stored raw now
 * @huge_pages_since: pages stored raw since the pool was created
 * @metadata_bytes: the part of @mem_used_total that is not zspage pages
 * @objects: pages stored, each with its handle (same-filled included)
 */
struct zpool_stats {
	uint64_t orig_data_size;
	uint64_t compr_data_size;
	uint64_t mem_used_total;
	uint64_t mem_limit;
	uint64_t mem_used_max;
	uint64_t same_pages;
	uint64_t pages_compacted;
	uint64_t huge_pages;
	uint64_t huge_pages_since;
	uint64_t metadata_bytes;
	uint64_t objects;
};

/**
 * zpool_stats_add() - add one pool's (or device's) statistics to a sum
 * @sum: the running sum (start from all zeroes)
 * @st: one pool's, from zpool_stats() or zram_mm_stat()
 *
 * Every field is summed, so for several pools reported as one (a stripe of
 * zram devices) @sum->mem_limit is the total limit and @sum->mem_used_max
 * the sum of the peaks, an upper bound of the combined peak.
 */
BVEC_API void zpool_stats_add(struct zpool_stats *sum, const struct zpool_stats *st);

/**
 * struct zpool_class_stats - one size class, like zsmalloc's classes table
 * @size: object size of the class, bytes
 * @objs_per_zspage: objects in a full zspage
 * @pages_per_zspage: pages in a zspage
 * @zspages: zspages allocated
 * @objs_allocated: object slots in those zspages
 * @objs_used: slots holding objects
 * @pages_used: pages counted for the class (touched pages when lazy)
 * @huge: true for the class of raw pages
 */
struct zpool_class_stats {
	unsigned int size;
	unsigned int objs_per_zspage;
	unsigned int pages_per_zspage;
	uint64_t zspages;
	uint64_t objs_allocated;
	uint64_t objs_used;
	uint64_t pages_used;
	bool huge;
};

struct zpool;

/**
 * zpool_create() - make a pool
 * @cfg: the configuration, or NULL for defaults
 *
 * Return: the pool, or NULL with errno EINVAL (unknown compressor, bad
 * level or chain length, @cfg->size too large) or ENOMEM.
 */
BVEC_API struct zpool *zpool_create(const struct zpool_config *cfg);

/**
 * zpool_destroy() - free a pool and everything stored in it
 * @pool: the pool, or NULL
 *
 * No other call on @pool may be running or follow.
 */
BVEC_API void zpool_destroy(struct zpool *pool);

/**
 * zpool_store() - store one page
 * @pool: the pool
 * @page: BVEC_PAGE_SIZE bytes to store (copied)
 * @handle: receives the handle
 *
 * Return: 0; -EINVAL for NULL arguments; -ENOMEM if memory ran out or the
 * store would pass mem_limit, in which case nothing was stored and nothing
 * else changed.
 */
BVEC_API int zpool_store(struct zpool *pool, const void *page,
			 zpool_handle_t *handle);

/**
 * zpool_store_pages() - store consecutive pages, compressed together
 * @pool: the pool
 * @pages: @nr * BVEC_PAGE_SIZE bytes to store (copied)
 * @nr: pages, at least 1
 * @handles: receives @nr handles, one per page
 *
 * Each page gets a handle of its own, for zpool_load(), zpool_free() and
 * zpool_obj_size() as any other.  Without ZPOOL_F_MULTI_PAGE this is
 * zpool_store() for each page.  With it, runs of pages that are not
 * same-filled are compressed as one object of up to 32 KiB of pages: as
 * many pages, in a power of two, as the first of them compressed alone says
 * will fit a class below the huge one, halved if they do not (a single page
 * is stored as by zpool_store()).  A page of a group reads back by
 * decompressing its group, and the group's memory is given back when the
 * last of its pages is freed: until then a freed page's bytes still count
 * in compr_data_size and mem_used_total, while orig_data_size counts only
 * pages in use (zram_compact() stores the pages left in a mostly freed
 * group again alone).  zram_recompress() rewrites idle neighbours as a
group with its stronger algorithm.
 *
 * Locking: none needed; safe against any other call on @pool.
 *
 * Return: 0; -EINVAL for NULL arguments or @nr 0; -ENOMEM if memory ran out
 * or the pages would pass mem_limit, in which case none was stored (what
 * @handles holds then is not in use) and no statistic changed, except that
 * with the default page source mem_used_total may count a zspage page
 * touched meanwhile until the next zpool_compact(), and mem_used_max,
 * never below mem_used_total, counts it too.
 */
BVEC_API int zpool_store_pages(struct zpool *pool, const void *pages, unsigned int nr,
			       zpool_handle_t *handles);

/**
 * zpool_load_pages() - read stored pages back into one buffer
 * @pool: the pool
 * @handles: @nr handles in use, from zpool_store() or zpool_store_pages()
 * @nr: pages; 0 reads nothing and returns 0
 * @pages: receives @nr * BVEC_PAGE_SIZE bytes, page i from @handles[i]
 *
 * As zpool_load() for each page, except that consecutive pages of one
 * group (as zpool_store_pages() stored them) share one decompression, made
 * straight into @pages when they are the whole group.
 *
 * Locking: the caller keeps every handle from being freed until it returns.
 *
 * Return: 0; -EINVAL for NULL arguments or a handle not in use; -EIO if an
 * object is corrupt; -ENOMEM if no buffer for part of a group could be had.
 * On error @pages holds undefined data.
 */
BVEC_API int zpool_load_pages(struct zpool *pool, const zpool_handle_t *handles,
			      unsigned int nr, void *pages);

/**
 * zpool_load() - read a stored page back
 * @pool: the pool
 * @handle: from zpool_store() or zpool_store_pages()
 * @page: receives BVEC_PAGE_SIZE bytes
 *
 * Return: 0; -EINVAL for a handle that is not in use; -EIO if the object is
 * corrupt (checksum mismatch or undecodable), in which case @page holds no
 * data from it (it is left alone on a checksum mismatch, zeroed if decoding
 * had begun).
 */
BVEC_API int zpool_load(struct zpool *pool, zpool_handle_t handle, void *page);

/**
 * zpool_free() - forget a stored page
 * @pool: the pool
 * @handle: from zpool_store() or zpool_store_pages(); 0 and handles not in
 *	use are ignored, and of threads freeing one handle at once, one frees it
 */
BVEC_API void zpool_free(struct zpool *pool, zpool_handle_t handle);

/**
 * zpool_obj_size() - bytes a stored page occupies
 * @pool: the pool
 * @handle: a handle in use
 *
 * Return: the compressed size (BVEC_PAGE_SIZE for a huge page, 0 for a
 * same-filled page, its whole group's for a page stored with others by
 * zpool_store_pages()), or 0 for an invalid handle.
 */
BVEC_API size_t zpool_obj_size(struct zpool *pool, zpool_handle_t handle);

/**
 * zpool_compact() - move objects out of sparse zspages and free them
 * @pool: the pool
 *
 * Stores, loads and frees may run meanwhile; each size class is locked
 * while it is compacted.
 *
 * Return: pages given back.
 */
BVEC_API size_t zpool_compact(struct zpool *pool);

/**
 * zpool_set_mem_limit() - change the memory limit
 * @pool: the pool
 * @bytes: new limit, 0 for none; applies to later stores only
 */
BVEC_API void zpool_set_mem_limit(struct zpool *pool, uint64_t bytes);

/**
 * zpool_reset_mem_used_max() - restart the memory watermark from now
 * @pool: the pool; NULL does nothing
 *
 * Sets mem_used_max (zpool_stats()) to the memory the pool holds now, as
 * writing 0 to Linux's zram mem_used_max does, so that a later peak can be
 * told from an earlier one.  Lock-free; a store finishing meanwhile may
 * raise it again at once.
 */
BVEC_API void zpool_reset_mem_used_max(struct zpool *pool);

/**
 * zpool_stats() - the pool's statistics
 * @pool: the pool
 * @st: receives them
 */
BVEC_API void zpool_stats(struct zpool *pool, struct zpool_stats *st);

/**
 * zpool_class_stats() - per-class statistics, for tuning
 * @pool: the pool
 * @out: array to fill, or NULL to count
 * @n: entries in @out
 *
 * Classes that share a geometry are reported once, under their largest size.
 *
 * Return: the number of distinct classes (entries filled: the smaller of
 * that and @n).
 */
BVEC_API size_t zpool_class_stats(struct zpool *pool,
				  struct zpool_class_stats *out, size_t n);

/**
 * zpool_compressor() - name of the pool's compressor
 * @pool: the pool
 *
 * Return: "lz4", "lz4hc" or "zstd".
 */
BVEC_API const char *zpool_compressor(const struct zpool *pool);

/**
 * zpool_has_compressor() - was libzpool built with a compressor?
 * @name: "lz4", "lz4hc", "zstd"
 *
 * Return: true if zpool_create() accepts @name.
 */
BVEC_API bool zpool_has_compressor(const char *name);

/**
 * zpool_huge_class_size() - largest compressed size kept compressed
 * @pool: the pool
 *
 * Return: bytes; a page whose compressed form is larger is stored raw.
 */
BVEC_API size_t zpool_huge_class_size(const struct zpool *pool);

#ifdef __cplusplus
}
#endif

#endif /* LIBBVEC_ZPOOL_H */

/* SPDX-License-Identifier: MIT */
/**
 * DOC: libbvec/zram.h - a zram-style compressed RAM block device on bios
 *
 * A zram device is a disk of libbvec's device model whose pages live in a
 * libzpool pool.  Submit bios to zram_disk(zram)->part0 like to any disk.
 * It walks them with bio_for_each_segment(); READ and WRITE work at any
 * 512-byte sector and length (sub-page writes read, patch and store the page
 * under its slot's lock); DISCARD and WRITE_ZEROES free whole pages and zero
 * the partial edges; FLUSH completes at once (memory is the medium).
 *
 * A DISCARD or WRITE_ZEROES frees its whole pages first and always, even at
 * mem_limit: freeing needs no memory.  Zeroing a partial edge is a
 * read-modify-write that may need a store; if that store is refused the bio
 * completes with BLK_STS_IOERR, but the whole pages stay freed and the edge
 * keeps its old contents.  Zeroing bytes that are zero already (a page never
 * written, a zero page) needs no store and cannot fail.
 *
 * A page written with zeroes, whole or left all zero by a partial write or
 * a zeroed edge, is only a mark in its slot, as the kernel's zram keeps a
 * same-filled page: it takes no pool memory, so it is never refused at
 * mem_limit (the slot table may still need a page for the first write in
 * a stretch of the disk).  It counts in same_pages and orig_data_size.  A
 * page of another repeated word is stored in the pool as that word, which
 * costs 16 bytes of the pool's tables and is refused when they must grow
 * past mem_limit.
 *
 * A WRITE whose page cannot be stored (mem_limit, no memory; a zero page
 * always can be) completes with BLK_STS_IOERR, and every page it covers
 * holds either all its old bytes or all its new ones.  It stops at that
 * page: the pages before it are written, the ones after it keep their old
 * contents.  One exception:
 * part of a page written back to the backing disk is patched after its
 * old bytes arrive from there, so the bio goes on meanwhile and the pages
 * after it may be written when that patch is refused.  As with a disk, an
 * error says that some of the range may be old, not which.
 *
 * Statistics have zram's names, order and text formats (mm_stat, io_stat).
 * mem_used_total includes the slot table, which the kernel's zram leaves
 * out.  The table is sparse: a radix tree of pages (12 bytes per slot, 341
 * slots a leaf with 4 KiB pages) of which only the root exists at creation;
 * leaves and inner pages are allocated on the first write under them.  A
 * thin 1 TiB disk therefore costs one page of table, and each page written
 * far from the others adds at most one page per tree level (three for a
 * 1 TiB disk of 4 KiB pages).  mem_used_total counts exactly the table pages
 * that exist; reset frees all but the root.  mem_limit bounds the pool and
 * the table together.
 *
 * Locking: a lock bit per page slot; bios for different pages proceed in
 * parallel on any number of threads.  The control calls (statistics,
 * compaction, limits, idle marking) may run at any time alongside I/O;
 * zram_reset() waits for bios in progress and holds new ones off.
 */
#ifndef LIBBVEC_ZRAM_H
#define LIBBVEC_ZRAM_H

#include <libbvec/blkdev.h>
#include <libbvec/zpool.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * struct zram_config - how to build a zram device
 * @size: sizeof(struct zram_config) as the caller knows it
 * @disksize: bytes; rounded up to a whole page; required
 * @pool: the pool's configuration, as for zpool_create(), with its own
 *	@size; here @pool.mem_limit bounds the device (the pool and the slot
 *	table together, 0 for no limit) and @pool.page_source, copied at
 *	creation, also gives the slot table its pages (NULL: the pool's mmap
 *	source, and heap pages for the table); the source must outlive the
 *	device
 *
 * @size must be sizeof(struct zram_config), or offsetof(struct
 * zram_config, pool) to take every pool default.
 */
struct zram_config {
	size_t size;
	uint64_t disksize;
	struct zpool_config pool;
};

/**
 * ZRAM_CONFIG_INIT - a zram_config with every optional field at its default
 */
#define ZRAM_CONFIG_INIT { sizeof(struct zram_config), 0, ZPOOL_CONFIG_INIT }

/**
 * struct zram_io_stat - zram's io_stat, in its order
 * @failed_reads: reads that failed (corrupt or undecodable page)
 * @failed_writes: writes that failed (memory or mem_limit)
 * @invalid_io: bios refused: misaligned, past the end, unknown operation
 * @notify_free: pages freed by DISCARD or WRITE_ZEROES
 */
struct zram_io_stat {
	uint64_t failed_reads;
	uint64_t failed_writes;
	uint64_t invalid_io;
	uint64_t notify_free;
};

/**
 * ZRAM_MAX_DISKSIZE - a bound on the disksize zram_create() accepts, in bytes
 *
 * 2^32 - 1 pages: 16 TiB with 4 KiB pages.  zram_create() also refuses a
 * disk with more pages than one pool can store (every page may need an
 * object): 2^28 - 1 pages (1 TiB less one page) with 4 KiB pages,
 * 2^18 - 1 (16 GiB less one page) with 64 KiB pages.
 */
#define ZRAM_MAX_DISKSIZE ((uint64_t)UINT32_MAX << BVEC_PAGE_SHIFT)

struct zram;

/**
 * zram_create() - make a zram device
 * @cfg: the configuration; @cfg->disksize must be set
 *
 * Only the root page of the slot table is allocated here; the rest comes
 * with the first write under it (see the DOC above).
 *
 * Return: the device, owned by the caller (free with zram_destroy()), or
 * NULL with errno EINVAL (NULL @cfg, bad @cfg->size, @cfg->disksize 0, over
 * %ZRAM_MAX_DISKSIZE or more pages than a pool can hold, a
 * @cfg->page_source without alloc or free, an
 * unknown compressor or level) or ENOMEM (the pool or the slot table's
 * root could not be allocated).
 */
BVEC_API struct zram *zram_create(const struct zram_config *cfg);

/**
 * zram_destroy() - free a device and its data
 * @zram: the device, or NULL; no bio may be in flight and no other call on
 *	@zram may be running or follow
 */
BVEC_API void zram_destroy(struct zram *zram);

/**
 * zram_disk() - the device's disk, for submit_bio() and stacking
 * @zram: the device
 *
 * As Linux's zram, the disk has no write cache and no BLK_FEAT_NOWAIT: a
 * bio may wait for slot locks, the pool's allocations and the backing
 * device, so submit_bio() refuses REQ_NOWAIT bios to it with
 * BLK_STS_NOTSUPP, and a stripe over it does not take them either.
 *
 * Return: the disk, owned by the device.
 */
BVEC_API struct gendisk *zram_disk(struct zram *zram);

/**
 * zram_mm_stat() - memory statistics
 * @zram: the device
 * @st: receives them; the first nine fields are zram's mm_stat in its
 *	order.  For a device, @st->mem_used_total and @st->metadata_bytes
 *	include the slot table pages that exist, and @st->mem_used_max is the
 *	pool's highest use plus the slot table as it is now.  Zero pages,
 *	which live in their slots, count in @st->orig_data_size,
 *	@st->same_pages and @st->objects, as same-filled pages of the pool do.
 *
 * Safe alongside I/O; each field is read atomically, the set as a whole is
 * not a snapshot.
 */
BVEC_API void zram_mm_stat(struct zram *zram, struct zpool_stats *st);

/**
 * zram_io_stat() - I/O error statistics
 * @zram: the device
 * @st: receives them
 */
BVEC_API void zram_io_stat(struct zram *zram, struct zram_io_stat *st);

/**
 * zram_io_stat_add() - add one device's I/O statistics to a sum
 * @sum: the running sum (start from all zeroes)
 * @st: one device's, from zram_io_stat()
 *
 * For reporting several devices (a stripe) as one.
 */
BVEC_API void zram_io_stat_add(struct zram_io_stat *sum, const struct zram_io_stat *st);

/**
 * zram_format_mm_stat() - mm_stat as the kernel prints it
 * @st: the statistics (from zram_mm_stat(), or a zpool_stats_add() sum)
 * @buf: receives one line of nine right-aligned fields
 * @len: size of @buf
 *
 * Return: the length of the text (as snprintf()).
 */
BVEC_API int zram_format_mm_stat(const struct zpool_stats *st, char *buf, size_t len);

/**
 * zram_format_io_stat() - io_stat as the kernel prints it
 * @st: the statistics (from zram_io_stat(), or a zram_io_stat_add() sum)
 * @buf: receives one line of four right-aligned fields
 * @len: size of @buf
 *
 * Return: the length of the text (as snprintf()).
 */
BVEC_API int zram_format_io_stat(const struct zram_io_stat *st, char *buf, size_t len);

/**
 * zram_compact() - compact the pool
 * @zram: the device
 *
 * Safe alongside I/O; each size class is locked while it is compacted.
 * With ZPOOL_F_MULTI_PAGE, first stores again alone each page left in a
 * group of which at most half the pages are still in use (the others
 * overwritten, discarded or written back), so that the group's memory is
 * given back; that walks every page's slot, taking each slot's lock.
 *
 * Return: pages freed by moving objects (what rewriting pages gives back
 * shows in zram_mm_stat()).
 */
BVEC_API size_t zram_compact(struct zram *zram);

/**
 * zram_set_mem_limit() - change the memory limit at run time
 * @zram: the device
 * @bytes: new limit on the pool and the slot table together; 0 for none
 *
 * Safe alongside I/O on other threads: writes that start later see the new
 * limit; pages already stored stay.
 */
BVEC_API void zram_set_mem_limit(struct zram *zram, uint64_t bytes);

/**
 * zram_reset_mem_used_max() - restart the mm_stat watermark from now
 * @zram: the device; NULL does nothing
 *
 * As writing 0 to Linux's mem_used_max: mem_used_max (zram_mm_stat())
 * becomes the memory used now, and rises again from there.  Safe alongside
 * I/O on other threads.
 */
BVEC_API void zram_reset_mem_used_max(struct zram *zram);

/**
 * zram_reset() - drop every page, as writing 1 to zram's reset
 * @zram: the device
 *
 * Waits for bios being processed and holds new ones off while it frees the
 * pool and the slot table (all but its root) and makes a new pool.  The
 * io_stat counters are kept.
 *
 * Return: 0; or -ENOMEM if the new pool could not be made, in which case
 * the device reads as zeroes, fails every write with BLK_STS_IOERR, and a
 * later zram_reset() may try again.
 */
BVEC_API int zram_reset(struct zram *zram);

/**
 * zram_idle_mark() - mark pages idle, as writing to zram's idle
 * @zram: the device
 * @min_age: mark pages not accessed for at least this many seconds; 0 marks
 *	every stored page
 *
 * A page loses its idle mark when it is next read or written, or when
 * zram_recompress() tries it.  As Linux has
 * done since 6.13, a call also takes the mark off pages younger than
 * @min_age that an earlier call marked, so the marks are this call's; and
 * pages on the backing disk and same-filled pages (zero pages included)
 * are not marked: no tier has anything to do with them.
 *
 * Return: pages now marked idle.
 */
BVEC_API uint64_t zram_idle_mark(struct zram *zram, unsigned int min_age);

/**
 * zram_idle_pages() - pages currently marked idle
 * @zram: the device
 *
 * Return: count.
 */
BVEC_API uint64_t zram_idle_pages(struct zram *zram);

/*
 * The writeback tier (zram_writeback.c): pages moved to a backing disk.
 */

/**
 * DOC: writeback - zram's backing device, as Linux's CONFIG_ZRAM_WRITEBACK
 *
 * zram_set_backing() gives a device a backing disk (any disk of the device
 * model: the file disk, a stripe, another driver).  zram_writeback() then
 * moves selected pages to free blocks of it, one page a block, first fit,
 * and frees their memory once each write has completed successfully; a
 * failed write loses nothing (the page stays in memory, the error is counted
 * in io_stat's failed_writes and returned).  A page touched by a write or a
 * discard while its writeback is in flight keeps its new in-memory copy and
 * the block is released.  Written-back pages still count in mm_stat's
 * orig_data_size, not in compr_data_size.
 *
 * Reads of a written-back page are chained child bios to the backing disk,
 * over the caller's memory for a whole page and over a bounce page for part
 * of one: the page is not pulled back into memory, and the caller's bio
 * completes when the child does.  A write of part of a written-back page
 * (and a DISCARD or WRITE_ZEROES edge over one) reads the block the same
 * way and, when that read completes, patches the page and stores it in
 * memory.  A whole-page write, a discard or zram_reset() only releases the
 * block.  A block released while a read of it may still be in flight is
 * reused only once no read of the backing disk is in flight.
 *
 * Statistics: bd_stat (zram_bd_stat()) and the writeback limit are in
 * 4 KiB units, as Linux's, whatever the page size: one page is
 * BVEC_PAGE_SIZE / 4096 units.  The block map (two bits a backing page) is
 * heap memory outside mem_used_total.
 */

/**
 * zram_set_backing() - give the device a backing disk, or take it away
 * @zram: the device
 * @disk: the disk, or NULL for none; not owned: it must outlive the device
 *	or a later zram_set_backing() that replaces it.  Its capacity in
 *	whole pages is the number of blocks, at most 2^32 - 2; its logical
 *	block size must not exceed a page.
 *
 * Linux sets backing_dev before disksize; here a device is made with its
 * disksize, so the backing disk may be set or changed at any time while no
 * page is on the old one.  Takes the device exclusively, as zram_reset().
 *
 * Return: 0; -EINVAL for a NULL @zram, a disk of no whole page or a too
 * large logical block size; -EBUSY if pages are on the current backing disk
 * or a read of it is in flight; -ENOMEM.
 */
BVEC_API int zram_set_backing(struct zram *zram, struct gendisk *disk);

/**
 * enum zram_wb_mode - which pages zram_writeback() writes back
 * @ZRAM_WB_ALL: every stored page in the range (Linux's page_index= and
 *	page_indexes= without a type)
 * @ZRAM_WB_IDLE: pages marked idle (zram_idle_mark())
 * @ZRAM_WB_HUGE: pages stored uncompressed
 * @ZRAM_WB_HUGE_IDLE: pages both huge and idle
 * @ZRAM_WB_INCOMPRESSIBLE: pages that recompression marked incompressible
 *
 * Same-filled pages (a zero page) are never written back: they cost no
 * zspage memory.
 */
enum zram_wb_mode {
	ZRAM_WB_ALL = 0,
	ZRAM_WB_IDLE = 1,
	ZRAM_WB_HUGE = 2,
	ZRAM_WB_HUGE_IDLE = 3,
	ZRAM_WB_INCOMPRESSIBLE = 4,
};

/**
 * zram_writeback() - write pages back to the backing disk
 * @zram: the device
 * @mode: which pages, see &enum zram_wb_mode
 * @first: the first page index to consider
 * @count: pages from @first; cut at the end of the disk (UINT64_MAX: all)
 *
 * The pages of @mode in the range go largest object first (a page of a
 * group counts its share of the group), ties in disk order, as Linux has
 * chosen them since 6.13: every page takes a whole block and a page of the
 * budget, so a budget or a disk too small for all of them is spent where
 * it frees the most memory.  The candidates are sorted a window at a time,
 * windows in disk order: a window holds 262,144 of them (1 GiB of 4 KiB
 * pages) when the run can allocate its 4 MiB, fewer (down to 64, on the
 * stack) when it cannot, so the order is exact only for a range with no
 * more candidates than the window.  A page read, written or discarded
 * since it was chosen is passed over for this run, as Linux passes over a
 * slot accessed since it was sorted; a page only moved meanwhile (by
 * recompression, or on a %ZPOOL_F_MULTI_PAGE pool regrouped by
 * zram_compact()) is not, and one whose flags changed is checked again.
 * What is written is the page's data at that moment.
 *
 * Up to the batch size (zram_set_writeback_batch_size(), 32 by default) of
 * writes are in flight at once, each refilled as one completes; with a disk
 * that completes bios inside submit_bio() that is one at a time.  Holds the
 * device shared for its whole run (zram_reset() waits for it); I/O to any
 * page proceeds meanwhile.  A write in flight holds its block and its page
 * of the budget.  A successful one counts in bd_writes, and keeps them if
 * its page moved to the disk; if the page was read, written or discarded
 * meanwhile it stays in memory (its current contents) and gives them back,
 * as a failed write does.  So writing stops at the first page that finds
 * the backing disk full or the budget spent once this run's writes have
 * completed.  A failed write does not stop it: the other pages are still
 * tried, and -EIO is returned, as Linux does.
 *
 * Return: pages written back (0 if none matched); or -EINVAL (NULL @zram,
 * unknown @mode, @first past the end), -ENODEV (no backing disk), -ENOMEM
 * (no memory for the run or a bio), -ENOSPC (the backing disk filled up),
 * -EIO (the budget ran out, or a backing write failed), even if some pages
 * were written back before it.  Why the run stopped (-ENOSPC, the budget's
 * -EIO, -ENOMEM) is returned over a failed write's -EIO.
 */
BVEC_API int64_t zram_writeback(struct zram *zram, enum zram_wb_mode mode, uint64_t first,
				uint64_t count);

/**
 * zram_set_writeback_batch_size() - writes zram_writeback() keeps in flight
 * @zram: the device
 * @n: 1 to 256; Linux 6.19's writeback_batch_size, 32 by default
 *
 * Return: 0, or -EINVAL.
 */
BVEC_API int zram_set_writeback_batch_size(struct zram *zram, unsigned int n);

/**
 * zram_writeback_batch_size() - the writes zram_writeback() keeps in flight
 * @zram: the device
 *
 * As reading Linux's writeback_batch_size.  Lock-free: a zram_writeback()
 * already running keeps the size it started with.
 *
 * Return: 1 to 256 (32 until zram_set_writeback_batch_size()), or 0 for a
 * NULL @zram.
 */
BVEC_API unsigned int zram_writeback_batch_size(const struct zram *zram);

/**
 * zram_set_writeback_limit_enable() - turn the writeback budget on or off
 * @zram: the device
 * @enable: true to enforce the budget of zram_set_writeback_limit()
 *
 * As Linux's writeback_limit_enable: the budget starts at 0, so once this
 * is on nothing is written back until a budget is set.  zram_reset() turns
 * it off and sets the budget to 0.
 */
BVEC_API void zram_set_writeback_limit_enable(struct zram *zram, bool enable);

/**
 * zram_set_writeback_limit() - set the writeback budget
 * @zram: the device
 * @units: 4 KiB units that may still be written back; kept whether or not
 *	the limit is enabled, spent only while it is
 */
BVEC_API void zram_set_writeback_limit(struct zram *zram, uint64_t units);

/**
 * zram_writeback_limit() - the budget left, as reading Linux's writeback_limit
 * @zram: the device
 * @enabled: receives whether the limit is enforced; may be NULL
 *
 * Return: 4 KiB units left (0 for a NULL @zram).
 */
BVEC_API uint64_t zram_writeback_limit(struct zram *zram, bool *enabled);

/**
 * struct zram_bd_stat - zram's bd_stat, in 4 KiB units
 * @bd_count: backing blocks in use now (written-back pages, and blocks of
 *	writes in flight or of reads not yet drained)
 * @bd_reads: read from the backing disk, in all
 * @bd_writes: written to it successfully, in all
 */
struct zram_bd_stat {
	uint64_t bd_count;
	uint64_t bd_reads;
	uint64_t bd_writes;
};

/**
 * zram_bd_stat() - backing disk statistics
 * @zram: the device
 * @st: receives them; all zero for a device that never had a backing disk.
 *	zram_reset() brings @st->bd_count to 0 and keeps the other two.
 */
BVEC_API void zram_bd_stat(struct zram *zram, struct zram_bd_stat *st);

/**
 * zram_format_bd_stat() - bd_stat as the kernel prints it
 * @st: from zram_bd_stat()
 * @buf: receives one line of three right-aligned fields
 * @len: size of @buf
 *
 * Return: the length of the text (as snprintf()), or -EINVAL.
 */
BVEC_API int zram_format_bd_stat(const struct zram_bd_stat *st, char *buf, size_t len);

/* zram_block_state.flags: the letters of Linux's block_state */
#define ZRAM_BS_SAME (1u << 0)		/* s: same-filled */
#define ZRAM_BS_WB (1u << 1)		/* w: on the backing disk */
#define ZRAM_BS_HUGE (1u << 2)		/* h: stored uncompressed */
#define ZRAM_BS_IDLE (1u << 3)		/* i: marked idle */
#define ZRAM_BS_RECOMP (1u << 4)	/* r: recompressed */
#define ZRAM_BS_INCOMPRESSIBLE (1u << 5) /* n: no algorithm shrinks it */

/**
 * struct zram_block_state - one line of Linux's debugfs block_state
 * @index: the page
 * @ac_time: its last access, in seconds since the device was created
 * @flags: ZRAM_BS_* flags
 */
struct zram_block_state {
	uint64_t index;
	uint32_t ac_time;
	unsigned int flags;
};

/**
 * zram_block_state() - the state of the next stored page
 * @zram: the device
 * @index: the page to start at; receives the index of the page reported
 * @st: receives its state
 *
 * Finds the first stored page at or after *@index (a page never written or
 * discarded is skipped, as Linux's block_state skips it), read under the
 * page's lock.  Call again with *@index + 1 to walk the device.
 *
 * Return: 0; -ENOENT if no stored page is left; -EINVAL for NULL arguments.
 */
BVEC_API int zram_block_state(struct zram *zram, uint64_t *index, struct zram_block_state *st);

/**
 * zram_format_block_state() - one block_state line, as the kernel prints it
 * @st: from zram_block_state()
 * @buf: receives "index seconds.micros flags": the flags are six letters
 *	"swhirn", each '.' when not set
 * @len: size of @buf
 *
 * Return: the length of the text (as snprintf()), or -EINVAL.
 */
BVEC_API int zram_format_block_state(const struct zram_block_state *st, char *buf, size_t len);

/*
 * Recompression and algorithm parameters (zram_recompress.c).
 */

/**
 * DOC: recompression - secondary algorithms, levels and dictionaries
 *
 * As Linux's CONFIG_ZRAM_MULTI_COMP: up to three secondary algorithms, at
 * priorities 1 to 3 (the primary, the pool's compressor, is priority 0),
 * rewrite stored pages smaller on request (zram_recompress()).  Each
 * priority has a level and may have a dictionary (zram_set_algorithm_params(),
 * zram_train_dict()).  Every stored object records which algorithm and
 * dictionary wrote it (one byte in front of the object when it is not the
 * plain primary), so a page always reads back: after recompression, after
 * its priority got another algorithm or dictionary, after writeback.  A
 * dictionary lives while a priority uses it or an object was written with
 * it, and is freed when neither is left; at most 255 algorithm settings
 * (with their dictionaries) are alive at once.  New writes use priority 0's
 * settings.  Dictionaries and compression contexts are heap memory, outside
 * mem_used_total.  zram_reset() forgets every setting, as Linux's reset.
 */

/**
 * ZRAM_MAX_RECOMP_PRIO - the highest recompression priority
 */
#define ZRAM_MAX_RECOMP_PRIO 3

/**
 * enum zram_recomp_type - which pages zram_recompress() considers
 * @ZRAM_RECOMP_ALL: every stored page (Linux's recompress without type=)
 * @ZRAM_RECOMP_IDLE: pages marked idle (zram_idle_mark())
 * @ZRAM_RECOMP_HUGE: pages stored uncompressed
 * @ZRAM_RECOMP_HUGE_IDLE: pages both huge and idle
 */
enum zram_recomp_type {
	ZRAM_RECOMP_ALL = 0,
	ZRAM_RECOMP_IDLE = 1,
	ZRAM_RECOMP_HUGE = 2,
	ZRAM_RECOMP_HUGE_IDLE = 3,
};

/**
 * struct zram_recompress_params - what zram_recompress() does
 * @size: sizeof(struct zram_recompress_params)
 * @type: the pages considered
 * @threshold: only pages whose object is at least this many bytes (a huge
 *	page counts BVEC_PAGE_SIZE); 0 for all
 * @max_pages: try at most this many pages, shrunk or not; 0 for no limit
 * @algo: only the algorithm of this name (the lowest priority having it);
 *	NULL for all
 * @priority: only this priority (1..3); 0 for all
 */
struct zram_recompress_params {
	size_t size;
	enum zram_recomp_type type;
	uint64_t threshold;
	uint64_t max_pages;
	const char *algo;
	unsigned int priority;
};

/**
 * ZRAM_RECOMPRESS_PARAMS_INIT - every page, every secondary algorithm
 */
#define ZRAM_RECOMPRESS_PARAMS_INIT \
	{ sizeof(struct zram_recompress_params), ZRAM_RECOMP_ALL, 0, 0, NULL, 0 }

/**
 * zram_set_recomp_algorithm() - set a secondary algorithm, as recomp_algorithm
 * @zram: the device
 * @name: "lz4", "lz4hc" or "zstd" (where built)
 * @priority: 1..3
 *
 * Any time, unlike Linux (before disksize only): pages already recompressed
 * with the algorithm replaced keep reading back with it.  The priority's
 * level becomes the algorithm's default, with no dictionary.
 *
 * Return: 0; -EINVAL for a NULL argument, an unknown @name or a @priority
 * out of range; -ENOMEM; -EBUSY if 255 settings are alive; -ENODEV after a
 * failed zram_reset().
 */
BVEC_API int zram_set_recomp_algorithm(struct zram *zram, const char *name,
				       unsigned int priority);

/**
 * zram_get_algorithm() - the algorithm and level of a priority
 * @zram: the device
 * @priority: 0 (the primary) to 3
 * @name: receives the algorithm's name (a static string), or NULL
 * @level: receives its level, or NULL
 *
 * Return: 0; -ENOENT if no algorithm is set at @priority; -EINVAL for a
 * NULL @zram or a @priority out of range; -ENODEV after a failed reset.
 */
BVEC_API int zram_get_algorithm(struct zram *zram, unsigned int priority, const char **name,
				int *level);

/**
 * zram_set_algorithm_params() - level and dictionary, as algorithm_params
 * @zram: the device
 * @priority: 0 (the primary, for new writes) to 3
 * @level: the level as for &struct zpool_config, 0 for the default
 * @dict: the dictionary (copied), or NULL for none: a zstd dictionary (as
 *	ZDICT makes, or raw content) for zstd; for lz4 and lz4hc its last
 *	64 KiB are used as the history every page starts from
 * @dict_len: its length, at most 1 MiB; 0 for none
 *
 * Replaces both settings of the priority.  Pages written before keep
 * reading back with the dictionary that wrote them.
 *
 * Return: 0; -EINVAL for a bad argument, a level out of the algorithm's
 * range, a priority with no algorithm or a dictionary the algorithm
 * refuses; -ENOMEM; -EBUSY if 255 settings are alive; -ENODEV after a
 * failed reset.
 */
BVEC_API int zram_set_algorithm_params(struct zram *zram, unsigned int priority, int level,
				       const void *dict, size_t dict_len);

/**
 * zram_train_dict() - train a dictionary on the stored pages and use it
 * @zram: the device
 * @priority: 0 (the primary, for new writes) to 3
 * @dict_size: the dictionary's largest size, 256 bytes to 1 MiB (64 KiB
 *	is what lz4 can use)
 *
 * Beyond Linux, which only loads a dictionary trained elsewhere.  Samples
 * stored pages evenly over the disk (same-filled ones left out; at most
 * 100 times @dict_size, and 32 MiB), trains with zstd's ZDICT, and installs
 * the result at @priority with its current level, as
 * zram_set_algorithm_params().  Pages written before keep reading back with
 * what wrote them.  Holds no page lock while training; takes about a second
 * for 32 MiB.
 *
 * Return: the dictionary's length; -EOPNOTSUPP if built without zstd;
 * -ENODATA if no page is stored; -EINVAL for a bad argument, a priority
 * with no algorithm or samples ZDICT cannot learn from; -ENOMEM; -EBUSY;
 * -ENODEV.
 */
BVEC_API int zram_train_dict(struct zram *zram, unsigned int priority, size_t dict_size);

/**
 * zram_recompress() - recompress stored pages, as writing to recompress
 * @zram: the device
 * @params: what to recompress
 *
 * Selects the pages of @params->type and @params->threshold, skipping
 * same-filled pages, pages marked incompressible, pages written back, and
 * pages recompressed already at the highest priority considered.  Takes
 * them largest object first; for each, under its slot's lock, tries the
 * priorities above the one that wrote it, lowest first, and keeps the first
 * result that lands in a smaller size class (never raw).  A page that the
 * highest priority could not shrink either is marked incompressible and
 * skipped by later calls until it is written again.  On a pool with
 * ZPOOL_F_MULTI_PAGE the pages go in disk order instead, and each run of
 * selected neighbours within one 32 KiB window is compressed again as one
 * group, tried at the priorities above the highest that wrote any of them,
 * and kept if the new group is smaller than what freeing the run's objects
 * gives back (a group that also holds a page outside the run gives back
 * nothing, so such a run waits until that page goes).  If some page of the
 * run would be stored raw, or the group does not shrink, the pages written
 * one at a time are tried alone as above, so a page is never made huge.
 * Every page it tries loses its idle mark, shrunk or not (as Linux since
 * 6.13), so that a zram_writeback() of idle pages that follows does not
 * take a page on the mark recompression was given; the page keeps its
 * access time, so the next zram_idle_mark() of its age marks it again.
 * Tried means tried alone, or moved or marked incompressible with its
 * run.  Pages not tried keep their marks: those not selected or beyond
 * @params->max_pages, corrupt ones, those left when an allocation fails,
 * and pages of a group that their run could not move, which wait for
 * their neighbours with nothing decided.  If any page moved, ends by
 * compacting the pool's zspages (as zram_compact() does, without its
 * regrouping), so that mem_used_total falls with compr_data_size.  Safe
 * alongside I/O: a page read, written or discarded between the selection
 * and its turn is passed over, as Linux passes over a slot accessed since
 * it was sorted.
 *
 * Return: pages recompressed; -EINVAL for a bad argument or no secondary
 * algorithm matching @params; -ENOMEM if nothing was done; -ENODEV.
 */
BVEC_API int64_t zram_recompress(struct zram *zram, const struct zram_recompress_params *params);

/**
 * enum zram_page_state - what one page of a zram device holds
 * @ZRAM_PAGE_UNALLOCATED: nothing: never written since creation or the last
 *	zram_reset(), or freed by DISCARD or WRITE_ZEROES; reads as zeroes and
 *	holds no pool memory
 * @ZRAM_PAGE_ZERO: written, and every byte is zero (a zero page: a mark in
 *	its slot, no pool memory)
 * @ZRAM_PAGE_DATA: stored data; also any page a tier built on the device
 *	holds elsewhere
 */
enum zram_page_state {
	ZRAM_PAGE_UNALLOCATED,
	ZRAM_PAGE_ZERO,
	ZRAM_PAGE_DATA,
};

/**
 * typedef zram_extent_fn - receives one run of zram_extents()
 * @arg: the caller's pointer, as passed to zram_extents()
 * @offset: byte offset of the run on the device
 * @length: bytes in the run, never 0
 * @state: the state of every page in the run
 *
 * Return: 0 to go on; anything else stops the walk, and zram_extents()
 * returns it.
 */
typedef int (*zram_extent_fn)(void *arg, uint64_t offset, uint64_t length,
			      enum zram_page_state state);

/**
 * zram_extents() - the device's allocation map over a byte range
 * @zram: the device
 * @offset: first byte; must be below the disk size
 * @length: bytes; the range is cut at the end of the disk; 0 reports nothing
 * @fn: called for each run of pages in one state, in ascending order
 * @arg: passed to @fn
 *
 * For sparse maps (NBD block status, SEEK_HOLE, a copy that skips holes).
 * The runs are contiguous, the first starts at @offset and the last ends at
 * the end of the range; runs are maximal within the range, so two neighbours
 * never share a state.  A page is reported in one state even when only part
 * of it lies in the range.  Parts of the disk whose slot table pages were
 * never allocated are skipped whole, so a thin disk reports quickly
 * whatever its size.
 *
 * Each page's state is read under its slot's lock and the walk holds the
 * device shared (zram_reset() waits for it), but pages written meanwhile may
 * be seen before or after the write: the map is not a snapshot.  @fn runs
 * with no lock held and may submit bios to the device.
 *
 * Return: 0; -EINVAL for a NULL @zram or @fn or an @offset at or past the
 * end of the disk; or the first non-zero value @fn returned.
 */
BVEC_API int zram_extents(struct zram *zram, uint64_t offset, uint64_t length,
			  zram_extent_fn fn, void *arg);

#ifdef __cplusplus
}
#endif

#endif /* LIBBVEC_ZRAM_H */

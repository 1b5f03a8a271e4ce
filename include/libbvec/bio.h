/* SPDX-License-Identifier: MIT */
/**
 * DOC: libbvec/bio.h - struct bio: allocation, iteration, split, chain, completion
 *
 * Linux 6.x names, fields and semantics.  Differences that follow from being
 * a userspace library (see doc/porting.md for the full list):
 *
 * - Invalid calls never abort: where Linux BUGs or WARNs, int functions
 *   return -EINVAL and pointer functions return NULL with errno set; a few
 *   functions that are void in Linux return int for that reason, so kernel
 *   callers still compile.
 * - bio_endio(), bio_chain(), bio_get() and bio_put() may be called from any
 *   thread; completion walks up chains in a loop with constant stack.
 * - bio_put() of a bio that did not come from a bio_set only uninitialises
 *   it (the caller owns its memory), where Linux would kfree() it.
 *
 * Locking: a bio is owned by one thread at a time except for its
 * completion counters and status, which are atomic.
 */
#ifndef LIBBVEC_BIO_H
#define LIBBVEC_BIO_H

#include <libbvec/blk_types.h>
#include <libbvec/bio_integrity.h>
#include <libbvec/version.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ======== Allocation and reference counting ============================ */

/**
 * struct bvec_allocator - where a bio_set gets its memory
 * @alloc: return @size bytes aligned for any object, or NULL
 * @free: give back memory from @alloc; @size is the size asked for
 * @ctx: passed to both
 * @bvec_reserved: private: leave zero (designated initialisers do); room
 *	to add callbacks without an ABI break
 *
 * Both may be called from any thread that allocates or frees bios, so they
 * must be thread-safe if the bio_set is shared.
 */
struct bvec_allocator {
	void *(*alloc)(void *ctx, size_t size);
	void (*free)(void *ctx, void *ptr, size_t size);
	void *ctx;
	void *bvec_reserved[2];
};

/**
 * struct bio_set - a source of bios with a reserve for forward progress
 * @front_pad: bytes kept in front of each bio for the driver's state
 * @pool_size: bios (and 256-entry tables) kept in reserve
 * @flags: BIOSET_* flags given to bioset_init()
 * @allocator: where memory comes from
 * @priv: private state; NULL when the set is not initialised
 *
 * Embed one in your driver and set it up with bioset_init().
 */
struct bio_set {
	unsigned int front_pad;
	unsigned int pool_size;
	int flags;
	struct bvec_allocator allocator;
	void *priv;
};

/* bioset_init() flags */
#define BIOSET_NEED_BVECS (1 << 0)
#define BIOSET_NEED_RESCUER (1 << 1)
#define BIOSET_PERCPU_CACHE (1 << 2)

#define BIO_POOL_SIZE 2

/**
 * bioset_init() - set up a bio_set that allocates with malloc()
 * @bs: the set to initialise
 * @pool_size: bios and largest tables to keep in reserve
 * @front_pad: bytes in front of each bio for per-bio driver state
 * @flags: BIOSET_NEED_BVECS and friends; accepted for compatibility
 *
 * With a reserve of @pool_size, GFP_KERNEL and GFP_NOIO allocations that
 * find the allocator failing wait for a bio to be freed rather than fail;
 * GFP_NOWAIT allocations fail fast.
 *
 * Return: 0, -EINVAL for a NULL @bs, or -ENOMEM (nothing allocated).
 */
BVEC_API int bioset_init(struct bio_set *bs, unsigned int pool_size,
			 unsigned int front_pad, int flags);

/**
 * bvec_bioset_init() - set up a bio_set with a caller's allocator
 * @bs: the set to initialise
 * @pool_size: bios and largest tables to keep in reserve
 * @front_pad: bytes in front of each bio for per-bio driver state
 * @flags: BIOSET_* flags
 * @allocator: memory source, copied; NULL means malloc()
 *
 * For embedders without malloc.  Otherwise as bioset_init().
 *
 * Return: 0, -EINVAL, or -ENOMEM.
 */
BVEC_API int bvec_bioset_init(struct bio_set *bs, unsigned int pool_size,
			      unsigned int front_pad, int flags,
			      const struct bvec_allocator *allocator);

/**
 * bioset_exit() - free a bio_set's reserve
 * @bs: the set; every bio from it must have been freed
 *
 * Safe on a zeroed or already exited set.
 */
BVEC_API void bioset_exit(struct bio_set *bs);

/**
 * bioset_initialized() - has bioset_init() succeeded on @bs?
 * @bs: the set
 *
 * Return: true between a successful bioset_init() and bioset_exit().
 */
static inline bool bioset_initialized(const struct bio_set *bs)
{
	return bs->priv != NULL;
}

/**
 * fs_bio_set - the library's default bio_set (used when a bio_set is NULL)
 */
BVEC_API extern struct bio_set fs_bio_set;

/**
 * bio_alloc_bioset() - allocate a bio
 * @bdev: target device (may be NULL, set bi_bdev later)
 * @nr_vecs: table entries needed, 0 to 256 (BIO_MAX_VECS)
 * @opf: operation and flags
 * @gfp: GFP_KERNEL/GFP_NOIO wait on the reserve, GFP_NOWAIT fails fast
 * @bs: the set, or NULL for fs_bio_set
 *
 * Up to four entries live inside the bio; larger tables come from 16, 64,
 * 128 and 256-entry classes.  The bio holds one reference; bio_put() frees it.
 *
 * Return: the bio, or NULL with errno EINVAL (@nr_vecs too large, @bs not
 * initialised) or ENOMEM.
 */
BVEC_API struct bio *bio_alloc_bioset(struct block_device *bdev,
				      unsigned short nr_vecs, blk_opf_t opf,
				      gfp_t gfp, struct bio_set *bs);

/**
 * bio_alloc() - allocate a bio from fs_bio_set
 * @bdev: target device
 * @nr_vecs: table entries needed
 * @opf: operation and flags
 * @gfp: allocation flags
 *
 * Return: as bio_alloc_bioset().
 */
static inline struct bio *bio_alloc(struct block_device *bdev,
				    unsigned short nr_vecs, blk_opf_t opf,
				    gfp_t gfp)
{
	return bio_alloc_bioset(bdev, nr_vecs, opf, gfp, NULL);
}

/**
 * bio_init() - initialise a bio whose memory the caller owns
 * @bio: the bio (e.g. on the stack or embedded in a driver struct)
 * @bdev: target device
 * @table: caller's bio_vec table, or NULL
 * @max_vecs: entries in @table
 * @opf: operation and flags
 *
 * Finish with bio_uninit() (bio_put() does the same for such a bio).
 */
BVEC_API void bio_init(struct bio *bio, struct block_device *bdev,
		       struct bio_vec *table, unsigned short max_vecs,
		       blk_opf_t opf);

/**
 * bio_reset() - reuse a bio for a new request
 * @bio: the bio; its table, pool and reference count are kept
 * @bdev: new target device
 * @opf: new operation and flags
 *
 * Frees any integrity payload and clears every field before bi_max_vecs.
 */
BVEC_API void bio_reset(struct bio *bio, struct block_device *bdev,
			blk_opf_t opf);

/**
 * bio_uninit() - release what a bio holds besides its own memory
 * @bio: the bio (its integrity payload is freed)
 */
BVEC_API void bio_uninit(struct bio *bio);

/**
 * bio_get() - take a reference on a bio
 * @bio: the bio
 *
 * After bio_get(), the bio is freed by the last bio_put(); without it, the
 * first bio_put() frees.  Thread-safe.
 */
BVEC_API void bio_get(struct bio *bio);

/**
 * bio_put() - drop a reference, freeing the bio on the last one
 * @bio: the bio; NULL is ignored
 *
 * A bio from a bio_set goes back to it; a bio_init() bio is only
 * uninitialised.  Thread-safe.
 */
BVEC_API void bio_put(struct bio *bio);

/**
 * bio_flagged() - test a BIO_* state bit
 * @bio: the bio
 * @bit: BIO_CLONED, BIO_CHAIN, ...
 *
 * Return: true if set.
 */
static inline bool bio_flagged(const struct bio *bio, unsigned int bit)
{
	return (bio->bi_flags & (1u << bit)) != 0;
}

/**
 * bio_set_flag() - set a BIO_* state bit
 * @bio: the bio
 * @bit: the bit
 */
static inline void bio_set_flag(struct bio *bio, unsigned int bit)
{
	bio->bi_flags = (unsigned short)(bio->bi_flags | (1u << bit));
}

/**
 * bio_clear_flag() - clear a BIO_* state bit
 * @bio: the bio
 * @bit: the bit
 */
static inline void bio_clear_flag(struct bio *bio, unsigned int bit)
{
	bio->bi_flags = (unsigned short)(bio->bi_flags & ~(1u << bit));
}


/* ======== Inspection =================================================== */

/**
 * bio_data_dir() - direction of a bio
 * @bio: the bio
 *
 * Return: 1 (WRITE) for writing operations, else 0 (READ).
 */
static inline int bio_data_dir(const struct bio *bio)
{
	return op_is_write(bio->bi_opf) ? 1 : 0;
}

/**
 * bio_no_advance_iter() - does a bio carry no memory to walk?
 * @bio: the bio
 *
 * Return: true for DISCARD, SECURE_ERASE and WRITE_ZEROES, whose bi_size
 * is a range on the device, not a length of memory.
 */
static inline bool bio_no_advance_iter(const struct bio *bio)
{
	enum req_op op = bio_op(bio);

	return op == REQ_OP_DISCARD || op == REQ_OP_SECURE_ERASE ||
	       op == REQ_OP_WRITE_ZEROES;
}

/**
 * bio_has_data() - does a bio move memory?
 * @bio: the bio, or NULL
 *
 * Return: false for NULL, for empty bios and for the no-data operations.
 */
static inline bool bio_has_data(const struct bio *bio)
{
	return bio && bio->bi_iter.bi_size && !bio_no_advance_iter(bio);
}

/**
 * bio_sectors() - remaining size in sectors
 * @bio: the bio
 *
 * Return: bi_iter.bi_size >> 9.
 */
static inline unsigned int bio_sectors(const struct bio *bio)
{
	return bio->bi_iter.bi_size >> BVEC_SECTOR_SHIFT;
}

/**
 * bio_end_sector() - first sector after the bio
 * @bio: the bio
 *
 * Return: bi_sector + bio_sectors().
 */
static inline sector_t bio_end_sector(const struct bio *bio)
{
	return bio->bi_iter.bi_sector + bio_sectors(bio);
}


/* ======== Iteration ==================================================== */

/**
 * bio_iter_iovec() - single-page segment of a bio under a cursor
 * @bio: the bio
 * @iter: the cursor
 *
 * Return: the segment, by value.
 */
static inline struct bio_vec bio_iter_iovec(const struct bio *bio,
					    struct bvec_iter iter)
{
	return bvec_iter_bvec(bio->bi_io_vec, iter);
}

/**
 * bio_iovec() - the bio's current single-page segment
 * @bio: the bio
 *
 * Return: bio_iter_iovec(@bio, @bio->bi_iter).
 */
static inline struct bio_vec bio_iovec(const struct bio *bio)
{
	return bio_iter_iovec(bio, bio->bi_iter);
}

/**
 * bio_advance_iter() - move a cursor over a bio
 * @bio: the bio whose table the cursor walks
 * @iter: the cursor
 * @bytes: how far
 *
 * Adds @bytes >> 9 to bi_sector.  For no-data operations only bi_size
 * shrinks.  Over-advance clamps as bvec_iter_advance() does.
 */
static inline void bio_advance_iter(const struct bio *bio,
				    struct bvec_iter *iter, unsigned int bytes)
{
	iter->bi_sector += bytes >> BVEC_SECTOR_SHIFT;
	if (bio_no_advance_iter(bio))
		iter->bi_size = bytes > iter->bi_size ? 0 : iter->bi_size - bytes;
	else
		bvec_iter_advance(bio->bi_io_vec, iter, bytes);
}

/**
 * bio_advance_iter_single() - move a cursor inside its current bvec
 * @bio: the bio
 * @iter: the cursor
 * @bytes: at most the rest of the current bvec
 */
static inline void bio_advance_iter_single(const struct bio *bio,
					   struct bvec_iter *iter,
					   unsigned int bytes)
{
	iter->bi_sector += bytes >> BVEC_SECTOR_SHIFT;
	if (bio_no_advance_iter(bio))
		iter->bi_size -= bytes;
	else
		bvec_iter_advance_single(bio->bi_io_vec, iter, bytes);
}

/**
 * bio_advance() - consume the front of a bio
 * @bio: the bio
 * @nbytes: bytes completed
 *
 * Moves bi_iter and, in integrity intervals, the integrity payload's cursor.
 */
BVEC_API void bio_advance(struct bio *bio, unsigned int nbytes);

/**
 * __bio_for_each_segment() - walk single-page segments from a given cursor
 * @bvl: struct bio_vec variable for each segment
 * @bio: the bio
 * @iter: struct bvec_iter variable, the cursor
 * @start: the cursor to start from (copied)
 */
#define __bio_for_each_segment(bvl, bio, iter, start)                       \
	for ((iter) = (start);                                              \
	     bvec_iter_skip_empty((bio)->bi_io_vec, &(iter)) &&             \
	     (((bvl) = bio_iter_iovec((bio), (iter))), 1);                  \
	     bio_advance_iter_single((bio), &(iter), (bvl).bv_len))

/**
 * bio_for_each_segment() - walk a bio's remaining single-page segments
 * @bvl: struct bio_vec variable for each segment
 * @bio: the bio (its own bi_iter is not moved)
 * @iter: struct bvec_iter variable, the cursor
 */
#define bio_for_each_segment(bvl, bio, iter)                                \
	__bio_for_each_segment(bvl, bio, iter, (bio)->bi_iter)

/**
 * __bio_for_each_bvec() - walk multi-page segments from a given cursor
 * @bvl: struct bio_vec variable for each segment
 * @bio: the bio
 * @iter: struct bvec_iter variable, the cursor
 * @start: the cursor to start from (copied)
 */
#define __bio_for_each_bvec(bvl, bio, iter, start)                          \
	for ((iter) = (start);                                              \
	     bvec_iter_skip_empty((bio)->bi_io_vec, &(iter)) &&             \
	     (((bvl) = mp_bvec_iter_bvec((bio)->bi_io_vec, (iter))), 1);    \
	     bio_advance_iter_single((bio), &(iter), (bvl).bv_len))

/**
 * bio_for_each_bvec() - walk a bio's remaining multi-page segments
 * @bvl: struct bio_vec variable for each segment
 * @bio: the bio (its own bi_iter is not moved)
 * @iter: struct bvec_iter variable, the cursor
 */
#define bio_for_each_bvec(bvl, bio, iter)                                   \
	__bio_for_each_bvec(bvl, bio, iter, (bio)->bi_iter)

/* Internal to bio_for_each_segment_all(); not for callers. */
static inline struct bio_vec *bvec__init_iter_all(struct bvec_iter_all *iter_all)
{
	iter_all->done = 0;
	iter_all->idx = 0;
	return &iter_all->bv;
}

static inline bool bvec__bio_next_segment(const struct bio *bio,
				    struct bvec_iter_all *iter)
{
	const struct bio_vec *bv;
	unsigned int off;

	for (;;) {
		if (iter->idx >= (int)bio->bi_vcnt)
			return false;
		bv = &bio->bi_io_vec[iter->idx];
		if (iter->done < bv->bv_len)
			break;
		iter->idx++;
		iter->done = 0;
	}
	off = bv->bv_offset + iter->done;
	iter->bv.bv_page = nth_page(bv->bv_page, off >> BVEC_PAGE_SHIFT);
	iter->bv.bv_offset = off & (unsigned int)(BVEC_PAGE_SIZE - 1);
	iter->bv.bv_len = bvec__min(bv->bv_len - iter->done,
				    (unsigned int)BVEC_PAGE_SIZE - iter->bv.bv_offset);
	iter->done += iter->bv.bv_len;
	return true;
}

/**
 * bio_for_each_segment_all() - walk every segment of a bio you own
 * @bvl: struct bio_vec pointer, set to each single-page segment
 * @bio: the bio; walks bi_io_vec[0..bi_vcnt), ignoring bi_iter
 * @iter: struct bvec_iter_all variable
 *
 * For completing your own bios (e.g. freeing pages you added); never for a
 * cloned bio, whose bi_vcnt is not its own.
 */
#define bio_for_each_segment_all(bvl, bio, iter)                            \
	for ((bvl) = bvec__init_iter_all(&(iter));                          \
	     bvec__bio_next_segment((bio), &(iter));)

/**
 * bio_first_bvec_all() - the first entry of a bio's own table
 * @bio: a bio you own
 *
 * Return: &bi_io_vec[0]; NULL for a clone, whose table is not its own
 * (Linux warns and returns the shared table).
 */
static inline struct bio_vec *bio_first_bvec_all(struct bio *bio)
{
	return bio_flagged(bio, BIO_CLONED) ? NULL : bio->bi_io_vec;
}

/**
 * bio_first_page_all() - the page of a bio's first table entry
 * @bio: a bio you own
 *
 * Return: its bv_page; NULL for a clone or a bio with no entries, where
 * Linux would read whatever the table holds.
 */
static inline struct page *bio_first_page_all(struct bio *bio)
{
	return bio_flagged(bio, BIO_CLONED) || !bio->bi_vcnt ? NULL : bio->bi_io_vec[0].bv_page;
}

/**
 * bio_last_bvec_all() - the last entry of a bio's own table
 * @bio: a bio you own
 *
 * Return: &bi_io_vec[bi_vcnt - 1]; NULL for a clone or a bio with no
 * entries (Linux would point before the table).
 */
static inline struct bio_vec *bio_last_bvec_all(struct bio *bio)
{
	return bio_flagged(bio, BIO_CLONED) || !bio->bi_vcnt ? NULL :
							      &bio->bi_io_vec[bio->bi_vcnt - 1];
}

/**
 * bio_for_each_bvec_all() - walk every entry of a bio's own table
 * @bvl: struct bio_vec pointer, set to each entry (multi-page, as added)
 * @bio: the bio; walks bi_io_vec[0..bi_vcnt), ignoring bi_iter
 * @i: int counter
 *
 * For bios you own; a clone (bi_vcnt 0) yields nothing.
 */
#define bio_for_each_bvec_all(bvl, bio, i)                                  \
	for ((i) = 0, (bvl) = (bio)->bi_io_vec; (i) < (int)(bio)->bi_vcnt;  \
	     (i)++, (bvl)++)

/**
 * bio_iter_last() - is a segment the last one under its cursor?
 * @bvec: the segment bio_for_each_segment() or bio_for_each_bvec() yielded
 * @iter: the cursor that yielded it
 *
 * Return: true when nothing of the bio follows @bvec.
 */
#define bio_iter_last(bvec, iter) ((iter).bi_size == (bvec).bv_len)

/**
 * bio_segments() - count the remaining single-page segments
 * @bio: the bio
 *
 * Return: the number of segments bio_for_each_segment() would yield; 0 for
 * DISCARD, SECURE_ERASE and WRITE_ZEROES.
 */
BVEC_API unsigned int bio_segments(const struct bio *bio);

/* ======== Building ===================================================== */


/**
 * bio_add_page() - append memory to a bio's table
 * @bio: a bio you own that is not a clone
 * @page: first page
 * @len: bytes, not 0
 * @off: offset from page_address(@page)
 *
 * The range merges into the last bvec only when it starts exactly where
 * that bvec ends.
 *
 * Return: @len, or 0 if nothing was added (zero length, table full,
 * bi_size would overflow, cloned bio).
 */
BVEC_API int bio_add_page(struct bio *bio, struct page *page,
			  unsigned int len, unsigned int off);

/**
 * bio_add_virt() - append a virtual address range to a bio
 * @bio: a bio you own
 * @vaddr: first byte
 * @len: bytes
 *
 * Return: as bio_add_page().
 */
BVEC_API int bio_add_virt(struct bio *bio, void *vaddr, unsigned int len);


/* ======== Split and clone ============================================== */

/**
 * bio_split() - split the front off a bio
 * @bio: the bio; advanced past the returned part
 * @sectors: sectors for the front, 0 < @sectors < bio_sectors(@bio)
 * @gfp: allocation flags
 * @bs: bio_set for the new bio, or NULL for fs_bio_set
 *
 * The front shares @bio's table and starts at its current cursor, so
 * splitting a partly completed bio works; the integrity payload is carried
 * and trimmed.  Splitting does not chain: call bio_chain(split, bio).  The
 * table must outlive both bios.
 *
 * Return: the front, or NULL with errno EINVAL (bad @sectors) or ENOMEM;
 * on failure @bio is unchanged.
 */
BVEC_API struct bio *bio_split(struct bio *bio, int sectors, gfp_t gfp,
			       struct bio_set *bs);

/**
 * bio_init_clone() - make a caller's bio a clone of another
 * @bdev: target device of the clone
 * @bio: the caller's memory (e.g. embedded in a driver's per-I/O struct);
 *	it is initialised, whatever it held
 * @src: the bio to clone; must outlive the clone
 * @gfp: allocation flags, for the integrity payload's copy
 *
 * As bio_alloc_clone() without the allocation: @bio shares @src's table
 * and copies its cursor, operation and priority.  Finish with bio_uninit().
 *
 * Return: 0, or -ENOMEM (the integrity payload could not be copied; @bio
 * is then uninitialised and holds nothing).
 */
BVEC_API int bio_init_clone(struct block_device *bdev, struct bio *bio, struct bio *src,
			    gfp_t gfp);

/**
 * bio_alloc_clone() - a new bio over the same memory and cursor
 * @bdev: target device of the clone
 * @src: the bio to clone; must outlive the clone
 * @gfp: allocation flags
 * @bs: bio_set for the clone, or NULL for fs_bio_set
 *
 * Return: the clone (BIO_CLONED, bi_vcnt 0), or NULL with errno ENOMEM.
 */
BVEC_API struct bio *bio_alloc_clone(struct block_device *bdev, struct bio *src,
				     gfp_t gfp, struct bio_set *bs);


/* ======== Completion =================================================== */

/**
 * bio_inc_remaining() - expect one more bio_endio() before completion
 * @bio: the bio
 */
BVEC_API void bio_inc_remaining(struct bio *bio);

/**
 * bio_chain() - make a bio's completion count towards another's
 * @bio: the child; must have no bi_end_io and no bi_private
 * @parent: completes after all its children and its own bio_endio()
 *
 * The first error of any child becomes the parent's status, unless the
 * parent already has one.
 *
 * Return: 0, or -EINVAL if @bio already has a completion.
 */
BVEC_API int bio_chain(struct bio *bio, struct bio *parent);

/**
 * bio_endio() - complete a bio
 * @bio: the bio
 *
 * Runs bi_end_io only on the last expected completion; completion of a
 * chained child is passed up iteratively, with constant stack, however long
 * the chain.  Thread-safe.  Only bio_endio() completes a bio: never call
 * bi_end_io directly.
 */
BVEC_API void bio_endio(struct bio *bio);

/**
 * bio_io_error() - complete a bio with BLK_STS_IOERR
 * @bio: the bio
 */
static inline void bio_io_error(struct bio *bio)
{
	bio->bi_status = BLK_STS_IOERR;
	bio_endio(bio);
}


/* ======== Copy, zero and trim ========================================== */

/**
 * bio_copy_data_iter() - copy between two bios with explicit cursors
 * @dst: destination bio
 * @dst_iter: its cursor, advanced
 * @src: source bio
 * @src_iter: its cursor, advanced
 *
 * Copies min(remaining) bytes, whatever the segmentation of either side.
 */
BVEC_API void bio_copy_data_iter(struct bio *dst, struct bvec_iter *dst_iter,
				 struct bio *src, struct bvec_iter *src_iter);

/**
 * bio_copy_data() - copy the data of one bio into another
 * @dst: destination
 * @src: source
 *
 * Neither bio's own cursor moves.
 */
BVEC_API void bio_copy_data(struct bio *dst, struct bio *src);

/**
 * zero_fill_bio() - zero the bio's remaining memory
 * @bio: the bio
 */
BVEC_API void zero_fill_bio(struct bio *bio);

/**
 * bio_trim() - narrow a bio to a sub-range
 * @bio: the bio
 * @offset: sectors to drop from the front
 * @size: sectors to keep
 *
 * Return: 0, or -EINVAL (nothing changed) if the range is not inside the bio.
 */
BVEC_API int bio_trim(struct bio *bio, sector_t offset, sector_t size);

/**
 * bio_truncate() - shorten a bio, zeroing the cut tail of a READ
 * @bio: the bio
 * @new_size: bytes to keep; no-op if not smaller than bi_size
 */
BVEC_API void bio_truncate(struct bio *bio, unsigned int new_size);


/* ======== Lists ======================================================== */

/**
 * struct bio_list - a singly linked FIFO of bios through bi_next
 * @head: first bio
 * @tail: last bio
 */
struct bio_list {
	struct bio *head;
	struct bio *tail;
};

/**
 * bio_list_init() - empty a list
 * @bl: the list
 */
static inline void bio_list_init(struct bio_list *bl)
{
	bl->head = bl->tail = NULL;
}

/**
 * bio_list_empty() - is a list empty?
 * @bl: the list
 *
 * Return: true if it holds no bio.
 */
static inline bool bio_list_empty(const struct bio_list *bl)
{
	return bl->head == NULL;
}

/**
 * bio_list_add() - append a bio
 * @bl: the list
 * @bio: the bio; its bi_next is overwritten
 */
static inline void bio_list_add(struct bio_list *bl, struct bio *bio)
{
	bio->bi_next = NULL;
	if (bl->tail)
		bl->tail->bi_next = bio;
	else
		bl->head = bio;
	bl->tail = bio;
}

/**
 * bio_list_add_head() - prepend a bio
 * @bl: the list
 * @bio: the bio; its bi_next is overwritten
 */
static inline void bio_list_add_head(struct bio_list *bl, struct bio *bio)
{
	bio->bi_next = bl->head;
	bl->head = bio;
	if (!bl->tail)
		bl->tail = bio;
}

/**
 * bio_list_peek() - the first bio, left on the list
 * @bl: the list
 *
 * Return: the bio, or NULL if the list is empty.
 */
static inline struct bio *bio_list_peek(const struct bio_list *bl)
{
	return bl->head;
}

/**
 * bio_list_size() - count the bios on a list
 * @bl: the list
 *
 * Return: how many; walks the list.
 */
static inline unsigned int bio_list_size(const struct bio_list *bl)
{
	const struct bio *bio;
	unsigned int n = 0;

	for (bio = bl->head; bio; bio = bio->bi_next)
		n++;
	return n;
}

/**
 * bio_list_merge() - append every bio of one list to another
 * @bl: the list appended to
 * @bl2: the list whose bios move; left as it was (its bios are now on
 *	@bl too), as in Linux: re-initialise or drop it
 */
static inline void bio_list_merge(struct bio_list *bl, struct bio_list *bl2)
{
	if (!bl2->head)
		return;
	if (bl->tail)
		bl->tail->bi_next = bl2->head;
	else
		bl->head = bl2->head;
	bl->tail = bl2->tail;
}

/**
 * bio_list_merge_init() - bio_list_merge(), then empty @bl2 (Linux 6.10)
 * @bl: the list appended to
 * @bl2: the list whose bios move; left empty
 */
static inline void bio_list_merge_init(struct bio_list *bl, struct bio_list *bl2)
{
	bio_list_merge(bl, bl2);
	bio_list_init(bl2);
}

/**
 * bio_list_merge_head() - put every bio of one list before another's
 * @bl: the list prepended to
 * @bl2: the list whose bios move; left as it was, as bio_list_merge()
 */
static inline void bio_list_merge_head(struct bio_list *bl, struct bio_list *bl2)
{
	if (!bl2->head)
		return;
	if (bl->head)
		bl2->tail->bi_next = bl->head;
	else
		bl->tail = bl2->tail;
	bl->head = bl2->head;
}

/**
 * bio_list_get() - take every bio off a list at once
 * @bl: the list, left empty
 *
 * Return: the first bio, the rest linked through bi_next; NULL if empty.
 */
static inline struct bio *bio_list_get(struct bio_list *bl)
{
	struct bio *bio = bl->head;

	bl->head = bl->tail = NULL;
	return bio;
}

/**
 * bio_list_for_each() - walk a list's bios
 * @bio: struct bio pointer, set to each bio
 * @bl: the list; do not change it during the walk
 */
#define bio_list_for_each(bio, bl) for ((bio) = (bl)->head; (bio); (bio) = (bio)->bi_next)

/**
 * bio_list_pop() - remove the first bio
 * @bl: the list
 *
 * Return: the bio, or NULL if the list was empty.
 */
static inline struct bio *bio_list_pop(struct bio_list *bl)
{
	struct bio *bio = bl->head;

	if (bio) {
		bl->head = bio->bi_next;
		if (!bl->head)
			bl->tail = NULL;
		bio->bi_next = NULL;
	}
	return bio;
}

#ifdef __cplusplus
}
#endif

#endif /* LIBBVEC_BIO_H */

/* SPDX-License-Identifier: MIT */
/*
 * The zram device's insides, shared by its parts: zram.c (I/O, statistics,
 * control) and the tiers built on it.  Not installed.
 */
#ifndef ZPOOL_ZRAM_INTERNAL_H
#define ZPOOL_ZRAM_INTERNAL_H

#include <libbvec/zram.h>

#include "internal.h"

/*
 * Slot flag bits.  Bits 0-1 are the lock and the idle mark; bits 2-7 belong
 * to the writeback tier, bits 8-15 to recompression, bit 16 to zero pages;
 * bits 17-31 count accesses (ZRAM_GEN).
 */
#define ZRAM_LOCK (1u << 0)
#define ZRAM_IDLE (1u << 1)
/*
 * ZRAM_ZERO: the page was written and every byte of it is zero.  The slot
 * is the whole record, as the kernel's ZRAM_SAME slot is: its handle is 0,
 * so every path that looks for a page of the pool passes it by, and a zero
 * page costs no memory, cannot be refused at mem_limit and is never
 * written back, recompressed or marked idle.  Set and cleared only by
 * zram__slot_swap() (and zram_reset(), which clears every slot); other
 * same-filled pages are the pool's (a repeated word).
 */
#define ZRAM_ZERO (1u << 16)
/*
 * ZRAM_GEN: every read, write and discard of the page adds one (modulo
 * 2^15), and nothing else does: recompression, writeback, regrouping and
 * idle marks move or mark the same data.  A tier that chose a page and
 * comes back to it later compares the count, as Linux since 6.13 tests
 * ZRAM_PP_SLOT, which any access clears: a page used meanwhile is passed
 * over.  Being a count, it needs no owner, so runs may overlap; the
 * handle could not tell, as a rewrite may get the old handle back and
 * regrouping gives the same data a new one.  Data never depends on it:
 * what a tier stores or writes is loaded under the slot's lock then.
 */
#define ZRAM_GEN_SHIFT 17
#define ZRAM_GEN_ONE (1u << ZRAM_GEN_SHIFT)
#define ZRAM_GEN_MASK (~0u << ZRAM_GEN_SHIFT)
/*
 * The writeback tier's bits.  ZRAM_WB: the page is on the backing disk and
 * @handle holds its block number plus one (so a written slot never has
 * handle 0).  ZRAM_UNDER_WB: a writeback has copied the page and its write
 * is in flight; whatever changes the slot's handle clears it, which tells
 * the writeback to keep the new contents and give the block back.
 */
#define ZRAM_WB (1u << 2)
#define ZRAM_UNDER_WB (1u << 3)
/*
 * ZRAM_WB_CLAIM: a writeback run has a write of the page in flight.  Unlike
 * ZRAM_UNDER_WB, only that run clears it, when the write completes, so no
 * second run can take the page meanwhile: it would set ZRAM_UNDER_WB again
 * for the new contents, and the first run's completion would take that
 * for its own and put the old contents' block in the slot.
 */
#define ZRAM_WB_CLAIM (1u << 4)

/*
 * Recompression's bits (zram_recompress.c).  ZRAM_INCOMPRESSIBLE: no
 * recompression algorithm shrank the page, so it is skipped next time.
 * ZRAM_RECOMP: the page was recompressed, by the algorithm of priority
 * ZRAM_PRIO (1..3).  A new write of the page clears them all.
 */
#define ZRAM_INCOMPRESSIBLE (1u << 9)
#define ZRAM_RECOMP (1u << 10)
#define ZRAM_PRIO_SHIFT 11
#define ZRAM_PRIO_MASK (3u << ZRAM_PRIO_SHIFT)
#define ZRAM_RECOMP_FLAGS (ZRAM_INCOMPRESSIBLE | ZRAM_RECOMP | ZRAM_PRIO_MASK)
/* Bits 2-7, the writeback tier's: a slot with any of them is not the pool's. */
#define ZRAM_TIER_FLAGS (0x3fu << 2)

/*
 * 12 bytes per page (the kernel's zram uses 16): libzpool handles fit in
 * 32 bits, and the access time is seconds since the device was created.
 * @handle and @ac_time change only under the slot's lock.
 */
struct zram_slot {
	uint32_t handle;
	_Atomic(uint32_t) flags;
	uint32_t ac_time;
};

/*
 * The slot table is a radix tree of pages: leaves hold slots, inner nodes
 * hold pointers, and only the root exists before the first write.  A thin
 * disk of a terabyte then costs one page of table instead of gigabytes, and
 * mem_used_total counts exactly the table pages that exist.  Nodes are added
 * with a compare-and-swap and removed only by reset or destroy, which
 * exclude I/O, so a lookup needs no lock.
 */
#define SLOTS_PER_LEAF (ZP_PAGE_SIZE / sizeof(struct zram_slot))
#define PTRS_PER_NODE (ZP_PAGE_SIZE / sizeof(void *))
#define ZRAM_MAX_DEPTH 6

typedef _Atomic(void *) zram_node_ptr;

struct zram {
	struct gendisk *disk;
	struct zpool *pool;
	struct zpool_config pool_cfg;
	struct zpool_page_source src;	/* copied from the config; alloc NULL: heap */
	void *root;			/* a leaf when depth is 0 */
	unsigned int depth;		/* inner levels above the leaves */
	uint64_t span[ZRAM_MAX_DEPTH];	/* slots under one child at each level */
	uint64_t nr_pages;
	uint64_t epoch;
	/*
	 * I/O and the control calls hold it shared; reset holds it exclusive,
	 * as it swaps the pool and frees table nodes under everyone's feet.
	 */
	struct zpool__rwlock *lock;
	/* Serialises recomputing the pool's limit from the two below. */
	struct zpool__mutex *limit_lock;
	atomic_uint_fast64_t mem_limit;	/* the caller's limit, table included */
	atomic_uint_fast64_t table_pages;
	atomic_uint_fast64_t failed_reads;
	atomic_uint_fast64_t failed_writes;
	atomic_uint_fast64_t invalid_io;
	atomic_uint_fast64_t notify_free;
	/*
	 * The writeback tier (zram_writeback.c): its state, made with the
	 * device, and the slots whose page is on the backing disk (counted in
	 * orig_data_size).
	 */
	struct zram__wb *wb;
	atomic_uint_fast64_t wb_pages;
	/* Slots with ZRAM_ZERO: same_pages and orig_data_size count them. */
	atomic_uint_fast64_t zero_pages;
};

/*
 * Called with the slot locked: put @handle in the slot (0 with @zero: a zero
 * page; 0 alone: nothing), as every write and discard does, and return the
 * pool handle that was there (0 for none), for the caller to free once the
 * lock is dropped.  Clears the tiers' marks (a block of the backing disk is
 * released, a writeback in flight learns the page changed) and counts zero
 * pages.
 */
uint32_t zram__slot_swap(struct zram *z, struct zram_slot *s, uint32_t handle, bool zero);

/*
 * What a whole page for a slot becomes: a zero page only a mark (*@zero,
 * with *@handle 0), which needs no store and so is never refused; any other
 * page stored in the pool, into *@handle.  Returns 0 or the store's -errno,
 * counted in failed_writes.  Takes no lock of the slot's.
 */
int zram__store_page(struct zram *z, const void *page, uint32_t *handle, bool *zero);

/*
 * A page a tier selected: its index, the bytes its object holds
 * (zram__page_bytes()) and its access count then (slot_gen()).
 * zram__cand_cmp() orders candidates as Linux's post-processing does since
 * 6.13, for recompression and writeback alike: largest object first, ties
 * in disk order.
 */
struct zram__cand {
	uint64_t index;
	uint32_t size;
	uint32_t gen;
};
int zram__cand_cmp(const void *a, const void *b);

/*
 * The bytes a page's object holds: its object's length, or for a page of a
 * group (ZPOOL_F_MULTI_PAGE) its share of the group.  The slot is locked.
 */
uint32_t zram__page_bytes(struct zram *z, uint32_t handle);

/* The slot of page @index; NULL if it has no leaf and @create is false. */
struct zram_slot *zram__slot_get(struct zram *z, uint64_t index, bool create);

/*
 * Call @fn on every slot of every existing leaf, with the slot's page index.
 * Slots of pages never written under an existing leaf are visited too (their
 * handle is 0).  The caller holds z->lock, shared or exclusive.
 */
typedef void (*zram__slot_fn)(struct zram *z, struct zram_slot *s, uint64_t index, void *arg);
void zram__slots_walk(struct zram *z, zram__slot_fn fn, void *arg);

/*
 * Writeback hooks for zram.c (zram_writeback.c).  zram__wb_release() gives
 * back the block of a written-back slot whose handle is being replaced; the
 * caller holds the slot's lock.  zram__wb_pin() (0 or -ENOMEM) is called
 * with the slot locked and keeps the block from reuse until zram__wb_read()
 * or zram__wb_rmw() completes, which they do asynchronously as a child of
 * @bio: a read into @dst of bytes [@off, @off + @len) of the page, or a
 * write of @len bytes of @src (NULL: zeroes) at @off.  Both return 0 or a
 * negative errno with the pin dropped.  zram__wb_init() makes the state
 * (0 or -ENOMEM), zram__wb_reset() releases every block (z->lock held
 * exclusive), zram__wb_destroy() frees the state (NULL is fine).
 */
int zram__wb_init(struct zram *z);
void zram__wb_release(struct zram *z, uint32_t hblk);
int zram__wb_pin(struct zram *z, uint32_t hblk);
int zram__wb_read(struct zram *z, struct bio *bio, uint32_t hblk, unsigned int off,
		  void *dst, unsigned int len);
int zram__wb_rmw(struct zram *z, struct bio *bio, uint64_t index, uint32_t hblk,
		 unsigned int off, const void *src, unsigned int len);
void zram__wb_reset(struct zram *z);
void zram__wb_destroy(struct zram *z);
/*
 * Sort at most @n writeback candidates at a time (0: the default, 2^18).
 * For tests: a window of a few candidates shows on a small device what
 * a disk of more than a GiB does window by window.
 */
void zram__wb_set_window(struct zram *z, size_t n);

/*
 * zram.c's write of part of a page, for the tier to redo one whose slot
 * changed under it.  With @bio NULL it returns -EAGAIN instead of starting
 * a read of a written-back page.  The caller holds z->lock shared.
 */
int zram__write_partial(struct zram *z, struct bio *bio, uint64_t index, unsigned int off,
			const void *src, unsigned int len);

static inline void slot_lock(struct zram_slot *s)
{
	unsigned int spins = 0;

	while (atomic_fetch_or_explicit(&s->flags, ZRAM_LOCK, memory_order_acquire) &
	       ZRAM_LOCK)
		if (++spins % 64 == 0)
			zpool__os_yield();
}

static inline void slot_unlock(struct zram_slot *s)
{
	atomic_fetch_and_explicit(&s->flags, ~ZRAM_LOCK, memory_order_release);
}

/* The slot's access count (ZRAM_GEN), from its flags. */
static inline uint32_t slot_gen(uint32_t flags)
{
	return flags >> ZRAM_GEN_SHIFT;
}

/*
 * Called with the slot locked: a read or write clears the idle mark and
 * counts an access.  One compare-and-swap for both, as a thread waiting
 * for the lock still writes the word (its fetch-or of ZRAM_LOCK).
 */
static inline void slot_touch(struct zram *z, struct zram_slot *s)
{
	uint32_t f = atomic_load_explicit(&s->flags, memory_order_relaxed);

	s->ac_time = (uint32_t)(zpool__os_seconds() - z->epoch);
	while (!atomic_compare_exchange_weak_explicit(&s->flags, &f,
						      (f & ~ZRAM_IDLE) + ZRAM_GEN_ONE,
						      memory_order_relaxed, memory_order_relaxed))
		;
}

#endif

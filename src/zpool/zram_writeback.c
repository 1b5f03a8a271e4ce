// SPDX-License-Identifier: MIT
/*
 * zram's writeback tier: a backing disk, a first-fit map of its page-sized
 * blocks, zram_writeback() with many writes in flight, the asynchronous
 * reads (and read-modify-writes) of written-back pages that zram.c hands
 * over, the writeback budget, bd_stat and block_state.
 */
#include <stdio.h>
#include <stdlib.h>

#include <libbvec/bio.h>

#include "zram_internal.h"

/* Linux counts bd_stat and the budget in 4 KiB units whatever the page size. */
#define UNITS_PER_PAGE ((uint64_t)(ZP_PAGE_SIZE >= 4096 ? ZP_PAGE_SIZE / 4096 : 1))
#define SECTORS_PER_PAGE ((sector_t)(ZP_PAGE_SIZE >> BVEC_SECTOR_SHIFT))
#define WB_BATCH_DEFAULT 32u

/*
 * As Linux since 6.13, the largest objects go first: a block of the backing
 * disk and a unit of the budget cost the same for a 48-byte object as for
 * a huge page, and only the huge page gives back a page of memory.  Linux
 * sorts every candidate into size buckets kept in its slots; the 12-byte
 * slot has no room for that, so candidates are gathered and sorted a window
 * at a time, up to WB_WINDOW of them (4 MiB; 1 GiB of 4 KiB pages), and a
 * disk with more goes window by window in disk order.  With no memory for
 * a window, a small one on the stack keeps writeback going: it is what
 * frees memory.
 */
#define WB_WINDOW (1u << 18)
#define WB_WINDOW_STACK 64u

#define WB_BATCH_MAX 256u
/* handle is 32 bits and holds block + 1; all ones stays unused. */
#define WB_MAX_BLOCKS ((uint64_t)UINT32_MAX - 1)

struct wb_pin {
	uint32_t hblk;
	uint32_t count;
	bool released;
};

struct zram__wb {
	/* The block map, the pins and the budget. */
	struct zpool__mutex *lock;
	struct gendisk *disk;
	uint64_t nr_blocks;
	uint64_t *used;		/* a bit a block: taken */
	uint64_t nr_used;
	uint64_t hint;		/* no free block below this word */
	/*
	 * Blocks with reads in flight.  A reader picks its block under the
	 * slot's lock and reads after dropping it (the read may complete on
	 * another thread much later); a block released meanwhile and handed to
	 * another page's writeback would give the reader that page's bytes.  So
	 * a pinned block that is released stays taken until its last read
	 * completes.  Few reads are in flight at once: a short array will do.
	 */
	struct wb_pin *pins;
	unsigned int nr_pins, pins_cap;
	bool limit_enable;
	uint64_t budget;	/* 4 KiB units */
	atomic_uint batch;
	atomic_size_t window;	/* candidates sorted at once: WB_WINDOW */
	atomic_uint_fast64_t bd_reads;	/* pages */
	atomic_uint_fast64_t bd_writes;	/* pages */
	/*
	 * A writeback run sleeps here until a completion arrives: the backing
	 * disk may complete on its own thread much later, and spinning on
	 * yield for a slow disk burns a CPU.  Per device, not per run, so a
	 * completion never touches a run's stack after the run has returned.
	 */
	struct zpool__mutex *done_lock;
	struct zpool__cond *done_cond;
};

/* Page-aligned heap memory: a backing disk may do direct I/O. */
static unsigned char *page_alloc(void **raw)
{
	uintptr_t p;

	*raw = zpool__os_alloc(2 * ZP_PAGE_SIZE);
	if (!*raw)
		return NULL;
	p = ((uintptr_t)*raw + ZP_PAGE_SIZE - 1) & ~(uintptr_t)(ZP_PAGE_SIZE - 1);
	return (unsigned char *)p;
}

static unsigned int lowest_bit(uint64_t w)
{
	unsigned int b = 0;

	while (!(w & 1)) {
		w >>= 1;
		b++;
	}
	return b;
}

/* First fit; 0 if the disk is full, else the block plus one.  wb->lock held. */
static uint32_t block_alloc(struct zram__wb *wb)
{
	uint64_t words = (wb->nr_blocks + 63) / 64, i;

	for (i = wb->hint; i < words; i++) {
		uint64_t blk;

		if (!~wb->used[i])
			continue;
		blk = i * 64 + lowest_bit(~wb->used[i]);
		wb->hint = i;
		if (blk >= wb->nr_blocks)
			break;
		wb->used[i] |= (uint64_t)1 << (blk % 64);
		wb->nr_used++;
		return (uint32_t)(blk + 1);
	}
	wb->hint = words;
	return 0;
}

/* wb->lock held. */
static struct wb_pin *pin_find(struct zram__wb *wb, uint32_t hblk)
{
	unsigned int i;

	for (i = 0; i < wb->nr_pins; i++)
		if (wb->pins[i].hblk == hblk)
			return &wb->pins[i];
	return NULL;
}

/* wb->lock held. */
static void block_free(struct zram__wb *wb, uint32_t hblk)
{
	uint64_t blk = hblk - 1, bit = (uint64_t)1 << (blk % 64);

	wb->used[blk / 64] &= ~bit;
	wb->nr_used--;
	if (blk / 64 < wb->hint)
		wb->hint = blk / 64;
}

static void block_release(struct zram__wb *wb, uint32_t hblk)
{
	struct wb_pin *p;

	zpool__mutex_lock(wb->lock);
	p = pin_find(wb, hblk);
	if (p)
		p->released = true; /* freed by the last unpin() */
	else
		block_free(wb, hblk);
	zpool__mutex_unlock(wb->lock);
}

void zram__wb_release(struct zram *z, uint32_t hblk)
{
	block_release(z->wb, hblk);
	atomic_fetch_sub(&z->wb_pages, 1);
}

int zram__wb_pin(struct zram *z, uint32_t hblk)
{
	struct zram__wb *wb = z->wb;
	struct wb_pin *p;
	int ret = 0;

	zpool__mutex_lock(wb->lock);
	p = pin_find(wb, hblk);
	if (!p && wb->nr_pins == wb->pins_cap) {
		unsigned int cap = wb->pins_cap ? 2 * wb->pins_cap : 16;
		struct wb_pin *a = zpool__os_alloc(cap * sizeof(*a));

		if (a) {
			if (wb->nr_pins)
				memcpy(a, wb->pins, wb->nr_pins * sizeof(*a));
			zpool__os_free(wb->pins);
			wb->pins = a;
			wb->pins_cap = cap;
		}
	}
	if (p) {
		p->count++;
	} else if (wb->nr_pins < wb->pins_cap) {
		wb->pins[wb->nr_pins++] = (struct wb_pin){ hblk, 1, false };
	} else {
		ret = -ENOMEM;
	}
	zpool__mutex_unlock(wb->lock);
	return ret;
}

static void unpin(struct zram__wb *wb, uint32_t hblk)
{
	struct wb_pin *p;

	zpool__mutex_lock(wb->lock);
	p = pin_find(wb, hblk);
	if (!--p->count) {
		if (p->released)
			block_free(wb, hblk);
		*p = wb->pins[--wb->nr_pins];
	}
	zpool__mutex_unlock(wb->lock);
}

int zram__wb_init(struct zram *z)
{
	struct zram__wb *wb = zpool__os_zalloc(sizeof(*wb));

	if (!wb)
		return -ENOMEM;
	wb->lock = zpool__mutex_new();
	wb->done_lock = zpool__mutex_new();
	wb->done_cond = zpool__cond_new();
	if (!wb->lock || !wb->done_lock || !wb->done_cond) {
		zpool__cond_free(wb->done_cond);
		zpool__mutex_free(wb->done_lock);
		zpool__mutex_free(wb->lock);
		zpool__os_free(wb);
		return -ENOMEM;
	}
	atomic_init(&wb->batch, WB_BATCH_DEFAULT);
	atomic_init(&wb->window, WB_WINDOW);
	z->wb = wb;
	return 0;
}

void zram__wb_destroy(struct zram *z)
{
	struct zram__wb *wb = z->wb;

	if (!wb)
		return;
	zpool__cond_free(wb->done_cond);
	zpool__mutex_free(wb->done_lock);
	zpool__mutex_free(wb->lock);
	zpool__os_free(wb->used);
	zpool__os_free(wb->pins);
	zpool__os_free(wb);
	z->wb = NULL;
}

void zram__wb_reset(struct zram *z)
{
	struct zram__wb *wb = z->wb;
	uint64_t words = (wb->nr_blocks + 63) / 64;
	unsigned int i;

	zpool__mutex_lock(wb->lock);
	/* Blocks still being read stay taken until their reads complete. */
	if (words)
		memset(wb->used, 0, words * sizeof(*wb->used));
	wb->nr_used = 0;
	wb->hint = 0;
	for (i = 0; i < wb->nr_pins; i++) {
		uint64_t blk = wb->pins[i].hblk - 1;

		wb->used[blk / 64] |= (uint64_t)1 << (blk % 64);
		wb->nr_used++;
		wb->pins[i].released = true;
	}
	/* As Linux: the budget does not survive a reset. */
	wb->limit_enable = false;
	wb->budget = 0;
	zpool__mutex_unlock(wb->lock);
	atomic_store(&z->wb_pages, 0);
}

int zram_set_backing(struct zram *z, struct gendisk *disk)
{
	struct zram__wb *wb;
	uint64_t nr = 0, *used = NULL;
	int ret = 0;

	if (!z)
		return -EINVAL;
	wb = z->wb;
	if (disk) {
		nr = zpool__min(get_capacity(disk) / SECTORS_PER_PAGE, WB_MAX_BLOCKS);
		if (!nr || bdev_logical_block_size(disk->part0) > ZP_PAGE_SIZE)
			return -EINVAL;
		used = zpool__os_zalloc((nr + 63) / 64 * sizeof(*used));
		if (!used)
			return -ENOMEM;
	}
	zpool__write_lock(z->lock);
	zpool__mutex_lock(wb->lock);
	if (wb->nr_used || wb->nr_pins) {
		ret = -EBUSY;
	} else {
		uint64_t *u = wb->used;

		wb->used = used;
		used = u;
		wb->disk = disk;
		wb->nr_blocks = nr;
		wb->hint = 0;
	}
	zpool__mutex_unlock(wb->lock);
	zpool__rw_unlock(z->lock);
	zpool__os_free(used);
	return ret;
}

/* ---- Reads and read-modify-writes of written-back pages ---- */

struct wb_read {
	struct zram *z;
	struct bio *parent;
	uint32_t hblk;
	unsigned int off, len;
	unsigned char *dst;		/* a read's destination */
	const unsigned char *src;	/* a read-modify-write's bytes; NULL: zeroes */
	bool rmw;
	uint64_t index;
	void *raw;			/* the bounce page's allocation, or NULL */
	unsigned char *bounce;
};

static void read_end_io(struct bio *child);

static void fail_parent(struct bio *parent)
{
	blk_status_t ok = BLK_STS_OK;

	atomic_compare_exchange_strong(&parent->bi_status, &ok, BLK_STS_IOERR);
}

/* The read is a child of r->parent: the parent completes after it. */
static int submit_read(struct wb_read *r)
{
	struct bio *child = bio_alloc(r->z->wb->disk->part0, 1, REQ_OP_READ, GFP_NOIO);

	if (!child)
		return -ENOMEM;
	child->bi_iter.bi_sector = (sector_t)(r->hblk - 1) * SECTORS_PER_PAGE;
	bio_add_virt(child, r->bounce ? r->bounce : r->dst, (unsigned int)ZP_PAGE_SIZE);
	child->bi_end_io = read_end_io;
	child->bi_private = r;
	bio_inc_remaining(r->parent);
	submit_bio(child);
	return 0;
}

static void read_free(struct wb_read *r)
{
	zpool__os_free(r->raw);
	zpool__os_free(r);
}

static int start_read(struct zram *z, struct wb_read *r)
{
	int ret = -ENOMEM;

	if (r->rmw || r->off || r->len != ZP_PAGE_SIZE) {
		r->bounce = page_alloc(&r->raw);
		if (!r->bounce)
			goto fail;
	}
	ret = submit_read(r);
	if (!ret)
		return 0;
fail:
	unpin(z->wb, r->hblk);
	read_free(r);
	return ret;
}

/* A read of block @hblk for @bio; NULL, the pin dropped, without memory. */
static struct wb_read *read_new(struct zram *z, struct bio *bio, uint32_t hblk,
				unsigned int off, unsigned int len)
{
	struct wb_read *r = zpool__os_zalloc(sizeof(*r));

	if (!r) {
		unpin(z->wb, hblk);
		return NULL;
	}
	r->z = z;
	r->parent = bio;
	r->hblk = hblk;
	r->off = off;
	r->len = len;
	return r;
}

int zram__wb_read(struct zram *z, struct bio *bio, uint32_t hblk, unsigned int off,
		  void *dst, unsigned int len)
{
	struct wb_read *r = read_new(z, bio, hblk, off, len);

	if (!r)
		return -ENOMEM;
	r->dst = dst;
	return start_read(z, r);
}

int zram__wb_rmw(struct zram *z, struct bio *bio, uint64_t index, uint32_t hblk,
		 unsigned int off, const void *src, unsigned int len)
{
	struct wb_read *r = read_new(z, bio, hblk, off, len);

	if (!r) {
		atomic_fetch_add(&z->failed_writes, 1);
		return -ENOMEM;
	}
	r->src = src;
	r->rmw = true;
	r->index = index;
	return start_read(z, r);
}

/*
 * The old page is in r->bounce.  If the slot still holds that block, patch
 * and store it; if it changed meanwhile, redo the write on what it holds
 * now, which may mean another read.  Returns true if a new read was
 * started (it owns @r and its own pin).  Called with the pin held.
 */
static bool rmw_finish(struct wb_read *r)
{
	struct zram *z = r->z;
	struct zram_slot *s;
	uint32_t f, h;
	int ret;

	for (;;) {
		zpool__read_lock(z->lock);
		s = zram__slot_get(z, r->index, true);
		if (!s) {
			atomic_fetch_add(&z->failed_writes, 1);
			zpool__rw_unlock(z->lock);
			fail_parent(r->parent);
			return false;
		}
		slot_lock(s);
		f = atomic_load_explicit(&s->flags, memory_order_relaxed);
		if ((f & ZRAM_WB) && s->handle == r->hblk) {
			bool zero;

			if (r->src)
				memcpy(r->bounce + r->off, r->src, r->len);
			else
				memset(r->bounce + r->off, 0, r->len);
			ret = zram__store_page(z, r->bounce, &h, &zero);
			if (!ret)
				/* Releases the block: the slot held no pool handle. */
				zram__slot_swap(z, s, h, zero);
			else
				fail_parent(r->parent);
			slot_unlock(s);
			zpool__rw_unlock(z->lock);
			return false;
		}
		if (f & ZRAM_WB) {
			/* Written back again, to another block: read that one. */
			uint32_t next = s->handle;

			ret = zram__wb_pin(z, next);
			slot_unlock(s);
			zpool__rw_unlock(z->lock);
			unpin(z->wb, r->hblk);
			r->hblk = next;
			if (!ret && !submit_read(r))
				return true;
			if (!ret)
				unpin(z->wb, next);
			atomic_fetch_add(&z->failed_writes, 1);
			fail_parent(r->parent);
			return false;
		}
		slot_unlock(s);
		ret = zram__write_partial(z, NULL, r->index, r->off, r->src, r->len);
		zpool__rw_unlock(z->lock);
		if (ret != -EAGAIN) {
			if (ret)
				fail_parent(r->parent);
			return false;
		}
	}
}

static void read_end_io(struct bio *child)
{
	struct wb_read *r = child->bi_private;
	struct zram *z = r->z;
	struct bio *parent = r->parent;
	blk_status_t st = atomic_load(&child->bi_status);

	bio_put(child);
	if (st) {
		atomic_fetch_add(&z->failed_reads, 1);
		fail_parent(parent);
	} else {
		atomic_fetch_add(&z->wb->bd_reads, 1);
		if (r->rmw) {
			if (rmw_finish(r)) {
				bio_endio(parent); /* the new read holds its own count */
				return;
			}
		} else if (r->bounce) {
			memcpy(r->dst, r->bounce + r->off, r->len);
		}
	}
	unpin(z->wb, r->hblk);
	read_free(r);
	bio_endio(parent);
}

/* ---- zram_writeback() ---- */

struct wb_run;

struct wb_req {
	struct wb_req *next;
	struct wb_run *run;
	uint64_t index;
	uint32_t gen;		/* the page's access count when copied */
	uint32_t hblk;
	bool charged;		/* taken from the budget */
	blk_status_t status;
	void *raw;
	unsigned char *page;
};

struct wb_run {
	struct zram *z;
	_Atomic(struct wb_req *) done;	/* pushed by completions, any thread */
	struct wb_req *idle;		/* free requests */
	unsigned int inflight;
	int err;			/* -EIO: a backing write failed */
	int stop;			/* why the run stopped early, or 0 */
	int64_t written;
};

static void write_end_io(struct bio *bio)
{
	struct wb_req *q = bio->bi_private;
	struct wb_run *run = q->run;
	struct zram__wb *wb = run->z->wb;

	q->status = atomic_load(&bio->bi_status);
	bio_put(bio);
	/*
	 * The run may see @q, finish and return as soon as it is pushed, and
	 * its caller may then destroy the device: so @q is pushed under
	 * done_lock, which the run takes once more before it returns, and
	 * nothing but that lock and its condition is touched after the push.
	 */
	zpool__mutex_lock(wb->done_lock);
	q->next = atomic_load_explicit(&run->done, memory_order_relaxed);
	while (!atomic_compare_exchange_weak_explicit(&run->done, &q->next, q,
						      memory_order_release,
						      memory_order_relaxed))
		;
	zpool__cond_broadcast(wb->done_cond);
	zpool__mutex_unlock(wb->done_lock);
}

static void refund(struct zram__wb *wb, struct wb_req *q)
{
	if (!q->charged)
		return;
	zpool__mutex_lock(wb->lock);
	wb->budget += UNITS_PER_PAGE;
	zpool__mutex_unlock(wb->lock);
	q->charged = false;
}

/*
 * The write of @q is done.  The page leaves memory only if the write
 * succeeded and nothing replaced it meanwhile (zram__slot_swap() clears
 * ZRAM_UNDER_WB) or read it: as in Linux, a page used while its write was
 * in flight is not the cold page it was chosen as, and stays.  Otherwise
 * the block and the budget go back (Linux charges only a page that moved)
 * and memory keeps the page.  Either way the run gives up its claim on the
 * slot, and its mark: this run set ZRAM_UNDER_WB, and no other can while
 * the claim is held, so a page read meanwhile would keep it and be
 * passed over by every tier until its next write.
 */
static void complete_req(struct wb_run *run, struct wb_req *q)
{
	struct zram *z = run->z;
	struct zram__wb *wb = z->wb;
	struct zram_slot *s = zram__slot_get(z, q->index, false);
	uint32_t f, old = 0;

	if (!q->status)
		atomic_fetch_add(&wb->bd_writes, 1);
	slot_lock(s);
	f = atomic_load_explicit(&s->flags, memory_order_relaxed);
	if (q->status || !(f & ZRAM_UNDER_WB) || slot_gen(f) != q->gen) {
		atomic_fetch_and_explicit(&s->flags, ~(ZRAM_UNDER_WB | ZRAM_WB_CLAIM),
					  memory_order_relaxed);
		block_release(wb, q->hblk);
		refund(wb, q);
		if (q->status) {
			atomic_fetch_add(&z->failed_writes, 1);
			run->err = -EIO;
		}
	} else {
		old = s->handle;
		s->handle = q->hblk;
		atomic_fetch_or_explicit(&s->flags, ZRAM_WB, memory_order_relaxed);
		atomic_fetch_and_explicit(&s->flags, ~(ZRAM_UNDER_WB | ZRAM_WB_CLAIM | ZRAM_IDLE),
					  memory_order_relaxed);
		atomic_fetch_add(&z->wb_pages, 1);
		run->written++;
	}
	slot_unlock(s);
	if (old)
		zpool_free(z->pool, old);
}

/* Complete what has finished; with @wait, wait for at least one. */
static void reap(struct wb_run *run, bool wait)
{
	struct wb_req *q;

	while (!(q = atomic_exchange_explicit(&run->done, NULL, memory_order_acquire))) {
		struct zram__wb *wb = run->z->wb;

		if (!wait)
			return;
		/* Checked under the lock the completion broadcasts under. */
		zpool__mutex_lock(wb->done_lock);
		while (!atomic_load_explicit(&run->done, memory_order_acquire))
			zpool__cond_wait(wb->done_cond, wb->done_lock);
		zpool__mutex_unlock(wb->done_lock);
	}
	while (q) {
		struct wb_req *next = q->next;

		complete_req(run, q);
		q->next = run->idle;
		run->idle = q;
		run->inflight--;
		q = next;
	}
}

static bool page_huge(struct zram *z, uint32_t flags, size_t size)
{
#ifdef ZRAM_HUGE
	if (flags & ZRAM_HUGE)
		return true;
#else
	(void)flags;
#endif
	return size > zpool_huge_class_size(z->pool);
}

static bool page_incompressible(uint32_t flags)
{
#ifdef ZRAM_INCOMPRESSIBLE
	return (flags & ZRAM_INCOMPRESSIBLE) != 0;
#else
	(void)flags;
	return false;
#endif
}

/* Under the slot's lock: is the page one @mode writes back? */
static bool wb_candidate(struct zram *z, struct zram_slot *s, enum zram_wb_mode mode)
{
	uint32_t f = atomic_load_explicit(&s->flags, memory_order_relaxed);
	size_t size;

	if (!s->handle || (f & (ZRAM_WB | ZRAM_UNDER_WB | ZRAM_WB_CLAIM)))
		return false;
	if ((mode & ZRAM_WB_IDLE) && !(f & ZRAM_IDLE))
		return false;
	size = zpool_obj_size(z->pool, s->handle);
	if (!size) /* same-filled: no zspage memory to free */
		return false;
	if ((mode & ZRAM_WB_HUGE) && !page_huge(z, f, size))
		return false;
	return !(mode & ZRAM_WB_INCOMPRESSIBLE) || page_incompressible(f);
}

/*
 * Under the slot's lock: is the page untouched since it was chosen (@gen),
 * and still one to write back?  If so, charge the budget, take a block,
 * copy the page out and mark the slot.  A page read or written since its
 * window was filled is passed over, as Linux passes over a slot accessed
 * since it was sorted: it is in use, and its place in the order was earned
 * by what it held then.
 * 0: @q is ready; 1: not this page; -EIO, -ENOSPC: stop.
 */
static int select_page(struct zram *z, struct zram_slot *s, enum zram_wb_mode mode,
		       uint32_t gen, struct wb_req *q)
{
	struct zram__wb *wb = z->wb;
	uint32_t f;
	int ret = 1;

	slot_lock(s);
	f = atomic_load_explicit(&s->flags, memory_order_relaxed);
	if (slot_gen(f) != gen || !wb_candidate(z, s, mode))
		goto out;
	zpool__mutex_lock(wb->lock);
	q->charged = false;
	if (wb->limit_enable) {
		if (wb->budget < UNITS_PER_PAGE) {
			ret = -EIO;
		} else {
			wb->budget -= UNITS_PER_PAGE;
			q->charged = true;
		}
	}
	if (ret > 0) {
		q->hblk = block_alloc(wb);
		if (!q->hblk)
			ret = -ENOSPC;
	}
	zpool__mutex_unlock(wb->lock);
	if (ret < 0) {
		refund(wb, q);
		goto out;
	}
	if (zpool_load(z->pool, s->handle, q->page)) {
		/* Corrupt: it stays where it is, for the reader to see the error. */
		atomic_fetch_add(&z->failed_reads, 1);
		block_release(wb, q->hblk);
		refund(wb, q);
		goto out;
	}
	atomic_fetch_or_explicit(&s->flags, ZRAM_UNDER_WB | ZRAM_WB_CLAIM, memory_order_relaxed);
	q->gen = gen;
	ret = 0;
out:
	slot_unlock(s);
	return ret;
}

/* Undo select_page() for a request whose bio could not be had. */
static void unselect(struct zram *z, struct wb_req *q)
{
	struct zram_slot *s = zram__slot_get(z, q->index, false);

	slot_lock(s);
	atomic_fetch_and_explicit(&s->flags, ~(ZRAM_UNDER_WB | ZRAM_WB_CLAIM),
				  memory_order_relaxed);
	slot_unlock(s);
	block_release(z->wb, q->hblk);
	refund(z->wb, q);
}

static int submit_write(struct wb_run *run, struct wb_req *q)
{
	struct zram *z = run->z;
	struct bio *bio = bio_alloc(z->wb->disk->part0, 1, REQ_OP_WRITE, GFP_NOIO);

	if (!bio) {
		unselect(z, q);
		return -ENOMEM;
	}
	bio->bi_iter.bi_sector = (sector_t)(q->hblk - 1) * SECTORS_PER_PAGE;
	bio_add_virt(bio, q->page, (unsigned int)ZP_PAGE_SIZE);
	bio->bi_end_io = write_end_io;
	bio->bi_private = q;
	run->idle = q->next;
	run->inflight++;
	submit_bio(bio);
	return 0;
}

static void run_free(struct wb_run *run)
{
	while (run->idle) {
		struct wb_req *q = run->idle;

		run->idle = q->next;
		zpool__os_free(q->raw);
		zpool__os_free(q);
	}
}

static int run_init(struct wb_run *run, struct zram *z)
{
	unsigned int i, n = atomic_load(&z->wb->batch);

	memset(run, 0, sizeof(*run));
	run->z = z;
	atomic_init(&run->done, NULL);
	for (i = 0; i < n; i++) {
		struct wb_req *q = zpool__os_zalloc(sizeof(*q));

		if (!q || !(q->page = page_alloc(&q->raw))) {
			zpool__os_free(q);
			if (i)
				break; /* fewer in flight, still correct */
			return -ENOMEM;
		}
		q->run = run;
		q->next = run->idle;
		run->idle = q;
	}
	return 0;
}

struct wb_window {
	struct zram__cand *v;
	size_t cap, n;
};

static void window_init(struct wb_window *w, struct zram *z, struct zram__cand *stack,
			uint64_t pages)
{
	size_t cap = (size_t)zpool__min(pages, atomic_load(&z->wb->window));

	w->n = 0;
	w->v = NULL;
	while (cap > WB_WINDOW_STACK && !(w->v = zpool__os_alloc(cap * sizeof(*w->v))))
		cap /= 2;
	if (!w->v) {
		w->v = stack;
		cap = (size_t)zpool__min(cap, WB_WINDOW_STACK);
	}
	w->cap = cap;
}

void zram__wb_set_window(struct zram *z, size_t n)
{
	atomic_store(&z->wb->window, n ? n : WB_WINDOW);
}

/*
 * The next window: the candidates from *@i on, until the window is full
 * or @end; *@i moves past the pages looked at.  Sorted largest first.
 */
static void window_fill(struct zram *z, enum zram_wb_mode mode, struct wb_window *w,
			uint64_t *i, uint64_t end)
{
	w->n = 0;
	for (; *i < end && w->n < w->cap; ++*i) {
		struct zram_slot *s = zram__slot_get(z, *i, false);

		if (!s) {
			/* No leaf: nothing stored up to the next one. */
			*i = (*i / SLOTS_PER_LEAF + 1) * SLOTS_PER_LEAF - 1;
			continue;
		}
		slot_lock(s);
		if (wb_candidate(z, s, mode))
			w->v[w->n++] = (struct zram__cand){
				*i, zram__page_bytes(z, s->handle),
				slot_gen(atomic_load_explicit(&s->flags, memory_order_relaxed)) };
		slot_unlock(s);
	}
	if (w->n > 1)
		qsort(w->v, w->n, sizeof(*w->v), zram__cand_cmp);
}

int64_t zram_writeback(struct zram *z, enum zram_wb_mode mode, uint64_t first, uint64_t count)
{
	struct zram__cand stack[WB_WINDOW_STACK];
	struct wb_window w;
	struct wb_run run;
	uint64_t end, i;
	size_t k;
	int ret;

	if (!z || (unsigned int)mode > ZRAM_WB_INCOMPRESSIBLE)
		return -EINVAL;
	zpool__read_lock(z->lock);
	if (!z->wb->disk) {
		zpool__rw_unlock(z->lock);
		return -ENODEV;
	}
	if (first >= z->nr_pages || !z->pool) {
		zpool__rw_unlock(z->lock);
		return -EINVAL;
	}
	ret = run_init(&run, z);
	if (ret) {
		zpool__rw_unlock(z->lock);
		return ret;
	}
	end = first + zpool__min(count, z->nr_pages - first);
	window_init(&w, z, stack, end - first);
	/*
	 * A backing write that fails (run.err = -EIO from its completion) does
	 * not end the run: the other pages are still tried, and the error is
	 * returned at the end.  What ends it is a page that cannot be selected
	 * (budget spent, disk full) or a bio that cannot be had.
	 */
	for (i = first; i < end && !run.stop;) {
		window_fill(z, mode, &w, &i, end);
		for (k = 0; k < w.n && !run.stop; k++) {
			/* Leaves go only with reset, which waits for this run. */
			struct zram_slot *s = zram__slot_get(z, w.v[k].index, false);

			for (;;) {
				reap(&run, !run.idle);
				run.idle->index = w.v[k].index;
				/* Changed since the window was filled: asked again. */
				ret = select_page(z, s, mode, w.v[k].gen, run.idle);
				if (ret >= 0 || !run.inflight)
					break;
				/*
				 * Writes in flight hold budget and blocks until
				 * they complete, and one that fails gives them
				 * back: only with none in flight is the budget
				 * spent or the disk full.
				 */
				reap(&run, true);
			}
			if (ret > 0)
				continue;
			if (!ret)
				ret = submit_write(&run, run.idle);
			if (ret)
				run.stop = ret;
		}
	}
	if (w.v != stack)
		zpool__os_free(w.v);
	while (run.inflight)
		reap(&run, true);
	/* The last completion may still be on its way out of done_lock. */
	zpool__mutex_lock(z->wb->done_lock);
	zpool__mutex_unlock(z->wb->done_lock);
	run_free(&run);
	zpool__rw_unlock(z->lock);
	/* Why it stopped says more than a failed write, which -EIO only says. */
	if (run.stop)
		return run.stop;
	return run.err ? run.err : run.written;
}

int zram_set_writeback_batch_size(struct zram *z, unsigned int n)
{
	if (!z || !n || n > WB_BATCH_MAX)
		return -EINVAL;
	atomic_store(&z->wb->batch, n);
	return 0;
}

unsigned int zram_writeback_batch_size(const struct zram *z)
{
	return z ? atomic_load(&z->wb->batch) : 0;
}

void zram_set_writeback_limit_enable(struct zram *z, bool enable)
{
	if (!z)
		return;
	zpool__mutex_lock(z->wb->lock);
	z->wb->limit_enable = enable;
	zpool__mutex_unlock(z->wb->lock);
}

void zram_set_writeback_limit(struct zram *z, uint64_t units)
{
	if (!z)
		return;
	zpool__mutex_lock(z->wb->lock);
	z->wb->budget = units;
	zpool__mutex_unlock(z->wb->lock);
}

uint64_t zram_writeback_limit(struct zram *z, bool *enabled)
{
	uint64_t units;

	if (!z) {
		if (enabled)
			*enabled = false;
		return 0;
	}
	zpool__mutex_lock(z->wb->lock);
	units = z->wb->budget;
	if (enabled)
		*enabled = z->wb->limit_enable;
	zpool__mutex_unlock(z->wb->lock);
	return units;
}

void zram_bd_stat(struct zram *z, struct zram_bd_stat *st)
{
	if (!z || !st)
		return;
	zpool__mutex_lock(z->wb->lock);
	st->bd_count = z->wb->nr_used * UNITS_PER_PAGE;
	zpool__mutex_unlock(z->wb->lock);
	st->bd_reads = atomic_load(&z->wb->bd_reads) * UNITS_PER_PAGE;
	st->bd_writes = atomic_load(&z->wb->bd_writes) * UNITS_PER_PAGE;
}

int zram_format_bd_stat(const struct zram_bd_stat *st, char *buf, size_t len)
{
	if (!st || (!buf && len))
		return -EINVAL;
	return snprintf(buf, len, "%8llu %8llu %8llu\n", (unsigned long long)st->bd_count,
			(unsigned long long)st->bd_reads, (unsigned long long)st->bd_writes);
}

/* Under the slot's lock. */
static unsigned int slot_bs_flags(struct zram *z, struct zram_slot *s)
{
	uint32_t f = atomic_load_explicit(&s->flags, memory_order_relaxed);
	unsigned int bs = 0;

	if (f & ZRAM_WB) {
		bs |= ZRAM_BS_WB;
	} else if (f & ZRAM_ZERO) {
		bs |= ZRAM_BS_SAME;
	} else if (z->pool) {
		size_t size = zpool_obj_size(z->pool, s->handle);

		if (!size)
			bs |= ZRAM_BS_SAME;
		else if (page_huge(z, f, size))
			bs |= ZRAM_BS_HUGE;
	}
	if (f & ZRAM_IDLE)
		bs |= ZRAM_BS_IDLE;
#ifdef ZRAM_RECOMP
	if (f & ZRAM_RECOMP)
		bs |= ZRAM_BS_RECOMP;
#endif
	if (page_incompressible(f))
		bs |= ZRAM_BS_INCOMPRESSIBLE;
	return bs;
}

int zram_block_state(struct zram *z, uint64_t *index, struct zram_block_state *st)
{
	uint64_t i;
	int ret = -ENOENT;

	if (!z || !index || !st)
		return -EINVAL;
	zpool__read_lock(z->lock);
	for (i = *index; i < z->nr_pages && ret; i++) {
		struct zram_slot *s = zram__slot_get(z, i, false);

		if (!s) {
			i = (i / SLOTS_PER_LEAF + 1) * SLOTS_PER_LEAF - 1;
			continue;
		}
		slot_lock(s);
		if (s->handle || (atomic_load_explicit(&s->flags, memory_order_relaxed) & ZRAM_ZERO)) {
			st->index = i;
			st->ac_time = s->ac_time;
			st->flags = slot_bs_flags(z, s);
			*index = i;
			ret = 0;
		}
		slot_unlock(s);
	}
	zpool__rw_unlock(z->lock);
	return ret;
}

int zram_format_block_state(const struct zram_block_state *st, char *buf, size_t len)
{
	static const char letters[] = "swhirn";
	char flags[7];
	unsigned int k;

	if (!st || (!buf && len))
		return -EINVAL;
	for (k = 0; k < 6; k++)
		flags[k] = st->flags & (1u << k) ? letters[k] : '.';
	flags[6] = 0;
	/* Linux prints seconds.microseconds; access times here are whole seconds. */
	return snprintf(buf, len, "%12llu %12lu.%06lu %s\n", (unsigned long long)st->index,
			(unsigned long)st->ac_time, 0ul, flags);
}

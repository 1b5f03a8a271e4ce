// SPDX-License-Identifier: MIT
/*
 * The allocator: zsmalloc's design (size classes 16 bytes apart, zspages of
 * 1 to N pages in which objects straddle page boundaries, merged classes, a
 * huge class, fullness groups, compaction), with four differences that
 * save memory on real data:
 *
 * - A zspage is one contiguous run from the page source, so an object that
 *   straddles pages is still contiguous: no copying on access.
 * - Slots are handed out in order before freed ones are reused, so with a
 *   demand-paged source only the pages holding a used slot are real and
 *   counted; a class's partly filled zspage costs at most one partial page.
 * - Objects carry no header.  Compaction finds the handles of the objects it
 *   moves by reading the handle table: one pass for every class together.
 * - Compaction also trims: in a zspage with holes, objects above the holes
 *   move down into them and the pages past the last object are discarded,
 *   so freed space is returned without emptying whole zspages.
 */
#include "internal.h"

static unsigned int size_index(size_t size)
{
	if (size <= ZP_MIN_OBJ)
		return 0;
	return (unsigned int)((size - ZP_MIN_OBJ + ZP_CLASS_DELTA - 1) / ZP_CLASS_DELTA);
}

/* Slot indices live in 16-bit fields of struct zspage, ZP_NO_SLOT apart. */
_Static_assert(ZP_MAX_SLOTS <= ZP_NO_SLOT, "slot indices fit struct zspage");
_Static_assert(ZP_MAX_CHAIN <= UINT8_MAX, "pages_touched holds a zspage's pages");

/*
 * The chain length that wastes least; ties go to the shorter chain.  A
 * chain with more slots than a handle entry can name is not a candidate:
 * that only rules out long chains of objects under 128 bytes (at 4 KiB
 * pages), which waste nothing at 16 pages already.
 */
static void class_geometry(unsigned int size, unsigned int max_chain,
			   unsigned int *pages, unsigned int *objs)
{
	uint64_t best_used = 0, best_bytes = 1;
	unsigned int n;

	*pages = 1;
	*objs = 1;
	for (n = 1; n <= max_chain; n++) {
		uint64_t bytes = n * ZP_PAGE_SIZE;
		uint64_t count = bytes / size;

		if (count > ZP_MAX_SLOTS)
			break;
		if (count * size * best_bytes > best_used * bytes) {
			best_used = count * size;
			best_bytes = bytes;
			*pages = n;
			*objs = (unsigned int)count;
		}
	}
}

int zpool__classes_init(struct zpool *pool)
{
	unsigned int pages[ZP_NR_CLASSES], objs[ZP_NR_CLASSES];
	unsigned int i, n = 0, distinct = 0;
	struct size_class *c = NULL;
	size_t bytes;

	/* From the largest size down: a class with the geometry of the one
	 * above it is merged into it, as zsmalloc does. */
	for (i = ZP_NR_CLASSES; i-- > 0;) {
		unsigned int size = ZP_MIN_OBJ + i * ZP_CLASS_DELTA;

		class_geometry(size, pool->max_chain, &pages[i], &objs[i]);
		if (objs[i] == 1)
			pages[i] = 1; /* huge: one raw object per page */
		if (i == ZP_NR_CLASSES - 1 || pages[i] != pages[i + 1] ||
		    objs[i] != objs[i + 1])
			distinct++;
	}
	bytes = distinct * sizeof(struct size_class);
	pool->class_storage = zpool__pages_alloc(pool, (bytes + ZP_PAGE_SIZE - 1) / ZP_PAGE_SIZE,
						 true);
	if (!pool->class_storage)
		return -ENOMEM;
	/*
	 * Kept, not recomputed from nr_distinct at the end: a lock that
	 * cannot be made leaves fewer classes than the storage was sized
	 * for, and the storage must still go back whole.
	 */
	pool->class_pages = (bytes + ZP_PAGE_SIZE - 1) / ZP_PAGE_SIZE;
	memset(pool->class_storage, 0, bytes);
	pool->huge_class_size = 0;
	for (i = ZP_NR_CLASSES; i-- > 0;) {
		if (!c || pages[i] != c->pages_per_zspage || objs[i] != c->objs_per_zspage) {
			c = &pool->class_storage[n];
			c->lock = zpool__rwlock_new();
			if (!c->lock) {
				pool->nr_distinct = n;
				return -ENOMEM;
			}
			c->size = ZP_MIN_OBJ + i * ZP_CLASS_DELTA;
			c->index = i;
			c->pages_per_zspage = pages[i];
			c->objs_per_zspage = objs[i];
			c->huge = objs[i] == 1;
			n++;
		}
		if (!c->huge && !pool->huge_class_size)
			pool->huge_class_size = c->size;
		pool->classes[i] = c;
	}
	pool->nr_distinct = n;
	return 0;
}

static void desc_free(struct zpool *pool, struct zspage *z);

/* Every zspage still held goes back; only at destroy, with no users left. */
void zpool__classes_destroy(struct zpool *pool)
{
	unsigned int i, g;

	for (i = 0; i < pool->nr_distinct; i++) {
		struct size_class *c = &pool->class_storage[i];

		for (g = 0; g < ZP_FULLNESS_GROUPS; g++)
			while (c->fullness[g]) {
				struct zspage *z = c->fullness[g];

				c->fullness[g] = z->next;
				pool->src.free(pool->src.ctx, z->mem,
					       c->pages_per_zspage * ZP_PAGE_SIZE);
				desc_free(pool, z); /* the last one frees its page */
			}
		zpool__rwlock_free(c->lock);
	}
	if (pool->class_storage)
		zpool__pages_free(pool, pool->class_storage, pool->class_pages, true);
}

struct size_class *zpool__class_for(struct zpool *pool, size_t size)
{
	return pool->classes[size_index(size)];
}

struct zspage *zpool__zspage(struct zpool *pool, uint32_t id)
{
	uint64_t v = atomic_load_explicit(zpool__table_slot(&pool->zspages, id),
					  memory_order_acquire);

	return (struct zspage *)(uintptr_t)v;
}

static unsigned int fullness_of(const struct size_class *c, const struct zspage *z)
{
	if (!z->inuse)
		return 0;
	if (z->inuse == c->objs_per_zspage)
		return ZP_FULLNESS_GROUPS - 1;
	return 1 + z->inuse * 10u / c->objs_per_zspage;
}

static void list_del(struct size_class *c, struct zspage *z)
{
	if (z->prev)
		z->prev->next = z->next;
	else
		c->fullness[z->fullness] = z->next;
	if (z->next)
		z->next->prev = z->prev;
	z->next = z->prev = NULL;
}

static void list_add(struct size_class *c, struct zspage *z, unsigned int g)
{
	z->fullness = (uint8_t)g;
	z->prev = NULL;
	z->next = c->fullness[g];
	if (z->next)
		z->next->prev = z;
	c->fullness[g] = z;
}

static void fix_fullness(struct size_class *c, struct zspage *z)
{
	unsigned int g = fullness_of(c, z);

	if (g != z->fullness) {
		list_del(c, z);
		list_add(c, z, g);
	}
}

/* zspage descriptors live in slab pages of their own, counted as metadata. */
_Static_assert(sizeof(struct zp_desc_page) <= sizeof(struct zspage), "header fits");
#define DESCS_PER_PAGE (ZP_PAGE_SIZE / sizeof(struct zspage) - 1)

static void desc_unlink(struct zpool *pool, struct zp_desc_page *p)
{
	if (p->prev)
		p->prev->next = p->next;
	else
		pool->desc_pages = p->next;
	if (p->next)
		p->next->prev = p->prev;
	p->next = p->prev = NULL;
}

static void desc_push_front(struct zpool *pool, struct zp_desc_page *p)
{
	p->prev = NULL;
	p->next = pool->desc_pages;
	if (p->next)
		p->next->prev = p;
	pool->desc_pages = p;
}

static struct zp_desc_page *desc_page_of(struct zspage *z)
{
	return (struct zp_desc_page *)(void *)((uintptr_t)z & ~(uintptr_t)(ZP_PAGE_SIZE - 1));
}

static struct zspage *desc_alloc(struct zpool *pool)
{
	struct zp_desc_page *p;
	struct zspage *z;

	zpool__mutex_lock(pool->desc_lock);
	p = pool->desc_pages;
	if (!p) {
		size_t i;

		p = zpool__pages_alloc(pool, 1, true);
		if (!p) {
			zpool__mutex_unlock(pool->desc_lock);
			return NULL;
		}
		z = (struct zspage *)(void *)((char *)p + sizeof(struct zspage));
		p->free = NULL;
		p->used = 0;
		for (i = DESCS_PER_PAGE; i-- > 0;) {
			z[i].next = p->free;
			p->free = &z[i];
		}
		desc_push_front(pool, p);
	}
	z = p->free;
	p->free = z->next;
	p->used++;
	/* Only pages with room are listed; a full one comes back on its first free. */
	if (!p->free)
		desc_unlink(pool, p);
	zpool__mutex_unlock(pool->desc_lock);
	memset(z, 0, sizeof(*z));
	return z;
}

static void desc_free(struct zpool *pool, struct zspage *z)
{
	struct zp_desc_page *p = desc_page_of(z);

	bool was_full;

	zpool__mutex_lock(pool->desc_lock);
	was_full = !p->free;
	z->next = p->free;
	p->free = z;
	if (!--p->used) {
		if (!was_full)
			desc_unlink(pool, p);
		zpool__pages_free(pool, p, 1, true);
	} else if (was_full) {
		desc_push_front(pool, p);
	}
	zpool__mutex_unlock(pool->desc_lock);
}

static void count_pages(struct zpool *pool, struct size_class *c, long delta)
{
	zpool__account(pool, delta, false);
	c->pages_used += (uint64_t)delta;
}

static struct zspage *zspage_new(struct zpool *pool, struct size_class *c)
{
	struct zspage *z = desc_alloc(pool);
	uint32_t id;

	if (!z)
		return NULL;
	z->mem = pool->src.alloc(pool->src.ctx, c->pages_per_zspage * ZP_PAGE_SIZE);
	if (!z->mem)
		goto fail_desc;
	id = zpool__table_alloc(pool, &pool->zspages, (uint64_t)(uintptr_t)z);
	if (!id)
		goto fail_mem;
	if (id >= (1ull << ZP_ZSPAGE_BITS)) {
		zpool__table_free(pool, &pool->zspages, id);
		goto fail_mem;
	}
	z->id = id;
	z->free_head = ZP_NO_SLOT;
	if (!pool->src.lazy) {
		z->pages_touched = (uint8_t)c->pages_per_zspage;
		count_pages(pool, c, c->pages_per_zspage);
	}
	c->zspages++;
	list_add(c, z, 0);
	return z;
fail_mem:
	pool->src.free(pool->src.ctx, z->mem, c->pages_per_zspage * ZP_PAGE_SIZE);
fail_desc:
	desc_free(pool, z);
	return NULL;
}

/* Give back a zspage that is on no fullness list. */
static void zspage_release(struct zpool *pool, struct size_class *c, struct zspage *z)
{
	count_pages(pool, c, -(long)z->pages_touched);
	pool->src.free(pool->src.ctx, z->mem, c->pages_per_zspage * ZP_PAGE_SIZE);
	zpool__table_free(pool, &pool->zspages, z->id);
	c->zspages--;
	desc_free(pool, z);
}

static void zspage_free(struct zpool *pool, struct size_class *c, struct zspage *z)
{
	list_del(c, z);
	zspage_release(pool, c, z);
}

static unsigned char *take_slot(struct zpool *pool, struct size_class *c,
				struct zspage *z, unsigned int *slot)
{
	unsigned char *p;

	if (z->free_head != ZP_NO_SLOT) {
		uint16_t next;

		*slot = z->free_head;
		p = zpool__obj_addr(c, z, *slot);
		memcpy(&next, p, sizeof(next));
		z->free_head = next;
	} else {
		*slot = z->bump++;
		p = zpool__obj_addr(c, z, *slot);
		if (pool->src.lazy) {
			/* Count the pages this slot makes real. */
			size_t end = (size_t)z->bump * c->size;
			unsigned int touched = (unsigned int)((end + ZP_PAGE_SIZE - 1) / ZP_PAGE_SIZE);

			if (touched > z->pages_touched) {
				count_pages(pool, c, (long)(touched - z->pages_touched));
				z->pages_touched = (uint8_t)touched;
			}
		}
	}
	z->inuse++;
	c->objs_used++;
	fix_fullness(c, z);
	return p;
}

/* The fullest zspage with room, so that sparse ones can empty out. */
static struct zspage *fullest_with_room(struct size_class *c)
{
	unsigned int g;

	for (g = ZP_FULLNESS_GROUPS - 1; g-- > 0;)
		if (c->fullness[g])
			return c->fullness[g];
	return NULL;
}

unsigned char *zpool__obj_alloc(struct zpool *pool, struct size_class *c,
				struct zspage **zsp, unsigned int *slot)
{
	struct zspage *z = fullest_with_room(c);

	if (!z) {
		z = zspage_new(pool, c);
		if (!z)
			return NULL;
	}
	*zsp = z;
	return take_slot(pool, c, z, slot);
}

void zpool__obj_free(struct zpool *pool, struct size_class *c,
		     struct zspage *z, unsigned int slot)
{
	uint16_t next = z->free_head;

	memcpy(zpool__obj_addr(c, z, slot), &next, sizeof(next));
	z->free_head = (uint16_t)slot;
	z->inuse--;
	c->objs_used--;
	if (!z->inuse && !z->compacting)
		zspage_free(pool, c, z);
	else if (!z->compacting)
		fix_fullness(c, z);
}

static void move_obj(struct size_class *c, _Atomic(uint64_t) *slotp, uint64_t e,
		     struct zspage *to, unsigned int new_slot, unsigned char *dst,
		     const unsigned char *src)
{
	memcpy(dst, src, c->size);
	atomic_store_explicit(slotp, zp_entry_obj(c->index, new_slot, zp_entry_len(e), to->id),
			      memory_order_release);
}

static unsigned int pages_for(const struct size_class *c, unsigned int slots)
{
	return (unsigned int)(((size_t)slots * c->size + ZP_PAGE_SIZE - 1) / ZP_PAGE_SIZE);
}

size_t zpool__obj_alloc_cost(struct zpool *pool, struct size_class *c)
{
	struct zspage *z = fullest_with_room(c);
	size_t cost;

	if (z) {
		unsigned int touched;

		if (z->free_head != ZP_NO_SLOT || !pool->src.lazy)
			return 0;
		touched = pages_for(c, z->bump + 1u);
		return touched > z->pages_touched ? touched - z->pages_touched : 0;
	}
	cost = pool->src.lazy ? pages_for(c, 1) : c->pages_per_zspage;
	zpool__mutex_lock(pool->desc_lock);
	if (!pool->desc_pages)
		cost++;
	zpool__mutex_unlock(pool->desc_lock);
	return cost + zpool__table_alloc_cost(&pool->zspages);
}

/*
 * Compaction is two passes over the whole pool, not scans per class: the
 * first empties the sparsest zspages of every class into the fullest, the
 * second packs each zspage with holes below its new end.  Objects carry no
 * header, so a pass finds the handles of what it moves by reading the
 * handle table, once for every class together, and stops as soon as
 * nothing is left to move.  Each class with work stays write-locked for
 * the pass; classes are locked in storage order, the one order in which
 * any thread holds two class locks.
 */
enum step { STEP_SKIP, STEP_MOVED, STEP_STUCK };

typedef enum step (*step_fn)(struct zpool *pool, struct size_class *c,
			     _Atomic(uint64_t) *slotp, uint64_t e);

struct compact_pass {
	struct zpool *pool;
	step_fn step;
	uint64_t pending;	/* objects left to move, all classes */
	uint64_t reads;		/* table entries read */
	uint64_t active[(ZP_NR_CLASSES + 63) / 64]; /* by storage index */
};

static void bit_set(uint64_t *map, size_t i)
{
	map[i / 64] |= (uint64_t)1 << (i % 64);
}

static bool bit_test(const uint64_t *map, size_t i)
{
	return map[i / 64] >> (i % 64) & 1;
}

static size_t class_nr(const struct zpool *pool, const struct size_class *c)
{
	return (size_t)(c - pool->class_storage);
}

static void pass_drop(struct compact_pass *p, struct size_class *c)
{
	size_t i = class_nr(p->pool, c);

	p->pending -= c->compact_pending;
	c->compact_pending = 0;
	p->active[i / 64] &= ~((uint64_t)1 << (i % 64));
}

static bool pass_visit(_Atomic(uint64_t) *slotp, uint64_t e, void *arg)
{
	struct compact_pass *p = arg;
	struct size_class *c;
	size_t i;

	p->reads++;
	if (zp_entry_tag(e) != ZP_TAG_OBJ)
		return true;
	c = p->pool->classes[zp_entry_class(e)];
	i = class_nr(p->pool, c);
	if (!bit_test(p->active, i))
		return true;
	switch (p->step(p->pool, c, slotp, e)) {
	case STEP_MOVED:
		p->pending--;
		if (!--c->compact_pending)
			pass_drop(p, c);
		break;
	case STEP_STUCK:
		pass_drop(p, c);
		break;
	case STEP_SKIP:
		break;
	}
	return p->pending > 0;
}

static void pass_run(struct compact_pass *p)
{
	if (p->pending)
		zpool__table_for_each(&p->pool->handles, pass_visit, p);
	atomic_fetch_add_explicit(&p->pool->compact_reads, p->reads, memory_order_relaxed);
}

/* Trimming: an object above its zspage's new end moves into a hole below. */
static enum step trim_one(struct zpool *pool, struct size_class *c,
			  _Atomic(uint64_t) *slotp, uint64_t e)
{
	struct zspage *z = zpool__zspage(pool, zp_entry_zspage(e));
	unsigned int slot = zp_entry_slot(e), hole;
	uint16_t next;

	if (z->compacting != ZP_TRIM || slot < z->trim_target)
		return STEP_SKIP;
	hole = z->free_head;
	memcpy(&next, zpool__obj_addr(c, z, hole), sizeof(next));
	z->free_head = next;
	move_obj(c, slotp, e, z, hole, zpool__obj_addr(c, z, hole),
		 zpool__obj_addr(c, z, slot));
	return STEP_MOVED;
}

/* Evacuation: an object in a source zspage moves to the fullest with room. */
static enum step evacuate_one(struct zpool *pool, struct size_class *c,
			      _Atomic(uint64_t) *slotp, uint64_t e)
{
	struct zspage *from = zpool__zspage(pool, zp_entry_zspage(e)), *to;
	unsigned int slot, new_slot;
	unsigned char *dst;

	if (from->compacting != ZP_EVACUATE)
		return STEP_SKIP;
	to = fullest_with_room(c);
	if (!to)
		return STEP_STUCK;
	slot = zp_entry_slot(e);
	dst = take_slot(pool, c, to, &new_slot);
	move_obj(c, slotp, e, to, new_slot, dst, zpool__obj_addr(c, from, slot));
	zpool__obj_free(pool, c, from, slot);
	return STEP_MOVED;
}

/*
 * A store is copying into @z with the class lock dropped (zpool.c).  Until
 * its handle is published a pass can neither see nor move the object, so a
 * trim would discard the page under the copy; once published, evacuation
 * could move it and free @z before the store drops its writer count, which
 * would then land in a freed or reused descriptor.  Compaction leaves such
 * a zspage for the next run.
 */
static bool being_written(struct zspage *z)
{
	return atomic_load_explicit(&z->writers, memory_order_acquire) != 0;
}

/*
 * Whether packing @z's objects into its lowest slots would free a page;
 * if so, keep on its free list only the holes those objects will fill
 * (the slots below the object count), mark it for trimming, and add the
 * objects that will move (one per hole kept) to *@moves.
 */
static bool trim_mark(struct size_class *c, struct zspage *z, uint64_t *moves)
{
	uint16_t s = z->free_head, kept = ZP_NO_SLOT;

	if (pages_for(c, z->inuse) >= z->pages_touched)
		return false;
	while (s != ZP_NO_SLOT) {
		unsigned char *p = zpool__obj_addr(c, z, s);
		uint16_t next;

		memcpy(&next, p, sizeof(next));
		if (s < z->inuse) {
			memcpy(p, &kept, sizeof(kept));
			kept = s;
			(*moves)++;
		}
		s = next;
	}
	z->free_head = kept;
	z->trim_target = z->inuse;
	z->compacting = ZP_TRIM;
	return true;
}

/* @z's objects are all below its target now: discard the pages past them. */
static size_t trim_discard_tail(struct zpool *pool, struct size_class *c, struct zspage *z)
{
	unsigned int keep = pages_for(c, z->trim_target);
	size_t freed = z->pages_touched - keep;

	z->compacting = 0;
	z->bump = z->trim_target;
	z->free_head = ZP_NO_SLOT;
	pool->src.discard(pool->src.ctx, z->mem + keep * ZP_PAGE_SIZE, freed * ZP_PAGE_SIZE);
	count_pages(pool, c, -(long)freed);
	z->pages_touched = (uint8_t)keep;
	return freed;
}

/*
 * Trimming plan for one class, under its write lock: mark each zspage
 * where packing would free a page.  Needs a source that can discard part
 * of a run.  Whether any zspage was marked.
 */
static bool trim_plan(struct zpool *pool, struct size_class *c)
{
	bool any = false;
	struct zspage *z;
	unsigned int g;

	c->compact_pending = 0;
	if (c->huge || !pool->src.lazy || !pool->src.discard)
		return false;
	for (g = 1; g < ZP_FULLNESS_GROUPS - 1; g++)
		for (z = c->fullness[g]; z; z = z->next)
			if (!being_written(z))
				any |= trim_mark(c, z, &c->compact_pending);
	return any;
}

/* After the trimming pass: discard the pages past each marked zspage's end. */
static size_t trim_finish(struct zpool *pool, struct size_class *c)
{
	size_t freed = 0;
	struct zspage *z;
	unsigned int g;

	for (g = 1; g < ZP_FULLNESS_GROUPS - 1; g++)
		for (z = c->fullness[g]; z; z = z->next)
			if (z->compacting == ZP_TRIM)
				freed += trim_discard_tail(pool, c, z);
	return freed;
}

/*
 * Evacuation plan for one class, under its write lock: sources are taken
 * from the emptiest zspages while the rest can absorb their objects; they
 * leave the fullness lists so no object is moved into them.  The sources,
 * linked through ->next, or NULL.
 */
static struct zspage *evacuate_plan(struct size_class *c)
{
	uint64_t free_slots = c->zspages * c->objs_per_zspage - c->objs_used;
	struct zspage *sources = NULL, *z, *next;
	unsigned int g;

	c->compact_pending = 0;
	if (c->huge || free_slots < c->objs_per_zspage)
		return NULL;
	for (g = 1; g < ZP_FULLNESS_GROUPS - 1; g++) {
		for (z = c->fullness[g]; z; z = next) {
			uint64_t own_free = c->objs_per_zspage - z->inuse;

			next = z->next;
			if (being_written(z))
				continue;
			/* Room elsewhere must hold this zspage's objects. */
			if (free_slots < own_free + z->inuse)
				return sources;
			free_slots -= own_free + z->inuse;
			list_del(c, z);
			z->compacting = ZP_EVACUATE;
			c->compact_pending += z->inuse;
			z->next = sources;
			sources = z;
		}
	}
	return sources;
}

/* After the evacuation pass: emptied sources go back, the rest are listed again. */
static size_t evacuate_finish(struct zpool *pool, struct size_class *c, struct zspage *sources)
{
	struct zspage *z, *next;
	size_t freed = 0;

	for (z = sources; z; z = next) {
		next = z->next;
		z->compacting = 0;
		z->next = z->prev = NULL;
		if (!z->inuse) {
			freed += z->pages_touched;
			zspage_release(pool, c, z);
		} else {
			list_add(c, z, fullness_of(c, z));
		}
	}
	return freed;
}

/*
 * Classes one compaction step holds write-locked at once: all of them,
 * except under ThreadSanitizer, whose deadlock detector aborts a thread
 * holding over 64 locks (zspages of up to 64 pages leave over 100 distinct
 * classes with work on real data).  There the step goes in batches, each
 * its own pass over the handle table; the code is the same either way.
 */
#ifndef __has_feature
#define __has_feature(x) 0
#endif
#if defined(__SANITIZE_THREAD__) || __has_feature(thread_sanitizer)
#define COMPACT_BATCH 48u
#else
#define COMPACT_BATCH ZP_NR_CLASSES
#endif

/*
 * One step (evacuation, or trimming when @trim) for the classes from
 * @first on, at most COMPACT_BATCH of them with work: plan and lock, one
 * pass, finish and unlock.  Adds the pages given back to *@freed; returns
 * the class the next batch starts at.
 */
static unsigned int compact_batch(struct zpool *pool, bool trim, unsigned int first,
				  size_t *freed)
{
	struct compact_pass p = { .pool = pool, .step = trim ? trim_one : evacuate_one };
	uint64_t held[(ZP_NR_CLASSES + 63) / 64] = { 0 };
	unsigned int i, end, n = 0;

	for (end = first; end < pool->nr_distinct && n < COMPACT_BATCH; end++) {
		struct size_class *c = &pool->class_storage[end];
		bool work;

		zpool__write_lock(c->lock);
		if (trim)
			work = trim_plan(pool, c);
		else
			work = (c->compact_sources = evacuate_plan(c)) != NULL;
		if (!work) {
			zpool__rw_unlock(c->lock);
			continue;
		}
		bit_set(held, end);
		n++;
		/* A zspage may be marked with nothing to move, only pages to discard. */
		p.pending += c->compact_pending;
		if (c->compact_pending)
			bit_set(p.active, end);
	}
	pass_run(&p);
	/* Only our bitmap says which classes we hold: another compaction may be
	 * planning the others. */
	for (i = first; i < end; i++) {
		struct size_class *c = &pool->class_storage[i];

		if (!bit_test(held, i))
			continue;
		if (trim)
			*freed += trim_finish(pool, c);
		else
			*freed += evacuate_finish(pool, c, c->compact_sources);
		c->compact_sources = NULL;
		c->compact_pending = 0;
		zpool__rw_unlock(c->lock);
	}
	return end;
}

size_t zpool__compact(struct zpool *pool)
{
	size_t freed = 0;
	unsigned int i;

	for (i = 0; i < pool->nr_distinct;)
		i = compact_batch(pool, false, i, &freed);
	for (i = 0; i < pool->nr_distinct;)
		i = compact_batch(pool, true, i, &freed);
	atomic_fetch_add(&pool->pages_compacted, freed);
	return freed;
}

size_t zpool_class_stats(struct zpool *pool, struct zpool_class_stats *out, size_t n)
{
	size_t i, filled = 0;

	if (!pool)
		return 0;
	/* Smallest size first, like zsmalloc's table. */
	for (i = pool->nr_distinct; i-- > 0 && out && filled < n; filled++) {
		struct size_class *c = &pool->class_storage[i];
		struct zpool_class_stats *o = &out[filled];

		zpool__read_lock(c->lock);
		o->size = c->size;
		o->objs_per_zspage = c->objs_per_zspage;
		o->pages_per_zspage = c->pages_per_zspage;
		o->zspages = c->zspages;
		o->objs_allocated = c->zspages * c->objs_per_zspage;
		o->objs_used = c->objs_used;
		o->pages_used = c->pages_used;
		o->huge = c->huge;
		zpool__rw_unlock(c->lock);
	}
	return pool->nr_distinct;
}

// SPDX-License-Identifier: MIT
/*
 * Recompression and algorithm parameters: secondary algorithms (priorities
 * 1..3) that rewrite stored pages smaller, per-priority levels and
 * dictionaries, and a dictionary trained on the pages stored now.
 *
 * Every object names the codec that wrote it (zpool.c), so a page reads
 * back whatever wrote it: a recompressed page, a page written before a new
 * dictionary, a page written back to disk by the writeback tier, which
 * reads it through zpool_load() like any other.  The device's settings live
 * in its pool, so zram_reset() forgets them, as Linux's reset does.
 */
#include <stdlib.h>

#include "zram_internal.h"

#define PRIO_MAX 3u

/* Sample at most this much for training: ZDICT's guide is 100 times the dictionary. */
#define TRAIN_MAX_BYTES ((size_t)32 << 20)
#define DICT_MAX ((size_t)1 << 20)

int zram_set_recomp_algorithm(struct zram *z, const char *name, unsigned int priority)
{
	int comp, level, ret;

	if (!z || !name || priority < 1 || priority > PRIO_MAX ||
	    zpool__comp_lookup(name, 0, &comp, &level))
		return -EINVAL;
	zpool__read_lock(z->lock);
	ret = z->pool ? zpool__codec_slot_set(z->pool, priority, comp, level, NULL, 0) : -ENODEV;
	zpool__rw_unlock(z->lock);
	return ret;
}

int zram_get_algorithm(struct zram *z, unsigned int priority, const char **name, int *level)
{
	int comp, lvl, ret;

	if (!z || priority > PRIO_MAX)
		return -EINVAL;
	zpool__read_lock(z->lock);
	ret = z->pool ? zpool__codec_slot_info(z->pool, priority, &comp, &lvl) : -ENODEV;
	zpool__rw_unlock(z->lock);
	if (ret)
		return ret;
	if (name)
		*name = zpool__comp_name(comp);
	if (level)
		*level = lvl;
	return 0;
}

/* With z->lock held: install @level and @dict for @priority's algorithm. */
static int set_params(struct zram *z, unsigned int priority, int level, const void *dict,
		      size_t len)
{
	int comp, cur, lvl, ret;

	if (!z->pool)
		return -ENODEV;
	ret = zpool__codec_slot_info(z->pool, priority, &comp, &cur);
	if (ret)
		return -EINVAL; /* no algorithm at that priority */
	if (zpool__comp_lookup(zpool__comp_name(comp), level, &comp, &lvl))
		return -EINVAL;
	return zpool__codec_slot_set(z->pool, priority, comp, lvl, dict, len);
}

int zram_set_algorithm_params(struct zram *z, unsigned int priority, int level,
			      const void *dict, size_t dict_len)
{
	int ret;

	if (!z || priority > PRIO_MAX || (dict_len && !dict) || dict_len > DICT_MAX)
		return -EINVAL;
	zpool__read_lock(z->lock);
	ret = set_params(z, priority, level, dict, dict_len);
	zpool__rw_unlock(z->lock);
	return ret;
}

/* Under the slot's lock: a page of the pool stored compressed or raw. */
static uint32_t pool_page(struct zram *z, struct zram_slot *s)
{
	uint32_t f = atomic_load_explicit(&s->flags, memory_order_relaxed);

	if (!s->handle || (f & ZRAM_TIER_FLAGS) || !zpool_obj_size(z->pool, s->handle))
		return 0;
	return s->handle;
}

struct train {
	uint64_t seen, stride, n, max;
	unsigned char *buf;
};

static void count_slot(struct zram *z, struct zram_slot *s, uint64_t index, void *arg)
{
	struct train *t = arg;

	(void)index;
	slot_lock(s);
	t->seen += pool_page(z, s) != 0;
	slot_unlock(s);
}

static void sample_slot(struct zram *z, struct zram_slot *s, uint64_t index, void *arg)
{
	struct train *t = arg;
	uint32_t h;

	(void)index;
	if (t->n == t->max)
		return;
	slot_lock(s);
	h = pool_page(z, s);
	if (h && t->seen++ % t->stride == 0 &&
	    !zpool_load(z->pool, h, t->buf + t->n * ZP_PAGE_SIZE))
		t->n++;
	slot_unlock(s);
}

int zram_train_dict(struct zram *z, unsigned int priority, size_t dict_size)
{
	struct train t = { 0, 1, 0, 0, NULL };
	unsigned char *dict = NULL;
	int comp, level, ret;

	if (!z || priority > PRIO_MAX || dict_size < 256 || dict_size > DICT_MAX)
		return -EINVAL;
	/* Training is zstd's ZDICT, whichever codec the dictionary serves. */
	if (!zpool_has_compressor("zstd"))
		return -EOPNOTSUPP;
	zpool__read_lock(z->lock);
	if (!z->pool) {
		ret = -ENODEV;
		goto out;
	}
	if (zpool__codec_slot_info(z->pool, priority, &comp, &level)) {
		ret = -EINVAL;
		goto out;
	}
	zram__slots_walk(z, count_slot, &t);
	if (!t.seen) {
		ret = -ENODATA;
		goto out;
	}
	/* An even spread over the disk, not its first pages only. */
	t.max = zpool__min(t.seen, zpool__min(TRAIN_MAX_BYTES, 100 * (uint64_t)dict_size) /
					   ZP_PAGE_SIZE + 1);
	t.stride = (t.seen + t.max - 1) / t.max;
	t.seen = 0;
	t.buf = zpool__os_alloc((size_t)t.max * ZP_PAGE_SIZE);
	dict = zpool__os_alloc(dict_size);
	if (!t.buf || !dict) {
		ret = -ENOMEM;
		goto out;
	}
	zram__slots_walk(z, sample_slot, &t);
	ret = t.n ? zpool__train_dict(t.buf, (size_t)t.n, dict, dict_size) : -ENODATA;
	if (ret > 0) {
		int r = zpool__codec_slot_set(z->pool, priority, comp, level, dict, (size_t)ret);

		if (r)
			ret = r;
	}
out:
	zpool__rw_unlock(z->lock);
	zpool__os_free(t.buf);
	zpool__os_free(dict);
	return ret;
}

struct scan {
	const struct zram_recompress_params *p;
	unsigned int hi;	/* the highest priority to try */
	unsigned int top;	/* the highest priority with an algorithm */
	unsigned int lo;	/* the lowest priority to try */
	bool multi;		/* ZPOOL_F_MULTI_PAGE: neighbours go together */
	unsigned char *buf;	/* a group's pages, decompressed */
	struct zram__cand run[ZP_GROUP_PAGES]; /* multi: neighbours not tried yet */
	unsigned int run_n;
	struct zram__cand *v;		/* otherwise: every page selected */
	size_t n, cap;
	uint64_t tries;
	int64_t done;
	int err;
};

static unsigned int slot_prio(uint32_t f)
{
	return f & ZRAM_RECOMP ? (f & ZRAM_PRIO_MASK) >> ZRAM_PRIO_SHIFT : 0;
}

/* Is the page one the call selects?  Its object's size, or 0. */
static uint32_t selected(struct zram *z, struct scan *sc, struct zram_slot *s)
{
	uint32_t f = atomic_load_explicit(&s->flags, memory_order_relaxed);
	size_t size;

	if (!pool_page(z, s) || (f & ZRAM_INCOMPRESSIBLE) || slot_prio(f) >= sc->hi)
		return 0;
	if ((sc->p->type == ZRAM_RECOMP_IDLE || sc->p->type == ZRAM_RECOMP_HUGE_IDLE) &&
	    !(f & ZRAM_IDLE))
		return 0;
	size = zram__page_bytes(z, s->handle);
	if ((sc->p->type == ZRAM_RECOMP_HUGE || sc->p->type == ZRAM_RECOMP_HUGE_IDLE) &&
	    size != ZP_PAGE_SIZE)
		return 0;
	if (size < sc->p->threshold)
		return 0;
	return (uint32_t)size;
}

/*
 * As Linux since 6.13: a page recompression has judged loses its idle
 * mark, shrunk or not, so that the mark a recompression pass made does not
 * also hand the page to writeback ("recompress after 4 hours" would
 * otherwise make "write back after 8 hours" take it).  Judged: tried alone,
 * or moved or condemned with its run, as Linux tries every page it reads.
 * A page of a group that its run could not move is not: nothing was
 * decided for it, it only waits for its neighbours, and clearing its mark
 * at every pass would keep it from writeback for as long as a neighbour
 * stays in use.  Its access time stays, so the next zram_idle_mark() of
 * its age marks it again.  Under the slot's lock.
 */
static void judged(struct zram_slot *s)
{
	atomic_fetch_and_explicit(&s->flags, ~ZRAM_IDLE, memory_order_relaxed);
}

/*
 * One page, under its slot's lock: try the priorities above the one that
 * wrote it, lowest first, and keep the first object that lands in a
 * smaller size class.  1 if recompressed, 0 if not, or -errno.
 */
static int recompress_one(struct zram *z, struct scan *sc, unsigned int lo,
			  const struct zram__cand *cd, void *page)
{
	struct zram_slot *s = zram__slot_get(z, cd->index, false);
	zpool_handle_t h, nh = 0;
	unsigned int prio, tried = 0;
	size_t cls;
	uint32_t f;
	int ret = 0, r;

	if (!s)
		return 0;
	slot_lock(s);
	f = atomic_load_explicit(&s->flags, memory_order_relaxed);
	/* Used, or written back, since the scan: not this one (as Linux). */
	if (slot_gen(f) != cd->gen || !selected(z, sc, s)) {
		slot_unlock(s);
		return 0;
	}
	/*
	 * A page of a group alone has no class of its own to beat.  Asked
	 * here, under the lock: compaction may have regrouped it since.
	 */
	h = s->handle;
	cls = zpool__obj_class_size(z->pool, h);
	if (!cls) {
		slot_unlock(s);
		return 0;
	}
	if (zpool_load(z->pool, h, page)) {
		slot_unlock(s); /* a corrupt page stays as it is, for its reader to see */
		return 0;
	}
	for (prio = lo > slot_prio(f) ? lo : slot_prio(f) + 1; prio <= sc->hi; prio++) {
		r = zpool__store_slot(z->pool, prio, page, cls, &nh);
		if (r == -ENOENT)
			continue; /* no algorithm at this priority */
		tried = prio;
		if (r <= 0) {
			ret = r ? r : 1;
			break;
		}
	}
	if (ret == 1) {
		s->handle = (uint32_t)nh;
		atomic_fetch_and_explicit(&s->flags, ~ZRAM_RECOMP_FLAGS, memory_order_relaxed);
		atomic_fetch_or_explicit(&s->flags, ZRAM_RECOMP | prio << ZRAM_PRIO_SHIFT,
					 memory_order_relaxed);
	} else if (!ret && tried == sc->top) {
		/* As Linux: only the last algorithm's failure condemns a page. */
		atomic_fetch_or_explicit(&s->flags, ZRAM_INCOMPRESSIBLE, memory_order_relaxed);
	}
	if (ret >= 0) /* a failed allocation changes nothing */
		judged(s);
	slot_unlock(s);
	if (ret == 1)
		zpool_free(z->pool, h);
	return ret;
}

/*
 * @nr (2..ZP_GROUP_PAGES) neighbouring pages of a multi-page pool, under
 * their slots' locks (taken in ascending order, as read_pages() does):
 * stored again with the priorities above the highest that wrote any of
 * them, grouped, and kept if the new group takes less memory than freeing
 * the old objects gives back.  A page alone in a group has no class of its
 * own to beat, and alone it would mostly come out larger than its share,
 * so pages written one at a time and groups are both rewritten as groups
 * here.  Returns the pages
 * recompressed, 0, or -errno.  A run that does not shrink as a whole is
 * marked incompressible, as a page is, unless a page of it would have
 * been kept raw: its caller tries those pages one at a time.
 */
static int recompress_run(struct zram *z, struct scan *sc, unsigned int lo,
			  const struct zram__cand *cd, unsigned int nr, unsigned char *buf)
{
	struct zram_slot *s[ZP_GROUP_PAGES];
	zpool_handle_t old[ZP_GROUP_PAGES], nh[ZP_GROUP_PAGES];
	unsigned int i, locked, prio, from = 0, low = 0, start, tried = 0;
	bool raw = false, shared, mine;
	uint32_t f;
	size_t was;
	int ret = 0, r;

	for (i = 0; i < nr; i++) {
		s[i] = zram__slot_get(z, cd[i].index, false);
		if (!s[i])
			return 0;
	}
	for (locked = 0; locked < nr; locked++) {
		slot_lock(s[locked]);
		f = atomic_load_explicit(&s[locked]->flags, memory_order_relaxed);
		/* Used, or written back, since the scan: not this run. */
		if (slot_gen(f) != cd[locked].gen || !selected(z, sc, s[locked])) {
			locked++;
			goto out;
		}
		old[locked] = s[locked]->handle;
		prio = slot_prio(f);
		from = prio > from ? prio : from;
		low = !locked || prio < low ? prio : low;
	}
	/* A corrupt page stays as it is, for its reader to see. */
	if (zpool_load_pages(z->pool, old, nr, buf))
		goto out;
	/*
	 * What the old objects give back if the run moves, not the run's
	 * shares of them: a group with pages outside the run stays, and a
	 * new group beside it would only add memory.
	 */
	was = zpool__pages_freed(z->pool, old, nr, &shared);
	start = lo > from ? lo : from + 1;
	for (prio = start; prio <= sc->hi; prio++) {
		r = zpool__store_pages_slot(z->pool, prio, buf, nr, nh);
		if (r == -ENOENT)
			continue; /* no algorithm at this priority */
		tried = prio;
		if (r < 0) {
			ret = r;
			break;
		}
		raw |= r == 1;
		if (!r && zpool__pages_freed(z->pool, nh, nr, &mine) < was) {
			ret = (int)nr;
			break;
		}
		for (i = 0; !r && i < nr; i++)
			zpool_free(z->pool, nh[i]);
	}
	for (i = 0; i < nr; i++) {
		if (ret > 0) {
			s[i]->handle = (uint32_t)nh[i];
			atomic_fetch_and_explicit(&s[i]->flags, ~ZRAM_RECOMP_FLAGS,
						  memory_order_relaxed);
			atomic_fetch_or_explicit(&s[i]->flags, ZRAM_RECOMP | prio << ZRAM_PRIO_SHIFT,
						 memory_order_relaxed);
			judged(s[i]);
		} else if (!ret && !raw && !shared && tried == sc->top &&
			   (lo > low ? lo : low + 1) == start) {
			/*
			 * Not when a group outside the run held it back (that
			 * may pass), nor when a page of a lower priority than
			 * the run's highest skipped the priorities between.
			 */
			atomic_fetch_or_explicit(&s[i]->flags, ZRAM_INCOMPRESSIBLE,
						 memory_order_relaxed);
			judged(s[i]);
		}
	}
out:
	while (locked--)
		slot_unlock(s[locked]);
	for (i = 0; ret > 0 && i < nr; i++)
		zpool_free(z->pool, old[i]);
	return ret;
}

/*
 * Try the pages of one candidate: recompress_one() each, or, in a
 * multi-page pool, the neighbours gathered in @sc->run together first.
 */
static void try_pages(struct zram *z, struct scan *sc, const struct zram__cand *cd,
		      unsigned int nr)
{
	unsigned int i;
	int ret;

	/* As Linux: a page tried counts against max_pages, shrunk or not. */
	sc->tries += nr;
	ret = nr > 1 ? recompress_run(z, sc, sc->lo, cd, nr, sc->buf) : 0;
	if (ret > 0)
		sc->done += ret;
	for (i = 0; !ret && i < nr; i++) {
		ret = recompress_one(z, sc, sc->lo, &cd[i], sc->buf);
		if (ret > 0)
			sc->done += ret;
		ret = ret < 0 ? ret : 0;
	}
	if (ret < 0)
		sc->err = ret;
}

static bool budget_left(const struct scan *sc, unsigned int more)
{
	return !sc->p->max_pages || sc->tries + more < sc->p->max_pages;
}

/*
 * A multi-page pool is recompressed as it is walked, in disk order, which
 * is where the neighbours are: no list of every page, and a run never
 * crosses an aligned group's pages, so that a group keeps covering the
 * pages that writes would give it.
 */
static void scan_slot(struct zram *z, struct zram_slot *s, uint64_t index, void *arg)
{
	struct scan *sc = arg;
	uint32_t size, gen;

	if (sc->err || (sc->multi && !budget_left(sc, 0)))
		return;
	slot_lock(s);
	size = selected(z, sc, s);
	gen = slot_gen(atomic_load_explicit(&s->flags, memory_order_relaxed));
	slot_unlock(s);
	if (!size)
		return;
	if (sc->multi) {
		if (sc->run_n && (index != sc->run[sc->run_n - 1].index + 1 ||
				  !(index % ZP_GROUP_PAGES))) {
			try_pages(z, sc, sc->run, sc->run_n);
			sc->run_n = 0;
			if (sc->err || !budget_left(sc, 0))
				return;
		}
		sc->run[sc->run_n++] = (struct zram__cand){ index, size, gen };
		if (sc->run_n == ZP_GROUP_PAGES || !budget_left(sc, sc->run_n)) {
			try_pages(z, sc, sc->run, sc->run_n);
			sc->run_n = 0;
		}
		return;
	}
	if (sc->n == sc->cap) {
		size_t cap = sc->cap ? sc->cap * 2 : 256;
		struct zram__cand *v = zpool__os_alloc(cap * sizeof(*v));

		if (!v) {
			sc->err = -ENOMEM;
			return;
		}
		if (sc->n)
			memcpy(v, sc->v, sc->n * sizeof(*v));
		zpool__os_free(sc->v);
		sc->v = v;
		sc->cap = cap;
	}
	sc->v[sc->n++] = (struct zram__cand){ index, size, gen };
}

/* The priorities to try: [*lo, *hi], or -EINVAL if none is usable. */
static int prio_range(struct zram *z, const struct zram_recompress_params *p,
		      unsigned int *lo, unsigned int *hi, unsigned int *top)
{
	unsigned int prio, found = 0;
	int comp, level;

	*lo = *hi = *top = 0;
	for (prio = 1; prio <= PRIO_MAX; prio++) {
		if (zpool__codec_slot_info(z->pool, prio, &comp, &level))
			continue;
		*top = prio;
		if (found && (p->algo || p->priority))
			continue; /* one algorithm only, as Linux's algo= and priority= */
		if (p->algo && strcmp(p->algo, zpool__comp_name(comp)))
			continue;
		if (p->priority && p->priority != prio)
			continue;
		if (!found++)
			*lo = prio;
		*hi = prio;
	}
	return found ? 0 : -EINVAL;
}

int64_t zram_recompress(struct zram *z, const struct zram_recompress_params *p)
{
	struct scan sc = { .p = p };
	size_t i;
	int ret;

	if (!z || !p || p->size != sizeof(*p) || (unsigned int)p->type > ZRAM_RECOMP_HUGE_IDLE ||
	    p->priority > PRIO_MAX)
		return -EINVAL;
	zpool__read_lock(z->lock);
	if (!z->pool) {
		ret = -ENODEV;
		goto out;
	}
	ret = prio_range(z, p, &sc.lo, &sc.hi, &sc.top);
	if (ret)
		goto out;
	sc.multi = z->pool_cfg.flags & ZPOOL_F_MULTI_PAGE;
	sc.buf = zpool__os_alloc((sc.multi ? ZP_GROUP_PAGES : 1) * ZP_PAGE_SIZE);
	if (!sc.buf) {
		ret = -ENOMEM;
		goto out;
	}
	zram__slots_walk(z, scan_slot, &sc);
	if (sc.run_n && !sc.err)
		try_pages(z, &sc, sc.run, sc.run_n);
	/* With no candidate sc.v is NULL, which qsort() may not be given. */
	if (sc.n && !sc.err)
		qsort(sc.v, sc.n, sizeof(*sc.v), zram__cand_cmp);
	for (i = 0; i < sc.n && !sc.err && budget_left(&sc, 0); i++)
		try_pages(z, &sc, &sc.v[i], 1);
	ret = sc.err;
	/* Freed objects leave holes in zspages: compaction turns them into memory. */
	if (sc.done)
		zpool_compact(z->pool);
out:
	zpool__rw_unlock(z->lock);
	zpool__os_free(sc.v);
	zpool__os_free(sc.buf);
	return ret < 0 && !sc.done ? ret : sc.done;
}

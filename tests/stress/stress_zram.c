// SPDX-License-Identifier: MIT
/*
 * stress_zram: one zram device under everything at once for -t seconds:
 * writers, readers, discarders and write-zeroes on overlapping, unaligned,
 * multi-segment bios, a compactor, mem_limit moved up and down, idle
 * marking and statistics.  Every sector a read returns is checked against
 * a model, and the program exits 1 on the first value the device could not
 * have held.
 *
 *   stress_zram [-t SECONDS] [-s SEED] [-p PAGES] [-m 0|1|2]
 *
 * -m 1 runs the device with ZPOOL_F_MULTI_PAGE, its bios up to two page
 * groups and more, so runs of whole pages are stored and read as groups
 * that overlapping bios cut at any page; -m 0 runs it without; the default,
 * -m 2, runs both, each for half the time.
 *
 * The meson test (suite "stress") runs it for 5 s; for a long run:
 *   build/gcc/tests/stress/stress_zram -t 3600
 *   TSAN_OPTIONS=halt_on_error=1 build/tsan/tests/stress/stress_zram -t 600
 *
 * The model.  Each write stamps every sector it writes with its own op id
 * (and the sector number; the rest of the sector is derived from both), so
 * a sector read back names the op that wrote it, or is all zeroes.  A
 * global counter orders events: an op takes a start tick before its bio is
 * submitted and an end tick after it completes, so its real effect lies
 * inside [start, end].  Per sector the model keeps the ops that touched it.
 * A read R that returns value v from sector s is accepted iff some op O on
 * s with value v (zeroes: any DISCARD or WRITE_ZEROES, or the initial
 * state) has O.start < R.end and was not superseded before R began, that
 * is, no op O' on s that certainly succeeded has O'.start > O.end and
 * O'.end < R.start.  This is exactly the set of values an atomic per-sector
 * register could return (the device is atomic per page, so per sector
 * too), so there are no false alarms and no stale or lost data goes
 * unnoticed.  An op that failed (mem_limit) may or may not have written
 * each of its sectors: it stays a candidate but supersedes nothing.
 * History is trimmed only of ops superseded before the start of every read
 * in flight or still to come.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libbvec/zram.h>

#define SECTOR 512u
#define PG ((size_t)BVEC_PAGE_SIZE)
#define SPP ((unsigned int)(PG / SECTOR)) /* sectors per page */
/* Pages ZPOOL_F_MULTI_PAGE compresses together: 32 KiB, at least 1. */
#define GROUP_PAGES ((unsigned int)(PG >= 32768 ? 1 : 32768 / PG))
/* The longest bio: 3 pages, or 2 groups and 1 page with ZPOOL_F_MULTI_PAGE. */
#define MAX_BIO_SECTORS ((2 * GROUP_PAGES + 1 > 3 ? 2 * GROUP_PAGES + 1 : 3) * SPP)
#define MAX_PIECES 4
#define NEVER UINT64_MAX
#define MAX_THREADS 16
#define NWRITERS 4 /* threads that store: writers and the discarder */

struct ent {
	uint64_t id;	/* 0 for zeroes */
	uint64_t start, end;
	bool certain;
};

struct hist {
	pthread_mutex_t lock;
	struct ent *e;
	unsigned int n, cap;
};

static struct zram *zram;
static struct hist *hist;
static unsigned int nsectors;
static bool multi;		/* this pass runs with ZPOOL_F_MULTI_PAGE */
static unsigned int max_bio;	/* sectors in a bio of this pass, at most */
static atomic_uint_fast64_t clk = 1;
static atomic_uint_fast64_t next_id = 1;
static atomic_uint_fast64_t read_floor[MAX_THREADS]; /* 0: no read in flight */
static atomic_int stop, failed;
static atomic_uint_fast64_t n_writes, n_write_fail, n_reads, n_sectors_checked,
	n_discards, n_discard_fail, n_compact, n_limit, n_idle;

struct rng {
	uint64_t s;
};

static uint64_t rng_next(struct rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 2685821657736338717ull;
}

static unsigned int rng_below(struct rng *r, unsigned int n)
{
	return (unsigned int)(rng_next(r) % n);
}

static void put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Sector @sector as op @id writes it; every fourth op writes compressibly. */
static void stamp(unsigned char *p, uint64_t id, uint64_t sector)
{
	struct rng r = { (id * 0x9e3779b97f4a7c15ull) ^ (sector + 1) };
	unsigned int i;

	put64(p, id);
	put64(p + 8, sector);
	/* With groups, three ops in four: groups form only of such pages. */
	if (id % 4 == 0 || (multi && id % 4 != 3)) {
		memset(p + 16, (int)(id & 0x7f) | 1, SECTOR - 16);
		return;
	}
	for (i = 16; i < SECTOR; i += 8) {
		uint64_t v = rng_next(&r);

		memcpy(p + i, &v, 8);
	}
}

static bool is_zero(const unsigned char *p)
{
	return !p[0] && !memcmp(p, p + 1, SECTOR - 1);
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "stress_zram: FAIL: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	atomic_store(&failed, 1);
	atomic_store(&stop, 1);
}

static uint64_t tick(void)
{
	return atomic_fetch_add(&clk, 1);
}

/* No read in flight or to come started before this: see the DOC above. */
static uint64_t trim_threshold(void)
{
	uint64_t t = atomic_load(&clk);
	unsigned int i;

	for (i = 0; i < MAX_THREADS; i++) {
		uint64_t f = atomic_load(&read_floor[i]);

		if (f && f < t)
			t = f;
	}
	return t;
}

static bool superseded(const struct hist *h, const struct ent *o, uint64_t before)
{
	unsigned int i;

	if (o->end == NEVER)
		return false;
	for (i = 0; i < h->n; i++) {
		const struct ent *x = &h->e[i];

		if (x->certain && x->end != NEVER && x->start > o->end && x->end < before)
			return true;
	}
	return false;
}

static void trim(struct hist *h, uint64_t thr)
{
	unsigned int i = 0;

	while (i < h->n) {
		if (superseded(h, &h->e[i], thr))
			h->e[i] = h->e[--h->n];
		else
			i++;
	}
}

static void hist_add(struct hist *h, const struct ent *e)
{
	if (h->n == h->cap) {
		unsigned int cap = h->cap ? 2 * h->cap : 8;
		struct ent *n = realloc(h->e, cap * sizeof(*n));

		if (!n) {
			fprintf(stderr, "stress_zram: out of memory\n");
			exit(2);
		}
		h->e = n;
		h->cap = cap;
	}
	h->e[h->n++] = *e;
}

/* A mutating op over [first, first + count): before submission. */
static uint64_t op_begin(uint64_t id, unsigned int first, unsigned int count)
{
	struct ent e = { id, tick(), NEVER, false };
	unsigned int s;

	for (s = first; s < first + count; s++) {
		pthread_mutex_lock(&hist[s].lock);
		hist_add(&hist[s], &e);
		pthread_mutex_unlock(&hist[s].lock);
	}
	return e.start;
}

static void op_end(uint64_t id, uint64_t start, unsigned int first, unsigned int count,
		   bool ok)
{
	uint64_t end = tick(), thr = trim_threshold();
	unsigned int s, i;

	for (s = first; s < first + count; s++) {
		struct hist *h = &hist[s];

		pthread_mutex_lock(&h->lock);
		for (i = 0; i < h->n; i++)
			if (h->e[i].id == id && h->e[i].start == start) {
				h->e[i].end = end;
				h->e[i].certain = ok;
			}
		trim(h, thr);
		pthread_mutex_unlock(&h->lock);
	}
}

/* Is @p, read from sector @s by a read over [rs, re], a value it may hold? */
static void check_sector(const unsigned char *p, unsigned int s, uint64_t rs, uint64_t re)
{
	static _Thread_local unsigned char want[SECTOR];
	uint64_t id = 0;
	struct hist *h = &hist[s];
	bool ok = false;
	unsigned int i;

	if (!is_zero(p)) {
		id = get64(p);
		if (!id || get64(p + 8) != s) {
			fail("sector %u: garbage (id %" PRIu64 ", sector field %" PRIu64 ")", s, id,
			     get64(p + 8));
			return;
		}
		stamp(want, id, s);
		if (memcmp(want, p, SECTOR)) {
			fail("sector %u: op %" PRIu64 "'s data corrupted", s, id);
			return;
		}
	}
	pthread_mutex_lock(&h->lock);
	for (i = 0; i < h->n && !ok; i++) {
		const struct ent *o = &h->e[i];

		ok = o->id == id && o->start < re && !superseded(h, o, rs);
	}
	pthread_mutex_unlock(&h->lock);
	atomic_fetch_add(&n_sectors_checked, 1);
	if (!ok)
		fail("sector %u: %s op %" PRIu64 " (read over ticks %" PRIu64 "-%" PRIu64
		     "): no op that could still be there left that", s,
		     id ? "data of" : "zeroes, by", id, rs, re);
}

/* A DISCARD or WRITE_ZEROES: no data, only a size. */
static int submit_nodata(blk_opf_t op, unsigned int sector, unsigned int len)
{
	struct bio bio;

	bio_init(&bio, zram_disk(zram)->part0, NULL, 0, op);
	bio.bi_iter.bi_sector = sector;
	bio.bi_iter.bi_size = len;
	return submit_bio_wait(&bio);
}

static void pick_range(struct rng *r, unsigned int max, unsigned int *first,
		       unsigned int *count)
{
	*count = 1 + rng_below(r, max);
	if (*count > nsectors)
		*count = nsectors;
	*first = rng_below(r, nsectors - *count + 1);
}

struct worker {
	pthread_t t;
	unsigned int slot;
	uint64_t seed;
};

/* Flat buffer -> gapped buffer as submit() will cut it (cuts chosen first). */
struct layout {
	unsigned int n;
	unsigned int len[MAX_PIECES];
	unsigned int at[MAX_PIECES];
};

/*
 * Pieces are whole sectors at odd addresses.  A piece boundary inside a
 * sector would make zram (like Linux's) write that sector in two steps, and
 * a racing write to it could land between them: a torn sector, which no
 * block device promises to prevent for overlapping concurrent writes and
 * which the model, atomic per sector, would report.
 */
static void make_layout(struct rng *r, unsigned int len, struct layout *l)
{
	unsigned int n = 1 + rng_below(r, MAX_PIECES), i, done = 0, pos = 1 + rng_below(r, 7);

	l->n = 0;
	for (i = 0; i < n && done < len; i++) {
		unsigned int left = (len - done) / SECTOR;
		unsigned int k = SECTOR * (i == n - 1 ? left : 1 + rng_below(r, left));

		l->len[l->n] = k;
		l->at[l->n] = pos;
		l->n++;
		pos += k + 1 + rng_below(r, 5);
		done += k;
	}
}

static int submit_layout(blk_opf_t op, unsigned int sector, unsigned char *mem,
			 const struct layout *l)
{
	struct bio_vec table[MAX_PIECES];
	struct bio bio;
	unsigned int i;

	bio_init(&bio, zram_disk(zram)->part0, table, MAX_PIECES, op);
	bio.bi_iter.bi_sector = sector;
	for (i = 0; i < l->n; i++)
		bio_add_virt(&bio, mem + l->at[i], l->len[i]);
	return submit_bio_wait(&bio);
}

static void scatter(unsigned char *dst, const unsigned char *flat, const struct layout *l)
{
	unsigned int i, done = 0;

	for (i = 0; i < l->n; i++) {
		memcpy(dst + l->at[i], flat + done, l->len[i]);
		done += l->len[i];
	}
}

static void gather(unsigned char *flat, const unsigned char *src, const struct layout *l)
{
	unsigned int i, done = 0;

	for (i = 0; i < l->n; i++) {
		memcpy(flat + done, src + l->at[i], l->len[i]);
		done += l->len[i];
	}
}

#define BUF_BYTES (MAX_BIO_SECTORS * SECTOR + 64)

static void *writer(void *arg)
{
	struct worker *w = arg;
	struct rng r = { w->seed };
	unsigned char *flat = malloc(BUF_BYTES), *mem = malloc(BUF_BYTES);
	struct layout l;

	while (!atomic_load(&stop)) {
		unsigned int first, count, s;
		uint64_t id = atomic_fetch_add(&next_id, 1), start;
		int ret;

		pick_range(&r, max_bio, &first, &count);
		for (s = 0; s < count; s++)
			stamp(flat + s * SECTOR, id, first + s);
		make_layout(&r, count * SECTOR, &l);
		scatter(mem, flat, &l);
		start = op_begin(id, first, count);
		ret = submit_layout(REQ_OP_WRITE, first, mem, &l);
		if (ret && ret != -EIO)
			fail("write at sector %u: status %d", first, ret);
		op_end(id, start, first, count, ret == 0);
		atomic_fetch_add(&n_writes, 1);
		if (ret)
			atomic_fetch_add(&n_write_fail, 1);
	}
	free(flat);
	free(mem);
	return NULL;
}

static void read_check(struct rng *r, unsigned int slot, unsigned int first, unsigned int count,
		       unsigned char *flat, unsigned char *mem)
{
	struct layout l;
	uint64_t rs, re;
	unsigned int s;
	int ret;

	make_layout(r, count * SECTOR, &l);
	/* Published before the start tick is taken: trimming then spares us. */
	atomic_store(&read_floor[slot], atomic_load(&clk));
	rs = tick();
	ret = submit_layout(REQ_OP_READ, first, mem, &l);
	re = tick();
	if (ret) {
		fail("read at sector %u: status %d", first, ret);
	} else {
		gather(flat, mem, &l);
		for (s = 0; s < count && !atomic_load(&failed); s++)
			check_sector(flat + s * SECTOR, first + s, rs, re);
	}
	atomic_store(&read_floor[slot], 0);
	atomic_fetch_add(&n_reads, 1);
}

static void *reader(void *arg)
{
	struct worker *w = arg;
	struct rng r = { w->seed };
	unsigned char *flat = malloc(BUF_BYTES), *mem = malloc(BUF_BYTES);

	while (!atomic_load(&stop)) {
		unsigned int first, count;

		pick_range(&r, max_bio, &first, &count);
		read_check(&r, w->slot, first, count, flat, mem);
	}
	free(flat);
	free(mem);
	return NULL;
}

static void *discarder(void *arg)
{
	struct worker *w = arg;
	struct rng r = { w->seed };

	while (!atomic_load(&stop)) {
		unsigned int first, count;
		blk_opf_t op = rng_below(&r, 2) ? REQ_OP_DISCARD : REQ_OP_WRITE_ZEROES;
		uint64_t start;
		int ret;

		/* Mostly short ranges with ragged edges; now and then a long one. */
		pick_range(&r, rng_below(&r, 8) ? max_bio : nsectors / 2, &first, &count);
		start = op_begin(0, first, count);
		ret = submit_nodata(op, first, count * SECTOR);
		if (ret && ret != -EIO)
			fail("discard at sector %u: status %d", first, ret);
		op_end(0, start, first, count, ret == 0);
		atomic_fetch_add(&n_discards, 1);
		if (ret)
			atomic_fetch_add(&n_discard_fail, 1);
		usleep(200);
	}
	return NULL;
}

static void *compactor(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		zram_compact(zram);
		atomic_fetch_add(&n_compact, 1);
		usleep(2000);
	}
	return NULL;
}

/* mem_limit up and down: mostly none, sometimes below what is in use. */
static void *limiter(void *arg)
{
	struct worker *w = arg;
	struct rng r = { w->seed };
	const unsigned int extra = NWRITERS * (multi ? GROUP_PAGES : 1);
	struct zpool_stats ms;
	struct zram_io_stat io;
	char text[256];

	while (!atomic_load(&stop)) {
		zram_mm_stat(zram, &ms);
		zram_io_stat(zram, &io);
		zram_format_mm_stat(&ms, text, sizeof(text));
		/*
		 * A write stores its page before freeing the old: one extra
		 * each, a group's worth with groups.
		 */
		if (ms.orig_data_size > (uint64_t)(nsectors / SPP + extra) * PG)
			fail("orig_data_size %" PRIu64 " over the disk's %u pages and %u in flight",
			     ms.orig_data_size, nsectors / SPP, extra);
		if (rng_below(&r, 10) < 8)
			zram_set_mem_limit(zram, 0);
		else
			zram_set_mem_limit(zram, ms.mem_used_total * 3 / 4 +
					   rng_below(&r, (unsigned int)(ms.mem_used_total / 2 + 1)));
		atomic_fetch_add(&n_limit, 1);
		usleep(3000 + rng_below(&r, 5000));
	}
	zram_set_mem_limit(zram, 0);
	return NULL;
}

static void *idler(void *arg)
{
	struct worker *w = arg;
	struct rng r = { w->seed };

	while (!atomic_load(&stop)) {
		uint64_t marked = zram_idle_mark(zram, rng_below(&r, 2));

		if (marked > nsectors / SPP + 1)
			fail("%" PRIu64 " pages marked idle on a %u-page disk", marked,
			     nsectors / SPP);
		zram_idle_pages(zram);
		atomic_fetch_add(&n_idle, 1);
		usleep(4000);
	}
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One pass of @seconds on a new device of @pages; 0 if every check held. */
static int run(unsigned int pages, unsigned int seconds, uint64_t seed, bool with_groups)
{
	static void *(*const roles[])(void *) = { writer, writer, writer, reader, reader,
						  discarder, compactor, limiter, idler };
	enum { NROLES = sizeof(roles) / sizeof(roles[0]) };
	struct worker w[NROLES];
	struct zram_config cfg = ZRAM_CONFIG_INIT;
	unsigned char *flat, *mem;
	unsigned int i;
	struct rng r;
	double t0;

	multi = with_groups;
	max_bio = multi ? MAX_BIO_SECTORS : 3 * SPP;
	atomic_store(&stop, 0);
	n_writes = n_write_fail = n_reads = n_sectors_checked = n_discards = n_discard_fail = 0;
	n_compact = n_limit = n_idle = 0;
	nsectors = pages * SPP;
	hist = calloc(nsectors, sizeof(*hist));
	if (!hist)
		return 2;
	for (i = 0; i < nsectors; i++) {
		struct ent e = { 0, 0, 0, true }; /* the initial zeroes */

		pthread_mutex_init(&hist[i].lock, NULL);
		hist_add(&hist[i], &e);
	}
	cfg.disksize = (uint64_t)pages * PG;
	cfg.pool.flags = ZPOOL_F_CHECKSUM | (multi ? ZPOOL_F_MULTI_PAGE : 0);
	cfg.pool.max_pages_per_zspage = 4; /* more zspages, more compaction */
	zram = zram_create(&cfg);
	if (!zram) {
		perror("stress_zram: zram_create");
		return 2;
	}
	printf("stress_zram: %u s, seed %" PRIu64 ", %u pages of %zu bytes, %u threads%s\n",
	       seconds, seed, pages, PG, (unsigned int)NROLES,
	       multi ? ", ZPOOL_F_MULTI_PAGE" : "");
	fflush(stdout);
	t0 = now();
	for (i = 0; i < NROLES; i++) {
		w[i].slot = i;
		w[i].seed = seed * 1000003 + i + 1;
		if (pthread_create(&w[i].t, NULL, roles[i], &w[i])) {
			perror("stress_zram: pthread_create");
			return 2;
		}
	}
	while (!atomic_load(&stop) && now() - t0 < seconds)
		usleep(20000);
	atomic_store(&stop, 1);
	for (i = 0; i < NROLES; i++)
		pthread_join(w[i].t, NULL);

	/* Quiet now: every sector must hold what the last op left. */
	flat = malloc(BUF_BYTES);
	mem = malloc(BUF_BYTES);
	r.s = seed + 7;
	for (i = 0; i < nsectors && !atomic_load(&failed); i += max_bio)
		read_check(&r, 0, i, nsectors - i < max_bio ? nsectors - i : max_bio, flat, mem);
	free(flat);
	free(mem);

	printf("stress_zram: %.1f s: %llu writes (%llu refused), %llu reads, %llu sectors "
	       "checked, %llu discards (%llu refused), %llu compactions, %llu limit changes, "
	       "%llu idle scans\n",
	       now() - t0, (unsigned long long)n_writes, (unsigned long long)n_write_fail,
	       (unsigned long long)n_reads, (unsigned long long)n_sectors_checked,
	       (unsigned long long)n_discards, (unsigned long long)n_discard_fail,
	       (unsigned long long)n_compact, (unsigned long long)n_limit,
	       (unsigned long long)n_idle);
	zram_destroy(zram);
	for (i = 0; i < nsectors; i++) {
		pthread_mutex_destroy(&hist[i].lock);
		free(hist[i].e);
	}
	free(hist);
	if (atomic_load(&failed)) {
		printf("stress_zram: FAILED (seed %" PRIu64 "%s)\n", seed, multi ? ", -m 1" : "");
		return 1;
	}
	if (!n_sectors_checked || !n_writes) {
		printf("stress_zram: FAILED: nothing was checked\n");
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	unsigned int seconds = 5, pages = 48, mode = 2;
	uint64_t seed = (uint64_t)time(NULL);
	int opt, ret;

	while ((opt = getopt(argc, argv, "t:s:p:m:")) != -1) {
		switch (opt) {
		case 't':
			seconds = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 's':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 'p':
			pages = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'm':
			mode = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr, "usage: %s [-t SECONDS] [-s SEED] [-p PAGES] [-m 0|1|2]\n",
				argv[0]);
			return 2;
		}
	}
	if (pages < 4 || pages > 1u << 16) {
		fprintf(stderr, "stress_zram: -p takes 4 to 65536 pages\n");
		return 2;
	}
	if (mode > 2) {
		fprintf(stderr, "stress_zram: -m takes 0, 1 or 2\n");
		return 2;
	}
	if (mode == 2) {
		ret = run(pages, (seconds + 1) / 2, seed, false);
		if (!ret)
			ret = run(pages, seconds / 2 ? seconds / 2 : 1, seed, true);
	} else {
		ret = run(pages, seconds, seed, mode == 1);
	}
	if (!ret)
		printf("stress_zram: passed\n");
	return ret;
}

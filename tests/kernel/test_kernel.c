// SPDX-License-Identifier: MIT
/*
 * The kernel-style drivers of this directory, driven through submit_bio():
 * every bio the block layer must filter (flushes with and without a write
 * cache, FUA, unsupported operations, misaligned and past-the-end bios)
 * completes without reaching them, their data matches a flat model, and
 * their bio_start_io_acct() accounting adds up.  Also the small kernel.h
 * and linux.h pieces they use.
 */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "drivers.h"

/* The build's page size must be testable by the preprocessor. */
#if PAGE_SIZE != (1 << PAGE_SHIFT) || PAGE_SECTORS != (PAGE_SIZE >> SECTOR_SHIFT)
#error "PAGE_SIZE is not a preprocessor constant"
#endif

/* xorshift64*: a failing run replays from its seed. */
static u64 rng_state;

static u64 rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

static unsigned int rounds(unsigned int n)
{
	const char *s = getenv("BVEC_TEST_SCALE");

	return s && !strcmp(s, "small") ? n / 10 : n;
}

/* One bio of @opf over @len bytes at @buf (NULL: no memory) to @sector. */
static int do_io(struct gendisk *disk, blk_opf_t opf, sector_t sector, void *buf,
		 unsigned int len)
{
	struct bio *bio = bio_alloc(disk->part0, 1, opf, GFP_KERNEL);
	int ret;

	ck_assert_ptr_nonnull(bio);
	bio->bi_iter.bi_sector = sector;
	if (buf)
		ck_assert_int_eq(bio_add_virt(bio, buf, len), (int)len);
	else
		bio->bi_iter.bi_size = len;
	ret = submit_bio_wait(bio);
	bio_put(bio);
	return ret;
}

static struct bvec_disk_stat stat_of(struct gendisk *disk)
{
	struct bvec_disk_stat st;

	ck_assert_int_eq(bvec_disk_stat(disk, &st), 0);
	return st;
}

/* Zero, in the model, the pages a whole-page discard of the range frees. */
static void model_discard(u8 *model, sector_t sector, unsigned int len)
{
	u64 start = round_up((u64)sector << SECTOR_SHIFT, (u64)PAGE_SIZE);
	u64 end = ((u64)sector << SECTOR_SHIFT) + len;

	for (; start + PAGE_SIZE <= end; start += PAGE_SIZE)
		memset(model + start, 0, PAGE_SIZE);
}

START_TEST(test_kernel_pieces)
{
	atomic_t a = ATOMIC_INIT(1);
	atomic64_t b = ATOMIC64_INIT(0);
	sector_t n = 1000003;
	struct page *page;
	struct queue_limits bad = { .logical_block_size = 1000 };
	struct gendisk *disk;
	u8 *mem;
	size_t i;

	ck_assert_uint_eq(BIT(3), 8);
	ck_assert_uint_eq(BIT_ULL(40), 1ULL << 40);
	ck_assert_uint_eq(sector_div(n, 1000), 3);
	ck_assert_uint_eq(n, 1000);
	ck_assert_uint_eq(PAGE_SIZE, BVEC_PAGE_SIZE);
	ck_assert_uint_eq(PAGE_SECTORS << PAGE_SECTORS_SHIFT << SECTOR_SHIFT, PAGE_SIZE * PAGE_SECTORS);

	ck_assert(IS_ERR(ERR_PTR(-EINVAL)));
	ck_assert_int_eq(PTR_ERR(ERR_PTR(-ENOMEM)), -ENOMEM);
	ck_assert(!IS_ERR(&a));
	ck_assert(IS_ERR_OR_NULL(NULL));
	ck_assert_int_eq(PTR_ERR_OR_ZERO(&a), 0);

	atomic_inc(&a);
	atomic_add(5, &a);
	atomic_sub(2, &a);
	atomic_dec(&a);
	ck_assert_int_eq(atomic_read(&a), 4);
	ck_assert_int_eq(atomic_inc_return(&a), 5);
	ck_assert_int_eq(atomic_cmpxchg(&a, 4, 9), 5);	/* no swap */
	ck_assert_int_eq(atomic_cmpxchg(&a, 5, 1), 5);	/* swap */
	ck_assert(atomic_dec_and_test(&a));
	atomic_set(&a, 2);
	ck_assert(!atomic_dec_and_test(&a));
	atomic64_set(&b, (s64)1 << 40);
	atomic64_inc(&b);
	atomic64_add(1, &b);
	atomic64_sub(2, &b);
	atomic64_dec(&b);
	ck_assert_int_eq(atomic64_inc_return(&b), (s64)1 << 40);
	ck_assert_int_eq(atomic64_cmpxchg(&b, (s64)1 << 40, 1), (s64)1 << 40);
	ck_assert(atomic64_dec_and_test(&b));

	page = alloc_page(GFP_KERNEL | __GFP_ZERO);
	ck_assert_ptr_nonnull(page);
	mem = page_address(page);
	ck_assert_uint_eq((uintptr_t)mem % PAGE_SIZE, 0);
	ck_assert_ptr_eq(virt_to_page(mem + PAGE_SIZE - 1), page);
	for (i = 0; i < PAGE_SIZE; i++)
		ck_assert_uint_eq(mem[i], 0);
	memcpy_to_page(page, 100, "kernel", 6);
	flush_dcache_page(page);
	memcpy_from_page((char *)mem + 200, page, 100, 6);
	ck_assert_mem_eq(mem + 200, "kernel", 6);
	__free_page(page);
	page = alloc_pages(GFP_KERNEL, 2);
	ck_assert_ptr_nonnull(page);
	ck_assert_uint_eq((uintptr_t)page_address(page) % (4 * PAGE_SIZE), 0);
	memset(page_address(page), 0xa5, 4 * PAGE_SIZE);
	__free_pages(page, 2);
	ck_assert_ptr_null(alloc_pages(GFP_KERNEL, sizeof(size_t) * 8));
	rcu_read_lock();
	rcu_read_unlock();

	/* Linux 6.9+: failures come back as error pointers, never NULL. */
	disk = blk_alloc_disk(&bad, NUMA_NO_NODE);
	ck_assert(IS_ERR(disk));
	ck_assert_int_eq(PTR_ERR(disk), -EINVAL);
	disk = blk_alloc_disk(NULL, NUMA_NO_NODE);
	ck_assert(!IS_ERR_OR_NULL(disk));
	put_disk(disk);
	ck_assert_int_eq(bvec_disk_stat(NULL, NULL), -EINVAL);
}
END_TEST

/* brd with 512 (_i = 0) and 4096-byte logical blocks: data and accounting. */
START_TEST(test_brd_model)
{
	const unsigned int lbs = _i ? 4096 : 512, bs = lbs >> SECTOR_SHIFT;
	const sector_t cap = 2048;	/* 1 MiB */
	u64 ios[BVEC_NR_STAT_GROUPS] = { 0 }, sectors[BVEC_NR_STAT_GROUPS] = { 0 };
	u8 *model = calloc(cap, SECTOR_SIZE), *buf = malloc(256 * 1024 + 4096);
	struct kbrd *brd = kbrd_create(cap, lbs, false);
	struct bvec_disk_stat st;
	unsigned int r, g;

	ck_assert(model && buf && brd);
	rng_state = 0x9e3779b97f4a7c15ull + _i;
	for (r = 0; r < rounds(600); r++) {
		sector_t sector = rnd() % (cap / bs) * bs;
		unsigned int len = (unsigned int)(1 + rnd() % min_t(u64, 64, (cap - sector) / bs)) * lbs;
		/* Any byte alignment: segments are cut at pages, not sectors. */
		u8 *p = buf + rnd() % 4096;
		unsigned int i, op = rnd() % 8;

		if (op < 4) {
			for (i = 0; i < len; i++)
				p[i] = (u8)rnd();
			ck_assert_int_eq(do_io(brd->disk, REQ_OP_WRITE, sector, p, len), 0);
			memcpy(model + (sector << SECTOR_SHIFT), p, len);
			g = BVEC_STAT_WRITE;
		} else if (op < 7) {
			ck_assert_int_eq(do_io(brd->disk, REQ_OP_READ, sector, p, len), 0);
			ck_assert_mem_eq(p, model + (sector << SECTOR_SHIFT), len);
			g = BVEC_STAT_READ;
		} else {
			ck_assert_int_eq(do_io(brd->disk, REQ_OP_DISCARD, sector, NULL, len), 0);
			model_discard(model, sector, len);
			g = BVEC_STAT_DISCARD;
		}
		ios[g]++;
		sectors[g] += len >> SECTOR_SHIFT;
	}
	ck_assert_int_eq(do_io(brd->disk, REQ_OP_READ, 0, buf, cap << SECTOR_SHIFT >> 2), 0);
	ck_assert_mem_eq(buf, model, cap << SECTOR_SHIFT >> 2);
	ios[BVEC_STAT_READ]++;
	sectors[BVEC_STAT_READ] += cap >> 2;

	st = stat_of(brd->disk);
	for (g = 0; g < BVEC_NR_STAT_GROUPS; g++) {
		ck_assert_uint_eq(st.ios[g], ios[g]);
		ck_assert_uint_eq(st.sectors[g], sectors[g]);
		ck_assert_uint_eq(st.merges[g], 0);
	}
	ck_assert_uint_eq(st.in_flight[0] + st.in_flight[1], 0);
	/* One I/O at a time: busy time is exactly the sum of the I/Os' times. */
	ck_assert_uint_eq(st.io_ticks, st.time_in_queue);
	ck_assert_uint_ge(st.time_in_queue, st.ticks[0] + st.ticks[1] + st.ticks[2] + st.ticks[3]);
	ck_assert_uint_le(st.time_in_queue, st.ticks[0] + st.ticks[1] + st.ticks[2] + st.ticks[3] + 3);
	ck_assert_int_eq(atomic_read(&brd->calls), (int)(ios[0] + ios[1] + ios[2]));
	kbrd_destroy(brd);
	free(model);
	free(buf);
}
END_TEST

/* Everything the block layer refuses or answers itself, for both block sizes. */
START_TEST(test_brd_filters)
{
	const unsigned int lbs = _i ? 4096 : 512, bs = lbs >> SECTOR_SHIFT;
	const sector_t cap = 1024;
	static u8 buf[16384];
	struct kbrd *brd = kbrd_create(cap, lbs, false);
	struct gendisk *disk;
	struct bvec_disk_stat st;
	unsigned int g;

	ck_assert_ptr_nonnull(brd);
	disk = brd->disk;
	ck_assert(!bdev_write_cache(disk->part0));

	/* No write cache: a flush is done at once, the flags are dropped. */
	ck_assert_int_eq(do_io(disk, REQ_OP_WRITE | REQ_PREFLUSH, 0, NULL, 0), 0);
	ck_assert_int_eq(do_io(disk, REQ_OP_FLUSH, 0, NULL, 0), 0);
	ck_assert_int_eq(do_io(disk, REQ_OP_WRITE | REQ_FUA, 0, NULL, 0), 0);
	ck_assert_int_eq(atomic_read(&brd->calls), 0);
	ck_assert_int_eq(do_io(disk, REQ_OP_WRITE | REQ_PREFLUSH | REQ_FUA, bs, buf, lbs), 0);
	ck_assert_int_eq(atomic_read(&brd->calls), 1);
	ck_assert_uint_eq(brd->last_opf, REQ_OP_WRITE);
	ck_assert_int_eq(atomic_read(&brd->flushes) + atomic_read(&brd->fuas), 0);

	/* Operations whose limit is 0, and ones that do not exist. */
	ck_assert_int_eq(do_io(disk, REQ_OP_WRITE_ZEROES, 0, NULL, lbs), -EOPNOTSUPP);
	ck_assert_int_eq(do_io(disk, REQ_OP_SECURE_ERASE, 0, NULL, lbs), -EOPNOTSUPP);
	ck_assert_int_eq(do_io(disk, (blk_opf_t)11, 0, NULL, 0), -EOPNOTSUPP);

	/* Not whole logical blocks. */
	ck_assert_int_eq(do_io(disk, REQ_OP_WRITE, 0, buf, lbs + 100), -EIO);
	ck_assert_int_eq(do_io(disk, REQ_OP_READ, 0, buf, lbs - 256), -EIO);
	ck_assert_int_eq(do_io(disk, REQ_OP_DISCARD, 0, NULL, lbs + 512 * (bs > 1)), bs > 1 ? -EIO : 0);
	if (bs > 1) {
		ck_assert_int_eq(do_io(disk, REQ_OP_WRITE, 1, buf, lbs), -EIO);
		ck_assert_int_eq(do_io(disk, REQ_OP_READ, bs + 3, buf, lbs), -EIO);
		ck_assert_int_eq(do_io(disk, REQ_OP_DISCARD, 1, NULL, 512), -EIO);
	}
	/* Past the end, and straddling it. */
	ck_assert_int_eq(do_io(disk, REQ_OP_READ, cap, buf, lbs), -EIO);
	ck_assert_int_eq(do_io(disk, REQ_OP_WRITE, cap - bs, buf, 2 * lbs), -EIO);
	ck_assert_int_eq(do_io(disk, REQ_OP_DISCARD, cap - bs, NULL, 2 * lbs), -EIO);
	ck_assert_int_eq(do_io(disk, REQ_OP_READ, (sector_t)-bs, buf, lbs), -EIO);
	ck_assert_int_eq(do_io(disk, REQ_OP_READ, cap - bs, buf, lbs), 0);

	/* Only the two good bios (three with 512-byte blocks) reached the driver. */
	ck_assert_int_eq(atomic_read(&brd->calls), bs > 1 ? 2 : 3);
	ck_assert_uint_eq(disk->nr_refused, bs > 1 ? 13 : 9);
	st = stat_of(disk);
	ck_assert_uint_eq(st.ios[BVEC_STAT_WRITE], 1);
	ck_assert_uint_eq(st.sectors[BVEC_STAT_WRITE], bs);
	ck_assert_uint_eq(st.ios[BVEC_STAT_READ], 1);
	ck_assert_uint_eq(st.ios[BVEC_STAT_DISCARD], bs > 1 ? 0 : 1);
	ck_assert_uint_eq(st.ios[BVEC_STAT_FLUSH], 0);
	for (g = 0; g < 2; g++)
		ck_assert_uint_eq(st.in_flight[g], 0);
	kbrd_destroy(brd);
}
END_TEST

/* With a write cache the driver sees flushes and FUA, and they are accounted. */
START_TEST(test_brd_write_cache)
{
	static u8 buf[4096];
	struct kbrd *brd = kbrd_create(64, 512, true);
	struct bvec_disk_stat st;

	ck_assert_ptr_nonnull(brd);
	ck_assert(bdev_write_cache(brd->disk->part0) && bdev_fua(brd->disk->part0));
	ck_assert_int_eq(do_io(brd->disk, REQ_OP_WRITE | REQ_PREFLUSH, 0, NULL, 0), 0);
	ck_assert_int_eq(atomic_read(&brd->flushes), 1);
	ck_assert_uint_eq(brd->last_opf, REQ_OP_WRITE | REQ_PREFLUSH);
	ck_assert_int_eq(do_io(brd->disk, REQ_OP_FLUSH, 0, NULL, 0), 0);
	ck_assert_uint_eq(brd->last_opf, REQ_OP_WRITE | REQ_PREFLUSH);
	ck_assert_int_eq(do_io(brd->disk, REQ_OP_WRITE | REQ_FUA, 8, buf, 4096), 0);
	ck_assert_uint_eq(brd->last_opf, REQ_OP_WRITE | REQ_FUA);
	ck_assert_int_eq(do_io(brd->disk, REQ_OP_WRITE | REQ_PREFLUSH | REQ_FUA, 16, buf, 512), 0);
	ck_assert_int_eq(atomic_read(&brd->flushes), 3);
	ck_assert_int_eq(atomic_read(&brd->fuas), 2);
	ck_assert_int_eq(atomic_read(&brd->calls), 4);
	st = stat_of(brd->disk);
	ck_assert_uint_eq(st.ios[BVEC_STAT_FLUSH], 2);
	ck_assert_uint_eq(st.sectors[BVEC_STAT_FLUSH], 0);
	ck_assert_uint_eq(st.ios[BVEC_STAT_WRITE], 2);
	ck_assert_uint_eq(st.sectors[BVEC_STAT_WRITE], 9);
	kbrd_destroy(brd);
}
END_TEST

/* Accounting by hand: time in flight shows in ticks and io_ticks. */
START_TEST(test_io_acct_time)
{
	struct timespec ts = { 0, 30 * 1000 * 1000 };
	struct kbrd *brd = kbrd_create(64, 512, false);
	struct bio *bio = bio_alloc(brd->disk->part0, 0, REQ_OP_DISCARD, GFP_KERNEL);
	struct bio *rd = bio_alloc(brd->disk->part0, 0, REQ_OP_READ, GFP_KERNEL);
	struct bvec_disk_stat st;
	unsigned long start, start_rd;

	bio->bi_iter.bi_size = 8192;
	start = bio_start_io_acct(bio);
	start_rd = bio_start_io_acct(rd);
	st = stat_of(brd->disk);
	ck_assert_uint_eq(st.in_flight[0], 1);	/* the read */
	ck_assert_uint_eq(st.in_flight[1], 1);	/* a discard counts as a write */
	nanosleep(&ts, NULL);
	st = stat_of(brd->disk);		/* busy time so far */
	ck_assert_uint_ge(st.io_ticks, 30);
	ck_assert_uint_eq(st.ios[BVEC_STAT_DISCARD], 0);
	bio_end_io_acct(bio, start);
	bio_end_io_acct(rd, start_rd);
	st = stat_of(brd->disk);
	ck_assert_uint_eq(st.in_flight[0] + st.in_flight[1], 0);
	ck_assert_uint_eq(st.ios[BVEC_STAT_DISCARD], 1);
	ck_assert_uint_eq(st.sectors[BVEC_STAT_DISCARD], 16);
	ck_assert_uint_ge(st.ticks[BVEC_STAT_DISCARD], 30);
	ck_assert_uint_ge(st.ticks[BVEC_STAT_READ], 30);
	ck_assert_uint_ge(st.time_in_queue, 60);
	ck_assert_uint_ge(st.io_ticks, 30);
	ck_assert_uint_lt(st.io_ticks, st.time_in_queue);	/* they overlapped */
	bio_put(bio);
	bio_put(rd);
	kbrd_destroy(brd);
}
END_TEST

struct acct_thread {
	struct gendisk *disk;
	unsigned int n;
};

static void *acct_worker(void *arg)
{
	struct acct_thread *t = arg;
	struct bio bio;
	unsigned int i;

	for (i = 0; i < t->n; i++) {
		unsigned long start;

		bio_init(&bio, t->disk->part0, NULL, 0, i % 2 ? REQ_OP_WRITE : REQ_OP_READ);
		bio.bi_iter.bi_size = 4096;
		start = bio_start_io_acct(&bio);
		bio_end_io_acct(&bio, start);
		bio_uninit(&bio);
	}
	return NULL;
}

/* Accounting from several threads at once loses nothing (atomics, no lock). */
START_TEST(test_io_acct_threads)
{
	struct kbrd *brd = kbrd_create(64, 512, false);
	struct acct_thread t = { brd->disk, rounds(20000) };
	pthread_t th[4];
	struct bvec_disk_stat st;
	unsigned int i;

	for (i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, acct_worker, &t), 0);
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	st = stat_of(brd->disk);
	ck_assert_uint_eq(st.ios[BVEC_STAT_READ], 4 * ((t.n + 1) / 2));
	ck_assert_uint_eq(st.ios[BVEC_STAT_WRITE], 4 * (t.n / 2));
	ck_assert_uint_eq(st.sectors[BVEC_STAT_READ] + st.sectors[BVEC_STAT_WRITE], 4 * 8 * (u64)t.n);
	ck_assert_uint_eq(st.in_flight[0] + st.in_flight[1], 0);
	kbrd_destroy(brd);
}
END_TEST

/* zram-like: 4 KiB blocks, partial pages, whole-page discard, no strays. */
START_TEST(test_zram)
{
	const unsigned long pages = 64;
	const sector_t cap = (sector_t)pages * PAGE_SECTORS;
	const size_t bytes = (size_t)pages * PAGE_SIZE;
	u8 *model = calloc(1, bytes), *buf = aligned_alloc(4096, bytes + 4096);
	struct kzram *zram = kzram_create(pages);
	struct bvec_disk_stat st;
	unsigned int r, calls, ios = 0;
	unsigned long i, nonzero;

	ck_assert(model && buf && zram);
	ck_assert_uint_eq(bdev_logical_block_size(zram->disk->part0), 4096);
	rng_state = 0x1234567;
	for (r = 0; r < rounds(400); r++) {
		sector_t sector = rnd() % (cap / 8) * 8;
		unsigned int len = (unsigned int)(1 + rnd() % min_t(u64, 24, (cap - sector) / 8)) * 4096;
		/* Segments must be whole sectors: this driver counts in sectors. */
		u8 *p = buf + rnd() % 8 * 512;
		unsigned int j, op = rnd() % 8;

		if (op < 4) {
			bool zero = rnd() % 4 == 0;	/* zero pages are stored as nothing */

			for (j = 0; j < len; j++)
				p[j] = zero ? 0 : (u8)rnd();
			ck_assert_int_eq(do_io(zram->disk, REQ_OP_WRITE, sector, p, len), 0);
			memcpy(model + (sector << SECTOR_SHIFT), p, len);
		} else if (op < 7) {
			ck_assert_int_eq(do_io(zram->disk, REQ_OP_READ, sector, p, len), 0);
			ck_assert_mem_eq(p, model + (sector << SECTOR_SHIFT), len);
		} else {
			ck_assert_int_eq(do_io(zram->disk, REQ_OP_DISCARD, sector, NULL, len), 0);
			model_discard(model, sector, len);
		}
		ios++;
	}
	ck_assert_int_eq(do_io(zram->disk, REQ_OP_READ, 0, buf, bytes), 0);
	ck_assert_mem_eq(buf, model, bytes);
	ios++;
	for (i = 0, nonzero = 0; i < pages; i++) {
		u8 *pg = model + i * PAGE_SIZE;

		nonzero += pg[0] || memcmp(pg, pg + 1, PAGE_SIZE - 1);
	}
	/* Zero pages and discarded pages hold no memory. */
	ck_assert_int_eq(atomic64_read(&zram->stored), (s64)nonzero);

	/* Refused before the driver: its discard would not complete them right. */
	calls = atomic_read(&zram->calls);
	ck_assert_int_eq(do_io(zram->disk, REQ_OP_DISCARD, 1, NULL, 512), -EIO);
	ck_assert_int_eq(do_io(zram->disk, REQ_OP_DISCARD, 8, NULL, 4096 + 512), -EIO);
	ck_assert_int_eq(do_io(zram->disk, REQ_OP_DISCARD, cap - 8, NULL, 8192), -EIO);
	ck_assert_int_eq(do_io(zram->disk, REQ_OP_WRITE, 4, buf, 4096), -EIO);
	ck_assert_int_eq(do_io(zram->disk, REQ_OP_WRITE_ZEROES, 0, NULL, 4096), -EOPNOTSUPP);
	ck_assert_int_eq(do_io(zram->disk, REQ_OP_WRITE | REQ_PREFLUSH, 0, NULL, 0), 0);
	ck_assert_int_eq(atomic_read(&zram->calls), (int)calls);

	st = stat_of(zram->disk);
	ck_assert_uint_eq(st.ios[0] + st.ios[1] + st.ios[2] + st.ios[3], ios);
	ck_assert_uint_eq(st.ios[BVEC_STAT_DISCARD], (u64)atomic_read(&zram->discards));
	ck_assert_uint_eq(st.in_flight[0] + st.in_flight[1], 0);
	kzram_destroy(zram);
	free(model);
	free(buf);
}
END_TEST

/*
 * blk-lib's way to issue a range: a run of bios, each chained into the
 * next by blk_next_bio() and submitted, the last one waited for.  Writes
 * @len bytes of @buf (or discards, for a NULL @buf) at @sector, at most
 * @per bytes a bio; each write bio gets its data in two __bio_add_page()
 * halves.  Returns submit_bio_wait()'s result; *@nr counts the bios.
 */
static int issue_run(struct gendisk *disk, sector_t sector, u8 *buf, unsigned int len,
		     unsigned int per, unsigned int *nr)
{
	struct bio *bio = NULL;
	unsigned int done = 0;
	int ret;

	*nr = 0;
	while (done < len) {
		unsigned int n = min_t(unsigned int, len - done, per);

		bio = blk_next_bio(bio, disk->part0, buf ? 2 : 0,
				   buf ? REQ_OP_WRITE : REQ_OP_DISCARD, GFP_KERNEL);
		ck_assert_ptr_nonnull(bio);
		bio->bi_iter.bi_sector = sector + (done >> SECTOR_SHIFT);
		if (buf) {
			u8 *p = buf + done, *half = p + n / 2;

			/* Contiguous halves stay two bvecs: __bio_add_page never merges. */
			__bio_add_page(bio, virt_to_page(p), n / 2, offset_in_page(p));
			__bio_add_page(bio, virt_to_page(half), n - n / 2, offset_in_page(half));
			ck_assert_uint_eq(bio->bi_vcnt, 2);
		} else {
			bio->bi_iter.bi_size = n;
		}
		done += n;
		(*nr)++;
	}
	ret = submit_bio_wait(bio);
	bio_put(bio);
	return ret;
}

/*
 * Runs of chained bios as blk-lib issues them: the data arrives whole, the
 * wait for the last bio covers every one before it (a failure anywhere in
 * the run is its result), and the linux.h helpers drivers copy with.
 */
START_TEST(test_issue_runs)
{
	const unsigned long pages = 64;
	const size_t bytes = (size_t)pages * PAGE_SIZE;
	u8 *buf = aligned_alloc(PAGE_SIZE, bytes), *out = aligned_alloc(PAGE_SIZE, bytes);
	struct kzram *zram = kzram_create(pages);
	struct bio *a, *b, one;
	struct bio_vec bv, tab[2];
	unsigned int nr, calls, i;

	ck_assert(buf && out && zram);
	rng_state = 0xfeed;
	for (i = 0; i < bytes; i++)
		buf[i] = (u8)rnd();
	/* 16 KiB bios with 4 KiB pages; one bio a page at 64 KiB pages. */
	ck_assert_int_eq(issue_run(zram->disk, 0, buf, (unsigned int)bytes,
				   (unsigned int)max_t(size_t, 4 * 4096, PAGE_SIZE), &nr), 0);
	ck_assert_uint_eq(nr, DIV_ROUND_UP(bytes, max_t(size_t, 4 * 4096, PAGE_SIZE)));
	ck_assert_int_eq(do_io(zram->disk, REQ_OP_READ, 0, out, (unsigned int)bytes), 0);
	ck_assert_mem_eq(out, buf, bytes);

	/* A discard run over the middle half, one page a bio. */
	calls = atomic_read(&zram->discards);
	ck_assert_int_eq(issue_run(zram->disk, (sector_t)pages / 4 * PAGE_SECTORS, NULL,
				   (unsigned int)(bytes / 2), (unsigned int)PAGE_SIZE, &nr), 0);
	ck_assert_uint_eq(nr, pages / 2);
	ck_assert_int_eq(atomic_read(&zram->discards) - (int)calls, (int)nr);
	memset(buf + bytes / 4, 0, bytes / 2);
	ck_assert_int_eq(do_io(zram->disk, REQ_OP_READ, 0, out, (unsigned int)bytes), 0);
	ck_assert_mem_eq(out, buf, bytes);

	/* A run whose middle bios fall past the end: the last bio reports it. */
	ck_assert_int_eq(issue_run(zram->disk, (sector_t)(pages - 2) * PAGE_SECTORS, buf,
				   (unsigned int)(4 * PAGE_SIZE), (unsigned int)PAGE_SIZE, &nr),
			 -EIO);
	ck_assert_uint_eq(nr, 4);
	ck_assert_int_eq(do_io(zram->disk, REQ_OP_READ, (sector_t)(pages - 2) * PAGE_SECTORS,
			       out, (unsigned int)(2 * PAGE_SIZE)), 0);
	ck_assert_mem_eq(out, buf, 2 * PAGE_SIZE);

	/* Failures leave the bio built so far as it was. */
	a = bio_alloc(zram->disk->part0, 0, REQ_OP_DISCARD, GFP_KERNEL);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_null(bio_chain_and_submit(a, NULL));
	ck_assert_ptr_null(blk_next_bio(a, zram->disk->part0, BIO_MAX_VECS + 1, REQ_OP_WRITE,
					GFP_KERNEL));
	ck_assert_int_eq(errno, EINVAL);
	a->bi_end_io = (bio_end_io_t *)bio_put; /* already completes elsewhere */
	b = bio_alloc(zram->disk->part0, 0, REQ_OP_DISCARD, GFP_KERNEL);
	ck_assert_ptr_null(bio_chain_and_submit(a, b));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(b->bi_private);
	ck_assert(!bio_flagged(b, BIO_CHAIN));
	a->bi_end_io = NULL;
	ck_assert_ptr_eq(bio_chain_and_submit(NULL, b), b); /* the first of a run */
	bio_put(b);
	bio_put(a);

	/* A full table and a clone take nothing (with a warning), not a byte past. */
	bio_init(&one, NULL, tab, 1, REQ_OP_WRITE);
	tab[1].bv_len = 77;
	__bio_add_page(&one, virt_to_page(buf), 512, 0);
	__bio_add_page(&one, virt_to_page(buf + 512), 512, 512);
	ck_assert_uint_eq(one.bi_vcnt, 1);
	ck_assert_uint_eq(one.bi_iter.bi_size, 512);
	ck_assert_uint_eq(tab[1].bv_len, 77);
	a = bio_alloc_clone(NULL, &one, GFP_KERNEL, NULL);
	ck_assert_ptr_nonnull(a);
	__bio_add_page(a, virt_to_page(buf), 512, 0);
	ck_assert_uint_eq(a->bi_vcnt, 0);
	ck_assert_uint_eq(a->bi_iter.bi_size, 512);
	bio_put(a);
	bio_uninit(&one);
	a = bio_alloc(NULL, 2, REQ_OP_WRITE, GFP_KERNEL);
	bio_add_virt_nofail(a, buf + 100, 300);
	bv = bio_iovec(a);
	ck_assert_ptr_eq(bvec_virt(&bv), buf + 100);
	ck_assert_uint_eq(bv.bv_len, 300);
	memzero_bvec(&a->bi_io_vec[0]);
	for (i = 0; i < 300; i++)
		ck_assert_uint_eq(buf[100 + i], 0);
	ck_assert_uint_ne(buf[99], 0);
	memzero_page(virt_to_page(buf), 50, 10);
	ck_assert_uint_eq(buf[55], 0);
	ck_assert_ptr_eq(kmap_atomic(virt_to_page(buf + 5)), buf);
	kunmap_atomic(buf);
	bio_put(a);
	kzram_destroy(zram);
	free(buf);
	free(out);
}
END_TEST

/* Pieces a bio over [sector, sector + len) makes at chunk boundaries. */
static unsigned int pieces(sector_t sector, unsigned int len, unsigned int chunk)
{
	sector_t end = sector + (len >> SECTOR_SHIFT);

	return (unsigned int)((end - 1) / chunk - sector / chunk + 1);
}

/* dm-stripe-like over three brds: data, placement, splits, flush fan-out. */
START_TEST(test_stripe)
{
	const unsigned int chunk = 16, nr = 3;
	const bool cache = _i;
	struct kbrd *kids[3];
	struct gendisk *disks[3];
	struct kstripe *sc;
	u8 *model, *buf = malloc(128 * 1024), one[512];
	unsigned int r, i, expect_pieces = 0, expect_splits = 0;
	u64 child_ios = 0;
	sector_t cap, mapped;

	for (i = 0; i < nr; i++) {
		kids[i] = kbrd_create(1000 + i * 64, 512, cache);
		ck_assert_ptr_nonnull(kids[i]);
		disks[i] = kids[i]->disk;
	}
	sc = kstripe_create(disks, nr, chunk);
	ck_assert_ptr_nonnull(sc);
	cap = get_capacity(sc->disk);
	ck_assert_uint_eq(cap, 1000 / chunk * chunk * nr);
	ck_assert(bdev_write_cache(sc->disk->part0) == cache);
	model = calloc(cap, SECTOR_SIZE);
	ck_assert(model && buf);

	rng_state = 0xabcdef + _i;
	for (r = 0; r < rounds(400); r++) {
		sector_t sector = rnd() % cap;
		unsigned int len = (unsigned int)(1 + rnd() % min_t(u64, 200, cap - sector)) * 512;
		u8 *p = buf + rnd() % 4096;
		unsigned int j;

		if (rnd() % 2) {
			for (j = 0; j < len; j++)
				p[j] = (u8)rnd();
			ck_assert_int_eq(do_io(sc->disk, REQ_OP_WRITE, sector, p, len), 0);
			memcpy(model + (sector << SECTOR_SHIFT), p, len);
		} else {
			ck_assert_int_eq(do_io(sc->disk, REQ_OP_READ, sector, p, len), 0);
			ck_assert_mem_eq(p, model + (sector << SECTOR_SHIFT), len);
		}
		expect_pieces += pieces(sector, len, chunk);
		expect_splits += pieces(sector, len, chunk) - 1;
	}
	ck_assert_int_eq(atomic_read(&sc->splits), (int)expect_splits);
	for (i = 0; i < nr; i++) {
		struct bvec_disk_stat st = stat_of(disks[i]);

		child_ios += st.ios[BVEC_STAT_READ] + st.ios[BVEC_STAT_WRITE];
		ck_assert_uint_eq(st.in_flight[0] + st.in_flight[1], 0);
	}
	ck_assert_uint_eq(child_ios, expect_pieces);

	/* Placement: sector s of chunk c lives on child c % nr, chunk c / nr. */
	for (r = 0; r < 20; r++) {
		sector_t s = rnd() % cap, c = s / chunk;

		mapped = (c / nr) * chunk + s % chunk;
		ck_assert_int_eq(do_io(disks[c % nr], REQ_OP_READ, mapped, one, 512), 0);
		ck_assert_mem_eq(one, model + (s << SECTOR_SHIFT), 512);
	}

	/* A flush goes to every child when they cache, to none when not. */
	i = (unsigned int)atomic_read(&sc->calls);
	ck_assert_int_eq(do_io(sc->disk, REQ_OP_WRITE | REQ_PREFLUSH, 0, NULL, 0), 0);
	ck_assert_int_eq(atomic_read(&sc->calls), (int)i + cache);
	for (r = 0; r < nr; r++)
		ck_assert_int_eq(atomic_read(&kids[r]->flushes), cache);

	/* A discard over chunks splits like data and reaches the children. */
	ck_assert_int_eq(do_io(sc->disk, REQ_OP_DISCARD, 8, NULL, 5 * chunk * 512), 0);
	child_ios = 0;
	for (i = 0; i < nr; i++)
		child_ios += stat_of(disks[i]).ios[BVEC_STAT_DISCARD];
	ck_assert_uint_eq(child_ios, 6);
	/* Refused at the top: never reaches the remapper. */
	i = (unsigned int)atomic_read(&sc->calls);
	ck_assert_int_eq(do_io(sc->disk, REQ_OP_WRITE_ZEROES, 0, NULL, 4096), -EOPNOTSUPP);
	ck_assert_int_eq(do_io(sc->disk, REQ_OP_READ, cap - 1, buf, 1024), -EIO);
	ck_assert_int_eq(atomic_read(&sc->calls), (int)i);

	kstripe_destroy(sc);
	for (i = 0; i < nr; i++)
		kbrd_destroy(kids[i]);
	free(model);
	free(buf);
}
END_TEST

/*
 * REQ_NOWAIT, Linux 6.11 style: brd-like and stripe-like drivers that set
 * BLK_FEAT_NOWAIT take it; a zram-like one without it never sees it; a
 * stripe takes it only over children that all do, and ends one it would
 * have to split BLK_STS_AGAIN before any piece is written.
 */
START_TEST(test_nowait)
{
	const unsigned int chunk = 16;
	struct kbrd *a = kbrd_create(256, 512, false), *b = kbrd_create(256, 512, false);
	struct kzram *z = kzram_create(256 * 512 / PAGE_SIZE);
	struct gendisk *brds[2], *mixed[2];
	struct kstripe *sc, *sz;
	u8 *buf = malloc(4 * chunk * 512), *got = malloc(4 * chunk * 512);
	int calls;

	ck_assert(a && b && z && buf && got);
	brds[0] = mixed[0] = a->disk;
	brds[1] = b->disk;
	mixed[1] = z->disk;
	memset(buf, 0x5a, 4 * chunk * 512);
	ck_assert(bdev_nowait(a->disk->part0));
	ck_assert(!bdev_nowait(z->disk->part0));

	ck_assert_int_eq(do_io(a->disk, REQ_OP_WRITE | REQ_NOWAIT, 8, buf, 4096), 0);
	ck_assert_int_eq(do_io(a->disk, REQ_OP_READ | REQ_NOWAIT, 8, got, 4096), 0);
	ck_assert_mem_eq(got, buf, 4096);
	calls = atomic_read(&z->calls);
	ck_assert_int_eq(do_io(z->disk, REQ_OP_WRITE | REQ_NOWAIT, 0, buf, 4096), -EOPNOTSUPP);
	ck_assert_int_eq(atomic_read(&z->calls), calls);

	sc = kstripe_create(brds, 2, chunk);
	sz = kstripe_create(mixed, 2, chunk);
	ck_assert(sc && sz);
	ck_assert(bdev_nowait(sc->disk->part0));
	ck_assert(!bdev_nowait(sz->disk->part0));
	/* Inside a chunk: remapped and done. */
	ck_assert_int_eq(do_io(sc->disk, REQ_OP_WRITE | REQ_NOWAIT, chunk, buf, chunk * 512), 0);
	ck_assert_int_eq(do_io(b->disk, REQ_OP_READ, 0, got, chunk * 512), 0);
	ck_assert_mem_eq(got, buf, chunk * 512);
	/* Across chunks: refused whole, before either child is written. */
	memset(buf, 0xa5, 4 * chunk * 512);
	ck_assert_int_eq(do_io(sc->disk, REQ_OP_WRITE | REQ_NOWAIT, 2 * chunk + 8, buf,
			       chunk * 512), -EAGAIN);
	ck_assert_int_eq(atomic_read(&sc->splits), 0);
	ck_assert_int_eq(do_io(a->disk, REQ_OP_READ, chunk, got, chunk * 512), 0);
	ck_assert(!memchr(got, 0xa5, chunk * 512));
	ck_assert_int_eq(do_io(b->disk, REQ_OP_READ, chunk, got, chunk * 512), 0);
	ck_assert(!memchr(got, 0xa5, chunk * 512));
	/* The same without REQ_NOWAIT is split and done. */
	ck_assert_int_eq(do_io(sc->disk, REQ_OP_WRITE, 2 * chunk + 8, buf, chunk * 512), 0);
	ck_assert_int_eq(atomic_read(&sc->splits), 1);
	/* Over a child without BLK_FEAT_NOWAIT, refused at the top. */
	calls = atomic_read(&sz->calls);
	ck_assert_int_eq(do_io(sz->disk, REQ_OP_WRITE | REQ_NOWAIT, 0, buf, 4096), -EOPNOTSUPP);
	ck_assert_int_eq(atomic_read(&sz->calls), calls);

	kstripe_destroy(sz);
	kstripe_destroy(sc);
	kzram_destroy(z);
	kbrd_destroy(b);
	kbrd_destroy(a);
	free(got);
	free(buf);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("kernel");
	TCase *tc = tcase_create("drivers");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_kernel_pieces);
	tcase_add_loop_test(tc, test_brd_model, 0, 2);
	tcase_add_loop_test(tc, test_brd_filters, 0, 2);
	tcase_add_test(tc, test_brd_write_cache);
	tcase_add_test(tc, test_io_acct_time);
	tcase_add_test(tc, test_io_acct_threads);
	tcase_add_test(tc, test_zram);
	tcase_add_test(tc, test_issue_runs);
	tcase_add_loop_test(tc, test_stripe, 0, 2);
	tcase_add_test(tc, test_nowait);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}

// SPDX-License-Identifier: MIT
/* The io_uring disk: bios in flight, short transfers, errors, teardown, threads. */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<linux/loop.h>) /* not in the musl build's path */
#include <linux/loop.h>
#endif
#endif

#include <libbvec/blkdev.h>
#include <libbvec/stripe.h>

#include "../../drivers/uring/uring.h"
#include "testutil.h"

/* Two values every byte of the test file may hold: before and after a write.
 * They differ everywhere, and neither is the value at another offset in a
 * way a misplaced transfer could produce by chance over a whole sector. */
static unsigned char pat_old(uint64_t off)
{
	uint64_t x = (off + 1) * 0x9E3779B97F4A7C15ull;

	return (unsigned char)(x >> 56);
}

static unsigned char pat_new(uint64_t off)
{
	return pat_old(off) ^ 0xA5;
}

/* A temp file of @bytes filled with pat_old, unlinked; reopened with
 * @flags unless they are -1. */
static int temp_file(size_t bytes, int flags)
{
	char name[] = "/tmp/bvec-uring-XXXXXX";
	unsigned char *buf = malloc(bytes);
	int fd = mkstemp(name);
	size_t i;

	ck_assert_int_ge(fd, 0);
	for (i = 0; i < bytes; i++)
		buf[i] = pat_old(i);
	ck_assert_int_eq(pwrite(fd, buf, bytes, 0), (ssize_t)bytes);
	free(buf);
	if (flags != -1) {
		int fd2 = open(name, flags);

		ck_assert_int_ge(fd2, 0);
		close(fd);
		fd = fd2;
	}
	unlink(name);
	return fd;
}

/* Counts completions; the test thread waits for a number of them. */
struct waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int done;
	unsigned int bad;	/* bios whose status or data was wrong */
	unsigned int twice;	/* bi_end_io called more than once */
	unsigned int inline_end; /* bi_end_io ran on the submitting thread */
	pthread_t submitter;
};

static void waiter_init(struct waiter *w)
{
	memset(w, 0, sizeof(*w));
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->submitter = pthread_self();
}

static void waiter_wait(struct waiter *w, unsigned int n)
{
	pthread_mutex_lock(&w->lock);
	while (w->done < n)
		pthread_cond_wait(&w->cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
}

/* One test I/O: a bio over scattered pieces of memory it owns. */
struct tio {
	struct waiter *w;
	uint64_t off;
	unsigned int len;
	unsigned int npieces;
	unsigned char *piece[64];
	unsigned int plen[64];
	int ended;
	blk_status_t want;
};

/* Every byte of a read is old or new data of its own offset: that holds in
 * any completion order, with writes of the same bytes in flight. */
static bool tio_data_ok(const struct tio *t, bool read)
{
	uint64_t off = t->off;
	unsigned int p, i;

	for (p = 0; p < t->npieces; p++)
		for (i = 0; i < t->plen[p]; i++, off++) {
			unsigned char c = t->piece[p][i];

			if (read ? c != pat_old(off) && c != pat_new(off) : c != pat_new(off))
				return false;
		}
	return true;
}

static void tio_end(struct bio *bio)
{
	struct tio *t = bio->bi_private;
	struct waiter *w = t->w;
	bool ok = bio->bi_status == t->want &&
		  (t->want || tio_data_ok(t, bio_op(bio) == REQ_OP_READ));
	unsigned int p;

	for (p = 0; p < t->npieces; p++)
		free(t->piece[p]);
	bio_put(bio);
	pthread_mutex_lock(&w->lock);
	if (t->ended++)
		w->twice++;
	if (!ok)
		w->bad++;
	if (pthread_equal(pthread_self(), w->submitter))
		w->inline_end++;
	w->done++;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* A bio of @len bytes at @off over up to 64 separately allocated pieces. */
static struct bio *tio_bio(struct gendisk *disk, struct tio *t, struct rng *r,
			   enum req_op op, uint64_t off, unsigned int len)
{
	struct bio *bio = bio_alloc(disk->part0, 64, op, GFP_KERNEL);
	unsigned int left = len, i;

	t->off = off;
	t->len = len;
	t->npieces = 0;
	while (left) {
		unsigned int n = rng_range(r, 1, 16) * 512u;

		if (n > left || t->npieces == 63)
			n = left;
		unsigned char *m;

		m = malloc(n);
		ck_assert_ptr_nonnull(m);
		for (i = 0; i < n; i++)
			m[i] = op == REQ_OP_WRITE ? pat_new(off + len - left + i) : 0x3c;
		ck_assert_uint_eq(bio_add_virt(bio, m, n), n);
		t->piece[t->npieces] = m;
		t->plen[t->npieces++] = n;
		left -= n;
	}
	bio->bi_iter.bi_sector = off >> 9;
	bio->bi_private = t;
	bio->bi_end_io = tio_end;
	return bio;
}

/* The file after a run: each byte old or new, and new where any write went. */
static void check_file(int fd, size_t bytes, const unsigned char *written)
{
	unsigned char *buf = malloc(bytes);
	size_t i;

	ck_assert_int_eq(pread(fd, buf, bytes, 0), (ssize_t)bytes);
	for (i = 0; i < bytes; i++)
		if (buf[i] != (written && written[i] ? pat_new(i) : pat_old(i)))
			ck_abort_msg("byte %zu is %#x", i, buf[i]);
	free(buf);
}

#define MANY_FILE (16u << 20)

/*
 * 256 random reads and writes of 4 KiB to 256 KiB at depth 32, all submitted
 * before any is waited for.  Each completion checks its own bio's data only,
 * so the order of completions does not matter.
 */
START_TEST(test_many_in_flight)
{
	unsigned int n = test_scale(256), i;
	int fd = temp_file(MANY_FILE, -1);
	unsigned char *written = calloc(MANY_FILE, 1);
	struct tio *t = calloc(n, sizeof(*t));
	struct rng r = { 0x1234567 + (uint64_t)_i };
	struct gendisk *disk = bvec_uring_disk_create(fd, NULL, 32);
	struct waiter w;

	ck_assert_ptr_nonnull(disk);
	ck_assert_uint_eq(get_capacity(disk), MANY_FILE >> 9);
	waiter_init(&w);
	for (i = 0; i < n; i++) {
		unsigned int len = rng_range(&r, 8, 512) * 512;
		uint64_t off = (uint64_t)rng_range(&r, 0, (MANY_FILE - len) / 512) * 512;
		bool write = rng_next(&r) & 1;

		t[i].w = &w;
		if (write)
			memset(written + off, 1, len);
		submit_bio(tio_bio(disk, &t[i], &r, write ? REQ_OP_WRITE : REQ_OP_READ,
				   off, len));
	}
	waiter_wait(&w, n);
	ck_assert_uint_eq(w.bad, 0);
	ck_assert_uint_eq(w.twice, 0);
	/* Asynchronous: no bio completed inside its submit_bio(). */
	ck_assert_uint_eq(w.inline_end, 0);
	put_disk(disk);
	check_file(fd, MANY_FILE, written);
	close(fd);
	free(written);
	free(t);
}
END_TEST

/*
 * Every SQE capped at 1000 bytes: not a multiple of the sector or of any
 * piece, so each transfer ends short in the middle of a segment and the
 * rest must be resubmitted from the right place in the bio.
 */
START_TEST(test_short_transfers_resubmitted)
{
	int fd = temp_file(1u << 20, -1);
	unsigned char *written = calloc(1u << 20, 1);
	struct rng r = { 99 };
	struct gendisk *disk = bvec_uring_disk_create(fd, NULL, 4);
	struct tio tw, tr;
	struct waiter w;

	ck_assert_ptr_nonnull(disk);
	bvec__uring_disk_set_max_io(disk, 1000);
	waiter_init(&w);
	tw.w = tr.w = &w;
	tw.ended = tr.ended = 0;
	tw.want = tr.want = BLK_STS_OK;
	memset(written + 4096, 1, 65536);
	submit_bio(tio_bio(disk, &tw, &r, REQ_OP_WRITE, 4096, 65536));
	waiter_wait(&w, 1);
	ck_assert_uint_eq(w.bad, 0);
	check_file(fd, 1u << 20, written);

	waiter_init(&w);
	submit_bio(tio_bio(disk, &tr, &r, REQ_OP_READ, 0, 131072));
	waiter_wait(&w, 1);
	ck_assert_uint_eq(w.bad, 0);
	put_disk(disk);
	close(fd);
	free(written);
}
END_TEST

/* A file cut short under the disk: the read stops short at the end of the
 * file, then gets 0 bytes, and must complete with zeroes for the rest. */
START_TEST(test_read_across_eof)
{
	int fd = temp_file(65536, -1);
	struct gendisk *disk = bvec_uring_disk_create(fd, NULL, 8);
	unsigned char *buf = malloc(16384);
	struct bio *bio;
	unsigned int i;

	ck_assert_ptr_nonnull(disk);
	ck_assert_int_eq(ftruncate(fd, 12288 + 1000), 0);
	memset(buf, 0xee, 16384);
	bio = bio_alloc(disk->part0, 2, REQ_OP_READ, GFP_KERNEL);
	bio_add_virt(bio, buf, 6144);
	bio_add_virt(bio, buf + 6144, 10240);
	bio->bi_iter.bi_sector = 8;
	ck_assert_int_eq(submit_bio_wait(bio), 0);
	bio_put(bio);
	for (i = 0; i < 16384; i++)
		ck_assert_uint_eq(buf[i], i < 12288 + 1000 - 4096 ? pat_old(4096 + i) : 0);
	put_disk(disk);
	close(fd);
	free(buf);
}
END_TEST

static int rw_wait(struct gendisk *disk, enum req_op op, blk_opf_t flags, void *buf,
		   unsigned int len, sector_t sector)
{
	struct bio *bio = bio_alloc(disk->part0, 1, op | flags, GFP_KERNEL);
	int ret;

	if (len)
		bio_add_virt(bio, buf, len);
	bio->bi_iter.bi_sector = sector;
	if (op == REQ_OP_DISCARD || op == REQ_OP_WRITE_ZEROES)
		bio->bi_iter.bi_size = len;
	ret = submit_bio_wait(bio);
	bio_put(bio);
	return ret;
}

/* Failing files complete bios with the status Linux maps their errno to. */
START_TEST(test_errors)
{
	int ro = temp_file(65536, O_RDONLY);
	int fd = temp_file(65536, -1);
	struct gendisk *disk;
	struct bio *bio;
	char buf[4096];

	errno = 0;
	ck_assert_ptr_null(bvec_uring_disk_create(-1, NULL, 8));
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(bvec_uring_disk_create(fd, NULL, 100000));
	ck_assert_int_eq(errno, EINVAL);

	/* Written through a read-only descriptor: EBADF, an I/O error. */
	disk = bvec_uring_disk_create(ro, NULL, 8);
	ck_assert_ptr_nonnull(disk);
	memset(buf, 1, sizeof(buf));
	bio = bio_alloc(disk->part0, 1, REQ_OP_WRITE, GFP_KERNEL);
	bio_add_virt(bio, buf, sizeof(buf));
	ck_assert_int_eq(submit_bio_wait(bio), -EIO);
	ck_assert_uint_eq(bio->bi_status, BLK_STS_IOERR);
	bio_put(bio);
	/* Reading works, and its flush too. */
	ck_assert_int_eq(rw_wait(disk, REQ_OP_READ, 0, buf, 4096, 0), 0);
	ck_assert_uint_eq((unsigned char)buf[7], pat_old(7));
	put_disk(disk);

	close(ro);
	close(fd);
}
END_TEST

/*
 * On a descriptor opened with O_APPEND, a WRITEV SQE writes at the end of
 * the file whatever its offset: every write of a disk over it would land
 * past the end and report success.  Such a descriptor is refused.
 */
START_TEST(test_append_refused)
{
	char name[] = "/tmp/bvec-uring-XXXXXX";
	int fd = mkstemp(name), afd;
	unsigned char *buf = malloc(4096), *back = malloc(4096);
	struct gendisk *disk;
	struct stat st;
	unsigned int i;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 65536), 0);
	afd = open(name, O_RDWR | O_APPEND);
	ck_assert_int_ge(afd, 0);
	unlink(name);
	errno = 0;
	disk = bvec_uring_disk_create(afd, NULL, 8);
	if (disk) {
		for (i = 0; i < 4096; i++)
			buf[i] = pat_new(i);
		ck_assert_int_eq(rw_wait(disk, REQ_OP_WRITE, 0, buf, 4096, 0), 0);
		ck_assert_int_eq(pread(fd, back, 4096, 0), 4096);
		ck_assert_int_eq(fstat(fd, &st), 0);
		ck_assert_msg(!memcmp(back, buf, 4096),
			      "O_APPEND: a write to sector 0 reported success, the file "
			      "grew from 65536 to %lld bytes and sector 0 holds old data",
			      (long long)st.st_size);
		put_disk(disk);
	}
	ck_assert_ptr_null(disk);
	ck_assert_int_eq(errno, EINVAL);
	close(afd);
	close(fd);
	free(buf);
	free(back);
}
END_TEST

/*
 * io_uring_enter() stops at an SQE that fails before it is issued (a READV
 * whose iovec points outside the process fails its import with -EFAULT
 * there, on Linux 6.10 and later) and leaves the SQEs behind it in the ring.
 * Two bios started from a bi_end_io go out in one submit: a bad one, then a
 * good one.  The bad one ends with an error; the good one must still be
 * sent and end, not wait for a submit that nothing else makes.
 */
static struct {
	struct gendisk *disk;
	unsigned char *good;
	void *bad;
	atomic_int ended_bad, ended_good;
	atomic_int status_bad, status_good;
} two;

static void two_end_bad(struct bio *bio)
{
	atomic_store(&two.status_bad, bio->bi_status);
	bio_put(bio);
	atomic_store(&two.ended_bad, 1);
}

static void two_end_good(struct bio *bio)
{
	atomic_store(&two.status_good, bio->bi_status);
	bio_put(bio);
	atomic_store(&two.ended_good, 1);
}

static void two_submit(struct bio *first)
{
	struct bio *bio;

	bio_put(first);
	bio = bio_alloc(two.disk->part0, 1, REQ_OP_READ, GFP_KERNEL);
	bio_add_virt(bio, two.bad, 4096);
	bio->bi_end_io = two_end_bad;
	submit_bio(bio);
	bio = bio_alloc(two.disk->part0, 1, REQ_OP_READ, GFP_KERNEL);
	bio_add_virt(bio, two.good, 4096);
	bio->bi_iter.bi_sector = 8;
	bio->bi_end_io = two_end_good;
	submit_bio(bio);
}

START_TEST(test_sqe_after_failed_prep_sent)
{
	int fd = temp_file(65536, -1);
	unsigned char *first = malloc(4096);
	struct bio *bio;
	unsigned int i;

	memset(&two, 0, sizeof(two));
	two.disk = bvec_uring_disk_create(fd, NULL, 4);
	ck_assert_ptr_nonnull(two.disk);
	two.good = malloc(4096);
	/* Set first: valgrind does not see io_uring write memory. */
	memset(two.good, 0x3c, 4096);
	memset(first, 0x3c, 4096);
	/* A page at the top of the address space: the kernel's, on 64-bit
	 * and on 32-bit kernels, so the import refuses it. */
	two.bad = (void *)(uintptr_t)(0 - (uintptr_t)2 * BVEC_PAGE_SIZE);
	bio = bio_alloc(two.disk->part0, 1, REQ_OP_READ, GFP_KERNEL);
	bio_add_virt(bio, first, 4096);
	bio->bi_end_io = two_submit;
	submit_bio(bio);
	for (i = 0; i < 5000 && !(atomic_load(&two.ended_bad) && atomic_load(&two.ended_good));
	     i++)
		usleep(1000);
	ck_assert_msg(atomic_load(&two.ended_bad), "the bio over a bad address never ended");
	ck_assert_int_ne(atomic_load(&two.status_bad), BLK_STS_OK);
	ck_assert_msg(atomic_load(&two.ended_good),
		      "the good bio sent after the bad one had not ended 5 s later");
	ck_assert_int_eq(atomic_load(&two.status_good), BLK_STS_OK);
	for (i = 0; i < 4096; i++)
		ck_assert_uint_eq(two.good[i], pat_old(4096 + i));
	put_disk(two.disk);
	close(fd);
	free(first);
	free(two.good);
}
END_TEST

/* A stripe chunk: the smallest the stripe takes, one page. */
#define CHB ((unsigned int)BVEC_PAGE_SIZE)

/* A disk that fails every bio inside its submit_bio(). */
static void fail_now_submit(struct bio *bio)
{
	bio->bi_status = BLK_STS_MEDIUM;
	bio_endio(bio);
}

static const struct block_device_operations fail_now_ops = { .submit_bio = fail_now_submit };

/*
 * A bio the disk completes without error may already carry an error: a
 * chained child that ended first put it there, and the first error wins.
 * A stripe over a failing disk and this one makes that happen every time:
 * the piece for chunk 0 is a split chained to the original, it fails at
 * once, and the original (chunk 1) then goes here and is written.  The
 * stripe's bio must end with the child's error, not as written.
 */
START_TEST(test_chained_error_survives)
{
	int fd = temp_file(65536, -1);
	struct gendisk *children[2];
	struct gendisk *s;
	unsigned char *buf = malloc(2 * CHB);
	unsigned int i;

	children[0] = blk_alloc_disk(NULL, -1);
	ck_assert_ptr_nonnull(children[0]);
	children[0]->fops = &fail_now_ops;
	set_capacity(children[0], 128);
	children[1] = bvec_uring_disk_create(fd, NULL, 8);
	ck_assert_ptr_nonnull(children[1]);
	s = bvec_stripe_create(children, 2, CHB >> 9);
	ck_assert_ptr_nonnull(s);
	for (i = 0; i < 2 * CHB; i++)
		buf[i] = pat_new(i);
	/* Chunk 0 on the failing disk, chunk 1 on this one. */
	ck_assert_int_eq(rw_wait(s, REQ_OP_WRITE, 0, buf, 2 * CHB, 0), -ENODATA);
	ck_assert_int_eq(rw_wait(s, REQ_OP_READ, 0, buf, 2 * CHB, 0), -ENODATA);
	/* Only chunk 1: it really works. */
	ck_assert_int_eq(rw_wait(s, REQ_OP_READ, 0, buf, CHB, CHB >> 9), 0);
	for (i = 0; i < CHB; i++)
		ck_assert_uint_eq(buf[i], pat_new(CHB + i));
	put_disk(s);
	put_disk(children[1]);
	put_disk(children[0]);
	close(fd);
	free(buf);
}
END_TEST

/* Flushes, FUA, DISCARD and WRITE_ZEROES reach the file. */
START_TEST(test_flush_discard_zeroes)
{
	int fd = temp_file(65536, -1);
	struct gendisk *disk = bvec_uring_disk_create(fd, NULL, 8);
	unsigned char buf[8192];
	unsigned int i;

	ck_assert_ptr_nonnull(disk);
	ck_assert(bdev_write_cache(disk->part0));
	ck_assert_int_eq(rw_wait(disk, REQ_OP_WRITE, REQ_PREFLUSH, NULL, 0, 0), 0);
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = pat_new(i);
	ck_assert_int_eq(rw_wait(disk, REQ_OP_WRITE, REQ_PREFLUSH | REQ_FUA, buf, 8192, 0), 0);
	ck_assert_int_eq(rw_wait(disk, REQ_OP_WRITE_ZEROES, REQ_FUA, NULL, 4096, 16), 0);
	ck_assert_int_eq(rw_wait(disk, REQ_OP_DISCARD, 0, NULL, 8192, 32), 0);
	ck_assert_int_eq(pread(fd, buf, 8192, 0), 8192);
	for (i = 0; i < 8192; i++)
		ck_assert_uint_eq(buf[i], pat_new(i));
	ck_assert_int_eq(pread(fd, buf, 8192, 8192), 8192);
	for (i = 0; i < 8192; i++)
		ck_assert_uint_eq(buf[i], i < 4096 ? 0 : pat_old(8192 + i));
	ck_assert_int_eq(pread(fd, buf, 8192, 16384), 8192);
	for (i = 0; i < 8192; i++)
		ck_assert_uint_eq(buf[i], 0);
	put_disk(disk);
	close(fd);
}
END_TEST

/*
 * A ramfs mounted on a new directory: files there take no fallocate() mode
 * at all, as on vfat or some FUSE filesystems, and io_uring's FALLOCATE
 * goes to the kernel, so nothing short of such a filesystem shows it.
 * False (the directory removed) where this process may not mount.
 */
static bool ramfs_mount(char *dir)
{
	if (!mkdtemp(dir))
		return false;
	if (mount("ramfs", dir, "ramfs", 0, NULL)) {
		printf("ramfs: mount: %s\n", strerror(errno));
		rmdir(dir);
		return false;
	}
	return true;
}

static void ramfs_umount(const char *dir)
{
	ck_assert_int_eq(umount2(dir, MNT_DETACH), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}

/* The first byte of @m[0..@n), at file offset @base + i, that is not zero
 * inside [@z0, @z1) and pat_old outside, or @n. */
static size_t zero_first_bad(const unsigned char *m, size_t n, size_t base, size_t z0, size_t z1)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (m[i] != (base + i >= z0 && base + i < z1 ? 0 : pat_old(base + i)))
			break;
	return i;
}

static void fill_old(int fd, unsigned char *m, size_t bytes)
{
	size_t i;

	for (i = 0; i < bytes; i++)
		m[i] = pat_old(i);
	ck_assert_int_eq(pwrite(fd, m, bytes, 0), (ssize_t)bytes);
	/* A block device's fallocate() drops its page cache, dirty or not. */
	ck_assert_int_eq(fsync(fd), 0);
}

/*
 * WRITE_ZEROES on @disk, whose file (@fd, buffered) takes no fallocate()
 * mode, over @bytes: a page and 1 KiB from sector 1, then several MiB off a
 * page; each zeroes exactly its range.  A DISCARD fails BLK_STS_NOTSUPP.
 */
static void zeroes_written(struct gendisk *disk, int fd, size_t bytes, const char *what)
{
	const unsigned int ps = (unsigned int)BVEC_PAGE_SIZE;
	const size_t big_off = 3 * 512, big_len = bytes - 4 * (size_t)ps - 512;
	unsigned char *m = malloc(bytes);
	int ret;

	fill_old(fd, m, bytes);
	ret = rw_wait(disk, REQ_OP_WRITE_ZEROES, 0, NULL, ps + 1024, 1);
	ck_assert_msg(ret == 0, "%s: WRITE_ZEROES of %u bytes at 512 failed %d", what,
		      ps + 1024, ret);
	ck_assert_int_eq(pread(fd, m, bytes, 0), (ssize_t)bytes);
	ck_assert_uint_eq(zero_first_bad(m, bytes, 0, 512, 512 + ps + 1024), bytes);

	fill_old(fd, m, bytes);
	ret = rw_wait(disk, REQ_OP_WRITE_ZEROES, REQ_FUA, NULL, (unsigned int)big_len,
		      big_off >> BVEC_SECTOR_SHIFT);
	ck_assert_msg(ret == 0, "%s: WRITE_ZEROES of %zu bytes at %zu failed %d", what, big_len,
		      big_off, ret);
	ck_assert_int_eq(pread(fd, m, bytes, 0), (ssize_t)bytes);
	ck_assert_uint_eq(zero_first_bad(m, bytes, 0, big_off, big_off + big_len), bytes);

	fill_old(fd, m, bytes);
	ck_assert_int_eq(rw_wait(disk, REQ_OP_DISCARD, 0, NULL, ps, 0), -EOPNOTSUPP);
	ck_assert_int_eq(pread(fd, m, bytes, 0), (ssize_t)bytes);
	ck_assert_uint_eq(zero_first_bad(m, bytes, 0, 0, 0), bytes);
	free(m);
}

static size_t zeroes_bytes(void)
{
	const size_t mib6 = (size_t)6 << 20, pages = 16 * (size_t)BVEC_PAGE_SIZE;

	return pages > mib6 ? pages : mib6;
}

/*
 * Over a file that takes no fallocate() mode, WRITE_ZEROES, which the disk
 * advertises, writes zeroes: off a page, over several MiB (several SQEs),
 * and across the end of a file that has shrunk, which does not grow.
 */
START_TEST(test_write_zeroes_without_fallocate)
{
	char dir[] = "/tmp/bvec-ramfs-XXXXXX", path[64];
	const size_t bytes = zeroes_bytes(), ps = BVEC_PAGE_SIZE;
	const size_t shrunk = bytes - 3 * ps, tail_off = shrunk - ps + 512, tail_len = 2 * ps;
	struct gendisk *disk;
	unsigned char *m;
	struct stat st;
	int fd, ret;

	if (!ramfs_mount(dir)) {
		printf("test_write_zeroes_without_fallocate: cannot mount a ramfs; not checked\n");
		return;
	}
	snprintf(path, sizeof(path), "%s/f", dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)bytes), 0);
	disk = bvec_uring_disk_create(fd, NULL, 4);
	ck_assert_ptr_nonnull(disk);
	zeroes_written(disk, fd, bytes, "ramfs file");
	/* Every write short, and off a sector: the rest is sent again. */
	bvec__uring_disk_set_max_io(disk, 1000 * 64);
	zeroes_written(disk, fd, bytes, "ramfs file, short writes");
	bvec__uring_disk_set_max_io(disk, 0);

	m = malloc(bytes);
	fill_old(fd, m, bytes);
	ck_assert_int_eq(ftruncate(fd, (off_t)shrunk), 0);
	ret = rw_wait(disk, REQ_OP_WRITE_ZEROES, 0, NULL, (unsigned int)tail_len,
		      tail_off >> BVEC_SECTOR_SHIFT);
	ck_assert_msg(ret == 0, "WRITE_ZEROES across the end of the file failed %d", ret);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_int_eq(st.st_size, (off_t)shrunk);
	ck_assert_int_eq(pread(fd, m, shrunk, 0), (ssize_t)shrunk);
	ck_assert_uint_eq(zero_first_bad(m, shrunk, 0, tail_off, shrunk), shrunk);
	memset(m, 0xff, tail_len);
	ck_assert_int_eq(rw_wait(disk, REQ_OP_READ, 0, m, (unsigned int)tail_len,
				 tail_off >> BVEC_SECTOR_SHIFT), 0);
	ck_assert_uint_eq(zero_first_bad(m, tail_len, 0, 0, tail_len), tail_len);
	free(m);
	put_disk(disk);
	close(fd);
	ramfs_umount(dir);
}
END_TEST

/*
 * The same over a block device that cannot zero out (a loop device over a
 * ramfs file), opened O_DIRECT.  Linux's FALLOC_FL_ZERO_RANGE on a block
 * device writes zeroes itself where the device has no WRITE_ZEROES, so
 * only the DISCARD fails; this keeps the disk honest there all the same.
 */
START_TEST(test_write_zeroes_without_zeroout_direct)
{
#if defined(LOOP_CONFIGURE) && defined(O_DIRECT)
	char dir[] = "/tmp/bvec-ramfs-XXXXXX", path[64], dev[32];
	const size_t bytes = zeroes_bytes();
	struct loop_config cfg;
	struct queue_limits lim;
	struct gendisk *disk;
	int fd, ctl, n, lfd = -1, dfd;

	if (!ramfs_mount(dir)) {
		printf("test_write_zeroes_without_zeroout_direct: cannot mount a ramfs; "
		       "not checked\n");
		return;
	}
	snprintf(path, sizeof(path), "%s/f", dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)bytes), 0);
	ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	n = ctl < 0 ? -1 : ioctl(ctl, LOOP_CTL_GET_FREE);
	if (n >= 0) {
		snprintf(dev, sizeof(dev), "/dev/loop%d", n);
		lfd = open(dev, O_RDWR | O_CLOEXEC);
	}
	memset(&cfg, 0, sizeof(cfg));
	cfg.fd = (unsigned int)fd;
	cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR; /* detached at the last close */
	if (lfd < 0 || ioctl(lfd, LOOP_CONFIGURE, &cfg)) {
		printf("test_write_zeroes_without_zeroout_direct: no loop device (%s); "
		       "not checked\n", strerror(errno));
		if (lfd >= 0)
			close(lfd);
		if (ctl >= 0)
			close(ctl);
		close(fd);
		ramfs_umount(dir);
		return;
	}
	close(ctl);
	dfd = open(dev, O_RDWR | O_DIRECT | O_CLOEXEC);
	ck_assert_int_ge(dfd, 0);
	blk_set_stacking_limits(&lim);
	lim.logical_block_size = 512;
	disk = bvec_uring_disk_create(dfd, &lim, 4);
	ck_assert_ptr_nonnull(disk);
	zeroes_written(disk, lfd, bytes, "O_DIRECT loop device");
	put_disk(disk);
	close(dfd);
	close(lfd);
	close(fd);
	ramfs_umount(dir);
#else
	printf("test_write_zeroes_without_zeroout_direct: built without <linux/loop.h>; "
	       "not checked\n");
#endif
}
END_TEST

/*
 * The io_uring disk waits for a free slot, and for its locks, when busy,
 * so it must not claim BLK_FEAT_NOWAIT even when the caller's limits carry
 * it: a REQ_NOWAIT bio is refused with BLK_STS_NOTSUPP, the file untouched.
 */
START_TEST(test_not_nowait)
{
	int fd = temp_file(65536, -1);
	struct queue_limits lim;
	struct gendisk *disk;
	unsigned char buf[4096];

	blk_set_stacking_limits(&lim);
	lim.features |= BLK_FEAT_NOWAIT;
	disk = bvec_uring_disk_create(fd, &lim, 8);
	ck_assert_ptr_nonnull(disk);
	ck_assert_msg(!bdev_nowait(disk->part0),
		      "the io_uring disk, which waits for slots, has BLK_FEAT_NOWAIT");
	memset(buf, 0, sizeof(buf));
	ck_assert_int_eq(rw_wait(disk, REQ_OP_WRITE, REQ_NOWAIT, buf, sizeof(buf), 0),
			 -EOPNOTSUPP);
	ck_assert_int_eq(pread(fd, buf, 1, 0), 1);
	ck_assert_uint_eq(buf[0], pat_old(0));
	put_disk(disk);
	close(fd);
}
END_TEST

/* 2000 scattered 512-byte pieces: more than one SQE carries, so it is split. */
START_TEST(test_bio_larger_than_one_sqe)
{
	const unsigned int n = 2000;
	int fd = temp_file(n * 512, -1);
	struct gendisk *disk = bvec_uring_disk_create(fd, NULL, 4);
	unsigned char *mem = malloc(n * 1024);
	struct bio_vec *table = calloc(n, sizeof(*table));
	struct bio bio;
	unsigned int i;

	ck_assert_ptr_nonnull(disk);
	for (i = 0; i < n * 1024; i++)
		mem[i] = pat_new(i / 1024 * 512 + i % 512);
	bio_init(&bio, disk->part0, table, (unsigned short)n, REQ_OP_WRITE);
	for (i = 0; i < n; i++) /* half of every KiB: never contiguous */
		ck_assert_int_eq(bio_add_virt(&bio, mem + i * 1024, 512), 512);
	ck_assert_int_eq(submit_bio_wait(&bio), 0);
	bio_uninit(&bio);
	free(table);
	put_disk(disk);
	memset(mem, 1, n * 512); /* now: where the write went, everywhere */
	check_file(fd, n * 512, mem);
	close(fd);
	free(mem);
}
END_TEST

/*
 * put_disk() while bios are in flight waits for them: each ends once.  The
 * first bio's bi_end_io holds the completion thread until put_disk() has
 * been called, so the 15 bios submitted after it are surely in flight (their
 * CQEs not even reaped) when put_disk() starts.
 */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool entered, open, put_returned;
} gate = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false, false };

static void gated_end(struct bio *bio)
{
	pthread_mutex_lock(&gate.lock);
	gate.entered = true;
	pthread_cond_broadcast(&gate.cond);
	while (!gate.open)
		pthread_cond_wait(&gate.cond, &gate.lock);
	pthread_mutex_unlock(&gate.lock);
	tio_end(bio);
}

static void *put_thread(void *disk)
{
	put_disk(disk);
	pthread_mutex_lock(&gate.lock);
	gate.put_returned = true;
	pthread_mutex_unlock(&gate.lock);
	return NULL;
}

/* Until the first bio's bi_end_io holds the completion thread. */
static void gate_wait_entered(void)
{
	pthread_mutex_lock(&gate.lock);
	while (!gate.entered)
		pthread_cond_wait(&gate.cond, &gate.lock);
	pthread_mutex_unlock(&gate.lock);
}

/*
 * Runs @fn(@disk) on a thread that must still be waiting 100 ms later (the
 * gated bio is in flight), then opens the gate and joins it.
 */
static void *gate_run_blocked(void *(*fn)(void *), struct gendisk *disk)
{
	pthread_t th;
	void *ret;

	ck_assert_int_eq(pthread_create(&th, NULL, fn, disk), 0);
	usleep(100000);
	pthread_mutex_lock(&gate.lock);
	ck_assert(!gate.put_returned);
	gate.open = true;
	pthread_cond_broadcast(&gate.cond);
	pthread_mutex_unlock(&gate.lock);
	pthread_join(th, &ret);
	return ret;
}

START_TEST(test_put_disk_in_flight)
{
	const unsigned int n = 16;
	int fd = temp_file(MANY_FILE, -1);
	struct tio t[16];
	struct rng r = { 777 };
	struct gendisk *disk = bvec_uring_disk_create(fd, NULL, n);
	struct bio *bio;
	struct waiter w;
	unsigned int i;

	ck_assert_ptr_nonnull(disk);
	memset(t, 0, sizeof(t));
	waiter_init(&w);
	for (i = 0; i < n; i++) {
		t[i].w = &w;
		bio = tio_bio(disk, &t[i], &r, REQ_OP_READ,
			      (uint64_t)rng_range(&r, 0, 255) * 65536, 65536);
		if (!i)
			bio->bi_end_io = gated_end;
		submit_bio(bio);
		gate_wait_entered();
	}
	gate_run_blocked(put_thread, disk);
	pthread_mutex_lock(&w.lock);
	ck_assert_uint_eq(w.done, n);
	pthread_mutex_unlock(&w.lock);
	waiter_wait(&w, n);
	ck_assert_uint_eq(w.bad, 0);
	for (i = 0; i < n; i++)
		ck_assert_int_eq(t[i].ended, 1);
	close(fd);
}
END_TEST

/*
 * Bios submitted from bi_end_io, on the completion thread, three for each
 * one that ends, at depth 2: they cannot wait for a slot, since only that
 * thread frees slots, so they queue.  The last one puts the disk from its
 * bi_end_io.
 */
struct chain_state {
	struct gendisk *disk;
	struct waiter w;
	unsigned int submitted, limit;
	struct rng r;
	struct tio *t;
};

static struct chain_state chain;

static void chain_end(struct bio *bio);

static void chain_submit(void)
{
	struct tio *t = &chain.t[chain.submitted++];
	struct bio *bio;

	t->w = &chain.w;
	bio = tio_bio(chain.disk, t, &chain.r, REQ_OP_READ,
		      (uint64_t)rng_range(&chain.r, 0, 1023) * 4096, 8192);
	bio->bi_end_io = chain_end;
	submit_bio(bio);
}

static void chain_end(struct bio *bio)
{
	unsigned int k;

	for (k = 0; k < 3 && chain.submitted < chain.limit; k++)
		chain_submit();
	tio_end(bio);
}

START_TEST(test_submit_from_end_io)
{
	int fd = temp_file(MANY_FILE, -1);
	unsigned int i;

	memset(&chain, 0, sizeof(chain));
	chain.r.s = 31337;
	chain.limit = test_scale(400);
	chain.t = calloc(chain.limit, sizeof(*chain.t));
	chain.disk = bvec_uring_disk_create(fd, NULL, 2);
	ck_assert_ptr_nonnull(chain.disk);
	waiter_init(&chain.w);
	chain_submit();
	waiter_wait(&chain.w, chain.limit);
	ck_assert_uint_eq(chain.w.bad, 0);
	ck_assert_uint_eq(chain.w.twice, 0);
	for (i = 0; i < chain.limit; i++)
		ck_assert_int_eq(chain.t[i].ended, 1);
	put_disk(chain.disk);
	close(fd);
	free(chain.t);
}
END_TEST

static int put_in_end_io_done;

static void put_in_end_io(struct bio *bio)
{
	struct gendisk *disk = bio->bi_bdev->bd_disk;

	bio_put(bio);
	put_disk(disk);
	__atomic_store_n(&put_in_end_io_done, 1, __ATOMIC_RELEASE);
}

/* put_disk() from the disk's own bi_end_io neither hangs nor leaks. */
START_TEST(test_put_disk_from_end_io)
{
	int fd = temp_file(65536, -1);
	struct gendisk *disk = bvec_uring_disk_create(fd, NULL, 4);
	static char buf[4096];
	struct bio *bio;

	ck_assert_ptr_nonnull(disk);
	put_in_end_io_done = 0;
	bio = bio_alloc(disk->part0, 1, REQ_OP_READ, GFP_KERNEL);
	bio_add_virt(bio, buf, sizeof(buf));
	bio->bi_end_io = put_in_end_io;
	submit_bio(bio);
	while (!__atomic_load_n(&put_in_end_io_done, __ATOMIC_ACQUIRE))
		usleep(1000);
	/* The thread frees the disk as it leaves; give it time before exit,
	 * so valgrind and ASan see the memory returned. */
	usleep(100000);
	close(fd);
}
END_TEST

/* Several threads submit at once, some waiting, some not. */
struct thread_arg {
	struct gendisk *disk;
	unsigned int id;
	unsigned int bad;
};

#define THREADS 4
#define REGION (1u << 20)

static void *submitter(void *p)
{
	struct thread_arg *a = p;
	unsigned int n = test_scale(200), i;
	struct tio *t = calloc(n, sizeof(*t));
	struct rng r = { 1000 + a->id };
	struct waiter w;
	unsigned int async = 0;

	waiter_init(&w);
	for (i = 0; i < n; i++) {
		unsigned int len = rng_range(&r, 1, 32) * 4096;
		uint64_t off = (uint64_t)a->id * REGION + rng_range(&r, 0, (REGION - len) / 4096) * 4096;
		enum req_op op = rng_next(&r) & 1 ? REQ_OP_WRITE : REQ_OP_READ;
		struct bio *bio;

		t[i].w = &w;
		bio = tio_bio(a->disk, &t[i], &r, op, off, len);
		if (i % 4 == 0) {
			/* submit_bio_wait() from any thread: its own bi_end_io. */
			struct tio copy = t[i];

			if (submit_bio_wait(bio) || !tio_data_ok(&copy, op == REQ_OP_READ))
				a->bad++;
			for (unsigned int p2 = 0; p2 < copy.npieces; p2++)
				free(copy.piece[p2]);
			bio_put(bio);
		} else {
			submit_bio(bio);
			async++;
		}
	}
	waiter_wait(&w, async);
	a->bad += w.bad + w.twice;
	free(t);
	return NULL;
}

/* Runs @first on thread 0 and @rest on the others, over one disk; all must see good data. */
static void run_threads(struct gendisk *disk, void *(*first)(void *), void *(*rest)(void *))
{
	struct thread_arg a[THREADS];
	pthread_t th[THREADS];
	unsigned int i;

	for (i = 0; i < THREADS; i++) {
		a[i] = (struct thread_arg){ .disk = disk, .id = i };
		ck_assert_int_eq(pthread_create(&th[i], NULL, i ? rest : first, &a[i]), 0);
	}
	for (i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		ck_assert_uint_eq(a[i].bad, 0);
	}
}

START_TEST(test_threads_submit_at_once)
{
	int fd = temp_file(THREADS * REGION, -1);
	struct gendisk *disk = bvec_uring_disk_create(fd, NULL, 8);

	ck_assert_ptr_nonnull(disk);
	run_threads(disk, submitter, submitter);
	put_disk(disk);
	close(fd);
}
END_TEST

static struct bvec__uring_stats stats_of(struct gendisk *disk)
{
	struct bvec__uring_stats st;

	bvec__uring_disk_stats(disk, &st);
	return st;
}

/* A bio over the given ranges, at @off; waits for it. */
static int rw_ranges(struct gendisk *disk, enum req_op op, blk_opf_t flags, uint64_t off,
		     unsigned char *const *mem, const unsigned int *len, unsigned int n)
{
	struct bio *bio = bio_alloc(disk->part0, (unsigned short)n, op | flags, GFP_KERNEL);
	unsigned int i;
	int ret;

	for (i = 0; i < n; i++)
		ck_assert_uint_eq(bio_add_virt(bio, mem[i], len[i]), len[i]);
	bio->bi_iter.bi_sector = off >> 9;
	ret = submit_bio_wait(bio);
	bio_put(bio);
	return ret;
}

static void fill_new(unsigned char *m, uint64_t off, unsigned int len)
{
	unsigned int i;

	for (i = 0; i < len; i++)
		m[i] = pat_new(off + i);
}

static void check_range(const unsigned char *m, uint64_t off, unsigned int len, bool new)
{
	unsigned int i;

	for (i = 0; i < len; i++)
		if (m[i] != (new ? pat_new(off + i) : pat_old(off + i)))
			ck_abort_msg("byte %u of the range at %llu is %#x", i,
				     (unsigned long long)off, m[i]);
}

/*
 * Registered buffers: a single range inside one goes as READ_FIXED or
 * WRITE_FIXED (the fixed counter moves), anything else as readv/writev, and
 * the data is right either way.  Short transfers stay on the fixed path.
 */
START_TEST(test_registered_buffers)
{
	const size_t fsize = 1u << 20;
	int fd = temp_file(fsize, -1);
	struct gendisk *disk = bvec_uring_disk_create(fd, NULL, 8);
	unsigned char *a = malloc(65536), *b = malloc(131072), *c = malloc(8192);
	unsigned char *mem[2];
	unsigned int len[2];
	struct iovec reg[2] = { { b, 65536 }, { a, 65536 } };
	struct iovec overlap[2] = { { b, 65536 }, { b + 4096, 4096 } };
	struct gendisk *file;
	unsigned long f0;

	ck_assert_ptr_nonnull(disk);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_nonnull(c);
	/* Initialised for valgrind, which does not see io_uring write memory. */
	memset(c, 0, 8192);
	ck_assert_int_eq(bvec_uring_disk_register_buffers(disk, reg, 0), -EINVAL);
	ck_assert_int_eq(bvec_uring_disk_register_buffers(disk, NULL, 1), -EINVAL);
	ck_assert_int_eq(bvec_uring_disk_register_buffers(disk, overlap, 2), -EINVAL);
	ck_assert_int_eq(bvec_uring_disk_unregister_buffers(disk), -ENXIO);
	file = bvec_file_disk_create(fd, NULL);
	ck_assert_ptr_nonnull(file);
	ck_assert_int_eq(bvec_uring_disk_register_buffers(file, reg, 2), -EINVAL);
	ck_assert_int_eq(bvec_uring_disk_unregister_buffers(file), -EINVAL);
	put_disk(file);

	/* Only the first 64 KiB of b: its second half is outside. */
	ck_assert_int_eq(bvec_uring_disk_register_buffers(disk, reg, 2), 0);
	ck_assert_int_eq(bvec_uring_disk_register_buffers(disk, reg, 2), -EBUSY);
	ck_assert_uint_eq(stats_of(disk).fixed, 0);

	/* A write inside a, then a read of it inside b: both fixed. */
	fill_new(a + 4096, 8192, 16384);
	mem[0] = a + 4096;
	len[0] = 16384;
	ck_assert_int_eq(rw_ranges(disk, REQ_OP_WRITE, REQ_FUA, 8192, mem, len, 1), 0);
	ck_assert_uint_eq(stats_of(disk).fixed, 1);
	memset(b, 0, 65536);
	mem[0] = b + 512;
	len[0] = 32768;
	ck_assert_int_eq(rw_ranges(disk, REQ_OP_READ, 0, 0, mem, len, 1), 0);
	ck_assert_uint_eq(stats_of(disk).fixed, 2);
	check_range(b + 512, 0, 8192, false);
	check_range(b + 512 + 8192, 8192, 16384, true);
	check_range(b + 512 + 24576, 24576, 8192, false);

	/* Memory outside: readv. */
	mem[0] = c;
	len[0] = 8192;
	ck_assert_int_eq(rw_ranges(disk, REQ_OP_READ, 0, 16384, mem, len, 1), 0);
	check_range(c, 16384, 8192, true);
	ck_assert_uint_eq(stats_of(disk).fixed, 2);
	/* Straddling the end of a registered buffer: readv. */
	memset(b, 0, 131072);
	mem[0] = b + 61440;
	ck_assert_int_eq(rw_ranges(disk, REQ_OP_READ, 0, 65536, mem, len, 1), 0);
	check_range(b + 61440, 65536, 8192, false);
	ck_assert_uint_eq(stats_of(disk).fixed, 2);
	/* Two ranges, both inside a: one readv. */
	memset(a, 0, 65536);
	mem[0] = a + 8192;
	mem[1] = a;
	len[0] = len[1] = 4096;
	ck_assert_int_eq(rw_ranges(disk, REQ_OP_READ, 0, 8192, mem, len, 2), 0);
	check_range(a + 8192, 8192, 4096, true);
	check_range(a, 12288, 4096, true);
	ck_assert_uint_eq(stats_of(disk).fixed, 2);

	/* Unregistered: the same range as before is no longer fixed. */
	ck_assert_int_eq(bvec_uring_disk_unregister_buffers(disk), 0);
	ck_assert_int_eq(bvec_uring_disk_unregister_buffers(disk), -ENXIO);
	mem[0] = b + 512;
	len[0] = 32768;
	ck_assert_int_eq(rw_ranges(disk, REQ_OP_READ, 0, 0, mem, len, 1), 0);
	ck_assert_uint_eq(stats_of(disk).fixed, 2);
	put_disk(disk);

	/* Every SQE capped at 1000 bytes: 9 fixed SQEs for 8 KiB, each from
	 * the right place in the buffer and the file. */
	disk = bvec_uring_disk_create(fd, NULL, 4);
	ck_assert_ptr_nonnull(disk);
	bvec__uring_disk_set_max_io(disk, 1000);
	ck_assert_int_eq(bvec_uring_disk_register_buffers(disk, reg, 2), 0);
	memset(a, 0, 65536);
	mem[0] = a + 100;
	len[0] = 8192;
	f0 = stats_of(disk).fixed;
	ck_assert_int_eq(rw_ranges(disk, REQ_OP_READ, 0, 4096, mem, len, 1), 0);
	ck_assert_uint_eq(stats_of(disk).fixed - f0, 9);
	check_range(a + 100, 4096, 4096, false);
	check_range(a + 100 + 4096, 8192, 4096, true);
	/* put_disk() with buffers still registered. */
	put_disk(disk);
	close(fd);
	free(a);
	free(b);
	free(c);
}
END_TEST

/*
 * Unregistering while READ_FIXED I/O is in flight waits for it.  The first
 * bio's bi_end_io holds the completion thread, so the 15 fixed reads after
 * it stay unreaped until the gate opens: until then the unregistering
 * thread must not return.
 */
static void *unregister_thread(void *disk)
{
	int ret = bvec_uring_disk_unregister_buffers(disk);

	pthread_mutex_lock(&gate.lock);
	gate.put_returned = true;
	pthread_mutex_unlock(&gate.lock);
	return (void *)(intptr_t)ret;
}

START_TEST(test_unregister_waits)
{
	const unsigned int n = 16;
	int fd = temp_file(MANY_FILE, -1);
	struct gendisk *disk = bvec_uring_disk_create(fd, NULL, 32);
	unsigned char *buf = malloc((size_t)n * 4096);
	struct iovec reg = { buf, (size_t)n * 4096 };
	struct tio t[16];
	struct waiter w;
	struct bio *bio;
	void *ret;
	unsigned int i;

	ck_assert_ptr_nonnull(disk);
	ck_assert_int_eq(bvec_uring_disk_register_buffers(disk, &reg, 1), 0);
	memset(buf, 0, (size_t)n * 4096);
	gate.entered = gate.open = gate.put_returned = false;
	memset(t, 0, sizeof(t));
	waiter_init(&w);
	for (i = 0; i < n; i++) {
		bio = bio_alloc(disk->part0, 1, REQ_OP_READ, GFP_KERNEL);
		bio_add_virt(bio, buf + i * 4096, 4096);
		bio->bi_iter.bi_sector = (sector_t)i * 61 * 8;
		t[i].w = &w;
		bio->bi_private = &t[i];
		bio->bi_end_io = i ? tio_end : gated_end;
		submit_bio(bio);
		gate_wait_entered();
	}
	ck_assert_uint_eq(stats_of(disk).fixed, n);
	ret = gate_run_blocked(unregister_thread, disk);
	ck_assert_int_eq((int)(intptr_t)ret, 0);
	ck_assert_uint_eq(stats_of(disk).fixed_in_flight, 0);
	waiter_wait(&w, n);
	ck_assert_uint_eq(w.bad, 0);
	for (i = 0; i < n; i++)
		check_range(buf + i * 4096, (uint64_t)i * 61 * 4096, 4096, false);
	/* Without fork (valgrind), the next test that uses the gate sees this. */
	gate.entered = gate.open = gate.put_returned = false;
	put_disk(disk);
	close(fd);
	free(buf);
}
END_TEST

struct polled_io {
	pthread_t thread;
	_Atomic int ended;
	blk_status_t status;
};

static void polled_end(struct bio *bio)
{
	struct polled_io *p = bio->bi_private;

	p->thread = pthread_self();
	p->status = bio->bi_status;
	atomic_store(&p->ended, 1);
}

static struct bio *polled_bio(struct gendisk *disk, blk_opf_t opf, void *buf,
			      unsigned int len, uint64_t off, struct polled_io *p)
{
	struct bio *bio = bio_alloc(disk->part0, 1, opf, GFP_KERNEL);

	bio_add_virt(bio, buf, len);
	bio->bi_iter.bi_sector = off >> 9;
	memset(p, 0, sizeof(*p));
	bio->bi_private = p;
	bio->bi_end_io = polled_end;
	return bio;
}

/*
 * A REQ_POLLED bio ends only when polled, on the polling thread; an
 * unpolled one on the completion thread as before; submit_bio_wait() polls
 * for a polled bio; put_disk() reaps a polled bio nobody polled.
 */
START_TEST(test_polled)
{
	int fd = temp_file(1u << 20, -1);
	struct gendisk *disk = bvec_uring_disk_create(fd, NULL, 8);
	unsigned char *buf = malloc(65536);
	struct polled_io p;
	struct bio *bio;
	unsigned long polled;

	ck_assert_ptr_nonnull(disk);
	ck_assert(disk->limits.features & BLK_FEAT_POLL);

	/* Polled: nothing ends it but a poll, which runs bi_end_io here. */
	memset(buf, 0, 65536);
	bio = polled_bio(disk, REQ_OP_READ | REQ_POLLED, buf, 16384, 4096, &p);
	submit_bio(bio);
	usleep(100000);
	ck_assert_int_eq(atomic_load(&p.ended), 0);
	ck_assert_int_eq(bio_poll(bio, NULL, 0), 1);
	ck_assert_int_eq(atomic_load(&p.ended), 1);
	ck_assert(pthread_equal(p.thread, pthread_self()));
	ck_assert_uint_eq(p.status, BLK_STS_OK);
	check_range(buf, 4096, 16384, false);
	ck_assert_uint_eq(stats_of(disk).polled, 1);
	/* Nothing left to poll: returns at once. */
	ck_assert_int_eq(bio_poll(bio, NULL, 0), 0);
	bio_put(bio);

	/* ONESHOT looks without waiting; a loop of them gets there. */
	fill_new(buf, 8192, 4096);
	bio = polled_bio(disk, REQ_OP_WRITE | REQ_POLLED, buf, 4096, 8192, &p);
	submit_bio(bio);
	while (!atomic_load(&p.ended))
		(void)bio_poll(bio, NULL, BLK_POLL_ONESHOT);
	ck_assert(pthread_equal(p.thread, pthread_self()));
	bio_put(bio);

	/* Not polled: bio_poll() does nothing, the completion thread ends it. */
	bio = polled_bio(disk, REQ_OP_READ, buf, 4096, 8192, &p);
	submit_bio(bio);
	ck_assert_int_eq(bio_poll(bio, NULL, 0), 0);
	while (!atomic_load(&p.ended))
		usleep(1000);
	ck_assert(!pthread_equal(p.thread, pthread_self()));
	check_range(buf, 8192, 4096, true);
	bio_put(bio);
	ck_assert_uint_eq(stats_of(disk).polled, 2);

	/* submit_bio_wait() polls for a polled bio, and only for one. */
	polled = stats_of(disk).polled;
	ck_assert_int_eq(rw_wait(disk, REQ_OP_READ, REQ_POLLED, buf, 4096, 16), 0);
	ck_assert_uint_eq(stats_of(disk).polled, polled + 1);
	check_range(buf, 8192, 4096, true);
	ck_assert_int_eq(rw_wait(disk, REQ_OP_READ, 0, buf, 4096, 16), 0);
	ck_assert_uint_eq(stats_of(disk).polled, polled + 1);
	/* A polled flush: an fsync SQE on the poll ring. */
	ck_assert_int_eq(rw_wait(disk, REQ_OP_WRITE, REQ_PREFLUSH | REQ_POLLED, NULL, 0, 0), 0);
	ck_assert_uint_eq(stats_of(disk).polled, polled + 2);

	/* Left unpolled: put_disk() reaps it. */
	bio = polled_bio(disk, REQ_OP_READ | REQ_POLLED, buf, 4096, 0, &p);
	submit_bio(bio);
	put_disk(disk);
	ck_assert_int_eq(atomic_load(&p.ended), 1);
	ck_assert(pthread_equal(p.thread, pthread_self()));
	check_range(buf, 0, 4096, false);
	bio_put(bio);
	close(fd);
	free(buf);
}
END_TEST

/*
 * A bio submitted from a bi_end_io while a polled bio holds the only slot
 * waits in the disk's backlog.  The poller that frees the slot must start
 * it: the completion thread, with nothing in flight on its ring, would
 * sleep for ever and the bio would never end (nor would put_disk()).
 */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool entered, go, left;
	struct polled_io second;
	struct bio *second_bio;
	unsigned char buf[4096];
} handoff = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static void handoff_end(struct bio *bio)
{
	struct gendisk *disk = bio->bi_bdev->bd_disk;

	pthread_mutex_lock(&handoff.lock);
	handoff.entered = true;
	pthread_cond_broadcast(&handoff.cond);
	while (!handoff.go)
		pthread_cond_wait(&handoff.cond, &handoff.lock);
	pthread_mutex_unlock(&handoff.lock);
	bio_put(bio);
	handoff.second_bio = polled_bio(disk, REQ_OP_READ, handoff.buf, 4096, 4096,
					&handoff.second);
	submit_bio(handoff.second_bio);
	pthread_mutex_lock(&handoff.lock);
	handoff.left = true;
	pthread_cond_broadcast(&handoff.cond);
	pthread_mutex_unlock(&handoff.lock);
}

START_TEST(test_backlog_after_poll)
{
	int fd = temp_file(65536, -1);
	struct gendisk *disk = bvec_uring_disk_create(fd, NULL, 1);
	unsigned char *buf = malloc(8192);
	struct polled_io first, p;
	struct bio *bio, *pbio;
	unsigned int waited;

	ck_assert_ptr_nonnull(disk);
	/* valgrind cannot see the ring write the buffers. */
	memset(buf, 0, 8192);
	memset(handoff.buf, 0, sizeof(handoff.buf));
	handoff.entered = handoff.go = handoff.left = false;
	bio = polled_bio(disk, REQ_OP_READ, buf, 4096, 0, &first);
	bio->bi_private = NULL;
	bio->bi_end_io = handoff_end;
	submit_bio(bio);
	pthread_mutex_lock(&handoff.lock);
	while (!handoff.entered)
		pthread_cond_wait(&handoff.cond, &handoff.lock);
	pthread_mutex_unlock(&handoff.lock);
	/* The first bio's slot is free again: this polled bio takes it. */
	pbio = polled_bio(disk, REQ_OP_READ | REQ_POLLED, buf + 4096, 4096, 8192, &p);
	submit_bio(pbio);
	pthread_mutex_lock(&handoff.lock);
	handoff.go = true;
	pthread_cond_broadcast(&handoff.cond);
	while (!handoff.left)
		pthread_cond_wait(&handoff.cond, &handoff.lock);
	pthread_mutex_unlock(&handoff.lock);
	/* The second bio is in the backlog; the poll frees the slot. */
	while (!atomic_load(&p.ended))
		(void)bio_poll(pbio, NULL, 0);
	ck_assert_uint_eq(p.status, BLK_STS_OK);
	check_range(buf + 4096, 8192, 4096, false);
	bio_put(pbio);
	for (waited = 0; waited < 5000 && !atomic_load(&handoff.second.ended); waited++)
		usleep(1000);
	ck_assert_msg(atomic_load(&handoff.second.ended),
		      "the bio in the backlog never ended");
	ck_assert_uint_eq(handoff.second.status, BLK_STS_OK);
	check_range(handoff.buf, 4096, 4096, false);
	bio_put(handoff.second_bio);
	put_disk(disk);
	close(fd);
	free(buf);
}
END_TEST

/*
 * Two disks, one slot each, whose bi_end_io submit to the other disk: the
 * first bio of each holds its completion thread until the other disk's
 * slot has been taken again, then both submit at once.  Neither thread may
 * wait for the other disk's slot, which only the other (waiting) thread
 * would free: the bios go to the backlog and every one ends.
 */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int entered, ended;
	bool go;
	struct gendisk *disk[2];
	unsigned char buf[4][4096];
} cross = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static void cross_last_end(struct bio *bio)
{
	pthread_mutex_lock(&cross.lock);
	if (!bio->bi_status)
		cross.ended++;
	pthread_cond_broadcast(&cross.cond);
	pthread_mutex_unlock(&cross.lock);
	bio_put(bio);
}

static struct bio *cross_bio(unsigned int d, unsigned int b, void (*end)(struct bio *))
{
	struct bio *bio = bio_alloc(cross.disk[d]->part0, 1, REQ_OP_READ, GFP_KERNEL);

	bio_add_virt(bio, cross.buf[b], 4096);
	bio->bi_iter.bi_sector = (sector_t)b * 8;
	bio->bi_private = (void *)(uintptr_t)d;
	bio->bi_end_io = end;
	return bio;
}

static void cross_first_end(struct bio *bio)
{
	unsigned int d = (unsigned int)(uintptr_t)bio->bi_private;

	bio_put(bio);
	pthread_mutex_lock(&cross.lock);
	cross.entered++;
	pthread_cond_broadcast(&cross.cond);
	while (!cross.go)
		pthread_cond_wait(&cross.cond, &cross.lock);
	pthread_mutex_unlock(&cross.lock);
	/* To the other disk, whose only slot is taken. */
	submit_bio(cross_bio(!d, 2 + d, cross_last_end));
}

START_TEST(test_end_io_submits_to_other_disk)
{
	int fd[2] = { temp_file(65536, -1), temp_file(65536, -1) };
	struct timespec deadline;
	unsigned int d, i;

	cross.entered = cross.ended = 0;
	cross.go = false;
	for (d = 0; d < 2; d++) {
		cross.disk[d] = bvec_uring_disk_create(fd[d], NULL, 1);
		ck_assert_ptr_nonnull(cross.disk[d]);
	}
	for (d = 0; d < 2; d++) {
		submit_bio(cross_bio(d, d, cross_first_end));
		pthread_mutex_lock(&cross.lock);
		while (cross.entered < d + 1)
			pthread_cond_wait(&cross.cond, &cross.lock);
		pthread_mutex_unlock(&cross.lock);
		/* The slot its first bio left: taken by a bio whose CQE the
		 * held completion thread cannot reap. */
		submit_bio(cross_bio(d, d, cross_last_end));
	}
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 5;
	pthread_mutex_lock(&cross.lock);
	cross.go = true;
	pthread_cond_broadcast(&cross.cond);
	while (cross.ended < 4 &&
	       pthread_cond_timedwait(&cross.cond, &cross.lock, &deadline) != ETIMEDOUT)
		;
	ck_assert_msg(cross.ended == 4, "%u of 4 bios ended in 5 s", cross.ended);
	pthread_mutex_unlock(&cross.lock);
	for (d = 0; d < 2; d++) {
		put_disk(cross.disk[d]);
		close(fd[d]);
	}
	for (i = 0; i < 4; i++)
		check_range(cross.buf[i], (uint64_t)i * 4096, 4096, false);
}
END_TEST

/*
 * A stripe over two io_uring disks, each one slot deep, with REQ_PREFLUSH
 * writes from several threads: the end of the children's flushes sends
 * the data on from a completion thread, to its own disk and to the other.
 * Two completion threads each waiting for a slot of the other's disk would
 * wait for ever; every write must end, once, with its data in place.
 */
struct flush_writes {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int ended, bad;
};

static void flush_write_end(struct bio *bio)
{
	struct flush_writes *fw = bio->bi_private;

	pthread_mutex_lock(&fw->lock);
	fw->ended++;
	if (bio->bi_status)
		fw->bad++;
	pthread_cond_broadcast(&fw->cond);
	pthread_mutex_unlock(&fw->lock);
	bio_put(bio);
}

#define FW_THREADS 4

static struct {
	struct gendisk *s;
	unsigned char *mem;
	unsigned int per_thread;
	struct flush_writes fw;
} fws;

static void *flush_writer(void *p)
{
	unsigned int id = (unsigned int)(uintptr_t)p, i;

	for (i = 0; i < fws.per_thread; i++) {
		/* Two chunks (one per child) of the thread's own 8 slots. */
		unsigned int slot = id * 8 + i % 8;
		struct bio *bio = bio_alloc(fws.s->part0, 1,
					    REQ_OP_WRITE | REQ_PREFLUSH | (i & 1 ? REQ_FUA : 0),
					    GFP_KERNEL);

		bio_add_virt(bio, fws.mem + (size_t)slot * 2 * CHB, 2 * CHB);
		bio->bi_iter.bi_sector = (sector_t)slot * (2 * CHB >> 9);
		bio->bi_private = &fws.fw;
		bio->bi_end_io = flush_write_end;
		submit_bio(bio);
	}
	return NULL;
}

START_TEST(test_stripe_preflush_over_rings)
{
	const size_t bytes = (size_t)FW_THREADS * 8 * 2 * CHB;
	int fd[2] = { temp_file(bytes / 2, -1), temp_file(bytes / 2, -1) };
	struct gendisk *children[2];
	pthread_t th[FW_THREADS];
	struct timespec deadline;
	unsigned char *back = malloc(bytes / 2);
	unsigned int i, total;
	size_t k;

	for (i = 0; i < 2; i++) {
		children[i] = bvec_uring_disk_create(fd[i], NULL, 1);
		ck_assert_ptr_nonnull(children[i]);
	}
	fws.s = bvec_stripe_create(children, 2, CHB >> 9);
	ck_assert_ptr_nonnull(fws.s);
	fws.mem = malloc(bytes);
	for (k = 0; k < bytes; k++)
		fws.mem[k] = pat_new(k);
	fws.per_thread = test_scale(400);
	total = FW_THREADS * fws.per_thread;
	memset(&fws.fw, 0, sizeof(fws.fw));
	pthread_mutex_init(&fws.fw.lock, NULL);
	pthread_cond_init(&fws.fw.cond, NULL);
	for (i = 0; i < FW_THREADS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, flush_writer,
						(void *)(uintptr_t)i), 0);
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 60;
	pthread_mutex_lock(&fws.fw.lock);
	while (fws.fw.ended < total &&
	       pthread_cond_timedwait(&fws.fw.cond, &fws.fw.lock, &deadline) != ETIMEDOUT)
		;
	ck_assert_msg(fws.fw.ended == total, "%u of %u writes ended in 60 s",
		      fws.fw.ended, total);
	pthread_mutex_unlock(&fws.fw.lock);
	for (i = 0; i < FW_THREADS; i++)
		pthread_join(th[i], NULL);
	ck_assert_uint_eq(fws.fw.bad, 0);
	put_disk(fws.s);
	/* Chunk c is on child c % 2 at c / 2 chunks. */
	for (i = 0; i < 2; i++) {
		put_disk(children[i]);
		ck_assert_int_eq(pread(fd[i], back, bytes / 2, 0), (ssize_t)(bytes / 2));
		for (k = 0; k < bytes / 2; k++) {
			size_t c = k / CHB * 2 + i;

			ck_assert_uint_eq(back[k], pat_new(c * CHB + k % CHB));
		}
		close(fd[i]);
	}
	pthread_cond_destroy(&fws.fw.cond);
	pthread_mutex_destroy(&fws.fw.lock);
	free(fws.mem);
	free(back);
}
END_TEST

/* Threads waiting for polled bios at once: each may reap the others'. */
static void *polled_waiter(void *p)
{
	struct thread_arg *a = p;
	unsigned int n = test_scale(100), i;
	unsigned char *buf = calloc(1, 32768);
	struct rng r = { 500 + a->id };

	for (i = 0; i < n; i++) {
		unsigned int len = rng_range(&r, 1, 8) * 4096;
		uint64_t off = (uint64_t)a->id * REGION + rng_range(&r, 0, (REGION - len) / 4096) * 4096;
		bool write = rng_next(&r) & 1;

		if (write)
			fill_new(buf, off, len);
		if (rw_wait(a->disk, write ? REQ_OP_WRITE : REQ_OP_READ, REQ_POLLED, buf, len,
			    off >> 9))
			a->bad++;
		else if (!write)
			for (unsigned int k = 0; k < len; k++)
				if (buf[k] != pat_old(off + k) && buf[k] != pat_new(off + k)) {
					a->bad++;
					break;
				}
	}
	free(buf);
	return NULL;
}

START_TEST(test_threads_poll_at_once)
{
	int fd = temp_file(THREADS * REGION, -1);
	struct gendisk *disk = bvec_uring_disk_create(fd, NULL, 4);

	ck_assert_ptr_nonnull(disk);
	run_threads(disk, submitter, polled_waiter);
	ck_assert_uint_ge(stats_of(disk).polled, (THREADS - 1) * test_scale(100));
	put_disk(disk);
	close(fd);
}
END_TEST

int main(void)
{
	const TTest *const io[] = {
		test_many_in_flight,
		test_short_transfers_resubmitted,
		test_read_across_eof,
		test_errors,
		test_append_refused,
		test_sqe_after_failed_prep_sent,
		test_chained_error_survives,
		test_not_nowait,
		test_flush_discard_zeroes,
		test_write_zeroes_without_fallocate,
		test_write_zeroes_without_zeroout_direct,
		test_bio_larger_than_one_sqe,
		test_registered_buffers,
		test_unregister_waits,
		test_polled,
		NULL
	};
	const TTest *const life[] = {
		test_put_disk_in_flight,
		test_submit_from_end_io,
		test_put_disk_from_end_io,
		test_threads_submit_at_once,
		test_threads_poll_at_once,
		test_backlog_after_poll,
		test_end_io_submits_to_other_disk,
		test_stripe_preflush_over_rings,
		NULL
	};
	const struct test_group groups[] = {
		{ .name = "io", .tests = io, .timeout = 300 },
		{ .name = "lifetime", .tests = life, .timeout = 300 },
		{ .name = NULL },
	};
	char name[] = "/tmp/bvec-uring-XXXXXX";
	struct gendisk *probe;
	int fd;

	fd = mkstemp(name);
	if (fd < 0) {
		perror("uring: mkstemp");
		return EXIT_FAILURE;
	}
	unlink(name);
	probe = bvec_uring_disk_create(fd, NULL, 1);

	/* No liburing in this build, io_uring disabled in the kernel or not
	 * emulated. */
	if (!probe) {
		printf("uring: skipped: bvec_uring_disk_create: %s\n", strerror(errno));
		close(fd);
		return 77;
	}
	put_disk(probe);
	close(fd);
	return test_main("uring", groups);
}

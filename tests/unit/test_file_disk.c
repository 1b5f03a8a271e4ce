// SPDX-License-Identifier: MIT
/*
 * The file disk against a file that misbehaves the ways POSIX allows:
 * short transfers, EINTR, errors midway, filesystems without a zero range.
 * This program defines preadv(), pwritev(), fallocate() and fdatasync(),
 * which the library's internal static build calls instead of the C
 * library's; each logs the call and fails or shortens it on demand.
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <libbvec/blkdev.h>

#include "testutil.h"

#define PS ((unsigned int)BVEC_PAGE_SIZE)

#ifndef FALLOC_FL_ZERO_RANGE
#define FALLOC_FL_ZERO_RANGE 0x10
#endif

static struct {
	size_t max_io;		/* most bytes one preadv/pwritev moves; 0: all */
	int rw_eintr_every;	/* every Nth preadv/pwritev fails EINTR first */
	int rw_calls;
	int rw_fail_at;		/* that preadv/pwritev (from 1) fails with... */
	int rw_fail_errno;	/* ...this errno */
	int fallocate_eintr;	/* the next N fallocate() fail EINTR */
	int fdatasync_eintr;	/* the next N fdatasync() fail EINTR */
	bool no_zero_range;	/* a filesystem without FALLOC_FL_ZERO_RANGE (tmpfs) */
	bool no_punch;		/* nor FALLOC_FL_PUNCH_HOLE (vfat, ramfs, some FUSE) */
	char log[256];		/* r w p z s: read, write, punch, zero, sync */
	size_t nlog;
} fake;

static void fake_reset(void)
{
	memset(&fake, 0, sizeof(fake));
}

static void fake_log(char c)
{
	if (fake.nlog + 1 < sizeof(fake.log))
		fake.log[fake.nlog++] = c;
}

/* One iovec at most, so any transfer of more is short, as POSIX allows. */
static ssize_t fake_rw(int fd, const struct iovec *iov, int cnt, off_t off, bool write)
{
	size_t len;

	fake_log(write ? 'w' : 'r');
	fake.rw_calls++;
	if (fake.rw_eintr_every && fake.rw_calls % fake.rw_eintr_every == 0) {
		errno = EINTR;
		return -1;
	}
	if (fake.rw_fail_at && fake.rw_calls == fake.rw_fail_at) {
		errno = fake.rw_fail_errno;
		return -1;
	}
	if (cnt < 1) {
		errno = EINVAL;
		return -1;
	}
	len = iov[0].iov_len;
	if (fake.max_io && len > fake.max_io)
		len = fake.max_io;
	return write ? pwrite(fd, iov[0].iov_base, len, off) : pread(fd, iov[0].iov_base, len, off);
}

ssize_t preadv(int fd, const struct iovec *iov, int cnt, off_t off)
{
	return fake_rw(fd, iov, cnt, off, false);
}

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
	return fake_rw(fd, iov, cnt, off, true);
}

/* KEEP_SIZE punch and zero range, both as zeroes written inside the file. */
int fallocate(int fd, int mode, off_t off, off_t len)
{
	static const char zero[512];
	struct stat st;
	off_t end;

	fake_log(mode & FALLOC_FL_PUNCH_HOLE ? 'p' : 'z');
	if (fake.fallocate_eintr) {
		fake.fallocate_eintr--;
		errno = EINTR;
		return -1;
	}
	if (off < 0 || len <= 0) {	/* as fallocate(2) */
		errno = EINVAL;
		return -1;
	}
	if (!(mode & FALLOC_FL_KEEP_SIZE) ||
	    ((mode & FALLOC_FL_ZERO_RANGE) && fake.no_zero_range) ||
	    ((mode & FALLOC_FL_PUNCH_HOLE) && fake.no_punch)) {
		errno = EOPNOTSUPP;
		return -1;
	}
	if (fstat(fd, &st))
		return -1;
	end = off + len < st.st_size ? off + len : st.st_size;
	while (off < end) {
		size_t n = end - off < (off_t)sizeof(zero) ? (size_t)(end - off) : sizeof(zero);
		ssize_t w = pwrite(fd, zero, n, off);

		if (w <= 0)
			return -1;
		off += w;
	}
	return 0;
}

int fdatasync(int fd)
{
	fake_log('s');
	if (fake.fdatasync_eintr) {
		fake.fdatasync_eintr--;
		errno = EINTR;
		return -1;
	}
	return fsync(fd);
}

static unsigned char pat(uint64_t off, unsigned int gen)
{
	uint64_t x = (off + 1 + gen * 0x1234567ull) * 0x9E3779B97F4A7C15ull;

	return (unsigned char)(x >> 56);
}

/* An unlinked temp file of @bytes, every byte pat(off, 0). */
static int temp_file(size_t bytes)
{
	char name[] = "/tmp/bvec-filedisk-XXXXXX";
	unsigned char *buf = malloc(bytes);
	int fd = mkstemp(name);
	size_t i;

	ck_assert_int_ge(fd, 0);
	unlink(name);
	for (i = 0; i < bytes; i++)
		buf[i] = pat(i, 0);
	ck_assert_int_eq(pwrite(fd, buf, bytes, 0), (ssize_t)bytes);
	free(buf);
	return fd;
}

static int rw_wait(struct gendisk *disk, blk_opf_t opf, void *buf, unsigned int len,
		   sector_t sector)
{
	struct bio *bio = bio_alloc(disk->part0, 1, opf, GFP_KERNEL);
	int ret;

	if (buf)
		bio_add_virt(bio, buf, len);
	else
		bio->bi_iter.bi_size = len;
	bio->bi_iter.bi_sector = sector;
	ret = submit_bio_wait(bio);
	bio_put(bio);
	return ret;
}

/*
 * Every transfer short (by a size that is neither a sector nor a piece)
 * and every third call interrupted: a bio over scattered pieces lands
 * byte for byte where it should, and reads back the same way.
 */
START_TEST(test_short_and_interrupted)
{
	const unsigned int pieces = 6, plen = PS / 2 + 512;
	const size_t bytes = 16 * (size_t)PS;
	int fd = temp_file(bytes);
	unsigned char *mem = malloc(pieces * 2 * (size_t)plen), *back = malloc(bytes);
	struct gendisk *disk;
	struct bio *bio;
	uint64_t base = PS + 1024;
	unsigned int i, j;

	fake_reset();
	disk = bvec_file_disk_create(fd, NULL);
	ck_assert_ptr_nonnull(disk);
	fake.max_io = 1000;
	fake.rw_eintr_every = 3;
	for (i = 0; i < pieces; i++)
		for (j = 0; j < plen; j++)
			mem[(size_t)i * 2 * plen + j] = pat(base + (uint64_t)i * plen + j, 1);
	bio = bio_alloc(disk->part0, (unsigned short)pieces, REQ_OP_WRITE, GFP_KERNEL);
	for (i = 0; i < pieces; i++) /* every other run of memory: never contiguous */
		bio_add_virt(bio, mem + (size_t)i * 2 * plen, plen);
	bio->bi_iter.bi_sector = base >> 9;
	ck_assert_int_eq(submit_bio_wait(bio), 0);
	bio_put(bio);
	ck_assert_int_eq(pread(fd, back, bytes, 0), (ssize_t)bytes);
	for (i = 0; i < bytes; i++)
		ck_assert_uint_eq(back[i], i >= base && i < base + pieces * plen ? pat(i, 1) :
										  pat(i, 0));

	memset(mem, 0, pieces * 2 * (size_t)plen);
	bio = bio_alloc(disk->part0, (unsigned short)pieces, REQ_OP_READ, GFP_KERNEL);
	for (i = 0; i < pieces; i++)
		bio_add_virt(bio, mem + (size_t)i * 2 * plen, plen);
	bio->bi_iter.bi_sector = base >> 9;
	ck_assert_int_eq(submit_bio_wait(bio), 0);
	bio_put(bio);
	for (i = 0; i < pieces; i++)
		ck_assert_mem_eq(mem + (size_t)i * 2 * plen, back + base + (size_t)i * plen, plen);
	put_disk(disk);
	close(fd);
	free(mem);
	free(back);
}
END_TEST

/*
 * A REQ_PREFLUSH | REQ_FUA write: the flush reaches fdatasync() before
 * any of the data, and the FUA's fdatasync() comes after all of it, all
 * before the bio ends.
 */
START_TEST(test_flush_and_fua_order)
{
	int fd = temp_file(4 * (size_t)PS);
	unsigned char *buf = calloc(PS, 1);
	struct gendisk *disk;

	fake_reset();
	disk = bvec_file_disk_create(fd, NULL);
	ck_assert_ptr_nonnull(disk);
	fake.max_io = PS / 4;
	ck_assert_int_eq(rw_wait(disk, REQ_OP_WRITE | REQ_PREFLUSH | REQ_FUA, buf, PS, 0), 0);
	ck_assert_str_eq(fake.log, "swwwws");
	fake_reset();
	ck_assert_int_eq(rw_wait(disk, REQ_OP_WRITE | REQ_PREFLUSH, NULL, 0, 0), 0);
	ck_assert_str_eq(fake.log, "s");
	fake_reset();
	ck_assert_int_eq(rw_wait(disk, REQ_OP_WRITE_ZEROES | REQ_FUA, NULL, PS, 0), 0);
	ck_assert_str_eq(fake.log, "zs");
	put_disk(disk);
	close(fd);
	free(buf);
}
END_TEST

/*
 * fallocate() and fdatasync() may fail EINTR when a signal comes (a FUSE
 * file, an NFS one): like the interrupted transfers, they are retried, not
 * turned into an I/O error of a DISCARD, a WRITE_ZEROES or a flush that
 * nothing stopped.
 */
START_TEST(test_fallocate_and_sync_interrupted)
{
	const size_t bytes = 8 * (size_t)PS;
	int fd = temp_file(bytes);
	unsigned char *back = malloc(bytes);
	struct gendisk *disk;
	size_t i;

	fake_reset();
	disk = bvec_file_disk_create(fd, NULL);
	ck_assert_ptr_nonnull(disk);

	fake.fallocate_eintr = 1;
	ck_assert_msg(rw_wait(disk, REQ_OP_DISCARD, NULL, PS, 0) == 0,
		      "DISCARD interrupted once failed (calls: %s)", fake.log);
	fake_reset();
	fake.fallocate_eintr = 1;
	fake.no_zero_range = true;
	ck_assert_msg(rw_wait(disk, REQ_OP_WRITE_ZEROES, NULL, PS, 2 * PS / 512) == 0,
		      "WRITE_ZEROES whose zero range is interrupted failed (calls: %s)",
		      fake.log);
	fake_reset();
	fake.fallocate_eintr = 2;
	fake.no_zero_range = true;
	ck_assert_msg(rw_wait(disk, REQ_OP_WRITE_ZEROES, NULL, PS, 4 * PS / 512) == 0,
		      "WRITE_ZEROES whose punch is interrupted failed (calls: %s)", fake.log);
	fake_reset();
	fake.fdatasync_eintr = 1;
	ck_assert_msg(rw_wait(disk, REQ_OP_WRITE | REQ_PREFLUSH, NULL, 0, 0) == 0,
		      "flush interrupted once failed (calls: %s)", fake.log);
	fake_reset();
	ck_assert_int_eq(pread(fd, back, bytes, 0), (ssize_t)bytes);
	for (i = 0; i < bytes; i++)
		ck_assert_uint_eq(back[i], i / PS == 0 || i / PS == 2 || i / PS == 4 ? 0 :
										       pat(i, 0));
	put_disk(disk);
	close(fd);
	free(back);
}
END_TEST

/* The first byte of @back[0..@n) that is not zero inside [@z0, @z1) and
 * pat(i, 0) outside, or @n: one assertion per range, not per byte. */
static size_t first_bad(const unsigned char *back, size_t n, size_t z0, size_t z1)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (back[i] != (i >= z0 && i < z1 ? 0 : pat(i, 0)))
			break;
	return i;
}

/* Without a zero range (tmpfs), WRITE_ZEROES punches a hole: zeroes all the same. */
START_TEST(test_write_zeroes_without_zero_range)
{
	const size_t bytes = 4 * (size_t)PS;
	int fd = temp_file(bytes);
	unsigned char *back = malloc(bytes);
	struct gendisk *disk;

	fake_reset();
	disk = bvec_file_disk_create(fd, NULL);
	ck_assert_ptr_nonnull(disk);
	fake.no_zero_range = true;
	/* Not on a page: the edges are partial blocks. */
	ck_assert_int_eq(rw_wait(disk, REQ_OP_WRITE_ZEROES, NULL, PS + 1024, 1), 0);
	ck_assert_str_eq(fake.log, "zp");
	ck_assert_int_eq(pread(fd, back, bytes, 0), (ssize_t)bytes);
	ck_assert_uint_eq(first_bad(back, bytes, 512, 512 + PS + 1024), bytes);
	put_disk(disk);
	close(fd);
	free(back);
}
END_TEST

/*
 * Without any fallocate() mode (vfat, ramfs, some FUSE filesystems),
 * WRITE_ZEROES, which the disk advertises, writes zeroes instead: off a
 * page, across several MiB, and past the end of a file that has shrunk
 * (there, as with FALLOC_FL_KEEP_SIZE, the file does not grow).  A DISCARD is advisory and still fails.
 */
START_TEST(test_write_zeroes_without_fallocate)
{
	const size_t bytes = 16 * (size_t)PS > ((size_t)6 << 20) ? 16 * (size_t)PS : (size_t)6 << 20;
	const size_t shrunk = bytes - 3 * (size_t)PS;
	/* Several MiB from sector 3: neither end on a page. */
	const size_t big_off = 3 * 512, big_len = bytes - 4 * (size_t)PS - 512;
	/* From a page before the new end to past it. */
	const size_t tail_off = shrunk - PS + 512, tail_len = 2 * (size_t)PS;
	int fd = temp_file(bytes);
	unsigned char *back = malloc(bytes);
	struct gendisk *disk;
	struct stat st;
	size_t i;
	int ret;

	fake_reset();
	disk = bvec_file_disk_create(fd, NULL);
	ck_assert_ptr_nonnull(disk);
	fake.no_zero_range = true;
	fake.no_punch = true;

	ret = rw_wait(disk, REQ_OP_WRITE_ZEROES, NULL, PS + 1024, 1);
	ck_assert_msg(ret == 0, "WRITE_ZEROES of %u bytes at 512 failed %d (calls: %s)",
		      PS + 1024, ret, fake.log);
	ck_assert_int_eq(pread(fd, back, bytes, 0), (ssize_t)bytes);
	ck_assert_uint_eq(first_bad(back, bytes, 512, 512 + PS + 1024), bytes);

	/* Put the pattern back, then zero several MiB. */
	for (i = 0; i < bytes; i++)
		back[i] = pat(i, 0);
	ck_assert_int_eq(pwrite(fd, back, bytes, 0), (ssize_t)bytes);
	fake.nlog = 0;
	memset(fake.log, 0, sizeof(fake.log));
	ret = rw_wait(disk, REQ_OP_WRITE_ZEROES, NULL, (unsigned int)big_len,
		      big_off >> BVEC_SECTOR_SHIFT);
	ck_assert_msg(ret == 0, "WRITE_ZEROES of %zu bytes at %zu failed %d (calls: %s)",
		      big_len, big_off, ret, fake.log);
	ck_assert_int_eq(pread(fd, back, bytes, 0), (ssize_t)bytes);
	ck_assert_uint_eq(first_bad(back, bytes, big_off, big_off + big_len), bytes);

	/* The file shrinks under the disk; zero across its new end. */
	for (i = 0; i < bytes; i++)
		back[i] = pat(i, 0);
	ck_assert_int_eq(pwrite(fd, back, bytes, 0), (ssize_t)bytes);
	ck_assert_int_eq(ftruncate(fd, (off_t)shrunk), 0);
	ret = rw_wait(disk, REQ_OP_WRITE_ZEROES, NULL, (unsigned int)tail_len,
		      tail_off >> BVEC_SECTOR_SHIFT);
	ck_assert_msg(ret == 0, "WRITE_ZEROES across the end of the file failed %d", ret);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_int_eq(st.st_size, (off_t)shrunk);
	ck_assert_int_eq(pread(fd, back, shrunk, 0), (ssize_t)shrunk);
	ck_assert_uint_eq(first_bad(back, shrunk, tail_off, shrunk), shrunk);
	memset(back, 0xff, tail_len);
	ck_assert_int_eq(rw_wait(disk, REQ_OP_READ, back, (unsigned int)tail_len,
				 tail_off >> BVEC_SECTOR_SHIFT), 0);
	ck_assert_uint_eq(first_bad(back, tail_len, 0, tail_len), tail_len);

	/* Advisory: nothing to fall back to, and nothing changed. */
	ck_assert_int_eq(rw_wait(disk, REQ_OP_DISCARD, NULL, PS, 0), -EOPNOTSUPP);
	ck_assert_int_eq(pread(fd, back, PS, 0), (ssize_t)PS);
	ck_assert_uint_eq(first_bad(back, PS, 0, 0), PS);
	put_disk(disk);
	close(fd);
	free(back);
}
END_TEST

/*
 * The zeroes written for a file without fallocate() modes go through an
 * O_DIRECT descriptor too: from aligned memory, in aligned pieces.  Ranges
 * on 4 KiB, the most O_DIRECT asks of common filesystems.
 */
START_TEST(test_write_zeroes_without_fallocate_direct)
{
#ifdef O_DIRECT
	const size_t bytes = 16 * (size_t)PS > ((size_t)6 << 20) ? 16 * (size_t)PS : (size_t)6 << 20;
	const size_t z_off = 4096, z_len = bytes - 3 * (size_t)4096;
	int fd = temp_file(bytes), dfd;
	unsigned char *back = malloc(bytes);
	struct queue_limits lim;
	struct gendisk *disk;
	char path[64];
	int ret;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	dfd = open(path, O_RDWR | O_DIRECT);
	if (dfd < 0) {
		printf("test_write_zeroes_without_fallocate_direct: no O_DIRECT here (%s); "
		       "not checked\n", strerror(errno));
		close(fd);
		free(back);
		return;
	}
	fake_reset();
	blk_set_stacking_limits(&lim);
	lim.logical_block_size = 4096;
	disk = bvec_file_disk_create(dfd, &lim);
	ck_assert_ptr_nonnull(disk);
	fake.no_zero_range = true;
	fake.no_punch = true;
	ret = rw_wait(disk, REQ_OP_WRITE_ZEROES, NULL, (unsigned int)z_len, z_off >> BVEC_SECTOR_SHIFT);
	ck_assert_msg(ret == 0, "O_DIRECT: WRITE_ZEROES of %zu bytes at %zu failed %d (calls: %s)",
		      z_len, z_off, ret, fake.log);
	ck_assert_int_eq(pread(fd, back, bytes, 0), (ssize_t)bytes);
	ck_assert_uint_eq(first_bad(back, bytes, z_off, z_off + z_len), bytes);
	put_disk(disk);
	close(dfd);
	close(fd);
	free(back);
#else
	printf("test_write_zeroes_without_fallocate_direct: no O_DIRECT; not checked\n");
#endif
}
END_TEST

/*
 * A transfer that fails after part of the bio moved ends the bio with the
 * error Linux maps the errno to, never as a success.
 */
START_TEST(test_error_midway)
{
	int fd = temp_file(8 * (size_t)PS);
	unsigned char *buf = calloc(4, PS);
	struct gendisk *disk;

	fake_reset();
	disk = bvec_file_disk_create(fd, NULL);
	ck_assert_ptr_nonnull(disk);
	fake.max_io = PS;
	fake.rw_fail_at = 3;
	fake.rw_fail_errno = ENOSPC;
	ck_assert_int_eq(rw_wait(disk, REQ_OP_WRITE, buf, 4 * PS, 0), -ENOSPC);
	fake_reset();
	fake.max_io = PS;
	fake.rw_fail_at = 2;
	fake.rw_fail_errno = EIO;
	ck_assert_int_eq(rw_wait(disk, REQ_OP_READ, buf, 4 * PS, 0), -EIO);
	put_disk(disk);
	close(fd);
	free(buf);
}
END_TEST

/*
 * On a descriptor opened with O_APPEND, Linux's pwritev() writes at the end
 * of the file whatever the offset: every write of a disk over it would land
 * past the end and report success.  Such a descriptor is refused.
 */
START_TEST(test_append_refused)
{
	char name[] = "/tmp/bvec-filedisk-XXXXXX";
	int fd = mkstemp(name), afd;
	unsigned char *buf = malloc(PS), *back = malloc(PS);
	struct gendisk *disk;
	struct stat st;
	unsigned int i;

	fake_reset();
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 4 * (off_t)PS), 0);
	afd = open(name, O_RDWR | O_APPEND);
	ck_assert_int_ge(afd, 0);
	unlink(name);
	errno = 0;
	disk = bvec_file_disk_create(afd, NULL);
	if (disk) {
		for (i = 0; i < PS; i++)
			buf[i] = (unsigned char)(i * 7 + 3);
		ck_assert_int_eq(rw_wait(disk, REQ_OP_WRITE, buf, PS, 0), 0);
		ck_assert_int_eq(pread(fd, back, PS, 0), (ssize_t)PS);
		ck_assert_int_eq(fstat(fd, &st), 0);
		ck_assert_msg(!memcmp(back, buf, PS),
			      "O_APPEND: a write to sector 0 reported success, the file "
			      "grew from %u to %lld bytes and sector 0 holds old data",
			      4 * PS, (long long)st.st_size);
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
 * A sparse file of 2^41 bytes: the last page and one past 2^40 are written
 * and read at the right offsets (sector << 9 in 64 bits everywhere).
 */
START_TEST(test_large_offsets)
{
	const off_t size = (off_t)1 << 41;
	const off_t at[] = { ((off_t)1 << 40) + PS, size - PS };
	unsigned char *buf = malloc(PS), *back = malloc(PS);
	char name[] = "/tmp/bvec-filedisk-XXXXXX";
	int fd = mkstemp(name);
	struct gendisk *disk;
	unsigned int i, k;

	fake_reset();
	ck_assert_int_ge(fd, 0);
	unlink(name);
	if (ftruncate(fd, size)) {
		printf("test_large_offsets: no file of 2^41 bytes in /tmp (%s); not checked\n",
		       strerror(errno));
		close(fd);
		free(buf);
		free(back);
		return;
	}
	disk = bvec_file_disk_create(fd, NULL);
	ck_assert_ptr_nonnull(disk);
	ck_assert_uint_eq(get_capacity(disk), (uint64_t)size >> 9);
	for (k = 0; k < 2; k++) {
		for (i = 0; i < PS; i++)
			buf[i] = pat((uint64_t)at[k] + i, 2);
		ck_assert_int_eq(rw_wait(disk, REQ_OP_WRITE, buf, PS, (sector_t)(at[k] >> 9)), 0);
		ck_assert_int_eq(pread(fd, back, PS, at[k]), (ssize_t)PS);
		ck_assert_mem_eq(back, buf, PS);
		memset(back, 0, PS);
		ck_assert_int_eq(rw_wait(disk, REQ_OP_READ, back, PS, (sector_t)(at[k] >> 9)), 0);
		ck_assert_mem_eq(back, buf, PS);
	}
	/* Nothing landed at the offsets modulo 2^32 or 2^40. */
	ck_assert_int_eq(pread(fd, back, PS, PS), (ssize_t)PS);
	for (i = 0; i < PS; i++)
		ck_assert_uint_eq(back[i], 0);
	put_disk(disk);
	close(fd);
	free(buf);
	free(back);
}
END_TEST

/*
 * A DISCARD or WRITE_ZEROES of no bytes has nothing to do; fallocate()
 * refuses a length of 0, which is no reason to fail the bio (the io_uring
 * disk ends one as a success).
 */
START_TEST(test_empty_zeroing)
{
	const size_t bytes = 4 * (size_t)PS;
	int fd = temp_file(bytes);
	unsigned char *back = malloc(bytes);
	struct gendisk *disk;

	fake_reset();
	disk = bvec_file_disk_create(fd, NULL);
	ck_assert_ptr_nonnull(disk);
	ck_assert_msg(rw_wait(disk, REQ_OP_DISCARD, NULL, 0, 8) == 0,
		      "a DISCARD of no bytes failed (calls: %s)", fake.log);
	ck_assert_msg(rw_wait(disk, REQ_OP_WRITE_ZEROES, NULL, 0, 8) == 0,
		      "a WRITE_ZEROES of no bytes failed (calls: %s)", fake.log);
	ck_assert_int_eq(pread(fd, back, bytes, 0), (ssize_t)bytes);
	ck_assert_uint_eq(first_bad(back, bytes, 0, 0), bytes);
	put_disk(disk);
	close(fd);
	free(back);
}
END_TEST

int main(void)
{
	const TTest *const file[] = {
		test_short_and_interrupted,
		test_flush_and_fua_order,
		test_fallocate_and_sync_interrupted,
		test_write_zeroes_without_zero_range,
		test_write_zeroes_without_fallocate,
		test_write_zeroes_without_fallocate_direct,
		test_error_midway,
		test_append_refused,
		test_large_offsets,
		test_empty_zeroing,
		NULL
	};
	const struct test_group groups[] = {
		{ .name = "file", .tests = file, .timeout = 60 },
		{ .name = NULL },
	};

	return test_main("file_disk", groups);
}

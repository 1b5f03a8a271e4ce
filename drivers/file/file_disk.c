// SPDX-License-Identifier: MIT
/*
 * A disk over a file descriptor: bios become preadv/pwritev through the
 * iovec bridge, REQ_PREFLUSH/REQ_FUA become fdatasync, DISCARD punches a hole and
 * WRITE_ZEROES zeroes a range.  Completion is synchronous.  This is the
 * project's OS edge for files, so storage engines get a real backend and
 * drivers can stack on files.
 *
 * A file that takes no fallocate() mode (vfat, ramfs, some FUSE
 * filesystems) gets WRITE_ZEROES as written zeroes: the disk advertises the
 * operation, and Linux's blkdev_issue_zeroout() would write zeroes where a
 * device turns it down, a fallback libbvec has not got, so callers would
 * see it fail.  (A block device's FALLOC_FL_ZERO_RANGE already writes
 * zeroes where the device cannot zero out.)
 */
#include <fcntl.h>
#include <limits.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/mount.h> /* BLKGETSIZE64, in glibc and musl alike */
#endif

#include "bvec/internal.h"
#include "bvec/os.h"

/*
 * musl's <fcntl.h> defines only the first two fallocate modes; the value is
 * the Linux system call's ABI, the same on every architecture.
 */
#if defined(__linux__) && !defined(FALLOC_FL_ZERO_RANGE)
#define FALLOC_FL_ZERO_RANGE 0x10
#endif

#define IOV_BATCH 64

/* Large enough that one pwritev() of IOV_BATCH of it moves MiBs. */
#define ZERO_BUF_SIZE (BVEC_PAGE_SIZE > 65536 ? BVEC_PAGE_SIZE : 65536)

/* Never written: the source of written-out WRITE_ZEROES.  Page-aligned,
 * so O_DIRECT descriptors take it. */
static _Alignas(BVEC_PAGE_SIZE) unsigned char zero_buf[ZERO_BUF_SIZE];

struct file_disk {
	int fd;
};

/* Transfer all of @iov, resuming after short transfers. */
static int rw_all(int fd, struct iovec *iov, int cnt, off_t off, bool write)
{
	while (cnt) {
		ssize_t n = write ? pwritev(fd, iov, cnt, off) : preadv(fd, iov, cnt, off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0) {
			/* Reading past the end of a shorter file: zeroes, like a hole. */
			if (write)
				return -EIO;
			while (cnt) {
				memset(iov->iov_base, 0, iov->iov_len);
				iov++;
				cnt--;
			}
			return 0;
		}
		off += n;
		while (cnt && (size_t)n >= iov->iov_len) {
			n -= (ssize_t)iov->iov_len;
			iov++;
			cnt--;
		}
		if (cnt) {
			iov->iov_base = (char *)iov->iov_base + n;
			iov->iov_len -= (size_t)n;
		}
	}
	return 0;
}

static int file_rw(struct file_disk *fdisk, struct bio *bio, bool write)
{
	struct iovec iov[IOV_BATCH];
	off_t off = (off_t)(bio->bi_iter.bi_sector << BVEC_SECTOR_SHIFT);
	struct bvec_iter iter = bio->bi_iter;
	int n, ret;

	for (;;) {
		unsigned int before = iter.bi_size;

		n = bvec__bio_iovec_batch(bio, &iter, iov, IOV_BATCH);
		if (!n)
			return 0;
		ret = rw_all(fdisk->fd, iov, n, off, write);
		if (ret)
			return ret;
		off += before - iter.bi_size;
	}
}

/*
 * fallocate() may fail EINTR when a signal arrives (FUSE, NFS), and so may
 * fdatasync() there; like an interrupted transfer, that is no I/O error.
 */
static int file_flush(struct file_disk *fdisk)
{
	int ret;

	while ((ret = fdatasync(fdisk->fd)) && errno == EINTR)
		;
	return ret ? -errno : 0;
}

static int file_fallocate(struct file_disk *fdisk, int mode, off_t off, off_t len)
{
	int ret;

	while ((ret = fallocate(fdisk->fd, mode | FALLOC_FL_KEEP_SIZE, off, len)) &&
	       errno == EINTR)
		;
	return ret ? -errno : 0;
}

int bvec__zero_iovecs(struct iovec *iov, int max, uint64_t len)
{
	int n;

	for (n = 0; n < max && len; n++) {
		iov[n].iov_base = zero_buf;
		iov[n].iov_len = (size_t)BVEC_MIN(len, (uint64_t)ZERO_BUF_SIZE);
		len -= iov[n].iov_len;
	}
	return n;
}

uint64_t bvec__zero_end(int fd, uint64_t off, uint64_t end, unsigned int lbs)
{
	struct stat st;
	uint64_t size;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		return end;
	size = (uint64_t)st.st_size;
	if (size <= off)
		return off;
	size += (lbs - size % lbs) % lbs;
	return BVEC_MIN(size, end);
}

static int file_write_zeroes(struct file_disk *fdisk, struct bio *bio, off_t off, off_t len)
{
	struct iovec iov[IOV_BATCH];
	unsigned int lbs = bdev_logical_block_size(bio->bi_bdev);
	uint64_t pos = (uint64_t)off;
	uint64_t end = bvec__zero_end(fdisk->fd, pos, pos + (uint64_t)len, lbs);
	int n, ret;

	while (pos < end) {
		n = bvec__zero_iovecs(iov, IOV_BATCH, end - pos);
		ret = rw_all(fdisk->fd, iov, n, (off_t)pos, true);
		if (ret)
			return ret;
		pos += BVEC_MIN(end - pos, (uint64_t)IOV_BATCH * ZERO_BUF_SIZE);
	}
	return 0;
}

static int file_zero(struct file_disk *fdisk, struct bio *bio, bool discard)
{
	off_t off = (off_t)(bio->bi_iter.bi_sector << BVEC_SECTOR_SHIFT);
	off_t len = bio->bi_iter.bi_size;
	int ret;

	if (!len)	/* fallocate() refuses a length of 0: nothing to do */
		return 0;
	if (!discard && !file_fallocate(fdisk, FALLOC_FL_ZERO_RANGE, off, len))
		return 0;
	ret = file_fallocate(fdisk, FALLOC_FL_PUNCH_HOLE, off, len);
	/* A DISCARD is advisory: its failure tells the caller, and there is
	 * nothing to fall back to. */
	if (discard || (ret != -EOPNOTSUPP && ret != -EINVAL))
		return ret;
	return file_write_zeroes(fdisk, bio, off, len);
}

static void file_submit_bio(struct bio *bio)
{
	struct file_disk *fdisk = bio->bi_bdev->bd_disk->private_data;
	int ret = 0;

	/* An empty REQ_PREFLUSH write is a flush: the data loop adds nothing. */
	if (bio->bi_opf & REQ_PREFLUSH)
		ret = file_flush(fdisk);
	switch (bio_op(bio)) {
	case REQ_OP_READ:
	case REQ_OP_WRITE:
		if (!ret)
			ret = file_rw(fdisk, bio, bio_op(bio) == REQ_OP_WRITE);
		break;
	case REQ_OP_DISCARD:
	case REQ_OP_SECURE_ERASE:
		ret = ret ? ret : file_zero(fdisk, bio, true);
		break;
	case REQ_OP_WRITE_ZEROES:
		ret = ret ? ret : file_zero(fdisk, bio, false);
		break;
	default:
		ret = -EOPNOTSUPP;
	}
	if (!ret && (bio->bi_opf & REQ_FUA))
		ret = file_flush(fdisk);
	if (ret)
		bio->bi_status = errno_to_blk_status(ret);
	bio_endio(bio);
}

static void file_free_disk(struct gendisk *disk)
{
	bvec__os_free(NULL, disk->private_data, sizeof(struct file_disk));
}

/* A block device's st_size is 0: its size is the kernel's to tell. */
sector_t bvec__fd_sectors(int fd, const struct stat *st)
{
#ifdef BLKGETSIZE64
	uint64_t bytes;

	if (S_ISBLK(st->st_mode) && !ioctl(fd, BLKGETSIZE64, &bytes))
		return (sector_t)(bytes >> BVEC_SECTOR_SHIFT);
#else
	(void)fd;
#endif
	return (sector_t)st->st_size >> BVEC_SECTOR_SHIFT;
}

/*
 * O_APPEND makes Linux's pwritev() (and io_uring's WRITEV) write at the end
 * of the file whatever the offset, so every write would land past the end
 * and still report success.  The flag belongs to the caller's open file
 * description, which other descriptors may share: refuse it, do not clear it.
 */
bool bvec__fd_usable(int fd, struct stat *st)
{
	int fl;

	if (fd < 0 || fstat(fd, st))
		return false;
	fl = fcntl(fd, F_GETFL);
	return fl != -1 && !(fl & O_APPEND);
}

static const struct block_device_operations file_fops = {
	.submit_bio = file_submit_bio,
	.free_disk = file_free_disk,
};

struct gendisk *bvec_file_disk_create(int fd, const struct queue_limits *lim)
{
	struct file_disk *fdisk;
	struct gendisk *disk;
	struct queue_limits l;
	struct stat st;

	if (!bvec__fd_usable(fd, &st)) {
		bvec__set_errno(EINVAL);
		return NULL;
	}
	if (lim)
		l = *lim;
	else
		blk_set_stacking_limits(&l);
	/* The page cache is a volatile write cache; fdatasync() is its flush. */
	l.features |= BLK_FEAT_WRITE_CACHE | BLK_FEAT_FUA;
	/* Every bio is served by a syscall that may sleep on I/O, so
	 * REQ_NOWAIT must be refused before it gets here. */
	l.features &= ~BLK_FEAT_NOWAIT;
	fdisk = bvec__os_alloc(NULL, sizeof(*fdisk));
	if (!fdisk) {
		bvec__set_errno(ENOMEM);
		return NULL;
	}
	fdisk->fd = fd;
	disk = blk_alloc_disk(&l, -1);
	if (!disk) {
		bvec__os_free(NULL, fdisk, sizeof(*fdisk));
		return NULL;
	}
	disk->fops = &file_fops;
	disk->private_data = fdisk;
	strncpy(disk->disk_name, "file", sizeof(disk->disk_name) - 1);
	set_capacity(disk, bvec__fd_sectors(fd, &st));
	return disk;
}

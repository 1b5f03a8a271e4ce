// SPDX-License-Identifier: MIT
// cc zblk.c ../stripe/stripe.c $(pkg-config --cflags --libs libzpool fuse3) -o zblk
/*
 * zblk: a compressed block file.
 *
 *   zblk [-f] [-o disksize=SIZE,algorithm=NAME,mem_limit=SIZE,stripes=N,chunk=SIZE] MOUNTPOINT
 *
 * MOUNTPOINT/disk is a file of exactly disksize bytes kept compressed in
 * memory by zram devices of libzpool; mkfs it, loop-mount it, hand it to
 * fio.  MOUNTPOINT/mm_stat and io_stat read like zram's; writing to
 * compact compacts, to mem_limit sets the limit, to idle marks pages idle
 * ("all" or a number of seconds).  Every FUSE read and write becomes one bio
 * over the FUSE buffer itself, submitted to the stripe device (stripes > 1)
 * or the zram device, and completes before FUSE gets its reply.
 * fusermount3 -u MOUNTPOINT stops it.  The option "null" stores nothing
 * (reads return zeroes), to measure what FUSE itself costs; max_write=SIZE
 * (default 128K, which bench/fuse_tuning.sh found best), writeback (the kernel's writeback cache) and splice tune
 * FUSE (see bench/fuse_tuning.sh for what each buys).
 */
#define FUSE_USE_VERSION 31

#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libbvec/zram.h>

#include "../stripe/stripe.h"

#define MAX_STRIPES 16

struct zblk {
	/* options */
	char *disksize_s, *mem_limit_s, *chunk_s, *algorithm, *max_write_s;
	unsigned int stripes;
	int null, writeback, splice;
	unsigned int max_write;
	/* devices */
	uint64_t disksize, chunk;
	unsigned int n;
	struct zram *zram[MAX_STRIPES];
	struct stripe *stripe;
	struct gendisk *top;
	pthread_mutex_t rmw; /* serialises unaligned read-modify-writes */
};

static struct zblk zb;

#define OPT(t, p) { t, offsetof(struct zblk, p), 1 }
static const struct fuse_opt zblk_opts[] = {
	OPT("disksize=%s", disksize_s),
	OPT("mem_limit=%s", mem_limit_s),
	OPT("chunk=%s", chunk_s),
	OPT("algorithm=%s", algorithm),
	OPT("stripes=%u", stripes),
	OPT("null", null),
	OPT("max_write=%s", max_write_s),
	OPT("writeback", writeback),
	OPT("splice", splice),
	FUSE_OPT_END
};

enum file { F_ROOT, F_DISK, F_MM_STAT, F_IO_STAT, F_COMPACT, F_MEM_LIMIT, F_IDLE, F_NONE };

static const struct {
	const char *name;
	mode_t mode;
} files[] = {
	[F_DISK] = { "disk", S_IFREG | 0600 },
	[F_MM_STAT] = { "mm_stat", S_IFREG | 0444 },
	[F_IO_STAT] = { "io_stat", S_IFREG | 0444 },
	[F_COMPACT] = { "compact", S_IFREG | 0200 },
	[F_MEM_LIMIT] = { "mem_limit", S_IFREG | 0600 },
	[F_IDLE] = { "idle", S_IFREG | 0200 },
};

static enum file lookup(const char *path)
{
	int i;

	if (!strcmp(path, "/"))
		return F_ROOT;
	for (i = F_DISK; i < F_NONE; i++)
		if (path[0] == '/' && !strcmp(path + 1, files[i].name))
			return (enum file)i;
	return F_NONE;
}

/* "64M", "1G", "4096": bytes, or -1. */
static int64_t parse_size(const char *s)
{
	char *end;
	unsigned long long v;

	if (!s || !*s)
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	case 't': case 'T': v <<= 40; end++; break;
	default: break;
	}
	return *end || v > INT64_MAX ? -1 : (int64_t)v;
}

/* The stat files, as zram prints them; a stripe sums its children. */
static int stat_text(enum file f, char *buf, size_t len)
{
	struct zram_mm_stat sum = { 0 }, m;
	struct zram_io_stat io = { 0 }, i;
	unsigned int k;

	if (f == F_MEM_LIMIT) {
		if (zb.null)
			return snprintf(buf, len, "0\n");
		zram_mm_stat(zb.zram[0], &m);
		return snprintf(buf, len, "%" PRIu64 "\n", m.mem_limit * zb.n);
	}
	for (k = 0; k < zb.n && !zb.null; k++) {
		zram_mm_stat(zb.zram[k], &m);
		zram_io_stat(zb.zram[k], &i);
		sum.orig_data_size += m.orig_data_size;
		sum.compr_data_size += m.compr_data_size;
		sum.mem_used_total += m.mem_used_total;
		sum.mem_limit += m.mem_limit;
		sum.mem_used_max += m.mem_used_max;
		sum.same_pages += m.same_pages;
		sum.pages_compacted += m.pages_compacted;
		sum.huge_pages += m.huge_pages;
		sum.huge_pages_since += m.huge_pages_since;
		io.failed_reads += i.failed_reads;
		io.failed_writes += i.failed_writes;
		io.invalid_io += i.invalid_io;
		io.notify_free += i.notify_free;
	}
	return f == F_IO_STAT ? zram_format_io_stat(&io, buf, len) :
				zram_format_mm_stat(&sum, buf, len);
}

static int zblk_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	enum file f = lookup(path);
	char text[256];

	(void)fi;
	memset(st, 0, sizeof(*st));
	st->st_uid = getuid();
	st->st_gid = getgid();
	if (f == F_ROOT) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		return 0;
	}
	if (f == F_NONE)
		return -ENOENT;
	st->st_mode = files[f].mode;
	st->st_nlink = 1;
	if (f == F_DISK) {
		st->st_size = (off_t)zb.disksize;
		st->st_blocks = (blkcnt_t)(zb.disksize / 512);
	} else if (f == F_MM_STAT || f == F_IO_STAT || f == F_MEM_LIMIT) {
		st->st_size = stat_text(f, text, sizeof(text));
	}
	return 0;
}

static int zblk_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
			struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	int i;

	(void)off;
	(void)fi;
	(void)flags;
	if (lookup(path) != F_ROOT)
		return -ENOTDIR;
	fill(buf, ".", NULL, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	for (i = F_DISK; i < F_NONE; i++)
		fill(buf, files[i].name, NULL, 0, 0);
	return 0;
}

static int zblk_open(const char *path, struct fuse_file_info *fi)
{
	enum file f = lookup(path);

	if (f == F_NONE || f == F_ROOT)
		return f == F_NONE ? -ENOENT : -EISDIR;
	/*
	 * Statistics change all the time: never serve them from a cache.  With
	 * the writeback cache the kernel owns the disk's size and accepts
	 * buffered writes past the end without asking (they would fail only at
	 * fsync, after write() said yes); direct I/O sends each write here,
	 * where the end of the disk is enforced.
	 */
	if (f != F_DISK || zb.writeback)
		fi->direct_io = 1;
	return 0;
}

static int submit(blk_opf_t op, uint64_t off, void *buf, size_t len)
{
	struct bio *bio = bio_alloc(zb.top->part0, buf ? 1 : 0, op, GFP_NOIO);
	int ret;

	if (!bio)
		return -ENOMEM;
	bio->bi_iter.bi_sector = off >> 9;
	if (buf)
		bio_add_virt(bio, buf, (unsigned int)len); /* the FUSE buffer itself */
	else
		bio->bi_iter.bi_size = (unsigned int)len;
	ret = submit_bio_wait(bio);
	bio_put(bio);
	return ret;
}

/*
 * A file may be read and written at any byte; the device takes sectors.
 * Aligned requests (all that mkfs, the loop driver and fio send) go
 * straight through; others bounce through whole sectors.  Like a block
 * device, the disk never grows: a write starting at the end fails with
 * ENOSPC and one running past it is cut short.
 */
static int disk_io(char *buf, size_t size, uint64_t off, bool write)
{
	uint64_t a, b;
	char *tmp;
	int ret;

	if (off >= zb.disksize)
		return write ? -ENOSPC : 0;
	if (size > zb.disksize - off)
		size = (size_t)(zb.disksize - off);
	if (zb.null) {
		if (!write)
			memset(buf, 0, size);
		return (int)size;
	}
	if (!(off % 512) && !(size % 512)) {
		ret = submit(write ? REQ_OP_WRITE : REQ_OP_READ, off, buf, size);
		return ret ? ret : (int)size;
	}
	a = off / 512 * 512;
	b = (off + size + 511) / 512 * 512;
	tmp = aligned_alloc(4096, (size_t)(b - a + 4095) / 4096 * 4096);
	if (!tmp)
		return -ENOMEM;
	pthread_mutex_lock(&zb.rmw);
	ret = submit(REQ_OP_READ, a, tmp, (size_t)(b - a));
	if (!ret && write) {
		memcpy(tmp + (off - a), buf, size);
		ret = submit(REQ_OP_WRITE, a, tmp, (size_t)(b - a));
	} else if (!ret) {
		memcpy(buf, tmp + (off - a), size);
	}
	pthread_mutex_unlock(&zb.rmw);
	free(tmp);
	return ret ? ret : (int)size;
}

static int zblk_read(const char *path, char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	enum file f = lookup(path);
	char text[256];
	int n;

	(void)fi;
	if (f == F_DISK)
		return disk_io(buf, size, (uint64_t)off, false);
	if (f != F_MM_STAT && f != F_IO_STAT && f != F_MEM_LIMIT)
		return -EACCES;
	n = stat_text(f, text, sizeof(text));
	if (off >= n)
		return 0;
	if (size > (size_t)(n - off))
		size = (size_t)(n - off);
	memcpy(buf, text + off, size);
	return (int)size;
}

static int zblk_write(const char *path, const char *buf, size_t size, off_t off,
		      struct fuse_file_info *fi)
{
	enum file f = lookup(path);
	char text[64];
	unsigned int k;
	int64_t v;

	(void)fi;
	if (f == F_DISK)
		return disk_io((char *)buf, size, (uint64_t)off, true);
	if (zb.null && f != F_NONE)
		return (int)size;
	snprintf(text, sizeof(text), "%.*s", (int)(size < 63 ? size : 63), buf);
	text[strcspn(text, "\n")] = 0;
	switch (f) {
	case F_COMPACT:
		for (k = 0; k < zb.n; k++)
			zram_compact(zb.zram[k]);
		return (int)size;
	case F_MEM_LIMIT:
		v = parse_size(text);
		if (v < 0)
			return -EINVAL;
		for (k = 0; k < zb.n; k++)
			zram_set_mem_limit(zb.zram[k], (uint64_t)v / zb.n);
		return (int)size;
	case F_IDLE:
		if (!strcmp(text, "all"))
			v = 0;
		else if ((v = parse_size(text)) <= 0 || v > UINT32_MAX)
			return -EINVAL;
		for (k = 0; k < zb.n; k++)
			zram_idle_mark(zb.zram[k], (unsigned int)v);
		return (int)size;
	default:
		return -EACCES;
	}
}

static int zblk_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	enum file f = lookup(path);

	(void)fi;
	/*
	 * Like a block device, the disk keeps its size: O_TRUNC (dd, "> disk")
	 * arrives as a truncation to 0 (zblk_init turns atomic O_TRUNC off so
	 * that the kernel learns the unchanged size from the reply, which it
	 * trusts even with the writeback cache) and is ignored; other sizes
	 * are refused.
	 */
	if (f == F_DISK)
		return size == 0 || (uint64_t)size == zb.disksize ? 0 : -EINVAL;
	return f == F_NONE ? -ENOENT : 0; /* "echo 1 > compact" truncates first */
}

static int zblk_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	(void)datasync;
	(void)fi;
	if (lookup(path) != F_DISK || zb.null)
		return 0;
	return submit(REQ_OP_FLUSH, 0, NULL, 0);
}

/*
 * close() sends FLUSH with the writeback cache on; written pages are
 * already in the device by then, and durability is fsync's business.
 */
static int zblk_flush(const char *path, struct fuse_file_info *fi)
{
	(void)path;
	(void)fi;
	return 0;
}

/* Times are not kept (the writeback cache sets them on close): accept. */
static int zblk_utimens(const char *path, const struct timespec tv[2],
			struct fuse_file_info *fi)
{
	(void)tv;
	(void)fi;
	return lookup(path) == F_NONE ? -ENOENT : 0;
}

/*
 * Bytes that are not whole sectors are zeroed by writing zeroes; a range
 * inside two sectors can be longer than one, so it goes a sector at a time.
 */
static int zero_bytes(uint64_t off, uint64_t len)
{
	static const char zeros[512];

	while (len) {
		size_t n = len < sizeof(zeros) ? (size_t)len : sizeof(zeros);
		int ret = disk_io((char *)zeros, n, off, true);

		if (ret < 0)
			return ret;
		if ((size_t)ret != n)
			return -EIO;
		off += n;
		len -= n;
	}
	return 0;
}

static int zblk_fallocate(const char *path, int mode, off_t off, off_t len,
			  struct fuse_file_info *fi)
{
	uint64_t start = (uint64_t)off, end = (uint64_t)off + (uint64_t)len, a, b;
	blk_opf_t op;
	int ret;

	(void)fi;
	if (lookup(path) != F_DISK)
		return -EOPNOTSUPP;
	if (off < 0 || len <= 0 || end > zb.disksize)
		return -EINVAL;
	if (mode == 0 || mode == FALLOC_FL_KEEP_SIZE)
		return 0; /* every byte of the disk already exists */
	if (mode == (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE))
		op = REQ_OP_DISCARD;
	else if ((mode & ~FALLOC_FL_KEEP_SIZE) == FALLOC_FL_ZERO_RANGE)
		op = REQ_OP_WRITE_ZEROES;
	else
		return -EOPNOTSUPP;
	if (zb.null)
		return 0;
	a = (start + 511) / 512 * 512;
	b = end / 512 * 512;
	if (a >= b)
		return zero_bytes(start, end - start);
	ret = zero_bytes(start, a - start);
	if (!ret)
		ret = zero_bytes(b, end - b);
	/* The device frees whole pages and zeroes partial ones. */
	while (!ret && a < b) {
		uint64_t n = b - a > (1u << 30) ? (1u << 30) : b - a;

		ret = submit(op, a, NULL, (size_t)n);
		a += n;
	}
	return ret;
}

static void *zblk_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	/* Bigger requests mean fewer round trips through the kernel. */
	conn->max_write = zb.max_write;
	conn->max_readahead = zb.max_write;
	if (zb.writeback && (conn->capable & FUSE_CAP_WRITEBACK_CACHE))
		conn->want |= FUSE_CAP_WRITEBACK_CACHE;
	/*
	 * With atomic O_TRUNC the kernel sets the disk's size to 0 itself on
	 * open(O_TRUNC) and, under the writeback cache, never takes zblk's
	 * size again; without it, O_TRUNC is a truncation zblk answers.
	 */
	conn->want &= ~FUSE_CAP_ATOMIC_O_TRUNC;
	if (zb.splice)
		conn->want |= conn->capable & (FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE |
					       FUSE_CAP_SPLICE_MOVE);
	else
		conn->want &= ~(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_WRITE |
				FUSE_CAP_SPLICE_MOVE);
	cfg->attr_timeout = 0;
	cfg->entry_timeout = 1;
	return NULL;
}

static const struct fuse_operations zblk_ops = {
	.init = zblk_init,
	.getattr = zblk_getattr,
	.readdir = zblk_readdir,
	.open = zblk_open,
	.read = zblk_read,
	.write = zblk_write,
	.truncate = zblk_truncate,
	.fsync = zblk_fsync,
	.flush = zblk_flush,
	.utimens = zblk_utimens,
	.fallocate = zblk_fallocate,
};

static int usage_error(const char *msg, const char *arg)
{
	fprintf(stderr, "zblk: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
	return 2;
}

static int make_devices(void)
{
	struct gendisk *children[MAX_STRIPES];
	struct zram_config cfg = ZRAM_CONFIG_INIT;
	uint64_t per, limit = 0;
	unsigned int k;

	if (zb.mem_limit_s)
		limit = (uint64_t)parse_size(zb.mem_limit_s);
	per = zb.disksize / zb.n / zb.chunk * zb.chunk;
	if (zb.n > 1 && !per)
		return usage_error("disksize is smaller than one chunk per stripe", zb.disksize_s);
	cfg.disksize = zb.n > 1 ? per : zb.disksize;
	cfg.compressor = zb.algorithm;
	cfg.mem_limit = limit / zb.n;
	for (k = 0; k < zb.n; k++) {
		zb.zram[k] = zram_create(&cfg);
		if (!zb.zram[k])
			return usage_error(errno == EINVAL ? "bad algorithm" : "out of memory",
					   zb.algorithm);
		children[k] = zram_disk(zb.zram[k]);
	}
	if (zb.n == 1) {
		zb.top = children[0];
		return 0;
	}
	zb.stripe = stripe_create(children, zb.n, (unsigned int)(zb.chunk / 512));
	if (!zb.stripe)
		return usage_error("cannot create the stripe device", NULL);
	zb.top = stripe_disk(zb.stripe);
	zb.disksize = get_capacity(zb.top) * 512;
	return 0;
}

/* Checks the options; 0, or the exit status with a message printed. */
static int check_options(void)
{
	int64_t v;

	if (!zb.disksize_s)
		return usage_error("-o disksize=SIZE is required", NULL);
	v = parse_size(zb.disksize_s);
	if (v < 4096)
		return usage_error("bad disksize", zb.disksize_s);
	zb.disksize = (uint64_t)v / 4096 * 4096;
	if (zb.mem_limit_s && parse_size(zb.mem_limit_s) < 0)
		return usage_error("bad mem_limit", zb.mem_limit_s);
	if (zb.stripes < 1 || zb.stripes > MAX_STRIPES)
		return usage_error("stripes must be 1 to 16", NULL);
	zb.chunk = 64 * 1024;
	if (zb.chunk_s) {
		v = parse_size(zb.chunk_s);
		if (v < (int64_t)BVEC_PAGE_SIZE || (v & (v - 1)))
			return usage_error("chunk must be a power of two of at least a page",
					   zb.chunk_s);
		zb.chunk = (uint64_t)v;
	}
	if (zb.algorithm && !zpool_has_compressor(zb.algorithm))
		return usage_error("unknown algorithm", zb.algorithm);
	zb.max_write = 128u << 10;
	if (zb.max_write_s) {
		v = parse_size(zb.max_write_s);
		if (v < 4096 || v > (16 << 20))
			return usage_error("max_write must be 4K to 16M", zb.max_write_s);
		zb.max_write = (unsigned int)v;
	}
	zb.n = zb.stripes;
	return 0;
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	unsigned int k;
	int ret;

	zb.stripes = 1;
	if (fuse_opt_parse(&args, &zb, zblk_opts, NULL) == -1)
		return usage_error("cannot parse options", NULL);
	ret = check_options();
	if (!ret) {
		pthread_mutex_init(&zb.rmw, NULL);
		if (zb.null || !(ret = make_devices()))
			ret = fuse_main(args.argc, args.argv, &zblk_ops, NULL);
	}
	stripe_destroy(zb.stripe);
	for (k = 0; k < zb.n; k++)
		zram_destroy(zb.zram[k]);
	fuse_opt_free_args(&args);
	free(zb.disksize_s);
	free(zb.mem_limit_s);
	free(zb.chunk_s);
	free(zb.algorithm);
	free(zb.max_write_s);
	return ret;
}

// SPDX-License-Identifier: MIT
/*
 * zblk: a compressed block file.
 *
 *   zblk [-f] [-o disksize=SIZE,algorithm=NAME,mem_limit=SIZE,stripes=N,chunk=SIZE] MOUNTPOINT
 *
 * MOUNTPOINT/disk is a file of exactly disksize bytes kept compressed in
 * memory by zram devices of libzpool; mkfs it, loop-mount it, hand it to
 * fio.  MOUNTPOINT/mm_stat and io_stat read like zram's; writing to
 * compact compacts, to mem_limit sets the limit, 0 to mem_used_max restarts
 * mm_stat's watermark from now, to idle marks pages idle
 * ("all" or a number of seconds).  Every FUSE read and write becomes one bio
 * over the FUSE buffer itself, submitted to the stripe device (stripes > 1)
 * or the zram device, and completes before FUSE gets its reply.
 * fusermount3 -u MOUNTPOINT stops it.  The option "null" stores nothing
 * (reads return zeroes), to measure what FUSE itself costs; max_write=SIZE
 * (default 1M, or 128K with page_cache: bench/fuse_tuning.sh), writeback (the
 * kernel's writeback cache), splice and page_cache (the disk through the
 * page cache, as shared mmap needs; it is direct I/O otherwise) tune FUSE
 * (see bench/fuse_tuning.sh for what each buys).  zblk -h lists the options.
 */
#define FUSE_USE_VERSION 31

#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <libbvec/stripe.h>
#include <libbvec/zram.h>

#include "parse.h"
#include "transport.h"

#define MAX_STRIPES 16

#define SECTOR BVEC_SECTOR_SIZE
#define PAGE BVEC_PAGE_SIZE

/* The largest values the options take; sizes are file offsets (off_t). */
#define MAX_SIZE ((uint64_t)INT64_MAX)

struct zblk {
	/* options */
	char *disksize_s, *mem_limit_s, *chunk_s, *algorithm, *max_write_s, *stripes_s;
	char *mountpoint;
	int null, writeback, splice, page_cache, multi_page, help, version;
	unsigned int max_write;
	/* devices */
	uint64_t disksize, chunk;
	unsigned int n;
	struct zram *zram[MAX_STRIPES];
	struct gendisk *stripe; /* over the zram devices when stripes > 1 */
	struct gendisk *top;
	/*
	 * Held alone across a read-modify-write of partial sectors, shared by
	 * every other change to the disk: an aligned write landing between the
	 * read and the write back would be undone by the old bytes.
	 */
	pthread_rwlock_t rmw;
	/*
	 * Every file's times.  The disk's do not follow writes: with
	 * auto_inval_data a new mtime would make the kernel drop the disk's
	 * whole page cache at the next read.
	 */
	struct timespec mounted;
	/* backing_dev=: the file disk zram writes back to, and its file */
	char *backing_dev;
	struct gendisk *backing;
	int backing_fd;
	pthread_mutex_t block_state_lock; /* block_state's read position */
	uint64_t block_state_line, block_state_index;
	/* The whole disk's mem_limit as last set; each stripe has a share. */
	_Atomic uint64_t mem_limit;
};

static struct zblk zb = {
#ifdef PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP
	/* A rare partial write must not wait out a stream of whole ones. */
	.rmw = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP,
#else
	.rmw = PTHREAD_RWLOCK_INITIALIZER,
#endif
};

#define OPT(t, p) { t, offsetof(struct zblk, p), 1 }
static const struct fuse_opt zblk_opts[] = {
	OPT("disksize=%s", disksize_s),
	OPT("mem_limit=%s", mem_limit_s),
	OPT("chunk=%s", chunk_s),
	OPT("algorithm=%s", algorithm),
	OPT("stripes=%s", stripes_s),
	OPT("null", null),
	OPT("max_write=%s", max_write_s),
	OPT("writeback", writeback),
	OPT("splice", splice),
	OPT("page_cache", page_cache),
	OPT("multi_page", multi_page),
	OPT("backing_dev=%s", backing_dev),
	OPT("-h", help),
	OPT("--help", help),
	OPT("-V", version),
	OPT("--version", version),
	FUSE_OPT_END
};

enum file { F_ROOT, F_DISK, F_MM_STAT, F_IO_STAT, F_COMPACT, F_MEM_LIMIT, F_MEM_USED_MAX, F_IDLE,
	    F_DISKSIZE, F_COMP_ALGORITHM, F_BACKING_DEV,
	    F_WRITEBACK, F_WB_LIMIT, F_WB_LIMIT_ENABLE, F_WB_BATCH, F_BD_STAT, F_BLOCK_STATE,
	    F_RECOMP_ALGORITHM, F_RECOMPRESS, F_ALGORITHM_PARAMS, F_TRAIN_DICT, F_NONE };

static const struct {
	const char *name;
	mode_t mode;
} files[] = {
	[F_DISK] = { "disk", S_IFREG | 0600 },
	[F_MM_STAT] = { "mm_stat", S_IFREG | 0444 },
	[F_IO_STAT] = { "io_stat", S_IFREG | 0444 },
	[F_COMPACT] = { "compact", S_IFREG | 0200 },
	[F_MEM_LIMIT] = { "mem_limit", S_IFREG | 0600 },
	[F_MEM_USED_MAX] = { "mem_used_max", S_IFREG | 0200 },
	[F_IDLE] = { "idle", S_IFREG | 0200 },
	[F_DISKSIZE] = { "disksize", S_IFREG | 0644 },
	[F_COMP_ALGORITHM] = { "comp_algorithm", S_IFREG | 0644 },
	[F_BACKING_DEV] = { "backing_dev", S_IFREG | 0644 },
	[F_WRITEBACK] = { "writeback", S_IFREG | 0200 },
	[F_WB_LIMIT] = { "writeback_limit", S_IFREG | 0600 },
	[F_WB_LIMIT_ENABLE] = { "writeback_limit_enable", S_IFREG | 0600 },
	[F_WB_BATCH] = { "writeback_batch_size", S_IFREG | 0600 },
	[F_BD_STAT] = { "bd_stat", S_IFREG | 0444 },
	[F_BLOCK_STATE] = { "block_state", S_IFREG | 0444 },
	[F_RECOMP_ALGORITHM] = { "recomp_algorithm", S_IFREG | 0600 },
	[F_RECOMPRESS] = { "recompress", S_IFREG | 0200 },
	[F_ALGORITHM_PARAMS] = { "algorithm_params", S_IFREG | 0200 },
	[F_TRAIN_DICT] = { "train_dict", S_IFREG | 0200 },
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

static int wb_file(enum file f, char *buf, size_t size, off_t off, bool write);
static int recomp_file(enum file f, char *buf, size_t size, off_t off, bool write);

/* A control file's read: the part of @text (@n bytes) at @off. */
static int text_read(const char *text, int n, char *buf, size_t size, off_t off)
{
	if (n < 0)
		return n;
	if (off >= n)
		return 0;
	if (size > (size_t)(n - off))
		size = (size_t)(n - off);
	memcpy(buf, text + off, size);
	return (int)size;
}

/* A control file's write as a string; -EINVAL if it does not fit. */
static int text_take(char *text, size_t cap, const char *buf, size_t size)
{
	if (size >= cap)
		return -EINVAL;
	memcpy(text, buf, size);
	text[size] = 0;
	return 0;
}

/* Sizes are file offsets, so no option or control file may exceed off_t. */
static int parse_size(const char *s, uint64_t *out)
{
	return zblk_parse_number(s, true, MAX_SIZE, out);
}

/*
 * The compressors built, space-separated, @name in brackets, then @end:
 * the line of Linux's comp_algorithm and recomp_algorithm files.
 */
static int algo_list(const char *name, const char *end, char *text, size_t len)
{
	static const char *const algos[] = { "lz4", "lz4hc", "zstd" };
	size_t i;
	int n = 0;

	for (i = 0; i < sizeof(algos) / sizeof(algos[0]); i++)
		if (zpool_has_compressor(algos[i]))
			n += snprintf(text + n, len - (size_t)n,
				      name && !strcmp(algos[i], name) ? "%s[%s]" : "%s%s",
				      n ? " " : "", algos[i]);
	return n + snprintf(text + n, len - (size_t)n, "%s", end);
}

/*
 * The files Linux sets before a device starts: disksize, comp_algorithm
 * (the algorithms built, the one in use in brackets) and backing_dev (the
 * path, or "none").  zblk sets them at mount, so they only read back;
 * writing fails with EBUSY, as in Linux once a device is initialised.
 */
static int setup_text(enum file f, char *text, size_t len)
{
	const char *name = NULL;

	if (f == F_DISKSIZE)
		return snprintf(text, len, "%" PRIu64 "\n", zb.disksize);
	if (f == F_BACKING_DEV) {
		int n = snprintf(text, len, "%s\n", zb.backing_dev ? zb.backing_dev : "none");

		return n < (int)len ? n : -ENAMETOOLONG;
	}
	if (!zb.null)
		zram_get_algorithm(zb.zram[0], 0, &name, NULL);
	else
		name = zb.algorithm ? zb.algorithm : "lz4"; /* what it would have used */
	return algo_list(name, "\n", text, len);
}

/*
 * A stripe's share of the disk's mem_limit, rounded up: rounded down, a
 * limit below the number of stripes would give each a share of 0, which
 * zram takes for no limit at all.
 */
static uint64_t stripe_limit(uint64_t limit)
{
	return limit / zb.n + (limit % zb.n != 0);
}

static void set_mem_limit(uint64_t limit)
{
	unsigned int k;

	atomic_store(&zb.mem_limit, limit);
	for (k = 0; k < zb.n; k++)
		zram_set_mem_limit(zb.zram[k], stripe_limit(limit));
}

/* The stat files, as zram prints them; a stripe sums its children. */
static int stat_text(enum file f, char *buf, size_t len)
{
	struct zpool_stats sum = { 0 }, m;
	struct zram_io_stat io = { 0 }, i;
	unsigned int k;

	if (f == F_MEM_LIMIT)
		return snprintf(buf, len, "%" PRIu64 "\n", zb.null ? 0 : atomic_load(&zb.mem_limit));
	for (k = 0; k < zb.n && !zb.null; k++) {
		zram_mm_stat(zb.zram[k], &m);
		zram_io_stat(zb.zram[k], &i);
		zpool_stats_add(&sum, &m);
		zram_io_stat_add(&io, &i);
	}
	if (!zb.null)
		sum.mem_limit = atomic_load(&zb.mem_limit); /* not the shares' sum */
	return f == F_IO_STAT ? zram_format_io_stat(&io, buf, len) :
				zram_format_mm_stat(&sum, buf, len);
}

static int zblk_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	enum file f = lookup(path);
	char text[PATH_MAX + 64];

	(void)fi;
	memset(st, 0, sizeof(*st));
	st->st_uid = getuid();
	st->st_gid = getgid();
	st->st_atim = st->st_mtim = st->st_ctim = zb.mounted;
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
		st->st_blocks = (blkcnt_t)(zb.disksize / SECTOR);
	} else if (f == F_MM_STAT || f == F_IO_STAT || f == F_MEM_LIMIT) {
		st->st_size = stat_text(f, text, sizeof(text));
	} else if (f >= F_DISKSIZE && f <= F_BACKING_DEV) {
		int n = setup_text(f, text, sizeof(text));

		st->st_size = n > 0 ? n : 0;
	} else if (f >= F_WRITEBACK && f < F_BLOCK_STATE && files[f].mode & 0444) {
		st->st_size = wb_file(f, text, sizeof(text), 0, false);
	} else if (f == F_RECOMP_ALGORITHM) {
		st->st_size = recomp_file(f, text, sizeof(text), 0, false);
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
	 * Statistics change all the time: never serve them from a cache.  The
	 * disk is direct I/O unless page_cache asks otherwise, and always with
	 * the writeback cache, which would accept buffered writes past the end
	 * and fail them only at fsync: direct I/O sends each write here, where
	 * the end is enforced, and lets writes to the disk run in parallel
	 * (transport.c); through the page cache they run one at a time.
	 *
	 * Through the page cache, every open keeps what is cached: only zblk
	 * changes the disk, so nothing cached can be stale, and dropping it is
	 * not harmless.  A write-through write unlocks its uptodate page before
	 * its WRITE reaches zblk; an open that emptied the cache then let
	 * another reader fetch the old bytes and cache them over the new ones,
	 * for the writer's own read back to find (tests/e2e/page_cache.sh).
	 */
	if (f != F_DISK || !zb.page_cache || zb.writeback)
		fi->direct_io = 1;
	else
		fi->keep_cache = 1;
	return 0;
}

static int submit(blk_opf_t op, uint64_t off, void *buf, size_t len)
{
	struct bio *bio = bio_alloc(zb.top->part0, buf ? 1 : 0, op, GFP_NOIO);
	int ret;

	if (!bio)
		return -ENOMEM;
	bio->bi_iter.bi_sector = off >> BVEC_SECTOR_SHIFT;
	if (buf)
		bio_add_virt(bio, buf, (unsigned int)len); /* the FUSE buffer itself */
	else
		bio->bi_iter.bi_size = (unsigned int)len;
	ret = submit_bio_wait(bio);
	bio_put(bio);
	return ret;
}

/* A change of whole sectors: beside any other but a read-modify-write. */
static int submit_change(blk_opf_t op, uint64_t off, void *buf, size_t len)
{
	int ret;

	pthread_rwlock_rdlock(&zb.rmw);
	ret = submit(op, off, buf, len);
	pthread_rwlock_unlock(&zb.rmw);
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
	if (!(off % SECTOR) && !(size % SECTOR)) {
		ret = write ? submit_change(REQ_OP_WRITE, off, buf, size) :
			      submit(REQ_OP_READ, off, buf, size);
		return ret ? ret : (int)size;
	}
	a = off / SECTOR * SECTOR;
	b = (off + size + SECTOR - 1) / SECTOR * SECTOR;
	tmp = aligned_alloc(PAGE, (size_t)(b - a + PAGE - 1) / PAGE * PAGE);
	if (!tmp)
		return -ENOMEM;
	if (write)
		pthread_rwlock_wrlock(&zb.rmw);
	ret = submit(REQ_OP_READ, a, tmp, (size_t)(b - a));
	if (!ret && write) {
		memcpy(tmp + (off - a), buf, size);
		ret = submit(REQ_OP_WRITE, a, tmp, (size_t)(b - a));
	} else if (!ret) {
		memcpy(buf, tmp + (off - a), size);
	}
	if (write)
		pthread_rwlock_unlock(&zb.rmw);
	free(tmp);
	return ret ? ret : (int)size;
}

/*
 * The writeback files, as Linux's zram names and parses them: writeback
 * ("idle", "huge", "huge_idle", "incompressible", or "type=T" with any
 * "page_index=N" and "page_indexes=A-B" words, ranges inclusive),
 * writeback_limit (4 KiB units left), writeback_limit_enable (0 or 1),
 * writeback_batch_size (writes in flight: any 32-bit number but 0, at
 * most 256 kept), bd_stat, and block_state (one 40-byte line per stored
 * page, so a read at any offset finds its line by counting).  @buf is the FUSE buffer; a read
 * returns bytes, a write @size, or a negative errno.
 */
static int wb_file(enum file f, char *buf, size_t size, off_t off, bool write)
{
	static const char *const modes[] = { [ZRAM_WB_IDLE] = "idle", [ZRAM_WB_HUGE] = "huge",
		[ZRAM_WB_HUGE_IDLE] = "huge_idle", [ZRAM_WB_INCOMPRESSIBLE] = "incompressible" };
	struct zram *z = zb.null ? NULL : zb.zram[0];
	char text[4096];
	struct zblk_kv kv[64];
	uint64_t range[64][2], v, a, b, pages = zb.disksize / PAGE;
	int n, i, nr = 0, mode = -1, m, err;
	unsigned int k;
	bool on;

	if (!write) {
		struct zram_bd_stat sum = { 0 }, one;
		struct zram_block_state bs;
		uint64_t line, idx;
		size_t done = 0;

		if (f == F_BLOCK_STATE) {
			if (!z || zb.n > 1)
				return 0;
			pthread_mutex_lock(&zb.block_state_lock);
			line = (uint64_t)off / 40;
			if (line == zb.block_state_line) {
				idx = zb.block_state_index;
			} else {
				for (idx = 0, v = 0; v < line && !zram_block_state(z, &idx, &bs); v++)
					idx++;
			}
			while (done < size && !zram_block_state(z, &idx, &bs)) {
				n = zram_format_block_state(&bs, text, sizeof(text));
				k = (unsigned int)(done ? 0 : (uint64_t)off % 40);
				n -= (int)k;
				if ((size_t)n > size - done)
					n = (int)(size - done);
				memcpy(buf + done, text + k, (size_t)n);
				done += (size_t)n;
				if (k + (unsigned int)n == 40)
					idx++, line++;
			}
			zb.block_state_line = line;
			zb.block_state_index = idx;
			pthread_mutex_unlock(&zb.block_state_lock);
			return (int)done;
		}
		n = 0;
		if (f == F_BD_STAT) {
			for (k = 0; k < zb.n && z; k++) {
				zram_bd_stat(zb.zram[k], &one);
				sum.bd_count += one.bd_count;
				sum.bd_reads += one.bd_reads;
				sum.bd_writes += one.bd_writes;
			}
			n = zram_format_bd_stat(&sum, text, sizeof(text));
		} else if (f == F_WB_LIMIT || f == F_WB_LIMIT_ENABLE) {
			v = zram_writeback_limit(z, &on);
			n = f == F_WB_LIMIT ? snprintf(text, sizeof(text), "%" PRIu64 "\n", v) :
					      snprintf(text, sizeof(text), "%d\n", on);
		} else if (f == F_WB_BATCH) {
			n = snprintf(text, sizeof(text), "%u\n", zram_writeback_batch_size(z));
		}
		return text_read(text, n, buf, size, off);
	}
	if (text_take(text, sizeof(text), buf, size))
		return -EINVAL;
	switch (f) {
	case F_WB_LIMIT:
	case F_WB_LIMIT_ENABLE:
		text[strcspn(text, "\n")] = 0;
		if (zblk_parse_number(text, false, UINT64_MAX, &v))
			return -EINVAL;
		for (k = 0; k < zb.n; k++) {
			if (f == F_WB_LIMIT)
				zram_set_writeback_limit(zb.zram[k], v);
			else
				zram_set_writeback_limit_enable(zb.zram[k], v != 0);
		}
		return (int)size;
	case F_WB_BATCH:
		/*
		 * All stripes or none: check the value before setting any.
		 * Linux takes any 32-bit number but 0; more than 256 writes in
		 * flight buy a backing file nothing, so they become 256.
		 */
		text[strcspn(text, "\n")] = 0;
		if (zblk_parse_number(text, false, UINT32_MAX, &v) || !v)
			return -EINVAL;
		for (k = 0; k < zb.n; k++)
			zram_set_writeback_batch_size(zb.zram[k], v > 256 ? 256 : (unsigned int)v);
		return (int)size;
	case F_WRITEBACK:
		n = zblk_parse_kv(text, kv, sizeof(kv) / sizeof(kv[0]));
		if (n < 0)
			return n == -E2BIG ? -E2BIG : -EINVAL;
		for (i = 0; i < n; i++) {
			const char *name = kv[i].value && !strcmp(kv[i].key, "type") ? kv[i].value :
					   !kv[i].value ? kv[i].key : NULL;

			if (name) {
				for (m = ZRAM_WB_IDLE; m <= ZRAM_WB_INCOMPRESSIBLE; m++)
					if (modes[m] && !strcmp(name, modes[m]))
						break;
				if (m > ZRAM_WB_INCOMPRESSIBLE || mode >= 0)
					return -EINVAL;
				mode = m;
				continue;
			}
			if (!strcmp(kv[i].key, "page_index")) {
				if (zblk_parse_number(kv[i].value, false, UINT64_MAX, &a))
					return -EINVAL;
				b = a;
			} else if (!strcmp(kv[i].key, "page_indexes")) {
				char *dash = strchr(kv[i].value, '-');

				if (!dash)
					return -EINVAL;
				*dash = 0;
				if (zblk_parse_number(kv[i].value, false, UINT64_MAX, &a) ||
				    zblk_parse_number(dash + 1, false, UINT64_MAX, &b))
					return -EINVAL;
			} else {
				return -EINVAL;
			}
			if (a > b || b >= pages)
				return -ERANGE;
			range[nr][0] = a;
			range[nr++][1] = b;
		}
		if (mode < 0 && !nr)
			return -EINVAL;
		if (!nr) {
			range[0][0] = 0;
			range[nr++][1] = pages - 1;
		}
		/*
		 * A failed backing write (-EIO) does not stop the later ranges,
		 * as it does not stop the rest of one: Linux tries every page it
		 * selected and returns the error.  A budget spent (also -EIO)
		 * stops each later range at its first page.
		 */
		err = 0;
		for (i = 0; i < nr; i++) {
			int64_t r = zram_writeback(z, mode < 0 ? ZRAM_WB_ALL : (enum zram_wb_mode)mode,
						   range[i][0], range[i][1] - range[i][0] + 1);

			if (r == -EIO)
				err = -EIO;
			else if (r < 0)
				return (int)r;
		}
		return err ? err : (int)size;
	default:
		return -EACCES;
	}
}

/*
 * The recompression files take Linux's "key=value ..." words; every word
 * is checked before anything changes, so a bad line changes nothing.
 */
struct recomp_args {
	const char *algo, *type, *dict;
	uint64_t priority, threshold, max_pages, size;
	int level;
	bool has_priority;
};

/* "level=-5" too: zstd's fast levels are negative. */
static int parse_level(const char *s, int *out)
{
	bool neg = *s == '-';
	uint64_t v;

	if (zblk_parse_number(s + neg, false, INT_MAX, &v))
		return -EINVAL;
	*out = neg ? -(int)v : (int)v;
	return 0;
}

/* Splits @text into @a, accepting only the keys in @keys (space-separated). */
static int recomp_parse(char *text, const char *keys, struct recomp_args *a)
{
	struct zblk_kv kv[16];
	int n, i, err = 0;

	n = zblk_parse_kv(text, kv, sizeof(kv) / sizeof(kv[0]));
	if (n < 0)
		return -EINVAL;
	for (i = 0; i < n && !err; i++) {
		const char *k = kv[i].key, *v = kv[i].value, *at = strstr(keys, k);
		size_t len = strlen(k);

		/* A whole word of @keys, with a value: "type=" alone is no key. */
		if (!v || !at || (at != keys && at[-1] != ' ') || (at[len] && at[len] != ' '))
			return -EINVAL;
		if (!strcmp(k, "algo")) {
			a->algo = v;
			err = zpool_has_compressor(v) ? 0 : -EINVAL;
		} else if (!strcmp(k, "priority")) {
			a->has_priority = true;
			err = zblk_parse_number(v, false, ZRAM_MAX_RECOMP_PRIO, &a->priority);
		} else if (!strcmp(k, "type")) {
			a->type = v;
		} else if (!strcmp(k, "threshold")) {
			err = zblk_parse_number(v, false, PAGE, &a->threshold);
		} else if (!strcmp(k, "max_pages")) {
			err = zblk_parse_number(v, false, UINT64_MAX, &a->max_pages);
		} else if (!strcmp(k, "level")) {
			err = parse_level(v, &a->level);
		} else if (!strcmp(k, "dict")) {
			a->dict = v;
		} else if (!strcmp(k, "size")) {
			err = zblk_parse_number(v, true, (uint64_t)1 << 20, &a->size);
		}
	}
	return err ? -EINVAL : 0;
}

/*
 * algorithm_params and train_dict name a priority (0 to 3) or an algorithm,
 * the lowest priority that has it; given both, they must agree.
 */
static int recomp_priority(const struct recomp_args *a, unsigned int *prio)
{
	const char *name;
	unsigned int p;

	if (!a->algo) {
		*prio = (unsigned int)a->priority;
		return 0;
	}
	for (p = 0; p <= ZRAM_MAX_RECOMP_PRIO; p++) {
		if (a->has_priority && p != a->priority)
			continue;
		if (!zram_get_algorithm(zb.zram[0], p, &name, NULL) && !strcmp(name, a->algo)) {
			*prio = p;
			return 0;
		}
	}
	return -EINVAL;
}

/* dict=PATH: the whole file, 1 byte to 1 MiB (as zram_set_algorithm_params()). */
static int read_dict(const char *path, char **out, size_t *len)
{
	struct stat st;
	ssize_t r;
	size_t done = 0;
	char *d;
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size < 1 || st.st_size > (1 << 20)) {
		close(fd);
		return -EINVAL;
	}
	d = malloc((size_t)st.st_size);
	while (d && done < (size_t)st.st_size) {
		r = read(fd, d + done, (size_t)st.st_size - done);
		if (r <= 0) {
			ret = r < 0 ? -errno : -EINVAL; /* shrank while read */
			break;
		}
		done += (size_t)r;
	}
	close(fd);
	if (!d || ret) {
		free(d);
		return d ? ret : -ENOMEM;
	}
	*out = d;
	*len = done;
	return 0;
}

/*
 * The recompression files, as Linux's zram names and parses them:
 * recomp_algorithm ("algo=NAME [priority=1..3]"; reads "#N: a [b] c" per
 * priority set, the chosen one in brackets), recompress ("[type=idle|huge|
 * huge_idle] [threshold=BYTES] [max_pages=N] [algo=NAME] [priority=N]"),
 * algorithm_params ("[priority=N|algo=NAME] [level=N] [dict=PATH]"), and,
 * beyond Linux, train_dict ("[priority=N|algo=NAME] [size=BYTES]").  With
 * stripes every zram device gets the same; reads show the first.  A read
 * returns bytes, a write @size, or a negative errno.
 */
static int recomp_file(enum file f, char *buf, size_t size, off_t off, bool write)
{
	static const char *const types[] = { [ZRAM_RECOMP_IDLE] = "idle",
		[ZRAM_RECOMP_HUGE] = "huge", [ZRAM_RECOMP_HUGE_IDLE] = "huge_idle" };
	struct zram_recompress_params rp = ZRAM_RECOMPRESS_PARAMS_INIT;
	struct recomp_args a = { .size = 64 << 10 };
	char text[PATH_MAX + 256], *dict = NULL;
	const char *name;
	size_t dict_len = 0, i;
	unsigned int k, prio;
	int n = 0, ret = 0;
	int64_t r;

	if (!write) {
		if (f != F_RECOMP_ALGORITHM)
			return -EACCES;
		for (prio = 1; prio <= ZRAM_MAX_RECOMP_PRIO && !zb.null; prio++) {
			if (zram_get_algorithm(zb.zram[0], prio, &name, NULL))
				continue;
			n += snprintf(text + n, sizeof(text) - (size_t)n, "#%u: ", prio);
			n += algo_list(name, "\n", text + n, sizeof(text) - (size_t)n);
		}
		return text_read(text, n, buf, size, off);
	}
	if (text_take(text, sizeof(text), buf, size))
		return -EINVAL;
	switch (f) {
	case F_RECOMP_ALGORITHM:
		if (recomp_parse(text, "algo priority", &a) || !a.algo ||
		    (a.has_priority && !a.priority))
			return -EINVAL;
		for (k = 0; k < zb.n && !ret; k++)
			ret = zram_set_recomp_algorithm(zb.zram[k], a.algo,
							a.has_priority ? (unsigned int)a.priority : 1);
		break;
	case F_RECOMPRESS:
		if (recomp_parse(text, "type algo priority threshold max_pages", &a) ||
		    (a.has_priority && !a.priority))
			return -EINVAL;
		if (a.type) {
			for (i = ZRAM_RECOMP_IDLE; i <= ZRAM_RECOMP_HUGE_IDLE; i++)
				if (!strcmp(a.type, types[i]))
					break;
			if (i > ZRAM_RECOMP_HUGE_IDLE)
				return -EINVAL;
			rp.type = (enum zram_recomp_type)i;
		}
		rp.threshold = a.threshold;
		/* Stripes share max_pages, rounded up so each device gets one at least. */
		rp.max_pages = a.max_pages / zb.n + (a.max_pages % zb.n != 0);
		rp.algo = a.algo;
		rp.priority = (unsigned int)a.priority;
		for (k = 0; k < zb.n && !ret; k++) {
			r = zram_recompress(zb.zram[k], &rp);
			ret = r < 0 ? (int)r : 0;
		}
		break;
	case F_ALGORITHM_PARAMS:
		if (recomp_parse(text, "algo priority level dict", &a) ||
		    recomp_priority(&a, &prio))
			return -EINVAL;
		if (zram_get_algorithm(zb.zram[0], prio, NULL, NULL))
			return -EINVAL;
		if (a.dict && (ret = read_dict(a.dict, &dict, &dict_len)))
			return ret;
		for (k = 0; k < zb.n && !ret; k++)
			ret = zram_set_algorithm_params(zb.zram[k], prio, a.level, dict, dict_len);
		free(dict);
		break;
	case F_TRAIN_DICT:
		if (recomp_parse(text, "algo priority size", &a) || recomp_priority(&a, &prio) ||
		    a.size < 256)
			return -EINVAL;
		for (k = 0; k < zb.n && ret >= 0; k++)
			ret = zram_train_dict(zb.zram[k], prio, (size_t)a.size);
		break;
	default:
		return -EACCES;
	}
	return ret < 0 ? ret : (int)size;
}

static int zblk_read(const char *path, char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	enum file f = lookup(path);
	char text[PATH_MAX + 64];
	int n;

	(void)fi;
	if (f == F_DISK)
		return disk_io(buf, size, (uint64_t)off, false);
	if (f >= F_RECOMP_ALGORITHM && f < F_NONE)
		return recomp_file(f, buf, size, off, false);
	if (f >= F_WRITEBACK && f < F_NONE)
		return wb_file(f, buf, size, off, false);
	if (f >= F_DISKSIZE && f <= F_BACKING_DEV) {
		n = setup_text(f, text, sizeof(text));
		return text_read(text, n, buf, size, off);
	}
	if (f != F_MM_STAT && f != F_IO_STAT && f != F_MEM_LIMIT)
		return -EACCES;
	n = stat_text(f, text, sizeof(text));
	return text_read(text, n, buf, size, off);
}

static int zblk_write(const char *path, const char *buf, size_t size, off_t off,
		      struct fuse_file_info *fi)
{
	enum file f = lookup(path);
	char text[64];
	unsigned int k;
	uint64_t v;

	(void)fi;
	if (f == F_DISK)
		return disk_io((char *)buf, size, (uint64_t)off, true);
	/* Set at mount in every mode, null included: as Linux once initialised. */
	if (f >= F_DISKSIZE && f <= F_BACKING_DEV)
		return -EBUSY;
	if (zb.null && f != F_NONE)
		return (int)size;
	if (f >= F_RECOMP_ALGORITHM && f < F_NONE)
		return recomp_file(f, (char *)buf, size, off, true);
	if (f >= F_WRITEBACK && f < F_NONE)
		return wb_file(f, (char *)buf, size, off, true);
	if (f == F_COMPACT) { /* whatever is written */
		for (k = 0; k < zb.n; k++)
			zram_compact(zb.zram[k]);
		return (int)size;
	}
	if (f != F_MEM_LIMIT && f != F_MEM_USED_MAX && f != F_IDLE)
		return -EACCES;
	/* Whole or not at all: a value cut to fit could parse as another. */
	if (text_take(text, sizeof(text), buf, size))
		return -EINVAL;
	text[strcspn(text, "\n")] = 0;
	switch (f) {
	case F_MEM_LIMIT:
		if (parse_size(text, &v))
			return -EINVAL;
		set_mem_limit(v);
		return (int)size;
	case F_MEM_USED_MAX:
		/* Linux takes only 0: the watermark can be restarted, not set. */
		if (zblk_parse_number(text, false, 0, &v))
			return -EINVAL;
		for (k = 0; k < zb.n; k++)
			zram_reset_mem_used_max(zb.zram[k]);
		return (int)size;
	default: /* F_IDLE */
		if (!strcmp(text, "all"))
			v = 0;
		else if (zblk_parse_number(text, false, UINT32_MAX, &v) || !v)
			return -EINVAL;
		for (k = 0; k < zb.n; k++)
			zram_idle_mark(zb.zram[k], (unsigned int)v);
		return (int)size;
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
	/* A flush, as Linux spells it: an empty write with REQ_PREFLUSH. */
	return submit(REQ_OP_WRITE | REQ_PREFLUSH, 0, NULL, 0);
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
	static const char zeros[SECTOR];

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
	/*
	 * As a block device: nothing may start at or past the end, nor grow
	 * the disk, but a range that keeps the size is done up to the end.
	 * Punching a hole always keeps it.
	 */
	if (off < 0 || len <= 0 || start >= zb.disksize)
		return -EINVAL;
	if ((uint64_t)len > zb.disksize - start) {
		if (!(mode & FALLOC_FL_KEEP_SIZE))
			return -EINVAL;
		end = zb.disksize;
	}
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
	a = (start + SECTOR - 1) / SECTOR * SECTOR;
	b = end / SECTOR * SECTOR;
	if (a >= b)
		return zero_bytes(start, end - start);
	ret = zero_bytes(start, a - start);
	if (!ret)
		ret = zero_bytes(b, end - b);
	/* The device frees whole pages and zeroes partial ones. */
	while (!ret && a < b) {
		uint64_t n = b - a > (1u << 30) ? (1u << 30) : b - a;

		ret = submit_change(op, a, NULL, (size_t)n);
		a += n;
	}
	return ret;
}

static void *zblk_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	/* Bigger requests mean fewer round trips through the kernel. */
	conn->max_write = zb.max_write;
	conn->max_read = zb.max_write; /* as mounted with, see check_options() */
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

static void usage(FILE *out)
{
	fprintf(out,
		"usage: zblk [-f] -o disksize=SIZE[,OPTION...] MOUNTPOINT\n"
		"\n"
		"zblk options (SIZE: bytes, or with K, M, G or T):\n"
		"    -o disksize=SIZE       size of MOUNTPOINT/disk, rounded up to a page; required\n"
		"    -o algorithm=NAME      lz4 (default), lz4hc, or zstd where built\n"
		"    -o mem_limit=SIZE      most memory the data may use; 0 for none\n"
		"    -o stripes=N           spread the disk over N zram devices (1 to 16)\n"
		"    -o chunk=SIZE          stripe chunk, a power of two of at least a page (64K)\n"
		"    -o max_write=SIZE      largest FUSE request, whole sectors from 4K to 255\n"
		"                           pages (1M or 255 pages if less; 128K with page_cache)\n"
		"    -o writeback           the kernel's writeback cache (the disk is then direct I/O)\n"
		"    -o splice              move data with splice\n"
		"    -o page_cache          the disk through the page cache (shared mmap works;\n"
		"                           writes go one at a time)\n"
		"    -o backing_dev=PATH    file or block device for zram's writeback (a missing\n"
		"                           or empty file is made at disksize)\n"
		"    -o multi_page          compress up to 32 KiB of pages together (smaller;\n"
		"                           see zblk(1) for what it costs)\n"
		"    -o null                store nothing, read zeroes: FUSE's own cost\n"
		"    -h, --help             this help, then FUSE's options\n"
		"    -V, --version          the versions of libbvec and FUSE\n");
#ifdef ZBLK_HAVE_URING
	/* transport.c takes it; only where built with liburing. */
	fprintf(out, "    -o io_uring            FUSE over io_uring where the kernel offers it\n"
		     "                           (Linux 6.14+, fuse's enable_uring parameter)\n");
#endif
}

/* Sizes in messages, in the largest unit that divides them. */
static const char *size_text(uint64_t v, char *buf, size_t len)
{
	static const char units[] = "KMGT";
	int u = -1;

	while (u < 3 && v && !(v & 1023)) {
		v >>= 10;
		u++;
	}
	snprintf(buf, len, "%" PRIu64 "%s", v, u < 0 ? "" : (char[]){ units[u], 0 });
	return buf;
}

/* zram numbers a device's pages in 32 bits (newer <libbvec/zram.h> says so). */
#ifndef ZRAM_MAX_DISKSIZE
#define ZRAM_MAX_DISKSIZE ((uint64_t)UINT32_MAX << BVEC_PAGE_SHIFT)
#endif

/*
 * backing_dev=PATH: a block device is opened exclusively (O_EXCL) and used
 * whole; a file is used at its size, and one that does not exist yet or is
 * empty is created at disksize (sparse, so it costs nothing until written).
 */
static int open_backing(void)
{
	struct stat st;
	char msg[160];
	char *real;
	int ret;

	if (!stat(zb.backing_dev, &st) && S_ISBLK(st.st_mode))
		zb.backing_fd = open(zb.backing_dev, O_RDWR | O_EXCL | O_CLOEXEC);
	else
		zb.backing_fd = open(zb.backing_dev, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (zb.backing_fd < 0 || fstat(zb.backing_fd, &st)) {
		snprintf(msg, sizeof(msg), "cannot open backing_dev: %s", strerror(errno));
		return usage_error(msg, zb.backing_dev);
	}
	if (S_ISREG(st.st_mode) && !st.st_size && ftruncate(zb.backing_fd, (off_t)zb.disksize)) {
		snprintf(msg, sizeof(msg), "cannot size backing_dev: %s", strerror(errno));
		return usage_error(msg, zb.backing_dev);
	}
	/*
	 * MOUNTPOINT/backing_dev reads the absolute path, as Linux's file does:
	 * the daemon runs in /, where a relative path names another file.
	 */
	real = realpath(zb.backing_dev, NULL);
	if (real) {
		free(zb.backing_dev);
		zb.backing_dev = real;
	}
	zb.backing = bvec_file_disk_create(zb.backing_fd, NULL);
	ret = zb.backing ? zram_set_backing(zb.zram[0], zb.backing) : -errno;
	if (ret) {
		snprintf(msg, sizeof(msg), "cannot use backing_dev (%s): %s",
			 ret == -EINVAL ? "smaller than a page" : "error", strerror(-ret));
		return usage_error(msg, zb.backing_dev);
	}
	return 0;
}

static int make_devices(void)
{
	struct gendisk *children[MAX_STRIPES];
	struct zram_config cfg = ZRAM_CONFIG_INIT;
	uint64_t per, limit = 0;
	unsigned int k;
	char text[32], msg[160];

	if (zb.mem_limit_s)
		(void)parse_size(zb.mem_limit_s, &limit); /* checked already */
	per = zb.disksize / zb.n / zb.chunk * zb.chunk;
	if (zb.n > 1 && !per)
		return usage_error("disksize is smaller than one chunk per stripe", zb.disksize_s);
	cfg.disksize = zb.n > 1 ? per : zb.disksize;
	if (cfg.disksize > ZRAM_MAX_DISKSIZE) {
		snprintf(msg, sizeof(msg), "disksize too large: zram takes at most %s%s",
			 size_text(ZRAM_MAX_DISKSIZE, text, sizeof(text)),
			 zb.n > 1 ? " per stripe" : "");
		return usage_error(msg, zb.disksize_s);
	}
	cfg.pool.compressor = zb.algorithm;
	atomic_store(&zb.mem_limit, limit);
	cfg.pool.mem_limit = stripe_limit(limit);
	if (zb.multi_page)
		cfg.pool.flags |= ZPOOL_F_MULTI_PAGE;
	for (k = 0; k < zb.n; k++) {
		zb.zram[k] = zram_create(&cfg);
		if (!zb.zram[k]) {
			snprintf(msg, sizeof(msg), "cannot create a zram device of %s: %s",
				 size_text(cfg.disksize, text, sizeof(text)), strerror(errno));
			return usage_error(msg, NULL);
		}
		children[k] = zram_disk(zb.zram[k]);
	}
	if (zb.n == 1) {
		zb.top = children[0];
		return 0;
	}
	zb.stripe = bvec_stripe_create(children, zb.n, (unsigned int)(zb.chunk / SECTOR));
	if (!zb.stripe) {
		snprintf(msg, sizeof(msg), "cannot create the stripe device: %s", strerror(errno));
		return usage_error(msg, NULL);
	}
	zb.top = zb.stripe;
	zb.disksize = get_capacity(zb.top) * SECTOR;
	return 0;
}

/* "bad NAME" or "NAME too large" for a value that does not parse. */
static int bad_value(int err, const char *name, const char *arg)
{
	char msg[64];

	snprintf(msg, sizeof(msg), err == -ERANGE ? "%s too large" : "bad %s", name);
	return usage_error(msg, arg);
}

/* Checks the options; 0, or the exit status with a message printed. */
static int check_options(void)
{
	/* The stripe driver counts a chunk's sectors in an unsigned int. */
	const uint64_t max_chunk = ((uint64_t)UINT_MAX / 2 + 1) * SECTOR;
	char text[32], msg[96];
	uint64_t v, max;
	int err;

	if (!zb.disksize_s)
		return usage_error("-o disksize=SIZE is required", NULL);
	if ((err = parse_size(zb.disksize_s, &v)) || !v)
		return bad_value(err, "disksize", zb.disksize_s);
	/* zram rounds up to whole pages (PAGE_ALIGN); so does zblk. */
	if (v > MAX_SIZE / PAGE * PAGE)
		return bad_value(-ERANGE, "disksize", zb.disksize_s);
	zb.disksize = (v + PAGE - 1) / PAGE * PAGE;
	if (zb.mem_limit_s && (err = parse_size(zb.mem_limit_s, &v)))
		return bad_value(err, "mem_limit", zb.mem_limit_s);
	v = 1;
	if (zb.stripes_s && zblk_parse_number(zb.stripes_s, false, MAX_STRIPES, &v))
		v = 0;
	if (v < 1 || v > MAX_STRIPES)
		return usage_error("stripes must be 1 to 16", zb.stripes_s);
	zb.n = (unsigned int)v;
	zb.chunk = 64 * 1024;
	if (zb.chunk_s) {
		err = parse_size(zb.chunk_s, &v);
		if (err || v < PAGE || (v & (v - 1)))
			return usage_error("chunk must be a power of two of at least a page",
					   zb.chunk_s);
		if (v > max_chunk) {
			snprintf(msg, sizeof(msg), "chunk too large for the stripe driver: at most %s",
				 size_text(max_chunk, text, sizeof(text)));
			return usage_error(msg, zb.chunk_s);
		}
		zb.chunk = v;
	}
	if (zb.backing_dev && zb.n > 1)
		return usage_error("backing_dev needs stripes=1", zb.backing_dev);
	if (zb.algorithm && !zpool_has_compressor(zb.algorithm))
		return usage_error("unknown algorithm", zb.algorithm);
	/*
	 * The kernel sends a direct I/O disk one request at a time, so each
	 * should be large (transport.c shares it among threads); through the
	 * page cache it keeps several 128K requests in flight instead.  Either
	 * way a request must be whole sectors: the kernel cuts a large read
	 * or write into requests of max_write bytes (max_read for reads, set
	 * alike), and a request ending inside a sector leaves that sector to
	 * two separate read-modify-writes, between which another writer's
	 * write of the sector can land and be half undone.  The page a buffer
	 * starts in counts too: a request takes at most max_pages pages of the
	 * caller's memory, so transport.c asks for one page more than
	 * max_write fills, and the kernel allows 256.
	 */
	max = 255 * (uint64_t)sysconf(_SC_PAGESIZE);
	zb.max_write = zb.page_cache && !zb.writeback ? 128u << 10 : 1u << 20;
	if (zb.max_write > max)
		zb.max_write = (unsigned int)max;
	if (zb.max_write_s) {
		if (parse_size(zb.max_write_s, &v) || v < (4u << 10) || v > max || v % SECTOR) {
			snprintf(msg, sizeof(msg), "max_write must be a multiple of 512 from 4K to %s",
				 size_text(max, text, sizeof(text)));
			return usage_error(msg, zb.max_write_s);
		}
		zb.max_write = (unsigned int)v;
	}
	return 0;
}

/* /proc/self/mountinfo escapes space, tab, newline and backslash as \ooo. */
static void unescape(char *s)
{
	char *d = s;

	for (; *s; s++, d++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*d = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*d = *s;
		}
	}
	*d = 0;
}

/*
 * Is @path (a directory) a mount point?  A different device from its
 * parent's says so; a bind mount of the same filesystem does not change
 * the device, so the mount table is read as well where there is one.
 */
static bool is_mount_point(const char *path, const struct stat *st)
{
	char *up = malloc(strlen(path) + 4), *real = realpath(path, NULL), line[8192];
	struct stat parent;
	bool mounted = false;
	FILE *f;

	if (up) {
		sprintf(up, "%s/..", path);
		mounted = !stat(up, &parent) &&
			  (parent.st_dev != st->st_dev || parent.st_ino == st->st_ino);
		free(up);
	}
	f = real && !mounted ? fopen("/proc/self/mountinfo", "r") : NULL;
	while (f && !mounted && fgets(line, sizeof(line), f)) {
		char *field = line, *end;
		int i;

		for (i = 0; i < 4 && field; i++) {
			field = strchr(field, ' ');
			field = field ? field + 1 : NULL;
		}
		if (!field || !(end = strchr(field, ' ')))
			continue;
		*end = 0;
		unescape(field);
		mounted = !strcmp(field, real);
	}
	if (f)
		fclose(f);
	free(real);
	return mounted;
}

static int check_mountpoint(const char *path)
{
	struct stat st;
	char msg[96];

	if (stat(path, &st)) {
		snprintf(msg, sizeof(msg), "cannot use MOUNTPOINT: %s", strerror(errno));
		return usage_error(msg, path);
	}
	if (!S_ISDIR(st.st_mode))
		return usage_error("MOUNTPOINT is not a directory", path);
	if (is_mount_point(path, &st))
		return usage_error("MOUNTPOINT is already a mount point", path);
	return 0;
}

/* Keeps every argument for FUSE, noting the first non-option: MOUNTPOINT. */
static int keep_arg(void *data, const char *arg, int key, struct fuse_args *args)
{
	(void)data;
	(void)args;
	if (key == FUSE_OPT_KEY_NONOPT && !zb.mountpoint)
		zb.mountpoint = strdup(arg);
	return 1;
}

static int run(struct fuse_args *args)
{
	char opt[32];
	int ret;

	if (zb.help) {
		usage(stdout);
		printf("\nFUSE options:\n");
		fflush(stdout);
		fuse_cmdline_help();
		fuse_lowlevel_help();
		return 0;
	}
	if (zb.version) {
		printf("zblk (libbvec) %s\nFUSE library version %s\n", bvec_version_string(),
		       fuse_pkgversion());
		return 0;
	}
	if (!zb.mountpoint) {
		usage(stderr);
		return 2;
	}
	if ((ret = check_options()) || (ret = check_mountpoint(zb.mountpoint)))
		return ret;
	clock_gettime(CLOCK_REALTIME, &zb.mounted);
	pthread_mutex_init(&zb.block_state_lock, NULL);
	if (!zb.null && (ret = make_devices()))
		return ret;
	if (zb.backing_dev && !zb.null && (ret = open_backing()))
		return ret;
	/* Reads are cut into requests as writes are (check_options()). */
	snprintf(opt, sizeof(opt), "-omax_read=%u", zb.max_write);
	if (fuse_opt_add_arg(args, opt))
		return 1;
	return zblk__serve(args, &zblk_ops, files[F_DISK].name);
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	unsigned int k;
	int ret;

	if (fuse_opt_parse(&args, &zb, zblk_opts, keep_arg) == -1)
		ret = usage_error("cannot parse options", NULL);
	else
		ret = run(&args);
	put_disk(zb.stripe); /* before the zram devices under it */
	for (k = 0; k < zb.n; k++)
		zram_destroy(zb.zram[k]);
	if (zb.backing) {
		put_disk(zb.backing); /* after the device that wrote to it */
		close(zb.backing_fd);
	}
	free(zb.backing_dev);
	fuse_opt_free_args(&args);
	free(zb.disksize_s);
	free(zb.mem_limit_s);
	free(zb.chunk_s);
	free(zb.algorithm);
	free(zb.max_write_s);
	free(zb.stripes_s);
	free(zb.mountpoint);
	return ret;
}

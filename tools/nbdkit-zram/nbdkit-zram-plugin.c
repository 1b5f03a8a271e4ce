// SPDX-License-Identifier: MIT
/*
 * nbdkit-zram-plugin: libzpool's zram device served over NBD.
 *
 *   nbdkit zram size=SIZE [algorithm=NAME] [level=N] [dict=FILE] [mem_limit=SIZE]
 *               [stripes=N] [chunk=SIZE] [checksum=BOOL] [multi_page=BOOL]
 *               [compact_secs=N] [stats=FILE] [recomp_algorithm=NAME [recomp_level=N]
 *               [recomp_dict=FILE] [recompress=TYPE]]
 *               [backing_dev=PATH [writeback=MODE]] [idle_secs=N]
 *
 * Every NBD request becomes one bio over nbdkit's own buffer, submitted to
 * the zram device (or the stripe over several) and waited for: no copy and
 * no allocation on the data path.  Requests that are not whole 512-byte
 * sectors, which NBD allows and the block layer does not, bounce through a
 * sector-aligned buffer.  doc/nbdkit-zram-plugin.1 is the user's manual.
 */
#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <libbvec/stripe.h>
#include <libbvec/version.h>
#include <libbvec/zram.h>

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

#define SECTOR ((uint64_t)BVEC_SECTOR_SIZE)
#define PAGE ((uint64_t)BVEC_PAGE_SIZE)
#define MAX_STRIPES BVEC_STRIPE_MAX_CHILDREN

/* The stripe driver counts a chunk's sectors in an unsigned int. */
#define MAX_CHUNK (((uint64_t)UINT_MAX / 2 + 1) * SECTOR)

/*
 * A striped extents request looks at most this many chunks: clients ask
 * again from where the answer stopped, and no one request holds a worker
 * thread for long on a huge thin disk.
 */
#define EXTENT_CHUNKS 65536

/* The largest dictionary zram_set_algorithm_params() takes. */
#define MAX_DICT (1u << 20)

/* dict= or recomp_dict=: the file, and its bytes once read. */
struct dict {
	char *path;
	void *data;
	size_t len;
};

static struct {
	/* parameters */
	uint64_t size, mem_limit, chunk;
	const char *algorithm;
	int level, recomp_level;	/* 0: the algorithm's default */
	struct dict dict, recomp_dict;
	unsigned int n;
	bool checksum, multi_page;
	char *stats_path;
	char *backing_path;
	int wb_mode;		/* enum zram_wb_mode, or WB_NONE */
	const char *recomp_algorithm;
	int recomp_type;	/* enum zram_recomp_type, or RECOMP_NONE */
	unsigned int idle_secs;
	bool wb_given, recomp_given, idle_given; /* writeback=, recompress=, idle_secs= */
	bool recomp_level_given;
	unsigned int compact_secs; /* 0: never */
	uint64_t compacted_at;	/* orig + compr data when last compacted */
	/* devices */
	uint64_t disksize;
	struct zram *zram[MAX_STRIPES];
	struct gendisk *stripe; /* over the zram devices when n > 1 */
	struct gendisk *top;
	/* backing_dev=: its file (open from get_ready on) and the disk over it */
	int backing_fd;
	struct gendisk *backing;
	int wb_last_err;	/* reported once until it changes */
	int recomp_last_err;	/* likewise */
	int stats_last_err;	/* likewise, under stats_lock */
	/*
	 * Held for writing across a read-modify-write of partial sectors, for
	 * reading by every other request that changes the disk: a sector's
	 * read, patch and write back see no other write in between.
	 */
	pthread_rwlock_t rmw;
	/* the statistics file's writer */
	pthread_t stats_thread;
	bool stats_running, stopping;
	pthread_mutex_t stats_lock;
	pthread_cond_t stats_wake;
	char stats_last[512];
} zp = {
	.chunk = 64 * 1024,
	.n = 1,
	.wb_mode = ZRAM_WB_IDLE,
	.recomp_type = ZRAM_RECOMP_IDLE,
	.idle_secs = 60,
	.compact_secs = 60,
	.backing_fd = -1,
#ifdef PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP
	/* A rare partial write must not wait out a stream of whole ones. */
	.rmw = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP,
#else
	.rmw = PTHREAD_RWLOCK_INITIALIZER,
#endif
	.stats_lock = PTHREAD_MUTEX_INITIALIZER,
	.stats_wake = PTHREAD_COND_INITIALIZER,
};

/*
 * Words for an errno met while serving (worker and housekeeping threads):
 * the block layer's, which the kernel logs for a failed bio, and not
 * strerror()'s.  That reads glibc's message catalogue under its locale
 * lock, and once a worker thread had, nbdkit built with AddressSanitizer
 * hung at exit on that lock (in p11-kit's destructor).  Every errno the
 * device and its tiers return has a block status, so nothing is lost.
 */
static const char *err_str(int err)
{
	return blk_status_to_str(errno_to_blk_status(err));
}

/*
 * Words for the errors writing and renaming a file meets, for the same
 * reason, where the block layer's would say only "I/O": the housekeeping
 * thread's stats= file.  Others get err_str()'s.
 */
static const char *file_err_str(int err)
{
	switch (err) {
	case ENOENT:
		return "No such file or directory";
	case ENOTDIR:
		return "Not a directory";
	case EISDIR:
		return "Is a directory";
	case EACCES:
		return "Permission denied";
	case EPERM:
		return "Operation not permitted";
	case EROFS:
		return "Read-only file system";
	case ENOSPC:
		return "No space left on device";
	case EDQUOT:
		return "Disk quota exceeded";
	case EIO:
		return "Input/output error";
	case ENAMETOOLONG:
		return "File name too long";
	case ELOOP:
		return "Too many levels of symbolic links";
	case EMFILE:
	case ENFILE:
		return "Too many open files";
	case EBUSY:
		return "Device or resource busy";
	default:
		return err_str(err);
	}
}

/* ---- configuration ---- */

/* Names a parameter takes: an array's length, "none", and no such name. */
#define NAMES(a) (sizeof(a) / sizeof((a)[0]))
#define NAME_NONE (-1)
#define NO_NAME (-2)

/* @value's index in @names (of @n), NAME_NONE for "none", else NO_NAME. */
static int name_index(const char *const *names, size_t n, const char *value)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(value, names[i]))
			return (int)i;
	return strcmp(value, "none") ? NO_NAME : NAME_NONE;
}

/* writeback=: zram's own names for what to write back, and "none". */
#define WB_NONE NAME_NONE
static const char *const wb_modes[] = {
	[ZRAM_WB_ALL] = "all", [ZRAM_WB_IDLE] = "idle", [ZRAM_WB_HUGE] = "huge",
	[ZRAM_WB_HUGE_IDLE] = "huge_idle", [ZRAM_WB_INCOMPRESSIBLE] = "incompressible",
};

/* recompress=: zram's own type names, and "none". */
#define RECOMP_NONE NAME_NONE
static const char *const recomp_types[] = {
	[ZRAM_RECOMP_ALL] = "all", [ZRAM_RECOMP_IDLE] = "idle", [ZRAM_RECOMP_HUGE] = "huge",
	[ZRAM_RECOMP_HUGE_IDLE] = "huge_idle",
};

/* The longest pause between writeback passes: a day. */
#define MAX_IDLE_SECS 86400u

/* nbdkit's own size syntax (1G, 512M, 4096 ...), which nbdkit users know. */
static int parse_size(const char *value, uint64_t *out)
{
	int64_t v = nbdkit_parse_size(value); /* reports its own error */

	if (v < 0)
		return -1;
	*out = (uint64_t)v;
	return 0;
}

static int on_config(const char *key, const char *value)
{
	int b;

	if (!strcmp(key, "size")) {
		if (parse_size(value, &zp.size))
			return -1;
		if (!zp.size) {
			nbdkit_error("size must not be 0");
			return -1;
		}
	} else if (!strcmp(key, "algorithm")) {
		if (!zpool_has_compressor(value)) {
			nbdkit_error("algorithm: '%s' is not built in (lz4, lz4hc%s)", value,
				     zpool_has_compressor("zstd") ? ", zstd" : "");
			return -1;
		}
		zp.algorithm = value; /* nbdkit keeps it for the plugin's lifetime */
	} else if (!strcmp(key, "level")) {
		return nbdkit_parse_int(key, value, &zp.level);
	} else if (!strcmp(key, "recomp_level")) {
		zp.recomp_level_given = true;
		return nbdkit_parse_int(key, value, &zp.recomp_level);
	} else if (!strcmp(key, "dict") || !strcmp(key, "recomp_dict")) {
		struct dict *d = key[0] == 'd' ? &zp.dict : &zp.recomp_dict;

		free(d->path);
		d->path = nbdkit_absolute_path(value);
		if (!d->path)
			return -1;
	} else if (!strcmp(key, "recomp_algorithm")) {
		if (!zpool_has_compressor(value)) {
			nbdkit_error("recomp_algorithm: '%s' is not built in (lz4, lz4hc%s)", value,
				     zpool_has_compressor("zstd") ? ", zstd" : "");
			return -1;
		}
		zp.recomp_algorithm = value;
	} else if (!strcmp(key, "recompress")) {
		zp.recomp_given = true;
		zp.recomp_type = name_index(recomp_types, NAMES(recomp_types), value);
		if (zp.recomp_type == NO_NAME) {
			nbdkit_error("recompress must be idle, huge, huge_idle, all or none, not '%s'",
				     value);
			return -1;
		}
	} else if (!strcmp(key, "mem_limit")) {
		return parse_size(value, &zp.mem_limit);
	} else if (!strcmp(key, "stripes")) {
		if (nbdkit_parse_unsigned(key, value, &zp.n))
			return -1;
		if (zp.n < 1 || zp.n > MAX_STRIPES) {
			nbdkit_error("stripes must be 1 to %u, not %s", MAX_STRIPES, value);
			return -1;
		}
	} else if (!strcmp(key, "chunk")) {
		if (parse_size(value, &zp.chunk))
			return -1;
		if (zp.chunk < PAGE || (zp.chunk & (zp.chunk - 1)) || zp.chunk > MAX_CHUNK) {
			nbdkit_error("chunk must be a power of two from %" PRIu64 " to %" PRIu64
				     " bytes, not %s", PAGE, MAX_CHUNK, value);
			return -1;
		}
	} else if (!strcmp(key, "checksum")) {
		if ((b = nbdkit_parse_bool(value)) < 0)
			return -1;
		zp.checksum = b;
	} else if (!strcmp(key, "multi_page")) {
		if ((b = nbdkit_parse_bool(value)) < 0)
			return -1;
		zp.multi_page = b;
	} else if (!strcmp(key, "compact_secs")) {
		if (nbdkit_parse_unsigned(key, value, &zp.compact_secs))
			return -1;
		if (zp.compact_secs > MAX_IDLE_SECS) {
			nbdkit_error("compact_secs must be 0 to %u, not %s", MAX_IDLE_SECS, value);
			return -1;
		}
	} else if (!strcmp(key, "stats")) {
		/* nbdkit changes directory to / once it serves: keep the path absolute. */
		free(zp.stats_path);
		zp.stats_path = nbdkit_absolute_path(value);
		if (!zp.stats_path)
			return -1;
	} else if (!strcmp(key, "backing_dev")) {
		free(zp.backing_path);
		zp.backing_path = nbdkit_absolute_path(value);
		if (!zp.backing_path)
			return -1;
	} else if (!strcmp(key, "writeback")) {
		zp.wb_given = true;
		zp.wb_mode = name_index(wb_modes, NAMES(wb_modes), value);
		if (zp.wb_mode == NO_NAME) {
			nbdkit_error("writeback must be idle, huge, huge_idle, incompressible, all "
				     "or none, not '%s'", value);
			return -1;
		}
	} else if (!strcmp(key, "idle_secs")) {
		zp.idle_given = true;
		if (nbdkit_parse_unsigned(key, value, &zp.idle_secs))
			return -1;
		if (zp.idle_secs < 1 || zp.idle_secs > MAX_IDLE_SECS) {
			nbdkit_error("idle_secs must be 1 to %u, not %s", MAX_IDLE_SECS, value);
			return -1;
		}
	} else {
		nbdkit_error("unknown parameter '%s'", key);
		return -1;
	}
	return 0;
}

/*
 * @d's file, read whole in the foreground, where a bad one is reported to
 * the user; the bytes stay for the devices made after nbdkit forks.
 */
static int read_dict(struct dict *d, const char *key)
{
	struct stat st;
	ssize_t n = 0;
	size_t got;
	int fd;

	if (!d->path)
		return 0;
	fd = open(d->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st)) {
		nbdkit_error("%s: cannot open %s: %m", key, d->path);
		goto fail;
	}
	if (!S_ISREG(st.st_mode) || !st.st_size || (uint64_t)st.st_size > MAX_DICT) {
		nbdkit_error("%s: %s must be a file of 1 byte to 1 MiB", key, d->path);
		goto fail;
	}
	d->data = malloc((size_t)st.st_size);
	if (!d->data) {
		nbdkit_error("%s: %m", key);
		goto fail;
	}
	for (got = 0; got < (size_t)st.st_size; got += (size_t)n) {
		n = read(fd, (char *)d->data + got, (size_t)st.st_size - got);
		if (n <= 0) {
			if (!n)
				errno = EIO; /* shrank while read */
			nbdkit_error("%s: cannot read %s: %m", key, d->path);
			goto fail;
		}
	}
	d->len = got;
	close(fd);
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

static int on_config_complete(void)
{
	uint64_t per;

	if (!zp.size) {
		nbdkit_error("size= is required");
		return -1;
	}
	if (zp.wb_given && !zp.backing_path) {
		nbdkit_error("writeback= needs backing_dev=");
		return -1;
	}
	if (zp.recomp_given && !zp.recomp_algorithm) {
		nbdkit_error("recompress= needs recomp_algorithm=");
		return -1;
	}
	if (zp.recomp_level_given && !zp.recomp_algorithm) {
		nbdkit_error("recomp_level= needs recomp_algorithm=");
		return -1;
	}
	if (zp.recomp_dict.path && !zp.recomp_algorithm) {
		nbdkit_error("recomp_dict= needs recomp_algorithm=");
		return -1;
	}
	if (read_dict(&zp.dict, "dict") || read_dict(&zp.recomp_dict, "recomp_dict"))
		return -1;
	if (zp.idle_given && !zp.backing_path && !zp.recomp_algorithm) {
		nbdkit_error("idle_secs= needs backing_dev= or recomp_algorithm=");
		return -1;
	}
	if (zp.backing_path && zp.n > 1) {
		nbdkit_error("backing_dev needs stripes=1");
		return -1;
	}
	/*
	 * Round up, never down: the disk is at least the size asked for.  One
	 * device takes whole pages; a stripe whole chunks on every child.
	 */
	per = zp.n == 1 ? PAGE : zp.chunk;
	if (zp.size > UINT64_MAX / 2 / zp.n) {
		nbdkit_error("size too large");
		return -1;
	}
	if (zp.n > 1 && zp.size / zp.n < zp.chunk) {
		nbdkit_error("size %" PRIu64 " is less than one chunk (%" PRIu64 ") a stripe",
			     zp.size, zp.chunk);
		return -1;
	}
	per = (zp.size / zp.n + per - 1) / per * per;
	if (zp.n > 1 && per * zp.n < zp.size)
		per += zp.chunk; /* the remainder did not fit in n chunks */
	if (per > ZRAM_MAX_DISKSIZE) {
		nbdkit_error("size too large: zram takes at most %" PRIu64 " bytes%s",
			     (uint64_t)ZRAM_MAX_DISKSIZE, zp.n > 1 ? " per stripe" : "");
		return -1;
	}
	zp.disksize = per * zp.n;
	return 0;
}

#define CONFIG_HELP \
	"size=<SIZE>         (required) size of the disk\n" \
	"algorithm=<NAME>    lz4 (default), lz4hc, or zstd where built\n" \
	"level=<N>           algorithm's level (lz4: acceleration); 0: default\n" \
	"dict=<FILE>         algorithm's dictionary (zstd's, or raw content)\n" \
	"mem_limit=<SIZE>    most memory the data may use; 0 for none\n" \
	"stripes=<N>         spread the disk over N zram devices (1 to 64)\n" \
	"chunk=<SIZE>        stripe chunk, a power of two of at least a page (64K)\n" \
	"checksum=<BOOL>     XXH3 checksum every stored page, checked on read\n" \
	"multi_page=<BOOL>   compress up to 32 KiB of pages together (off)\n" \
	"compact_secs=<N>    compact every N seconds if data changed (60; 0: never)\n" \
	"stats=<FILE>        keep zram's mm_stat and io_stat in FILE\n" \
	"recomp_algorithm=<NAME> recompress pages with NAME every idle_secs\n" \
	"recomp_level=<N>    recomp_algorithm's level; 0: default\n" \
	"recomp_dict=<FILE>  recomp_algorithm's dictionary\n" \
	"recompress=<TYPE>   idle (default), huge, huge_idle, all, none\n" \
	"backing_dev=<PATH>  file or block device that zram writes pages back to\n" \
	"writeback=<MODE>    idle (default), huge, huge_idle, incompressible, all, none\n" \
	"idle_secs=<N>       every N seconds, recompress and write back (60)"

static void on_dump_plugin(void)
{
	printf("zram_page_size=%u\n", (unsigned int)BVEC_PAGE_SIZE);
	printf("zram_algorithms=lz4 lz4hc%s\n", zpool_has_compressor("zstd") ? " zstd" : "");
	printf("zram_libbvec=%s\n", bvec_version_string());
}

/* ---- devices ---- */

static void device_config(struct zram_config *cfg)
{
	cfg->disksize = zp.disksize / zp.n;
	cfg->pool.compressor = zp.algorithm;
	cfg->pool.mem_limit = zp.mem_limit / zp.n;
	cfg->pool.flags = (zp.checksum ? ZPOOL_F_CHECKSUM : 0) |
			  (zp.multi_page ? ZPOOL_F_MULTI_PAGE : 0);
	if (zp.mem_limit && !cfg->pool.mem_limit)
		cfg->pool.mem_limit = 1; /* a limit below one byte a stripe is still a limit */
}

/* Reports why zram_create() refused @cfg. */
static void create_error(const struct zram_config *cfg)
{
	/* The algorithm was checked already: EINVAL can only be the size. */
	if (errno == EINVAL)
		nbdkit_error("size too large: %" PRIu64 " bytes%s is more pages than one zram "
			     "device holds; use more stripes", cfg->disksize,
			     zp.n > 1 ? " a stripe" : "");
	else
		nbdkit_error("cannot create a zram device of %" PRIu64 " bytes: %m",
			     cfg->disksize);
}

/*
 * backing_dev=PATH, as zblk's: a block device is opened exclusively
 * (O_EXCL) and used whole; a file is used at its size, and one that does
 * not exist yet or is empty is created at the disk's size (sparse: it costs
 * nothing until written).  Opened in the foreground, so that a bad path
 * fails where the user sees it; the descriptor is kept across nbdkit's fork.
 */
static int open_backing(void)
{
	struct stat st;

	if (!stat(zp.backing_path, &st) && S_ISBLK(st.st_mode))
		zp.backing_fd = open(zp.backing_path, O_RDWR | O_EXCL | O_CLOEXEC);
	else
		zp.backing_fd = open(zp.backing_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (zp.backing_fd < 0 || fstat(zp.backing_fd, &st)) {
		nbdkit_error("backing_dev: cannot open %s: %m", zp.backing_path);
		return -1;
	}
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
		nbdkit_error("backing_dev: %s is neither a file nor a block device",
			     zp.backing_path);
		return -1;
	}
	if (S_ISREG(st.st_mode) && !st.st_size && ftruncate(zp.backing_fd, (off_t)zp.disksize)) {
		nbdkit_error("backing_dev: cannot size %s: %m", zp.backing_path);
		return -1;
	}
	return 0;
}

/*
 * The file disk over the backing descriptor, given to @z.  A block
 * device's size is not its inode's: the end of the device says it.
 */
static int attach_backing(struct zram *z)
{
	off_t end = lseek(zp.backing_fd, 0, SEEK_END);
	struct stat st;
	int ret;

	zp.backing = bvec_file_disk_create(zp.backing_fd, NULL);
	if (!zp.backing) {
		nbdkit_error("backing_dev: cannot make a disk over %s: %m", zp.backing_path);
		return -1;
	}
	if (!fstat(zp.backing_fd, &st) && S_ISBLK(st.st_mode))
		set_capacity(zp.backing, end > 0 ? (sector_t)end / SECTOR : 0);
	ret = zram_set_backing(z, zp.backing);
	if (ret) {
		nbdkit_error("backing_dev: cannot use %s: %s", zp.backing_path,
			     ret == -EINVAL ? "smaller than a page" : strerror(-ret));
		return -1;
	}
	return 0;
}

static void detach_backing(struct zram *z)
{
	if (!zp.backing)
		return;
	if (z)
		zram_set_backing(z, NULL);
	put_disk(zp.backing);
	zp.backing = NULL;
}

/*
 * @level and @d at @prio of @z, as one algorithm_params line, where @key=
 * named the level for @algorithm: 0, or -1 with the error reported.  The
 * level goes first, alone, so that zram's EINVAL says which was refused.
 * The ranges are zpool.h's.
 */
static int set_params(struct zram *z, unsigned int prio, int level, const struct dict *d,
		      const char *key, const char *algorithm)
{
	int ret = level ? zram_set_algorithm_params(z, prio, level, NULL, 0) : 0;

	if (ret == -EINVAL) {
		nbdkit_error("%s: %d is out of %s's range (lz4: 1 to 65537, lz4hc: 1 to 12, "
			     "zstd: -7 to 22)", key, level, algorithm);
		return -1;
	}
	if (!ret && d->len)
		ret = zram_set_algorithm_params(z, prio, level, d->data, d->len);
	if (ret == -EINVAL)
		nbdkit_error("%s: %s refuses %s as a dictionary", prio ? "recomp_dict" : "dict",
			     algorithm, d->path);
	else if (ret)
		nbdkit_error("%s: %s", d->len ? (prio ? "recomp_dict" : "dict") : key,
			     strerror(-ret));
	return ret ? -1 : 0;
}

/*
 * level=, dict=, recomp_algorithm=, recomp_level= and recomp_dict= on @z,
 * as zram's algorithm_params and recomp_algorithm files: 0, or -1 with the
 * error reported.  They are set once the device is made, not in its
 * config, so that a level out of range is told apart from a size zram
 * refuses.
 */
static int set_algorithms(struct zram *z)
{
	int ret;

	if (set_params(z, 0, zp.level, &zp.dict, "level", zp.algorithm ? zp.algorithm : "lz4"))
		return -1;
	if (!zp.recomp_algorithm)
		return 0;
	ret = zram_set_recomp_algorithm(z, zp.recomp_algorithm, 1);
	if (ret) {
		nbdkit_error("recomp_algorithm: cannot set %s: %s", zp.recomp_algorithm,
			     strerror(-ret));
		return -1;
	}
	return set_params(z, 1, zp.recomp_level, &zp.recomp_dict, "recomp_level",
			  zp.recomp_algorithm);
}

/*
 * stats=FILE is written from the background, where an error goes to a log
 * the user may never read: so what would fail there is tried here.  The
 * file is replaced by renaming FILE.tmp over it, which needs a directory
 * that takes a new file and a FILE that is not a directory.
 */
static int check_stats_path(void)
{
	size_t n = strlen(zp.stats_path) + 5;
	struct stat st;
	char *tmp;
	FILE *f;

	if (!stat(zp.stats_path, &st) && S_ISDIR(st.st_mode)) {
		errno = EISDIR;
		nbdkit_error("stats: cannot write %s: %m", zp.stats_path);
		return -1;
	}
	tmp = malloc(n);
	if (!tmp) {
		nbdkit_error("stats: %m");
		return -1;
	}
	snprintf(tmp, n, "%s.tmp", zp.stats_path);
	f = fopen(tmp, "we");
	if (!f) {
		nbdkit_error("stats: cannot write %s: %m", zp.stats_path);
		free(tmp);
		return -1;
	}
	fclose(f);
	remove(tmp);
	free(tmp);
	return 0;
}

/*
 * The devices are made after nbdkit forks (into the background, or to run
 * --run's command), in the process that serves: made before, they would be
 * copied into a process that exits without unloading the plugin.  Here, in
 * the foreground, one device is made and dropped at once (it costs a page of
 * slot table) so that a size zram refuses fails nbdkit where the user sees
 * it, not in a daemon's log.
 */
static int on_get_ready(void)
{
	struct zram_config cfg = ZRAM_CONFIG_INIT;
	struct zram *z;

	if (zp.stats_path && check_stats_path())
		return -1;
	device_config(&cfg);
	z = zram_create(&cfg);
	if (!z) {
		create_error(&cfg);
		return -1;
	}
	/* The algorithms' levels and dictionaries and the backing disk are
	 * tried on this device too, and dropped with it. */
	if (set_algorithms(z) || (zp.backing_path && (open_backing() || attach_backing(z)))) {
		detach_backing(z);
		zram_destroy(z);
		return -1;
	}
	zram_destroy(z);
	detach_backing(NULL);
	return 0;
}

static int make_devices(void)
{
	struct zram_config cfg = ZRAM_CONFIG_INIT;
	struct gendisk *children[MAX_STRIPES];
	unsigned int k;

	device_config(&cfg);
	for (k = 0; k < zp.n; k++) {
		zp.zram[k] = zram_create(&cfg);
		if (!zp.zram[k]) {
			create_error(&cfg);
			return -1;
		}
		children[k] = zram_disk(zp.zram[k]);
		if (set_algorithms(zp.zram[k]))
			return -1;
	}
	if (zp.n == 1) {
		zp.top = children[0];
		return zp.backing_path ? attach_backing(zp.zram[0]) : 0;
	}
	zp.stripe = bvec_stripe_create(children, zp.n, (unsigned int)(zp.chunk / SECTOR));
	if (!zp.stripe) {
		nbdkit_error("cannot create the stripe device: %m");
		return -1;
	}
	zp.top = zp.stripe;
	return 0;
}

/* ---- statistics ---- */

/* zram's two lines, a stripe's devices summed. */
static void stats_text(char *buf, size_t len)
{
	struct zpool_stats sum = { 0 }, m;
	struct zram_io_stat io = { 0 }, i;
	char mm[256], ios[128], bd[96] = "";
	struct zram_bd_stat b;
	unsigned int k;

	for (k = 0; k < zp.n && zp.zram[k]; k++) {
		zram_mm_stat(zp.zram[k], &m);
		zram_io_stat(zp.zram[k], &i);
		zpool_stats_add(&sum, &m);
		zram_io_stat_add(&io, &i);
	}
	zram_format_mm_stat(&sum, mm, sizeof(mm));
	zram_format_io_stat(&io, ios, sizeof(ios));
	if (zp.backing_path && zp.zram[0]) {
		zram_bd_stat(zp.zram[0], &b);
		strcpy(bd, "bd_stat ");
		zram_format_bd_stat(&b, bd + 8, sizeof(bd) - 8);
	}
	snprintf(buf, len, "mm_stat %sio_stat %s%s", mm, ios, bd);
}

/*
 * A reader sees the old file or the new one, never half of one: the text
 * goes to FILE.tmp, which is then renamed over FILE.  Unchanged statistics
 * are not rewritten, except at exit (@always): the file is then written
 * whatever became of it meanwhile.  A failure is retried each second (the
 * directory may come back) but logged once until the outcome changes: a
 * file that stays unwritable would otherwise fill the log at a line a
 * second.  Called with stats_lock held.
 */
static void stats_write(bool always)
{
	char text[sizeof(zp.stats_last)], *tmp;
	int err = 0;
	size_t n;
	FILE *f;

	stats_text(text, sizeof(text));
	if (!always && !strcmp(text, zp.stats_last))
		return;
	n = strlen(zp.stats_path) + 5;
	tmp = malloc(n);
	if (!tmp)
		return;
	snprintf(tmp, n, "%s.tmp", zp.stats_path);
	/* The first failure's errno is the one reported; a FILE is always closed. */
	f = fopen(tmp, "we");
	if (!f)
		err = errno;
	else if (fputs(text, f) < 0)
		err = errno;
	if (f && fclose(f) && !err)
		err = errno;
	if (f && !err && rename(tmp, zp.stats_path))
		err = errno;
	if (!err) {
		strcpy(zp.stats_last, text);
		if (zp.stats_last_err)
			nbdkit_debug("stats: %s written again", zp.stats_path);
	} else {
		if (f)
			remove(tmp);
		if (err != zp.stats_last_err)
			nbdkit_error("stats: cannot write %s: %s", zp.stats_path,
				     file_err_str(err));
	}
	zp.stats_last_err = err;
	free(tmp);
}

/* Whether the passes each idle_secs have anything to do. */
static bool recomp_on(void)
{
	return zp.recomp_algorithm && zp.recomp_type != RECOMP_NONE;
}

static bool writeback_on(void)
{
	return zp.backing && zp.wb_mode != WB_NONE;
}

/* recompress=: every device's pages of that type, with recomp_algorithm. */
static void recompress_pass(void)
{
	struct zram_recompress_params rp = ZRAM_RECOMPRESS_PARAMS_INIT;
	int64_t r, done = 0;
	unsigned int k;
	int err = 0;

	rp.type = (enum zram_recomp_type)zp.recomp_type;
	for (k = 0; k < zp.n; k++) {
		r = zram_recompress(zp.zram[k], &rp);
		if (r < 0)
			err = (int)-r;
		else
			done += r;
	}
	if (err && err != zp.recomp_last_err)
		nbdkit_error("recompress with %s: %s error", zp.recomp_algorithm, err_str(err));
	else if (done > 0)
		nbdkit_debug("recompress: %" PRId64 " pages with %s", done, zp.recomp_algorithm);
	zp.recomp_last_err = err;
}

/* writeback=: the mode's pages to the backing disk (only with stripes=1). */
static void writeback_pass(void)
{
	int64_t r = zram_writeback(zp.zram[0], (enum zram_wb_mode)zp.wb_mode, 0, UINT64_MAX);
	int err = r < 0 ? (int)-r : 0;

	if (err && err != zp.wb_last_err)
		nbdkit_error("writeback to %s: %s error%s", zp.backing_path, err_str(err),
			     err == ENOSPC ? " (backing_dev is full)" : "");
	else if (r > 0)
		nbdkit_debug("writeback: %" PRId64 " pages to %s", r, zp.backing_path);
	zp.wb_last_err = err;
}

/*
 * zram's tiers, each idle_secs, in the order a zram user scripts them:
 * pages not read or written for idle_secs are marked idle, once for both
 * (and only they: zram_idle_mark() takes older marks off younger pages);
 * recompression rewrites the recompress= pages with recomp_algorithm and
 * marks those it cannot shrink incompressible; writeback then moves the
 * writeback= pages, which writeback=incompressible makes those.
 * Recompression takes the idle mark off what it tries (Linux 6.13), so
 * writeback=idle takes those pages at a later pass, once recompression has
 * nothing more to try on them, and not on the mark that just had them
 * recompressed.  A failure is logged once, not at every pass, until the
 * outcome changes.
 */
static void tier_pass(void)
{
	bool idle = (recomp_on() && (zp.recomp_type == ZRAM_RECOMP_IDLE ||
				     zp.recomp_type == ZRAM_RECOMP_HUGE_IDLE)) ||
		    (writeback_on() && (zp.wb_mode == ZRAM_WB_IDLE ||
					zp.wb_mode == ZRAM_WB_HUGE_IDLE));
	unsigned int k;

	for (k = 0; idle && k < zp.n; k++)
		zram_idle_mark(zp.zram[k], zp.idle_secs);
	if (recomp_on())
		recompress_pass();
	if (writeback_on())
		writeback_pass();
}

/*
 * One compaction pass, as the kernel's zsmalloc shrinker would run one
 * under memory pressure, which a process does not see: zspages emptied by
 * frees are given back, and with multi_page the pages left in mostly
 * overwritten groups are stored again alone (zram_compact()).  Skipped
 * while the stored data has not changed since the last pass.
 */
static void compact_pass(void)
{
	struct zpool_stats m;
	uint64_t sum = 0;
	unsigned int k;

	for (k = 0; k < zp.n; k++) {
		zram_mm_stat(zp.zram[k], &m);
		sum += m.orig_data_size + m.compr_data_size;
	}
	if (sum == zp.compacted_at)
		return;
	for (k = 0; k < zp.n; k++)
		zram_compact(zp.zram[k]);
	zp.compacted_at = sum;
}

/*
 * The housekeeping thread: the statistics file each second, the tiers
 * (recompression, writeback) each idle_secs and compaction each
 * compact_secs.  Passes run
 * without stats_lock, so that stopping never waits for more than the pass
 * in progress.
 */
static void *stats_main(void *arg)
{
	bool tiers = recomp_on() || writeback_on();
	struct timespec t, now, next_tier, next_compact;

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &next_tier);
	next_compact = next_tier;
	next_tier.tv_sec += zp.idle_secs;
	next_compact.tv_sec += zp.compact_secs;
	pthread_mutex_lock(&zp.stats_lock);
	while (!zp.stopping) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (tiers && now.tv_sec >= next_tier.tv_sec) {
			pthread_mutex_unlock(&zp.stats_lock);
			tier_pass();
			pthread_mutex_lock(&zp.stats_lock);
			clock_gettime(CLOCK_MONOTONIC, &next_tier);
			next_tier.tv_sec += zp.idle_secs;
		}
		if (zp.compact_secs && now.tv_sec >= next_compact.tv_sec) {
			pthread_mutex_unlock(&zp.stats_lock);
			compact_pass();
			pthread_mutex_lock(&zp.stats_lock);
			clock_gettime(CLOCK_MONOTONIC, &next_compact);
			next_compact.tv_sec += zp.compact_secs;
		}
		if (zp.stats_path)
			stats_write(false);
		clock_gettime(CLOCK_REALTIME, &t);
		t.tv_sec += 1;
		pthread_cond_timedwait(&zp.stats_wake, &zp.stats_lock, &t);
	}
	pthread_mutex_unlock(&zp.stats_lock);
	return NULL;
}

/* Threads die with nbdkit's fork into the background: start it after. */
static int on_after_fork(void)
{
	int err;

	if (make_devices())
		return -1;
	if (!zp.stats_path && !recomp_on() && !writeback_on() && !zp.compact_secs)
		return 0;
	err = pthread_create(&zp.stats_thread, NULL, stats_main, NULL);
	if (err) {
		errno = err;
		nbdkit_error("cannot start the housekeeping thread: %m");
		return -1;
	}
	zp.stats_running = true;
	return 0;
}

static void on_cleanup(void)
{
	if (!zp.stats_running)
		return;
	pthread_mutex_lock(&zp.stats_lock);
	zp.stopping = true;
	pthread_cond_signal(&zp.stats_wake);
	pthread_mutex_unlock(&zp.stats_lock);
	pthread_join(zp.stats_thread, NULL);
	zp.stats_running = false;
}

/* The final statistics, then the devices: after every connection closed. */
static void on_unload(void)
{
	unsigned int k;

	on_cleanup();
	if (zp.stats_path && zp.top) {
		pthread_mutex_lock(&zp.stats_lock);
		stats_write(true);
		pthread_mutex_unlock(&zp.stats_lock);
	}
	put_disk(zp.stripe); /* before the zram devices under it */
	for (k = 0; k < MAX_STRIPES; k++)
		zram_destroy(zp.zram[k]);
	put_disk(zp.backing); /* after the device that wrote to it */
	if (zp.backing_fd >= 0)
		close(zp.backing_fd);
	free(zp.stats_path);
	free(zp.backing_path);
	free(zp.dict.path);
	free(zp.dict.data);
	free(zp.recomp_dict.path);
	free(zp.recomp_dict.data);
}

/* ---- connections ---- */

static void *on_open(int readonly)
{
	(void)readonly;
	return NBDKIT_HANDLE_NOT_NEEDED;
}

static int64_t on_get_size(void *handle)
{
	(void)handle;
	return (int64_t)zp.disksize;
}

/* Sectors are the least a bio takes, a page what zram stores without a read. */
static int on_block_size(void *handle, uint32_t *minimum, uint32_t *preferred,
			   uint32_t *maximum)
{
	(void)handle;
	*minimum = (uint32_t)SECTOR;
	*preferred = (uint32_t)PAGE;
	*maximum = 0xffffffff;
	return 0;
}

static int yes(void *handle)
{
	(void)handle;
	return 1;
}

static int no(void *handle)
{
	(void)handle;
	return 0;
}

/* FUA is the bio's REQ_FUA; zram has no write cache, so both are free. */
static int on_can_fua(void *handle)
{
	(void)handle;
	return NBDKIT_FUA_NATIVE;
}

/* ---- data ---- */

static const char *op_name(blk_opf_t op)
{
	switch (op & REQ_OP_MASK) {
	case REQ_OP_READ:
		return "read";
	case REQ_OP_DISCARD:
		return "trim";
	case REQ_OP_WRITE_ZEROES:
		return "zero";
	default:
		return op & REQ_PREFLUSH ? "flush" : "write";
	}
}

/*
 * One bio on the stack over @buf (NULL: no data, for flush, trim and zero),
 * waited for.  An error is reported to nbdkit and the client gets its errno.
 */
static int submit(blk_opf_t op, uint64_t off, void *buf, uint32_t len)
{
	struct bio_vec bv;
	struct bio bio;
	int ret;

	bio_init(&bio, zp.top->part0, buf ? &bv : NULL, buf ? 1 : 0, op);
	bio.bi_iter.bi_sector = off / SECTOR;
	if (buf)
		bio_add_virt(&bio, buf, len);
	else
		bio.bi_iter.bi_size = len;
	ret = submit_bio_wait(&bio);
	bio_uninit(&bio);
	if (ret) {
		nbdkit_error("%s of %" PRIu32 " bytes at %" PRIu64 ": %s error", op_name(op), len,
			     off, err_str(-ret));
		nbdkit_set_error(-ret);
		return -1;
	}
	return 0;
}

/*
 * A request that changes whole sectors: it may run beside any other but a
 * read-modify-write, which would write back the old bytes over its own.
 */
static int submit_change(blk_opf_t op, uint64_t off, void *buf, uint32_t len)
{
	int ret;

	pthread_rwlock_rdlock(&zp.rmw);
	ret = submit(op, off, buf, len);
	pthread_rwlock_unlock(&zp.rmw);
	return ret;
}

static bool all_zero(const unsigned char *p, size_t len)
{
	return !len || (!p[0] && !memcmp(p, p + 1, len - 1));
}

/* A buffer for one request, or NULL with the request's error set. */
static unsigned char *request_buffer(uint64_t bytes, const char *what)
{
	unsigned char *p = malloc((size_t)bytes);

	if (!p) {
		nbdkit_error("no memory for a %" PRIu64 "-byte %s", bytes, what);
		nbdkit_set_error(ENOMEM);
	}
	return p;
}

/*
 * Bytes not on sector boundaries: the sectors around them are read into a
 * bounce buffer, patched and written back, alone: a write of the same
 * sectors between the read and the write back would be undone, and so
 * would another partial write's bytes.  @src NULL writes zeroes, for a
 * zero that may punch holes, and not at all where the bytes are zero
 * already: as zram's WRITE_ZEROES, which finds them so before it stores
 * anything.  Written back, they would make a page never written allocated
 * zeroes instead of a hole, and store a page of data again, which
 * mem_limit may refuse, for a request that changes nothing.  Rare: every
 * client this was tried with sends whole sectors.
 */
static int partial(void *dst, const void *src, uint32_t len, uint64_t off, blk_opf_t flags)
{
	uint64_t first = off / SECTOR * SECTOR;
	uint64_t span = (off + len + SECTOR - 1) / SECTOR * SECTOR - first;
	unsigned char *bounce = request_buffer(span, "bounce buffer");
	int ret;

	if (!bounce)
		return -1;
	if (!dst) /* a read changes nothing: it needs no lock */
		pthread_rwlock_wrlock(&zp.rmw);
	ret = submit(REQ_OP_READ, first, bounce, (uint32_t)span);
	if (!ret && dst) {
		memcpy(dst, bounce + (off - first), len);
	} else if (!ret && (src || !all_zero(bounce + (off - first), len))) {
		if (src)
			memcpy(bounce + (off - first), src, len);
		else
			memset(bounce + (off - first), 0, len);
		ret = submit(REQ_OP_WRITE | flags, first, bounce, (uint32_t)span);
	}
	if (!dst)
		pthread_rwlock_unlock(&zp.rmw);
	free(bounce);
	return ret;
}

static bool aligned(uint32_t count, uint64_t offset)
{
	return !(offset % SECTOR) && !(count % SECTOR);
}

static int on_pread(void *handle, void *buf, uint32_t count, uint64_t offset,
		      uint32_t flags)
{
	(void)handle;
	(void)flags;
	if (!aligned(count, offset))
		return partial(buf, NULL, count, offset, 0);
	return submit(REQ_OP_READ, offset, buf, count);
}

static blk_opf_t fua(uint32_t flags)
{
	return flags & NBDKIT_FLAG_FUA ? REQ_FUA : 0;
}

static int on_pwrite(void *handle, const void *buf, uint32_t count, uint64_t offset,
		       uint32_t flags)
{
	(void)handle;
	if (!aligned(count, offset))
		return partial(NULL, buf, count, offset, fua(flags));
	/* The device only reads a write's pages: nbdkit's buffer stays as it is. */
	return submit_change(REQ_OP_WRITE | fua(flags), offset, (void *)buf, count);
}

/* A flush, as Linux spells it: an empty write with REQ_PREFLUSH. */
static int on_flush(void *handle, uint32_t flags)
{
	(void)handle;
	(void)flags;
	return submit(REQ_OP_WRITE | REQ_PREFLUSH, 0, NULL, 0);
}

/*
 * DISCARD over the whole pages of the range; the parts of pages at its ends
 * are left as they are, as the kernel's zram leaves them.  A trim is there
 * to give memory back, and zeroing part of a page would store the page
 * again: at mem_limit a trim could then fail for want of the memory it was
 * meant to free.  NBD lets a trim leave any of its bytes as they were.
 */
static int on_trim(void *handle, uint32_t count, uint64_t offset, uint32_t flags)
{
	uint64_t a = (offset + PAGE - 1) / PAGE * PAGE, b = (offset + count) / PAGE * PAGE;

	(void)handle;
	if (a >= b)
		return 0;
	return submit_change(REQ_OP_DISCARD | fua(flags), a, NULL, (uint32_t)(b - a));
}

/* Zeroes for writes that must allocate; never written to, so never copied. */
static unsigned char zeroes[1u << 20];

/* Zeroes written as data over [@a, @b), in bios of up to sizeof(zeroes). */
static int write_zeroes(uint64_t a, uint64_t b, uint32_t flags)
{
	for (; a < b; a += sizeof(zeroes)) {
		uint32_t n = (uint32_t)(b - a < sizeof(zeroes) ? b - a : sizeof(zeroes));

		if (on_pwrite(NULL, zeroes, n, a, flags & NBDKIT_FLAG_FUA))
			return -1;
	}
	return 0;
}

/*
 * Zeroes over [@a, @b), part of one page, for a zero without MAY_TRIM.  In
 * a page that holds data (some byte not zero) the page is allocated
 * already, so bytes that are zero already need nothing: written, they
 * would store the page again, which mem_limit may refuse, for a request
 * that changes nothing.  A page of zeroes is written to, so that a hole
 * becomes allocated zeroes as the client asked; that stores no data.
 * Unlocked: a write racing with the check lands before or after the zero,
 * as it may for any two requests in flight.
 */
static int zero_in_page(uint64_t a, uint64_t b, uint32_t flags)
{
	uint64_t page = a / PAGE * PAGE;
	unsigned char *buf = request_buffer(PAGE, "page buffer");
	bool noop;

	if (!buf)
		return -1;
	if (submit(REQ_OP_READ, page, buf, (uint32_t)PAGE)) {
		free(buf);
		return -1;
	}
	noop = all_zero(buf + (a - page), (size_t)(b - a)) && !all_zero(buf, (size_t)PAGE);
	free(buf);
	return noop ? 0 : write_zeroes(a, b, flags);
}

/*
 * Zeroing is always fast here, so a fast-zero request is served as any
 * other.  Without MAY_TRIM the client wants the range allocated
 * (NBD_CMD_FLAG_NO_HOLE), so zeroes are written as data: each whole page
 * becomes a zero page, a mark in its slot that extents report as allocated
 * zeroes, and parts of pages are zeroed by zero_in_page().  With it the
 * whole sectors become one WRITE_ZEROES bio, which frees whole pages
 * (holes) and zeroes the rest in place.
 *
 * Either way the whole pages or sectors go first and the ends are tried
 * whatever became of them: at mem_limit the whole pages need no memory (and
 * freeing or replacing their data makes room), where an end that keeps some
 * data is a read-modify-write that may need a store, and a bio stops at its
 * first refused page.  zram's own WRITE_ZEROES orders it the same way.
 */
static int on_zero(void *handle, uint32_t count, uint64_t offset, uint32_t flags)
{
	uint64_t end = offset + count;
	uint64_t a = (offset + SECTOR - 1) / SECTOR * SECTOR, b = end / SECTOR * SECTOR;
	int ret;

	(void)handle;
	if (!(flags & NBDKIT_FLAG_MAY_TRIM)) {
		/* The whole pages, in bios that start on one; then the ends. */
		uint64_t pa = (offset + PAGE - 1) / PAGE * PAGE, pb = end / PAGE * PAGE;

		if (pa > end)
			pa = end; /* all inside one page */
		if (pb < pa)
			pb = pa;
		ret = write_zeroes(pa, pb, flags);
		if (offset < pa && zero_in_page(offset, pa, flags))
			ret = -1;
		if (pb < end && zero_in_page(pb, end, flags))
			ret = -1;
		return ret;
	}
	if (a >= b)
		return partial(NULL, NULL, count, offset, fua(flags));
	ret = submit_change(REQ_OP_WRITE_ZEROES | fua(flags), a, NULL, (uint32_t)(b - a));
	if (a > offset && partial(NULL, NULL, (uint32_t)(a - offset), offset, fua(flags)))
		ret = -1;
	if (end > b && partial(NULL, NULL, (uint32_t)(end - b), b, fua(flags)))
		ret = -1;
	return ret;
}

/* ---- extents ---- */

struct extent_ctx {
	struct nbdkit_extents *extents;
	uint64_t shift;	/* disk offset less device offset */
	bool one;	/* NBDKIT_FLAG_REQ_ONE: the first extent is enough */
	int added;
	int err;
};

/* Returned by add_extent() to stop the walk when it has said enough. */
#define ENOUGH 1

static int add_extent(void *arg, uint64_t off, uint64_t len, enum zram_page_state st)
{
	static const uint32_t type[] = {
		[ZRAM_PAGE_UNALLOCATED] = NBDKIT_EXTENT_HOLE | NBDKIT_EXTENT_ZERO,
		[ZRAM_PAGE_ZERO] = NBDKIT_EXTENT_ZERO,
		[ZRAM_PAGE_DATA] = 0,
	};
	struct extent_ctx *c = arg;

	if (nbdkit_add_extent(c->extents, off + c->shift, len, type[st])) {
		c->err = errno ? errno : EIO;
		return -1;
	}
	c->added++;
	return c->one ? ENOUGH : 0;
}

static int on_extents(void *handle, uint32_t count, uint64_t offset, uint32_t flags,
			   struct nbdkit_extents *extents)
{
	struct extent_ctx c = { extents, 0, (flags & NBDKIT_FLAG_REQ_ONE) != 0, 0, 0 };
	uint64_t end = offset + count, i;
	int ret = 0;

	(void)handle;
	if (zp.n == 1) {
		ret = zram_extents(zp.zram[0], offset, count, add_extent, &c);
	} else {
		/* Chunk k is chunk k / n of child k % n; nbdkit joins equal neighbours. */
		for (i = 0; i < EXTENT_CHUNKS && offset < end && !ret; i++) {
			uint64_t k = offset / zp.chunk, in = offset % zp.chunk;
			uint64_t len = zp.chunk - in < end - offset ? zp.chunk - in : end - offset;
			uint64_t dev_off = k / zp.n * zp.chunk + in;

			c.shift = offset - dev_off;
			ret = zram_extents(zp.zram[k % zp.n], dev_off, len, add_extent, &c);
			offset += len;
		}
	}
	if (ret < 0) {
		if (c.err) /* nbdkit_add_extent() has reported it */
			return -1;
		nbdkit_error("extents: %s error", err_str(-ret));
		nbdkit_set_error(-ret);
		return -1;
	}
	return 0;
}

static struct nbdkit_plugin plugin = {
	.name = "zram",
	.longname = "nbdkit zram plugin (libzpool's compressed RAM disk)",
	.version = LIBBVEC_VERSION_STRING,
	.description = "A compressed RAM disk: libzpool's zram device on libbvec bios.",
	.unload = on_unload,
	.config = on_config,
	.config_complete = on_config_complete,
	.config_help = CONFIG_HELP,
	.dump_plugin = on_dump_plugin,
	.get_ready = on_get_ready,
	.after_fork = on_after_fork,
	.cleanup = on_cleanup,
	.open = on_open,
	.get_size = on_get_size,
	.block_size = on_block_size,
	.can_write = yes,
	.can_flush = yes,
	.is_rotational = no,
	.can_trim = yes,
	.can_zero = yes,
	.can_fast_zero = yes,
	.can_extents = yes,
	.can_fua = on_can_fua,
	.can_multi_conn = yes,
	.pread = on_pread,
	.pwrite = on_pwrite,
	.flush = on_flush,
	.trim = on_trim,
	.zero = on_zero,
	.extents = on_extents,
	.errno_is_preserved = 0,
};

/* nbdkit's macro defines plugin_init(), which no header declares. */
NBDKIT_DLL_PUBLIC struct nbdkit_plugin *plugin_init(void);
NBDKIT_REGISTER_PLUGIN(plugin)

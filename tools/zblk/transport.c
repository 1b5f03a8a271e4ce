// SPDX-License-Identifier: MIT
/*
 * zblk's FUSE transport over libfuse's low-level API.
 *
 * libfuse's high-level API rebuilds a path for every request and gives
 * every file one attribute timeout.  zblk's files never change name, and
 * its disk never changes size while its statistics change all the time:
 * here each file is an inode numbered once, at mount time, and the disk's
 * attributes are cached by the kernel while the others' are not.  That
 * removes the GETATTR the kernel otherwise sends before every read, and
 * lets the disk's open reply carry FOPEN_PARALLEL_DIRECT_WRITES, which
 * libfuse 3.14 cannot say: without it the kernel holds the inode lock
 * exclusively across each write's round trip, one writer at a time.
 * bench/fuse_tuning.sh and doc/performance.md measure each.
 *
 * The file operations themselves stay zblk.c's high-level ones, called
 * with the paths they always received, so a file added to zblk.c's table
 * is served here without a change.
 */
#define FUSE_USE_VERSION 312

#include <errno.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "transport.h"

/*
 * The FUSE protocol's open reply (struct fuse_open_out) and the open flag
 * that lets direct writes to one file run in parallel (Linux 6.2 and
 * later; older kernels ignore unknown bits), written from the protocol's
 * documentation: Debian 12's libfuse 3.14.0 predates the flag.
 */
struct open_out {
	uint64_t fh;
	uint32_t open_flags;
	uint32_t padding;
};

#define OPEN_DIRECT_IO (1u << 0)
#define OPEN_KEEP_CACHE (1u << 1)
#define OPEN_NONSEEKABLE (1u << 2)
#define OPEN_NOFLUSH (1u << 5)
#define OPEN_PARALLEL_DIRECT_WRITES (1u << 6)

/* Long enough to be forever for a mount; the disk's size is fixed. */
#define STABLE_TIMEOUT 86400.0

#define MAX_FILES 64

struct transport {
	const struct fuse_operations *ops;
	unsigned int n;			/* files in the root */
	unsigned int disk;		/* index of the disk in path[], or n */
	char *path[MAX_FILES + 1];	/* "/" then "/NAME" for inode i + 1 */
};

static struct transport tp;

/* Inode 1 is the root (FUSE_ROOT_ID); inode i + 1 is path[i]. */
static const char *ino_path(fuse_ino_t ino)
{
	return ino >= 1 && ino <= (fuse_ino_t)tp.n + 1 ? tp.path[ino - 1] : NULL;
}

/* Only the disk's attributes are stable; statistics sizes move. */
static double attr_timeout(fuse_ino_t ino)
{
	return ino - 2 == tp.disk ? STABLE_TIMEOUT : 0.0;
}

static void ll_init(void *data, struct fuse_conn_info *conn)
{
	struct fuse_config cfg;

	(void)data;
	memset(&cfg, 0, sizeof(cfg));
	if (tp.ops->init)
		tp.ops->init(conn, &cfg);
}

static void ll_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	unsigned int i;
	int ret;

	if (parent != FUSE_ROOT_ID) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	for (i = 1; i <= tp.n; i++)
		if (!strcmp(tp.path[i] + 1, name))
			break;
	if (i > tp.n) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = i + 1;
	e.attr_timeout = attr_timeout(e.ino);
	e.entry_timeout = STABLE_TIMEOUT; /* names never change */
	ret = tp.ops->getattr(tp.path[i], &e.attr, NULL);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_entry(req, &e);
}

static void reply_attr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	const char *path = ino_path(ino);
	struct stat st;
	int ret;

	if (!path) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	ret = tp.ops->getattr(path, &st, fi);
	if (ret)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_attr(req, &st, attr_timeout(ino));
}

static void ll_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	reply_attr(req, ino, fi);
}

static void ll_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	const char *path = ino_path(ino);
	struct timespec tv[2];
	int ret = 0;

	if (!path) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	/* Owners and modes are fixed; the high-level API had no way to set them. */
	if (to_set & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
		fuse_reply_err(req, EPERM);
		return;
	}
	if (to_set & FUSE_SET_ATTR_SIZE)
		ret = tp.ops->truncate ? tp.ops->truncate(path, attr->st_size, fi) : -ENOSYS;
	if (!ret && (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME))) {
		tv[0].tv_sec = tv[1].tv_sec = 0;
		tv[0].tv_nsec = tv[1].tv_nsec = UTIME_OMIT;
		if (to_set & FUSE_SET_ATTR_ATIME_NOW)
			tv[0].tv_nsec = UTIME_NOW;
		else if (to_set & FUSE_SET_ATTR_ATIME)
			tv[0] = attr->st_atim;
		if (to_set & FUSE_SET_ATTR_MTIME_NOW)
			tv[1].tv_nsec = UTIME_NOW;
		else if (to_set & FUSE_SET_ATTR_MTIME)
			tv[1] = attr->st_mtim;
		ret = tp.ops->utimens ? tp.ops->utimens(path, tv, fi) : -ENOSYS;
	}
	if (ret)
		fuse_reply_err(req, -ret);
	else
		reply_attr(req, ino, fi);
}

static void ll_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	char *buf;
	size_t used = 0, n;
	struct stat st;
	off_t i;

	(void)fi;
	if (ino != FUSE_ROOT_ID) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	buf = malloc(size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	memset(&st, 0, sizeof(st));
	/* Entries: ".", "..", then the files; an entry's offset is the next one's index. */
	for (i = off; i < (off_t)tp.n + 2; i++) {
		const char *name = i == 0 ? "." : i == 1 ? ".." : tp.path[i - 1] + 1;

		st.st_ino = i < 2 ? FUSE_ROOT_ID : (ino_t)i;
		st.st_mode = i < 2 ? S_IFDIR : S_IFREG;
		n = fuse_add_direntry(req, buf + used, size - used, name, &st, i + 1);
		if (n > size - used)
			break;
		used += n;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void ll_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	const char *path = ino_path(ino);
	struct open_out out;
	struct iovec iov;
	int ret;

	if (!path || ino == FUSE_ROOT_ID) {
		fuse_reply_err(req, path ? EISDIR : ENOENT);
		return;
	}
	ret = tp.ops->open ? tp.ops->open(path, fi) : 0;
	if (ret) {
		fuse_reply_err(req, -ret);
		return;
	}
	if (ino - 2 != tp.disk || !fi->direct_io) {
		fuse_reply_open(req, fi);
		return;
	}
	/*
	 * The disk never grows, so no write to it extends the file, and the
	 * device orders concurrent writes as a block device would: the
	 * kernel's per-inode write lock buys nothing here.
	 */
	memset(&out, 0, sizeof(out));
	out.fh = fi->fh;
	out.open_flags = OPEN_DIRECT_IO | OPEN_PARALLEL_DIRECT_WRITES;
	if (fi->keep_cache)
		out.open_flags |= OPEN_KEEP_CACHE;
	if (fi->nonseekable)
		out.open_flags |= OPEN_NONSEEKABLE;
	if (fi->noflush)
		out.open_flags |= OPEN_NOFLUSH;
	iov.iov_base = &out;
	iov.iov_len = sizeof(out);
	fuse_reply_iov(req, &iov, 1);
}

static void ll_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	const char *path = ino_path(ino);
	char *buf;
	int ret;

	if (!path) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	buf = malloc(size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ret = tp.ops->read(path, buf, size, off, fi);
	if (ret < 0)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_buf(req, buf, (size_t)ret);
	free(buf);
}

static void ll_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	const char *path = ino_path(ino);
	int ret;

	if (!path) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	ret = tp.ops->write(path, buf, size, off, fi);
	if (ret < 0)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_write(req, (size_t)ret);
}

static void ll_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	const char *path = ino_path(ino);

	fuse_reply_err(req, !path ? ENOENT : tp.ops->flush ? -tp.ops->flush(path, fi) : 0);
}

static void ll_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	const char *path = ino_path(ino);

	fuse_reply_err(req, !path ? ENOENT : tp.ops->fsync ? -tp.ops->fsync(path, datasync, fi) : 0);
}

static void ll_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len,
			 struct fuse_file_info *fi)
{
	const char *path = ino_path(ino);

	if (!path)
		fuse_reply_err(req, ENOENT);
	else if (!tp.ops->fallocate)
		fuse_reply_err(req, EOPNOTSUPP);
	else
		fuse_reply_err(req, -tp.ops->fallocate(path, mode, off, len, fi));
}

/*
 * No extended attributes.  ENOSYS, unlike ENODATA, tells the kernel to stop
 * asking: otherwise every write first asks for security.capability.
 */
static void ll_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	(void)ino;
	(void)name;
	(void)size;
	fuse_reply_err(req, ENOSYS);
}

static void ll_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	(void)ino;
	(void)size;
	fuse_reply_err(req, ENOSYS);
}

static const struct fuse_lowlevel_ops ll_ops = {
	.init = ll_init,
	.lookup = ll_lookup,
	.getattr = ll_getattr,
	.setattr = ll_setattr,
	.readdir = ll_readdir,
	.open = ll_open,
	.read = ll_read,
	.write = ll_write,
	.flush = ll_flush,
	.fsync = ll_fsync,
	.fallocate = ll_fallocate,
	.getxattr = ll_getxattr,
	.listxattr = ll_listxattr,
};

/* Collects the root's names from the high-level readdir, skipping . and .. */
static int add_name(void *buf, const char *name, const struct stat *st, off_t off,
		    enum fuse_fill_dir_flags flags)
{
	char *path;

	(void)buf;
	(void)st;
	(void)off;
	(void)flags;
	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	if (tp.n == MAX_FILES)
		return 1;
	path = malloc(strlen(name) + 2);
	if (!path)
		return 1;
	path[0] = '/';
	strcpy(path + 1, name);
	tp.path[++tp.n] = path;
	return 0;
}

static int list_files(const char *disk)
{
	unsigned int i;

	tp.path[0] = (char *)"/";
	if (tp.ops->readdir("/", NULL, add_name, 0, NULL, 0) || tp.n == MAX_FILES) {
		fprintf(stderr, "zblk: cannot list the files to serve\n");
		return -1;
	}
	tp.disk = tp.n;
	for (i = 1; i <= tp.n; i++)
		if (!strcmp(tp.path[i] + 1, disk))
			tp.disk = i - 1;
	return 0;
}

static void free_files(void)
{
	unsigned int i;

	for (i = 1; i <= tp.n; i++)
		free(tp.path[i]);
	tp.n = 0;
}

static int serve(struct fuse_session *se, const struct fuse_cmdline_opts *opts)
{
	struct fuse_loop_config *cfg;
	int ret;

	if (opts->singlethread)
		return fuse_session_loop(se);
	cfg = fuse_loop_cfg_create();
	if (!cfg)
		return -1;
	fuse_loop_cfg_set_clone_fd(cfg, (unsigned int)opts->clone_fd);
	fuse_loop_cfg_set_idle_threads(cfg, opts->max_idle_threads);
	fuse_loop_cfg_set_max_threads(cfg, opts->max_threads);
	ret = fuse_session_loop_mt(se, cfg);
	fuse_loop_cfg_destroy(cfg);
	return ret;
}

int zblk__serve(struct fuse_args *args, const struct fuse_operations *ops, const char *disk)
{
	struct fuse_cmdline_opts opts;
	struct fuse_session *se = NULL;
	int ret = 1;

	tp.ops = ops;
	memset(&opts, 0, sizeof(opts));
	if (fuse_parse_cmdline(args, &opts))
		return 1;
	if (!opts.mountpoint) {
		fprintf(stderr, "zblk: no MOUNTPOINT\n");
		goto out;
	}
	if (list_files(disk))
		goto out;
	se = fuse_session_new(args, &ll_ops, sizeof(ll_ops), NULL);
	if (!se)
		goto out;
	if (fuse_set_signal_handlers(se))
		goto out;
	if (fuse_session_mount(se, opts.mountpoint)) {
		fuse_remove_signal_handlers(se);
		goto out;
	}
	if (fuse_daemonize(opts.foreground) == 0 && serve(se, &opts) == 0)
		ret = 0;
	fuse_session_unmount(se);
	fuse_remove_signal_handlers(se);
out:
	if (se)
		fuse_session_destroy(se);
	free(opts.mountpoint);
	free_files();
	return ret;
}

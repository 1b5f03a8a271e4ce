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
 * Direct I/O has a price: the kernel sends a synchronous direct request in
 * max_write pieces one after another, where through the page cache it
 * kept several in flight for the worker threads to share.  So a large
 * request for the disk is cut here into pieces done at once by a few
 * helper threads, the requesting thread doing its share.
 *
 * The file operations themselves stay zblk.c's high-level ones, called
 * with the paths they always received, so a file added to zblk.c's table
 * is served here without a change.
 */
#define FUSE_USE_VERSION 312

#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fuse_ring_abi.h"
#include "transport.h"
#ifdef ZBLK_HAVE_URING
#include "fuse_ring.h"
#endif

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

/* Pieces start at multiples of this, so no two share a device page. */
#define PIECE_ALIGN (64u * 1024)
#define MAX_HELPERS 8

/* One piece of a split read or write, and the request it belongs to. */
struct split {
	const char *path;
	struct fuse_file_info *fi;
	bool write;
	unsigned int left;		/* pieces not yet done; under tp.lock */
	int err;			/* the first piece's error, or 0 */
};

struct piece {
	struct split *split;
	char *buf;
	size_t size;
	off_t off;
};

struct transport {
	const struct fuse_operations *ops;
	unsigned int n;			/* files in the root */
	unsigned int disk;		/* index of the disk in path[], or n */
	char *path[MAX_FILES + 1];	/* "/" then "/NAME" for inode i + 1 */
	uint64_t disksize;		/* the disk's size, fixed while mounted */
	/* helpers for split requests: a queue of pieces under lock */
	pthread_mutex_t lock;
	pthread_cond_t work, done;
	struct piece queue[MAX_HELPERS * 4];
	unsigned int head, count, helpers;
	bool stopping;
	pthread_t helper[MAX_HELPERS];
};

static struct transport tp = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.work = PTHREAD_COND_INITIALIZER,
	.done = PTHREAD_COND_INITIALIZER,
};

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

void zblk__init_reply_pages(void *init_out, size_t len)
{
	const uint32_t page = (uint32_t)sysconf(_SC_PAGESIZE);
	uint32_t max_write;
	uint16_t max_pages, want;

	if (len < RING_INIT_OUT_MAX_PAGES + sizeof(max_pages))
		return;
	memcpy(&max_write, (char *)init_out + RING_INIT_OUT_MAX_WRITE, sizeof(max_write));
	memcpy(&max_pages, (char *)init_out + RING_INIT_OUT_MAX_PAGES, sizeof(max_pages));
	if (max_write > (UINT16_MAX - 1u) * page)
		return;
	want = (uint16_t)((max_write + page - 1) / page + 1);
	if (want > max_pages)
		memcpy((char *)init_out + RING_INIT_OUT_MAX_PAGES, &want, sizeof(want));
}

/*
 * /dev/fuse as libfuse reads and writes it, but for the INIT reply, which
 * goes out through zblk__init_reply_pages().  Only the read of INIT sets
 * init_unique, before the kernel sends anything else; other threads read
 * it in their writev.
 */
static _Atomic uint64_t init_unique;

static ssize_t plain_read(int fd, void *buf, size_t len, void *userdata)
{
	ssize_t n = read(fd, buf, len);
	struct ring_in_header ih;

	(void)userdata;
	if (n >= (ssize_t)sizeof(ih)) {
		memcpy(&ih, buf, sizeof(ih));
		if (ih.opcode == RING_OP_INIT)
			atomic_store_explicit(&init_unique, ih.unique, memory_order_relaxed);
	}
	return n;
}

static ssize_t plain_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	uint64_t init = atomic_load_explicit(&init_unique, memory_order_relaxed);
	struct ring_out_header oh;
	char out[256];
	struct iovec v[2];

	(void)userdata;
	if (!init || count != 2 || iov[0].iov_len < sizeof(oh) || iov[1].iov_len > sizeof(out))
		return writev(fd, iov, count);
	memcpy(&oh, iov[0].iov_base, sizeof(oh));
	if (oh.unique != init || oh.error)
		return writev(fd, iov, count);
	atomic_store_explicit(&init_unique, 0, memory_order_relaxed);
	memcpy(out, iov[1].iov_base, iov[1].iov_len);
	zblk__init_reply_pages(out, iov[1].iov_len);
	v[0] = iov[0];
	v[1].iov_base = out;
	v[1].iov_len = iov[1].iov_len;
	return writev(fd, v, 2);
}

static ssize_t plain_splice(int fdin, off_t *offin, int fdout, off_t *offout, size_t len,
			    unsigned int flags, void *userdata)
{
	(void)userdata;
	return splice(fdin, offin, fdout, offout, len, flags);
}

static int install_plain_io(struct fuse_session *se)
{
	static const struct fuse_custom_io io = {
		.read = plain_read,
		.writev = plain_writev,
		.splice_receive = plain_splice,
		.splice_send = plain_splice,
	};
	int fd = fuse_session_fd(se);

	if (fd < 0 || fuse_session_custom_io(se, &io, fd)) {
		fprintf(stderr, "zblk: cannot hook FUSE's I/O\n");
		return -1;
	}
	return 0;
}

static void run_piece(const struct piece *p)
{
	struct split *s = p->split;
	int ret = s->write ? tp.ops->write(s->path, p->buf, p->size, p->off, s->fi) :
			     tp.ops->read(s->path, p->buf, p->size, p->off, s->fi);

	/* Each piece lies inside the disk, so anything short is an error. */
	if (ret >= 0 && (size_t)ret != p->size)
		ret = -EIO;
	pthread_mutex_lock(&tp.lock);
	if (ret < 0 && !s->err)
		s->err = ret;
	if (!--s->left)
		pthread_cond_broadcast(&tp.done);
	pthread_mutex_unlock(&tp.lock);
}

/* Takes the next queued piece; tp.lock held. */
static bool take_piece(struct piece *p)
{
	if (!tp.count)
		return false;
	*p = tp.queue[tp.head];
	tp.head = (tp.head + 1) % (sizeof(tp.queue) / sizeof(tp.queue[0]));
	tp.count--;
	return true;
}

static void *helper_main(void *arg)
{
	struct piece p;

	(void)arg;
	pthread_mutex_lock(&tp.lock);
	while (!tp.stopping) {
		if (!take_piece(&p)) {
			pthread_cond_wait(&tp.work, &tp.lock);
			continue;
		}
		pthread_mutex_unlock(&tp.lock);
		run_piece(&p);
		pthread_mutex_lock(&tp.lock);
	}
	pthread_mutex_unlock(&tp.lock);
	return NULL;
}

/*
 * Reads or writes the disk's [off, off + size) as pieces run at once: the
 * first here, the rest queued for the helpers; while waiting, this thread
 * runs queued pieces too, so a busy pool only makes it slower, never stuck.
 * Return: @size, or the first piece's negative errno.
 */
static int split_io(const char *path, char *buf, size_t size, off_t off, bool write,
		    struct fuse_file_info *fi)
{
	const size_t qlen = sizeof(tp.queue) / sizeof(tp.queue[0]);
	struct split s = { path, fi, write, 0, 0 };
	struct piece first, rest, p;
	size_t step = (size / (tp.helpers + 1) + PIECE_ALIGN - 1) / PIECE_ALIGN * PIECE_ALIGN;
	size_t done;

	/* Piece ends after the first fall on multiples of PIECE_ALIGN. */
	first.split = &s;
	first.buf = buf;
	first.off = off;
	first.size = step - (size_t)((uint64_t)off % PIECE_ALIGN);
	s.left = 1;
	pthread_mutex_lock(&tp.lock);
	for (done = first.size; done < size; done += p.size) {
		if (tp.count == qlen)
			break;
		p.split = &s;
		p.buf = buf + done;
		p.off = off + (off_t)done;
		p.size = size - done < step ? size - done : step;
		tp.queue[(tp.head + tp.count++) % qlen] = p;
		s.left++;
	}
	/*
	 * The queue was full: this thread does the rest as a piece of its own.
	 * The rest starts where the queued pieces end, not where the first
	 * does, so it cannot be added to the first.
	 */
	rest.split = &s;
	rest.buf = buf + done;
	rest.off = off + (off_t)done;
	rest.size = done < size ? size - done : 0;
	if (rest.size)
		s.left++;
	pthread_cond_broadcast(&tp.work);
	pthread_mutex_unlock(&tp.lock);
	run_piece(&first);
	if (rest.size)
		run_piece(&rest);
	pthread_mutex_lock(&tp.lock);
	while (s.left) {
		if (take_piece(&p)) {
			pthread_mutex_unlock(&tp.lock);
			run_piece(&p);
			pthread_mutex_lock(&tp.lock);
		} else {
			pthread_cond_wait(&tp.done, &tp.lock);
		}
	}
	pthread_mutex_unlock(&tp.lock);
	return s.err ? s.err : (int)size;
}

/* Disk I/O: split when large, with helpers, and inside the disk. */
static int disk_rw(fuse_ino_t ino, const char *path, char *buf, size_t size, off_t off,
		   bool write, struct fuse_file_info *fi)
{
	if (ino - 2 == tp.disk && tp.helpers && off >= 0 && (uint64_t)off < tp.disksize &&
	    size >= 2 * PIECE_ALIGN) {
		if (size > tp.disksize - (uint64_t)off)
			size = (size_t)(tp.disksize - (uint64_t)off);
		if (size >= 2 * PIECE_ALIGN)
			return split_io(path, buf, size, off, write, fi);
	}
	return write ? tp.ops->write(path, buf, size, off, fi) :
		       tp.ops->read(path, buf, size, off, fi);
}

/*
 * A read buffer per worker thread, kept: a fresh allocation of max_write
 * bytes comes from mmap and costs a page fault per page at every read.
 */
struct read_buf {
	char *p;
	size_t len;
};

static pthread_key_t read_buf_key;

static void free_read_buf(void *arg)
{
	struct read_buf *rb = arg;

	free(rb->p);
	free(rb);
}

static char *read_buf(size_t size)
{
	struct read_buf *rb = pthread_getspecific(read_buf_key);
	char *p;

	if (!rb) {
		rb = calloc(1, sizeof(*rb));
		if (!rb || pthread_setspecific(read_buf_key, rb)) {
			free(rb);
			return NULL;
		}
	}
	if (rb->len < size) {
		p = realloc(rb->p, size);
		if (!p)
			return NULL;
		rb->p = p;
		rb->len = size;
	}
	return rb->p;
}

/* The calling thread's buffer: key destructors run only in threads that exit. */
static void free_read_buf_self(void)
{
	struct read_buf *rb = pthread_getspecific(read_buf_key);

	if (rb) {
		pthread_setspecific(read_buf_key, NULL);
		free_read_buf(rb);
	}
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
	buf = NULL;
#ifdef ZBLK_HAVE_URING
	buf = zblk__ring_reply_buf(size); /* the reply's own place, when on the ring */
#endif
	if (!buf)
		buf = read_buf(size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	ret = disk_rw(ino, path, buf, size, off, false, fi);
	if (ret < 0)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_buf(req, buf, (size_t)ret);
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
	ret = disk_rw(ino, path, (char *)buf, size, off, true, fi);
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
	struct stat st;
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
	if (tp.disk < tp.n && !tp.ops->getattr(tp.path[tp.disk + 1], &st, NULL))
		tp.disksize = (uint64_t)st.st_size;
	return 0;
}

/*
 * Two pieces per processor, so 2N - 1 helpers; none on one processor.  On
 * a machine shared with other work, more runnable threads get more of it:
 * two pieces per processor measured faster than one (1 MiB dd, best of 4:
 * writes 0.29 against 0.20 GB/s, reads 0.56 against 0.41).
 */
static void start_helpers(void)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned int want = cpus > 1 ? (unsigned int)(2 * cpus - 1) : 0;

	if (want > MAX_HELPERS)
		want = MAX_HELPERS;
	while (tp.helpers < want && !pthread_create(&tp.helper[tp.helpers], NULL, helper_main, NULL))
		tp.helpers++;
}

static void stop_helpers(void)
{
	unsigned int i;

	pthread_mutex_lock(&tp.lock);
	tp.stopping = true;
	pthread_cond_broadcast(&tp.work);
	pthread_mutex_unlock(&tp.lock);
	for (i = 0; i < tp.helpers; i++)
		pthread_join(tp.helper[i], NULL);
	tp.helpers = 0;
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
	/* Unset (-o max_threads not given) it is UINT_MAX, which libfuse warns of. */
	if (opts->max_threads != UINT_MAX)
		fuse_loop_cfg_set_max_threads(cfg, opts->max_threads);
	ret = fuse_session_loop_mt(se, cfg);
	fuse_loop_cfg_destroy(cfg);
	return ret;
}

/* -o io_uring, named as libfuse 3.18 names it; consumed here. */
static const struct fuse_opt transport_opts[] = {
	{ "io_uring", 0, 1 },
	FUSE_OPT_END
};

int zblk__serve(struct fuse_args *args, const struct fuse_operations *ops, const char *disk)
{
	struct fuse_cmdline_opts opts;
	struct fuse_session *se = NULL;
	int ret = 1, io_uring = 0;

	tp.ops = ops;
	memset(&opts, 0, sizeof(opts));
	if (pthread_key_create(&read_buf_key, free_read_buf)) {
		fprintf(stderr, "zblk: cannot create a thread key\n");
		return 1;
	}
	if (fuse_opt_parse(args, &io_uring, transport_opts, NULL) || fuse_parse_cmdline(args, &opts))
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
#ifdef ZBLK_HAVE_URING
	if (io_uring && zblk__ring_install(se))
		io_uring = 0; /* said why; /dev/fuse serves */
#else
	if (io_uring)
		fprintf(stderr, "zblk: built without liburing; using /dev/fuse\n");
	io_uring = 0;
#endif
	if (!io_uring && install_plain_io(se)) {
		fuse_session_unmount(se);
		fuse_remove_signal_handlers(se);
		goto out;
	}
	/* After fuse_daemonize: threads do not survive its fork. */
	if (fuse_daemonize(opts.foreground) == 0) {
		start_helpers();
		ret = serve(se, &opts);
		/*
		 * libfuse's loop returns the signal that ended it.  A stop asked
		 * for with one of the signals its handlers catch is a clean exit.
		 */
		ret = ret == 0 || ret == SIGTERM || ret == SIGINT || ret == SIGHUP ? 0 : 1;
	}
	fuse_session_unmount(se);
#ifdef ZBLK_HAVE_URING
	/* After the unmount: until then a ring entry may still bring a request. */
	if (io_uring)
		zblk__ring_stop();
#endif
	stop_helpers();
	fuse_remove_signal_handlers(se);
out:
	if (se)
		fuse_session_destroy(se);
	free(opts.mountpoint);
	free_files();
	free_read_buf_self();
	pthread_key_delete(read_buf_key);
	return ret;
}

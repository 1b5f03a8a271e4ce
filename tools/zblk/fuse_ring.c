// SPDX-License-Identifier: MIT
/*
 * FUSE over io_uring for zblk, beside libfuse 3.14.
 *
 * Through /dev/fuse every request costs a read(2) and a writev(2), each a
 * wakeup of whoever waits on the other side.  With the ring, a server
 * thread hands the kernel a reply and takes the next request in one
 * io_uring command per request (COMMIT_AND_FETCH), and the kernel places
 * requests in buffers registered once, on the queue of the processor its
 * caller runs on.
 *
 * libfuse 3.14 knows nothing of it, so its custom I/O hooks are used: the
 * read hook notes whether the kernel's FUSE_INIT offers the ring, the
 * writev hook sets the acceptance bit in libfuse's INIT reply and, after
 * it, starts the ring threads; later it recognises replies to requests
 * that came through a ring entry (by their unique id) and commits them to
 * the entry instead of writing /dev/fuse.  Requests from the ring are
 * rebuilt into libfuse's contiguous layout without copying their data:
 * each payload buffer has room before it for the request's headers.
 *
 * Each thread owns its io_uring alone (liburing's submission queue is not
 * thread-safe), so a reply made on another thread is queued for the owner
 * and an eventfd, polled through the same ring, wakes it.
 */
#define FUSE_USE_VERSION 312

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <liburing.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fuse_ring.h"
#include "fuse_ring_abi.h"
#include "transport.h"

/*
 * Entries per queue: one would do for requests that wait for each other,
 * a few keep asynchronous ones (readahead, page cache writeback) and
 * concurrent callers on one processor from waiting for an entry.
 */
#define ENTS_PER_QUEUE 4
#define MAX_QUEUES 1024
/* Room before a payload for the request's fuse_in_header and op_in. */
#define PREFIX 256
#define POLL_TAG 1 /* the eventfd poll's user_data; entries are pointers */

struct rthread;

struct ent {
	struct ring_req_header hdr;
	char *mem;			/* PREFIX bytes, then the payload */
	size_t payload_len;
	struct iovec iov[2];		/* what REGISTER hands the kernel */
	uint64_t commit_id;
	_Atomic uint64_t unique;	/* the request being served, or 0 */
	uint16_t qid;
	bool live;			/* the kernel holds a command for it */
	struct rthread *rt;
	struct ent *next_pending;	/* under rt->lock */
};

struct rthread {
	struct io_uring ring;
	pthread_t tid;
	bool started, ring_ok;
	int efd;
	uint64_t efd_val;		/* the poll reads into it */
	pthread_mutex_t lock;
	struct ent *pending;		/* replies from other threads */
	struct ent *ents;
	unsigned int nents, live;
};

static struct {
	struct fuse_session *se;
	int fd;
	/* INIT, seen by the hooks on libfuse's threads one after the other */
	uint64_t init_unique;
	bool offered;
	atomic_bool init_seen;
	size_t payload_len;
	unsigned int nqueues, nthreads;
	struct rthread *threads;
	atomic_bool started, stopping;
	_Atomic uint64_t requests;
} rg = { .fd = -1 };

static _Thread_local struct rthread *self;
static _Thread_local struct ent *serving; /* the entry this thread serves */

uint64_t zblk__ring_requests(void)
{
	return atomic_load_explicit(&rg.requests, memory_order_relaxed);
}

/* Queues: one per possible processor, numbered as they are. */
static unsigned int possible_cpus(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/possible", "r");
	unsigned int a, b, max = 0;
	int c;

	if (!f)
		return 0;
	for (;;) {
		if (fscanf(f, "%u", &a) != 1)
			break;
		b = a;
		c = fgetc(f);
		if (c == '-') {
			if (fscanf(f, "%u", &b) != 1)
				break;
			c = fgetc(f);
		}
		if (b + 1 > max)
			max = b + 1;
		if (c != ',')
			break;
	}
	fclose(f);
	return max;
}

static struct io_uring_sqe *get_sqe(struct rthread *rt)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&rt->ring);

	/* Never full: one command per entry and the poll fit the ring. */
	if (!sqe) {
		io_uring_submit(&rt->ring);
		sqe = io_uring_get_sqe(&rt->ring);
	}
	if (sqe)
		memset(sqe, 0, 2 * sizeof(*sqe)); /* SQE128: the command area too */
	return sqe;
}

static bool prep_cmd(struct rthread *rt, struct ent *e, uint32_t op)
{
	struct io_uring_sqe *sqe = get_sqe(rt);
	struct ring_cmd_req *cmd;

	if (!sqe)
		return false;
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = rg.fd;
	sqe->cmd_op = op;
	if (op == RING_CMD_REGISTER) {
		sqe->addr = (uintptr_t)e->iov;
		sqe->len = 2;
	}
	cmd = (struct ring_cmd_req *)sqe->cmd;
	cmd->qid = e->qid;
	cmd->commit_id = op == RING_CMD_COMMIT_AND_FETCH ? e->commit_id : 0;
	io_uring_sqe_set_data(sqe, e);
	return true;
}

static void prep_poll(struct rthread *rt)
{
	struct io_uring_sqe *sqe = get_sqe(rt);

	if (!sqe)
		return;
	io_uring_prep_read(sqe, rt->efd, &rt->efd_val, sizeof(rt->efd_val), 0);
	io_uring_sqe_set_data64(sqe, POLL_TAG);
}

/* Replies made on other threads, waiting for their entry's owner. */
static void commit_pending(struct rthread *rt)
{
	struct ent *e, *next;

	pthread_mutex_lock(&rt->lock);
	e = rt->pending;
	rt->pending = NULL;
	pthread_mutex_unlock(&rt->lock);
	for (; e; e = next) {
		next = e->next_pending;
		if (!prep_cmd(rt, e, RING_CMD_COMMIT_AND_FETCH))
			e->live = false;
	}
}

/*
 * A request in @e: rebuilt in front of its payload as libfuse reads it
 * from /dev/fuse (fuse_in_header, first argument, the rest) and served.
 */
static void serve(struct ent *e)
{
	struct ring_in_header *ih = (struct ring_in_header *)e->hdr.in_out;
	size_t payload = e->hdr.ring_ent_in_out.payload_sz, op;
	struct fuse_buf buf;
	char *start;

	e->commit_id = e->hdr.ring_ent_in_out.commit_id;
	if (ih->len < sizeof(*ih) + payload || ih->len - sizeof(*ih) - payload > RING_HEADER_OP_IN ||
	    payload > e->payload_len) {
		/* Not a request as documented: answer it with an error. */
		struct ring_out_header *oh = (struct ring_out_header *)e->hdr.in_out;
		uint64_t unique = ih->unique;

		fprintf(stderr, "zblk: io_uring: malformed request (len %u, payload %zu)\n",
			ih->len, payload);
		memset(oh, 0, sizeof(*oh));
		oh->len = sizeof(*oh);
		oh->error = -EIO;
		oh->unique = unique;
		e->hdr.ring_ent_in_out.payload_sz = 0;
		if (!prep_cmd(e->rt, e, RING_CMD_COMMIT_AND_FETCH))
			e->live = false;
		return;
	}
	op = ih->len - sizeof(*ih) - payload;
	start = e->mem + PREFIX - op - sizeof(*ih);
	memcpy(start, ih, sizeof(*ih));
	memcpy(start + sizeof(*ih), e->hdr.op_in, op);
	atomic_store_explicit(&e->unique, ih->unique, memory_order_release);
	atomic_fetch_add_explicit(&rg.requests, 1, memory_order_relaxed);
	memset(&buf, 0, sizeof(buf));
	buf.mem = start;
	buf.size = ih->len;
	serving = e;
	fuse_session_process_buf(rg.se, &buf);
	serving = NULL;
}

char *zblk__ring_reply_buf(size_t size)
{
	struct ent *e = serving;

	/* The payload: READ's arguments sit before it, in the prefix. */
	if (!e || size > e->payload_len || e->hdr.ring_ent_in_out.payload_sz)
		return NULL;
	return e->mem + PREFIX;
}

static void *ring_main(void *arg)
{
	struct rthread *rt = arg;
	struct io_uring_cqe *cqe;
	unsigned int head, seen, i;
	bool stop = false;

	self = rt;
	/*
	 * A thread per queue runs on that queue's processor, where its callers
	 * are: a request then needs no other processor woken.  Measured (CPU
	 * time per 4 KiB request, fio and zblk together) as good for reads and
	 * better for writes than leaving it to the scheduler; a processor this
	 * process may not use just refuses, and the thread stays unpinned.
	 */
	if (rg.nthreads == rg.nqueues) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET((int)(rt - rg.threads), &set);
		(void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	}
	for (i = 0; i < rt->nents; i++)
		rt->ents[i].live = prep_cmd(rt, &rt->ents[i], RING_CMD_REGISTER);
	prep_poll(rt);
	while (!stop) {
		int ret = io_uring_submit_and_wait(&rt->ring, 1);

		if (ret < 0 && ret != -EINTR) {
			fprintf(stderr, "zblk: io_uring: %s\n", strerror(-ret));
			break;
		}
		seen = 0;
		io_uring_for_each_cqe(&rt->ring, head, cqe) {
			seen++;
			if (cqe->user_data == POLL_TAG) {
				if (atomic_load(&rg.stopping))
					stop = true;
				commit_pending(rt);
				prep_poll(rt);
				continue;
			}
			struct ent *e = io_uring_cqe_get_data(cqe);

			if (cqe->res < 0) {
				/* -ENOTCONN/-ECANCELED: the connection is going away. */
				if (cqe->res != -ENOTCONN && cqe->res != -ECANCELED &&
				    cqe->res != -ENODEV)
					fprintf(stderr, "zblk: io_uring entry of queue %u: %s\n",
						e->qid, strerror(-cqe->res));
				e->live = false;
				continue;
			}
			serve(e);
			/* Send that reply now rather than after the whole batch. */
			if (io_uring_cq_ready(&rt->ring) > seen)
				io_uring_submit(&rt->ring);
		}
		io_uring_cq_advance(&rt->ring, seen);
		rt->live = 0;
		for (i = 0; i < rt->nents; i++)
			rt->live += rt->ents[i].live;
		if (!rt->live)
			stop = true;
	}
	/* Replies served in the last batch still go out. */
	io_uring_submit(&rt->ring);
	self = NULL;
	return NULL;
}

static struct ent *find_in(struct rthread *rt, uint64_t unique)
{
	unsigned int i;

	for (i = 0; i < rt->nents; i++)
		if (atomic_load_explicit(&rt->ents[i].unique, memory_order_acquire) == unique)
			return &rt->ents[i];
	return NULL;
}

/* The entry serving @unique: the calling ring thread's own first. */
static struct ent *find_ent(uint64_t unique)
{
	struct ent *e = NULL;
	unsigned int t;

	if (!unique)
		return NULL;
	if (self)
		e = find_in(self, unique);
	for (t = 0; !e && t < rg.nthreads; t++)
		if (&rg.threads[t] != self)
			e = find_in(&rg.threads[t], unique);
	return e;
}

/* A reply for entry @e: into its buffers, then committed by its owner. */
static ssize_t ring_reply(struct ent *e, const struct iovec *iov, int count)
{
	struct ring_out_header *oh = (struct ring_out_header *)e->hdr.in_out;
	char *payload = e->mem + PREFIX;
	size_t total = iov[0].iov_len, used = 0;
	int i;

	memcpy(oh, iov[0].iov_base, sizeof(*oh));
	for (i = 1; i < count; i++) {
		total += iov[i].iov_len;
		if (used + iov[i].iov_len > e->payload_len) {
			oh->error = -EIO; /* larger than any request the kernel may send */
			used = 0;
			break;
		}
		/* Data made in place (zblk__ring_reply_buf()) stays there. */
		if (iov[i].iov_base != payload + used)
			memcpy(payload + used, iov[i].iov_base, iov[i].iov_len);
		used += iov[i].iov_len;
	}
	oh->len = (uint32_t)(sizeof(*oh) + used);
	e->hdr.ring_ent_in_out.payload_sz = (uint32_t)used;
	atomic_store_explicit(&e->unique, 0, memory_order_relaxed);
	if (self == e->rt) {
		if (!prep_cmd(e->rt, e, RING_CMD_COMMIT_AND_FETCH))
			e->live = false;
	} else {
		uint64_t one = 1;

		pthread_mutex_lock(&e->rt->lock);
		e->next_pending = e->rt->pending;
		e->rt->pending = e;
		pthread_mutex_unlock(&e->rt->lock);
		if (write(e->rt->efd, &one, sizeof(one)) != sizeof(one))
			perror("zblk: io_uring wakeup");
	}
	return (ssize_t)total;
}

static void free_threads(void)
{
	unsigned int t, i;

	for (t = 0; rg.threads && t < rg.nthreads; t++) {
		struct rthread *rt = &rg.threads[t];

		if (rt->ring_ok)
			io_uring_queue_exit(&rt->ring);
		if (rt->efd >= 0)
			close(rt->efd);
		pthread_mutex_destroy(&rt->lock);
		for (i = 0; i < rt->nents; i++)
			free(rt->ents[i].mem);
		free(rt->ents);
	}
	free(rg.threads);
	rg.threads = NULL;
	rg.nthreads = 0;
}

/* Thread @t's entries (ENTS_PER_QUEUE for each of its queues) and ring. */
static int setup_thread(struct rthread *rt, unsigned int t)
{
	unsigned int i, n = (rg.nqueues - t + rg.nthreads - 1) / rg.nthreads * ENTS_PER_QUEUE;

	rt->efd = -1;
	pthread_mutex_init(&rt->lock, NULL);
	rt->ents = calloc(n, sizeof(*rt->ents));
	if (!rt->ents)
		return -1;
	rt->nents = n;
	for (i = 0; i < n; i++) {
		struct ent *e = &rt->ents[i];

		e->qid = (uint16_t)(t + i / ENTS_PER_QUEUE * rg.nthreads);
		e->rt = rt;
		e->payload_len = rg.payload_len;
		if (posix_memalign((void **)&e->mem, 64, PREFIX + rg.payload_len))
			return -1;
		e->iov[0].iov_base = &e->hdr;
		e->iov[0].iov_len = sizeof(e->hdr);
		e->iov[1].iov_base = e->mem + PREFIX;
		e->iov[1].iov_len = rg.payload_len;
	}
	rt->efd = eventfd(0, EFD_CLOEXEC);
	if (rt->efd < 0)
		return -1;
	if (io_uring_queue_init(n + 2, &rt->ring, IORING_SETUP_SQE128) < 0)
		return -1;
	rt->ring_ok = true;
	return 0;
}

/* The INIT reply is written: set up the entries and start the threads. */
static void start_ring(void)
{
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned int t;

	rg.nqueues = possible_cpus();
	if (!rg.nqueues || rg.nqueues > MAX_QUEUES) {
		fprintf(stderr, "zblk: io_uring: cannot count the processors; using /dev/fuse\n");
		return;
	}
	/* A thread per online processor at most; each serves every nthreads-th queue. */
	rg.nthreads = online > 0 && (unsigned long)online < rg.nqueues ? (unsigned int)online :
									rg.nqueues;
	rg.threads = calloc(rg.nthreads, sizeof(*rg.threads));
	for (t = 0; rg.threads && t < rg.nthreads; t++)
		if (setup_thread(&rg.threads[t], t)) {
			rg.nthreads = t + 1;
			free_threads();
		}
	if (!rg.threads) {
		fprintf(stderr, "zblk: io_uring: cannot set up its rings (%s); using /dev/fuse\n",
			strerror(errno));
		rg.nthreads = 0;
		return;
	}
	/* Before the threads: a request may reach a ring at once. */
	atomic_store_explicit(&rg.started, true, memory_order_release);
	for (t = 0; t < rg.nthreads; t++) {
		/*
		 * Should one fail, the ring cannot switch on without every
		 * queue: the others' entries wait, cancelled at the end.
		 */
		if (pthread_create(&rg.threads[t].tid, NULL, ring_main, &rg.threads[t])) {
			fprintf(stderr, "zblk: io_uring: cannot start its threads; using /dev/fuse\n");
			break;
		}
		rg.threads[t].started = true;
	}
	if (t == rg.nthreads)
		fprintf(stderr, "zblk: serving over io_uring: %u queues, %u threads, "
				"%u entries per queue\n", rg.nqueues, rg.nthreads, ENTS_PER_QUEUE);
}

static ssize_t hook_read(int fd, void *buf, size_t len, void *userdata)
{
	ssize_t n = read(fd, buf, len);
	struct ring_in_header ih;
	uint32_t flags, flags2;

	(void)userdata;
	if (n < (ssize_t)sizeof(ih) || rg.init_seen)
		return n;
	memcpy(&ih, buf, sizeof(ih));
	if (ih.opcode != RING_OP_INIT)
		return n;
	rg.init_unique = ih.unique;
	rg.offered = false;
	if ((size_t)n >= sizeof(ih) + RING_INIT_IN_FLAGS2 + 4) {
		memcpy(&flags, (char *)buf + sizeof(ih) + RING_INIT_IN_FLAGS, 4);
		memcpy(&flags2, (char *)buf + sizeof(ih) + RING_INIT_IN_FLAGS2, 4);
		rg.offered = (flags & RING_INIT_EXT) && (flags2 & RING_INIT2_OVER_IO_URING);
	}
	return n;
}

/*
 * libfuse's INIT reply, with the ring accepted when offered.  The payload
 * buffers must hold the largest request and reply, as the kernel checks at
 * registration: max_write, and max_pages of data.
 */
static ssize_t init_reply(int fd, struct iovec *iov, int count)
{
	struct ring_out_header oh;
	char out[256];
	struct iovec v[2];
	uint32_t flags, flags2, max_write;
	uint16_t max_pages;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	ssize_t n;

	rg.init_seen = true;
	memcpy(&oh, iov[0].iov_base, sizeof(oh));
	if (count != 2 || oh.error || iov[1].iov_len < RING_INIT_OUT_MIN ||
	    iov[1].iov_len > sizeof(out)) {
		if (!oh.error)
			fprintf(stderr, "zblk: io_uring: unexpected INIT reply; using /dev/fuse\n");
		return writev(fd, iov, count);
	}
	memcpy(out, iov[1].iov_base, iov[1].iov_len);
	zblk__init_reply_pages(out, iov[1].iov_len);
	v[0] = iov[0];
	v[1].iov_base = out;
	v[1].iov_len = iov[1].iov_len;
	if (!rg.offered) {
		fprintf(stderr, "zblk: the kernel does not offer FUSE over io_uring "
				"(/sys/module/fuse/parameters/enable_uring); using /dev/fuse\n");
		return writev(fd, v, 2);
	}
	memcpy(&flags, out + RING_INIT_OUT_FLAGS, 4);
	memcpy(&flags2, out + RING_INIT_OUT_FLAGS2, 4);
	memcpy(&max_write, out + RING_INIT_OUT_MAX_WRITE, 4);
	memcpy(&max_pages, out + RING_INIT_OUT_MAX_PAGES, 2);
	flags |= RING_INIT_EXT;
	flags2 |= RING_INIT2_OVER_IO_URING;
	memcpy(out + RING_INIT_OUT_FLAGS, &flags, 4);
	memcpy(out + RING_INIT_OUT_FLAGS2, &flags2, 4);
	rg.payload_len = 8192;
	if (max_write > rg.payload_len)
		rg.payload_len = max_write;
	if (max_pages * page > rg.payload_len)
		rg.payload_len = max_pages * page;
	n = writev(fd, v, 2);
	if (n >= 0)
		start_ring();
	return n;
}

static ssize_t hook_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	struct ring_out_header oh;
	struct ent *e;

	(void)userdata;
	if (count < 1 || iov[0].iov_len < sizeof(oh))
		return writev(fd, iov, count);
	memcpy(&oh, iov[0].iov_base, sizeof(oh));
	if (!rg.init_seen && rg.init_unique && oh.unique == rg.init_unique)
		return init_reply(fd, iov, count);
	if (atomic_load_explicit(&rg.started, memory_order_acquire) && (e = find_ent(oh.unique)))
		return ring_reply(e, iov, count);
	return writev(fd, iov, count);
}

/* The last reference to the connection but the kernel's: it aborts here. */
static void close_fd(void)
{
	if (rg.fd >= 0)
		close(rg.fd);
	rg.fd = -1;
}

int zblk__ring_install(struct fuse_session *se)
{
	static const struct fuse_custom_io io = { .read = hook_read, .writev = hook_writev };
	int fd = fuse_session_fd(se);

	/*
	 * The ring's own descriptor: libfuse closes its one when it unmounts,
	 * and the unmount is lazy, so clients that hold the disk open still
	 * send requests through the ring until zblk__ring_stop().  Their
	 * replies need a live descriptor, not a closed (or reused) number.
	 */
	rg.fd = fd < 0 ? -1 : fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (rg.fd < 0 || fuse_session_custom_io(se, &io, fd)) {
		fprintf(stderr, "zblk: cannot hook FUSE's I/O for io_uring\n");
		close_fd();
		return -1;
	}
	rg.se = se;
	return 0;
}

void zblk__ring_stop(void)
{
	unsigned int t;
	uint64_t one = 1;

	if (!atomic_load(&rg.started)) {
		close_fd();
		return;
	}
	atomic_store(&rg.stopping, true);
	for (t = 0; t < rg.nthreads; t++) {
		if (!rg.threads[t].started)
			continue;
		if (write(rg.threads[t].efd, &one, sizeof(one)) != sizeof(one))
			perror("zblk: io_uring wakeup");
		pthread_join(rg.threads[t].tid, NULL);
	}
	fprintf(stderr, "zblk: io_uring carried %llu requests\n",
		(unsigned long long)zblk__ring_requests());
	free_threads();
	atomic_store(&rg.started, false);
	close_fd();
}

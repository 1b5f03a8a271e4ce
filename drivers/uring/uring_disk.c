// SPDX-License-Identifier: MIT
/*
 * A disk over a file descriptor that completes bios asynchronously through
 * io_uring.  submit_bio() prepares SQEs and returns; one completion thread
 * per disk reaps CQEs, finishes short transfers by advancing its copy of the
 * bio's iterator and resubmitting the rest, and runs bi_end_io.
 *
 * Each bio in flight holds one of queue_depth slots and at most one SQE, so
 * the completion ring (twice the submission ring) can never overflow and no
 * CQE is ever lost.  The SQ side of the ring is shared by every submitting
 * thread under one lock; the CQ side belongs to the completion thread alone,
 * which is what lets liburing be used without further locking.
 *
 * WRITE_ZEROES tries FALLOC_FL_ZERO_RANGE, then FALLOC_FL_PUNCH_HOLE, then
 * writes zeroes (WRITEV SQEs over a shared buffer of them), as a file on
 * vfat, ramfs or some FUSE filesystems takes no fallocate() mode: the disk
 * advertises the operation, and Linux's blkdev_issue_zeroout() would write
 * zeroes where a device turns it down, a fallback libbvec has not got.
 *
 * REQ_POLLED bios go to a second ring of the same depth, the poll ring, that
 * the completion thread never touches.  Both its sides belong to whoever
 * holds poll_lock: submit_bio() only prepares a polled bio's SQE, and the
 * poller sends what is prepared and waits for completions in one
 * io_uring_enter() (as Linux's bio_poll() first flushes the plug), so the
 * kernel's completion work runs on the thread that waits and a polled bio
 * ends there without a wake-up of any other thread.
 */
#include <fcntl.h>
#include <limits.h>
#include <liburing.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bvec/internal.h"
#include "uring.h"

/* UIO_MAXIOV: the kernel refuses a readv/writev with more entries. */
#define URING_MAX_IOV 1024
#define URING_INLINE_IOV 8
#define URING_DEFAULT_DEPTH 64
#define URING_MAX_DEPTH 4096
/* IORING_MAX_REG_BUFFERS */
#define URING_MAX_BUFS 16384

enum slot_phase { PH_PREFLUSH, PH_DATA, PH_POSTFLUSH, PH_DONE };

/* How a WRITE_ZEROES goes, each tried when the one before is refused. */
enum zero_mode { Z_ZERO_RANGE, Z_PUNCH, Z_WRITE };

struct uring_slot {
	struct bio *bio;
	/* What is left of the bio's data; the bio's own bi_iter stays as
	 * submitted, so a caller may read it in bi_end_io. */
	struct bvec_iter iter;
	/* The file offset of iter: a short transfer need not end on a sector,
	 * and iter.bi_sector counts whole sectors only. */
	uint64_t pos;
	struct uring_slot *next_free;
	struct iovec *iov;
	int iov_cap;
	unsigned char phase;
	unsigned char zmode;	/* enum zero_mode */
	/* On the poll ring. */
	bool polled;
	/* Its SQE in flight is a READ_FIXED/WRITE_FIXED. */
	bool fixed;
	blk_status_t status;
	struct iovec inline_iov[URING_INLINE_IOV];
};

/* A registered buffer; the disk keeps them sorted by start. */
struct reg_buf {
	uintptr_t start;
	size_t len;
	unsigned int index;	/* io_uring's buffer index */
};

struct uring_disk {
	struct io_uring ring;
	struct io_uring pring;	/* the poll ring */
	int fd;
	int efd;	/* eventfd the kernel signals on each CQE, under valgrind */
	unsigned int depth;
	unsigned int max_io;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct uring_slot *free;
	/* Bios submitted on the completion thread while every slot was busy:
	 * that thread cannot wait for a slot, since it is what frees them. */
	struct bio_list backlog;
	/* Bios the disk holds: in a slot, in the backlog or in bi_end_io. */
	unsigned long nr_bios;
	/* The completion thread prepared SQEs it has not submitted yet. */
	bool deferred;
	/* Slots whose bio is on the poll ring. */
	unsigned int nr_polled;
	/* Guards the poll ring, both sides; taken before lock. */
	pthread_mutex_t poll_lock;
	/* Registered buffers: bufs[0..nr_bufs) are used for new SQEs; the
	 * array lives until unregistered (nr_bufs 0 while that waits). */
	struct reg_buf *bufs;
	unsigned int nr_bufs;
	unsigned long fixed_in_flight;
	struct bvec__uring_stats stats;
	bool stop;
	/* put_disk() ran on the completion thread, which then frees the disk. */
	bool orphan;
	pthread_t thread;
	struct uring_slot slots[];
};

/* The disk whose completion thread this is, if any. */
static _Thread_local struct uring_disk *completing;

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif

static bool under_valgrind(void)
{
#ifdef RUNNING_ON_VALGRIND
	return RUNNING_ON_VALGRIND;
#else
	return false;
#endif
}

/*
 * Submit all that is prepared.  io_uring_enter() stops at an SQE that fails
 * before it is issued (a READV whose iovec the import refuses: its CQE
 * carries the error) and, short of memory, after part of the batch; what
 * it leaves stays in the ring until the next submit, which may never come
 * (those bios would then never end, and put_disk() would wait for ever).
 * So the rest is sent again until none is left.  Transient failures are
 * retried; only an error on the ring itself (EBADF...) gives up, as no
 * submit could succeed then.  Never more SQEs than the ring holds.
 */
static void ring_submit(struct io_uring *ring)
{
	int ret;

	while (io_uring_sq_ready(ring)) {
		ret = io_uring_submit(ring);
		if (ret > 0)
			continue;
		if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY)
			break;
		sched_yield();
	}
}

/* Submit the main ring's prepared SQEs.  Lock held. */
static void flush_deferred(struct uring_disk *ud)
{
	if (ud->deferred) {
		ud->deferred = false;
		ring_submit(&ud->ring);
	}
}

/* The registered buffer holding all of @iov, or -1.  Lock held. */
static int find_buf(const struct uring_disk *ud, const struct iovec *iov)
{
	uintptr_t a = (uintptr_t)iov->iov_base;
	unsigned int lo = 0, hi = ud->nr_bufs, mid;
	const struct reg_buf *b;

	/* The last buffer that starts at or below a. */
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (ud->bufs[mid].start <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -1;
	b = &ud->bufs[lo - 1];
	if (a - b->start >= b->len || iov->iov_len > b->len - (a - b->start))
		return -1;
	return (int)b->index;
}

/* Cut @n iovecs to the test's max_io, if any; returns how many are left. */
static int trim_iov(const struct uring_disk *ud, struct iovec *iov, int n)
{
	if (ud->max_io) {
		size_t left = ud->max_io;
		int i;

		for (i = 0; i < n && left; i++) {
			if (iov[i].iov_len > left)
				iov[i].iov_len = left;
			left -= iov[i].iov_len;
		}
		n = i;
	}
	return n;
}

/* Lay out up to URING_MAX_IOV iovecs of what is left; a rest that does not
 * fit is sent later, exactly like the rest of a short transfer. */
static int fill_iov(struct uring_disk *ud, struct uring_slot *slot)
{
	struct bvec_iter it = slot->iter;
	int n = 0;

	for (;;) {
		n += bvec__bio_iovec_batch(slot->bio, &it, slot->iov + n, slot->iov_cap - n);
		if (!it.bi_size || slot->iov_cap >= URING_MAX_IOV)
			break;
		int cap = BVEC_MIN(slot->iov_cap * 8, URING_MAX_IOV);
		struct iovec *iov = malloc((size_t)cap * sizeof(*iov));

		if (!iov)
			break;
		memcpy(iov, slot->iov, (size_t)n * sizeof(*iov));
		if (slot->iov != slot->inline_iov)
			free(slot->iov);
		slot->iov = iov;
		slot->iov_cap = cap;
	}
	return trim_iov(ud, slot->iov, n);
}

static bool needs_postflush(const struct bio *bio)
{
	/* A write carries FUA itself as RWF_DSYNC; everything else needs a sync. */
	return (bio->bi_opf & REQ_FUA) &&
	       (bio_op(bio) != REQ_OP_WRITE || !bio->bi_iter.bi_size);
}

/*
 * The data SQE of a READ or WRITE: one range inside a registered buffer
 * goes fixed (not for polled bios, whose ring has no buffers), the rest
 * vectored.  Returns the buffer's index, or -1.
 */
static int prep_data(struct uring_disk *ud, struct uring_slot *slot, struct io_uring_sqe *sqe,
		     off_t off, bool write)
{
	/* fill_iov() first: it may move slot->iov to a larger array. */
	unsigned int nr = (unsigned int)fill_iov(ud, slot);
	int idx = nr == 1 && !slot->polled ? find_buf(ud, &slot->iov[0]) : -1;

	if (idx < 0) {
		io_uring_prep_rw(write ? IORING_OP_WRITEV : IORING_OP_READV, sqe, ud->fd,
				 slot->iov, nr, (__u64)off);
		return -1;
	}
	io_uring_prep_rw(write ? IORING_OP_WRITE_FIXED : IORING_OP_READ_FIXED, sqe, ud->fd,
			 slot->iov[0].iov_base, (unsigned int)slot->iov[0].iov_len, (__u64)off);
	sqe->buf_index = (__u16)idx;
	return idx;
}

/*
 * Prepare the SQE of the slot's current step, moving past steps with
 * nothing to do.  Returns false when the bio is finished.  Lock held.
 */
static bool issue(struct uring_disk *ud, struct uring_slot *slot)
{
	struct io_uring *ring = slot->polled ? &ud->pring : &ud->ring;
	struct bio *bio = slot->bio;
	struct io_uring_sqe *sqe;
	int idx = -1;
	off_t off;
	int mode, nr;

	for (;;) {
		switch (slot->phase) {
		case PH_PREFLUSH:
			if (bio->bi_opf & REQ_PREFLUSH)
				goto fsync;
			slot->phase = PH_DATA;
			continue;
		case PH_DATA:
			if (slot->iter.bi_size)
				break;
			slot->phase = PH_POSTFLUSH;
			continue;
		case PH_POSTFLUSH:
			if (needs_postflush(bio))
				goto fsync;
			slot->phase = PH_DONE;
			continue;
		default:
			return false;
		}
		break;
	}
	/* Never NULL: each slot has at most one SQE and slots <= ring entries. */
	sqe = io_uring_get_sqe(ring);
	off = (off_t)slot->pos;
	switch (bio_op(bio)) {
	case REQ_OP_READ:
	case REQ_OP_WRITE:
		idx = prep_data(ud, slot, sqe, off, bio_op(bio) == REQ_OP_WRITE);
		/* WRITE_FIXED takes rw_flags the same way writev2 does. */
		if (bio->bi_opf & REQ_FUA)
			sqe->rw_flags = RWF_DSYNC;
		break;
	case REQ_OP_WRITE_ZEROES:
		if (slot->zmode == Z_WRITE) {
			nr = bvec__zero_iovecs(slot->iov, slot->iov_cap, slot->iter.bi_size);
			nr = trim_iov(ud, slot->iov, nr);
			io_uring_prep_rw(IORING_OP_WRITEV, sqe, ud->fd, slot->iov,
					 (unsigned int)nr, (__u64)off);
			break;
		}
		mode = slot->zmode == Z_PUNCH ? FALLOC_FL_PUNCH_HOLE : FALLOC_FL_ZERO_RANGE;
		io_uring_prep_fallocate(sqe, ud->fd, mode | FALLOC_FL_KEEP_SIZE, off,
					(off_t)slot->iter.bi_size);
		break;
	default: /* DISCARD, SECURE_ERASE: submit_bio() lets nothing else through */
		io_uring_prep_fallocate(sqe, ud->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
					off, (off_t)slot->iter.bi_size);
		break;
	}
	if (idx >= 0) {
		slot->fixed = true;
		ud->fixed_in_flight++;
		ud->stats.fixed++;
	}
	io_uring_sqe_set_data(sqe, slot);
	return true;
fsync:
	sqe = io_uring_get_sqe(ring);
	io_uring_prep_fsync(sqe, ud->fd, IORING_FSYNC_DATASYNC);
	io_uring_sqe_set_data(sqe, slot);
	return true;
}

/* A read that meets the end of a shorter file: zeroes, as a loop device
 * over a sparse or short file reads them. */
static void zero_rest(struct uring_slot *slot)
{
	struct iovec iov[16];
	int i, n;

	while ((n = bvec__bio_iovec_batch(slot->bio, &slot->iter, iov, 16)) > 0)
		for (i = 0; i < n; i++)
			memset(iov[i].iov_base, 0, iov[i].iov_len);
}

/*
 * Account one CQE of a slot and prepare its next SQE.  Returns false when
 * the bio is finished (slot->status says how).  Lock held.
 */
static bool cqe_done(struct uring_disk *ud, struct uring_slot *slot, int res)
{
	struct bio *bio = slot->bio;

	if (slot->fixed) {
		slot->fixed = false;
		/* bvec_uring_disk_unregister_buffers() waits for 0. */
		if (!--ud->fixed_in_flight)
			pthread_cond_broadcast(&ud->cond);
	}
	if (res == -EAGAIN || res == -EINTR)
		return issue(ud, slot);
	if (res < 0 && slot->phase == PH_DATA && bio_op(bio) == REQ_OP_WRITE_ZEROES &&
	    slot->zmode != Z_WRITE && (res == -EOPNOTSUPP || res == -EINVAL)) {
		if (slot->zmode++ == Z_PUNCH) {
			/* Writes past the end of a regular file would grow it. */
			uint64_t end = bvec__zero_end(ud->fd, slot->pos,
						      slot->pos + slot->iter.bi_size,
						      bdev_logical_block_size(bio->bi_bdev));

			slot->iter.bi_size = (unsigned int)(end - slot->pos);
		}
		return issue(ud, slot);
	}
	if (res < 0) {
		slot->status = errno_to_blk_status(res);
		return false;
	}
	switch (slot->phase) {
	case PH_DATA:
		if (bio_op(bio) == REQ_OP_WRITE_ZEROES && slot->zmode == Z_WRITE) {
			if (!res) {
				slot->status = BLK_STS_IOERR;
				return false;
			}
			slot->iter.bi_size -= (unsigned int)res;
			slot->pos += (unsigned int)res;
		} else if (bio_op(bio) != REQ_OP_READ && bio_op(bio) != REQ_OP_WRITE) {
			slot->iter.bi_size = 0;
		} else if (res > 0) {
			bio_advance_iter(bio, &slot->iter, (unsigned int)res);
			slot->pos += (unsigned int)res;
		} else if (bio_op(bio) == REQ_OP_READ) {
			zero_rest(slot);
		} else {
			/* A write that moves nothing would loop for ever. */
			slot->status = BLK_STS_IOERR;
			return false;
		}
		break;
	default:
		slot->phase++;
		break;
	}
	return issue(ud, slot);
}

/*
 * Give @bio a slot and prepare its first SQE, to be sent by flush_deferred()
 * or, on the poll ring, by the next poller; or finish it now.  Lock held,
 * and poll_lock too for a polled bio.
 */
static void start(struct uring_disk *ud, struct bio *bio, struct bio_list *done)
{
	struct uring_slot *slot = ud->free;

	ud->free = slot->next_free;
	slot->bio = bio;
	slot->iter = bio->bi_iter;
	slot->pos = (uint64_t)bio->bi_iter.bi_sector << BVEC_SECTOR_SHIFT;
	slot->phase = PH_PREFLUSH;
	slot->zmode = Z_ZERO_RANGE;
	slot->polled = (bio->bi_opf & REQ_POLLED) != 0;
	slot->fixed = false;
	slot->status = BLK_STS_OK;
	if (!issue(ud, slot)) {
		slot->next_free = ud->free;
		ud->free = slot;
		bio_list_add(done, bio);
	} else if (slot->polled) {
		ud->nr_polled++;
	} else {
		ud->deferred = true;
	}
}

/*
 * Start bios of the backlog while slots are free, oldest first.  Whoever
 * frees a slot does this, not only the completion thread: slots held by
 * polled bios are freed by pollers, and with nothing else in flight the
 * completion thread would never come round to the backlog.  Lock held.
 */
static void drain_backlog(struct uring_disk *ud, struct bio_list *done)
{
	struct bio *bio;

	while (ud->free && (bio = bio_list_pop(&ud->backlog)))
		start(ud, bio, done);
}

/* Complete @done outside the lock: bi_end_io may submit again. */
static void end_all(struct uring_disk *ud, struct bio_list *done)
{
	unsigned long n = 0;
	struct bio *bio;

	while ((bio = bio_list_pop(done))) {
		bio_endio(bio);
		n++;
	}
	if (n) {
		pthread_mutex_lock(&ud->lock);
		ud->nr_bios -= n;
		pthread_cond_broadcast(&ud->cond);
		pthread_mutex_unlock(&ud->lock);
	}
}

static void destroy(struct uring_disk *ud)
{
	unsigned int i;

	io_uring_queue_exit(&ud->ring);
	io_uring_queue_exit(&ud->pring);
	close(ud->efd);
	pthread_cond_destroy(&ud->cond);
	pthread_mutex_destroy(&ud->lock);
	pthread_mutex_destroy(&ud->poll_lock);
	free(ud->bufs);
	for (i = 0; i < ud->depth; i++)
		if (ud->slots[i].iov != ud->slots[i].inline_iov)
			free(ud->slots[i].iov);
	free(ud);
}

/*
 * Sleep until a CQE is posted.  In io_uring_enter() the kernel runs the
 * completions' task work inside the wait, the way fio waits, and nothing
 * signals an eventfd per CQE; a sleep in read() on the eventfd is instead
 * broken by that task work and restarted, one more system call per wake-up
 * (strace: two read()s per I/O at QD 1).  Under valgrind (3.19), which
 * takes io_uring_enter() for a call that never blocks and stalls every
 * other thread, put_disk() included, while one waits there, the eventfd is
 * the only way: the kernel bumps it after each CQE, so one posted since the
 * check is never slept through.  The CQ side is this thread's alone, so no
 * lock is needed.
 */
static void wait_cqe(struct uring_disk *ud)
{
	struct io_uring_cqe *cqe;
	uint64_t n;

	if (!under_valgrind()) {
		/* -EINTR and the like: the caller looks at the CQ again. */
		(void)io_uring_wait_cqe(&ud->ring, &cqe);
		return;
	}
	if (read(ud->efd, &n, sizeof(n)) < 0 && errno != EINTR && errno != EAGAIN)
		sched_yield();
}

/*
 * Send the poll ring's prepared SQEs and, with @wait, sleep until a CQE is
 * posted, in one io_uring_enter().  This thread is then the submitter of
 * record, so the completions' task work is its own and runs inside that
 * wait.  Under valgrind, where a sleep in io_uring_enter() stalls every
 * thread (wait_cqe()), it yields instead and the caller looks again.
 * poll_lock held.
 */
static void poll_submit_wait(struct uring_disk *ud, bool wait)
{
	int ret;

	if (wait && !under_valgrind()) {
		ret = io_uring_submit_and_wait(&ud->pring, 1);
		if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY && ret != -ETIME)
			sched_yield();
		return;
	}
	if (io_uring_sq_ready(&ud->pring))
		ring_submit(&ud->pring);
	if (wait)
		sched_yield();
}

/*
 * Give the bio the slot's status.  Only an error is stored, and only over
 * none: a chained child (a split front, a stripe's piece) may have put its
 * error in this bio before the bio's own I/O ended, and a success here must
 * not wipe that out (first error wins, as in bio_endio()).  Lock held.
 */
static void end_status(struct uring_slot *slot)
{
	blk_status_t none = BLK_STS_OK;

	if (slot->status)
		atomic_compare_exchange_strong(&slot->bio->bi_status, &none, slot->status);
}

/*
 * Reap the poll ring on this thread and run the bi_end_io of every polled
 * bio that ended.  With @wait, sleep until a CQE comes as long as a polled
 * bio is in flight.  Returns the CQEs reaped.
 */
static int poll_reap(struct uring_disk *ud, bool wait)
{
	struct io_uring_cqe *cqe;
	struct bio_list done;
	unsigned int head, seen = 0, in_flight;

	bio_list_init(&done);
	pthread_mutex_lock(&ud->poll_lock);
	while (!io_uring_cq_ready(&ud->pring)) {
		pthread_mutex_lock(&ud->lock);
		in_flight = ud->nr_polled;
		pthread_mutex_unlock(&ud->lock);
		if (!in_flight) {
			pthread_mutex_unlock(&ud->poll_lock);
			return 0;
		}
		poll_submit_wait(ud, wait);
		if (!wait && !io_uring_cq_ready(&ud->pring)) {
			pthread_mutex_unlock(&ud->poll_lock);
			return 0;
		}
	}
	pthread_mutex_lock(&ud->lock);
	io_uring_for_each_cqe(&ud->pring, head, cqe) {
		struct uring_slot *slot = io_uring_cqe_get_data(cqe);

		seen++;
		/* A resubmitted rest goes with the next poll. */
		if (cqe_done(ud, slot, cqe->res))
			continue;
		end_status(slot);
		bio_list_add(&done, slot->bio);
		slot->next_free = ud->free;
		ud->free = slot;
		ud->nr_polled--;
		ud->stats.polled++;
	}
	io_uring_cq_advance(&ud->pring, seen);
	/* The slots freed here go to the backlog first; sent now, as the
	 * completion thread may be asleep with nothing in flight. */
	drain_backlog(ud, &done);
	flush_deferred(ud);
	pthread_cond_broadcast(&ud->cond);
	pthread_mutex_unlock(&ud->lock);
	pthread_mutex_unlock(&ud->poll_lock);
	end_all(ud, &done);
	return (int)seen;
}

static void *completion_thread(void *arg)
{
	struct uring_disk *ud = arg;
	struct io_uring_cqe *cqe;
	struct bio_list done;
	unsigned int head, seen;

	completing = ud;
	bio_list_init(&done);
	for (;;) {
		pthread_mutex_lock(&ud->lock);
		if (ud->stop && !ud->nr_bios) {
			pthread_mutex_unlock(&ud->lock);
			if (ud->orphan)
				destroy(ud);
			return NULL;
		}
		flush_deferred(ud);
		if (ud->orphan && ud->nr_polled) {
			/* Nobody else will ever poll them now. */
			pthread_mutex_unlock(&ud->lock);
			poll_reap(ud, true);
			continue;
		}
		pthread_mutex_unlock(&ud->lock);

		if (!io_uring_cq_ready(&ud->ring)) {
			wait_cqe(ud);
			continue;
		}
		pthread_mutex_lock(&ud->lock);
		seen = 0;
		io_uring_for_each_cqe(&ud->ring, head, cqe) {
			struct uring_slot *slot = io_uring_cqe_get_data(cqe);

			seen++;
			if (!slot) /* put_disk()'s wake-up */
				continue;
			if (cqe_done(ud, slot, cqe->res)) {
				ud->deferred = true;
				continue;
			}
			end_status(slot);
			bio_list_add(&done, slot->bio);
			slot->next_free = ud->free;
			ud->free = slot;
		}
		io_uring_cq_advance(&ud->ring, seen);
		pthread_cond_broadcast(&ud->cond);
		pthread_mutex_unlock(&ud->lock);
		end_all(ud, &done);

		/* Slots freed above go to the backlog first, in order. */
		pthread_mutex_lock(&ud->lock);
		drain_backlog(ud, &done);
		pthread_mutex_unlock(&ud->lock);
		end_all(ud, &done);
	}
}

/*
 * A polled bio: a slot and its SQE, prepared for the next poller to send.
 * With every slot busy, wait without poll_lock, polling if polled bios hold
 * slots (nobody else may be about to), else for the completion thread.
 */
static void submit_polled(struct uring_disk *ud, struct bio *bio)
{
	struct bio_list done;

	bio_list_init(&done);
	for (;;) {
		pthread_mutex_lock(&ud->poll_lock);
		pthread_mutex_lock(&ud->lock);
		if (ud->free)
			break;
		pthread_mutex_unlock(&ud->poll_lock);
		if (ud->nr_polled) {
			pthread_mutex_unlock(&ud->lock);
			poll_reap(ud, true);
		} else {
			pthread_cond_wait(&ud->cond, &ud->lock);
			pthread_mutex_unlock(&ud->lock);
		}
	}
	ud->nr_bios++;
	start(ud, bio, &done);
	pthread_mutex_unlock(&ud->lock);
	pthread_mutex_unlock(&ud->poll_lock);
	end_all(ud, &done);
}

static void uring_submit_bio(struct bio *bio)
{
	struct uring_disk *ud = bio->bi_bdev->bd_disk->private_data;
	struct bio_list done;

	bio = bio_split_to_limits(bio);
	if (!bio)
		return;
	bio_list_init(&done);
	/*
	 * On a completion thread, of this disk or of any other io_uring disk,
	 * nothing may wait for a slot: this disk's own thread is what frees
	 * them, and two disks' threads each submitting to the other (a stripe
	 * sending a REQ_PREFLUSH write's data on when the flushes end, a copy
	 * from one disk to another) would each wait for the other for ever.
	 * Such bios go to the backlog when every slot is busy, and are not
	 * polled (the completion thread cannot take poll_lock under lock, and
	 * must not wait for a poll either).
	 */
	if (completing)
		bio_clear_polled(bio);
	if (bio->bi_opf & REQ_POLLED) {
		submit_polled(ud, bio);
		return;
	}
	pthread_mutex_lock(&ud->lock);
	ud->nr_bios++;
	if (completing) {
		if (!ud->free || !bio_list_empty(&ud->backlog))
			bio_list_add(&ud->backlog, bio);
		else
			start(ud, bio, &done);
		/* This disk's own thread sends what it prepared at the top of
		 * its loop; another disk's thread must send it, since this
		 * disk's may be asleep with nothing else in flight. */
		if (completing != ud)
			flush_deferred(ud);
	} else {
		while (!ud->free)
			pthread_cond_wait(&ud->cond, &ud->lock);
		start(ud, bio, &done);
		/* A bio with nothing to do gave its slot straight back. */
		drain_backlog(ud, &done);
		flush_deferred(ud);
	}
	pthread_mutex_unlock(&ud->lock);
	end_all(ud, &done);
}

static void uring_free_disk(struct gendisk *disk)
{
	struct uring_disk *ud = disk->private_data;
	struct io_uring_sqe *sqe;

	pthread_mutex_lock(&ud->lock);
	if (completing == ud) {
		/* Waiting here would wait for this very bi_end_io. */
		ud->stop = ud->orphan = true;
		pthread_mutex_unlock(&ud->lock);
		pthread_detach(ud->thread);
		return;
	}
	while (ud->nr_bios) {
		if (ud->nr_polled) {
			/* Polled bios end only when someone polls. */
			pthread_mutex_unlock(&ud->lock);
			poll_reap(ud, true);
			pthread_mutex_lock(&ud->lock);
		} else {
			pthread_cond_wait(&ud->cond, &ud->lock);
		}
	}
	ud->stop = true;
	sqe = io_uring_get_sqe(&ud->ring);
	io_uring_prep_nop(sqe);
	io_uring_sqe_set_data(sqe, NULL);
	ring_submit(&ud->ring);
	pthread_mutex_unlock(&ud->lock);
	pthread_join(ud->thread, NULL);
	destroy(ud);
}

static int uring_poll_bio(struct bio *bio, struct io_comp_batch *iob, unsigned int flags)
{
	(void)iob;
	return poll_reap(bio->bi_bdev->bd_disk->private_data, !(flags & BLK_POLL_ONESHOT));
}

static const struct block_device_operations uring_fops = {
	.submit_bio = uring_submit_bio,
	.free_disk = uring_free_disk,
	.poll_bio = uring_poll_bio,
};

struct gendisk *bvec_uring_disk_create(int fd, const struct queue_limits *lim,
				       unsigned int queue_depth)
{
	struct uring_disk *ud;
	struct gendisk *disk;
	struct queue_limits l;
	struct stat st;
	unsigned int i;
	int ret;

	if (!bvec__fd_usable(fd, &st) || queue_depth > URING_MAX_DEPTH) {
		bvec__set_errno(EINVAL);
		return NULL;
	}
	if (!queue_depth)
		queue_depth = URING_DEFAULT_DEPTH;
	if (lim)
		l = *lim;
	else
		blk_set_stacking_limits(&l);
	/* The page cache (or the device's) is a volatile write cache. */
	l.features |= BLK_FEAT_WRITE_CACHE | BLK_FEAT_FUA | BLK_FEAT_POLL;
	/* Submission waits for a free slot (and a poller) when the ring is
	 * full, so REQ_NOWAIT must be refused before it gets here. */
	l.features &= ~BLK_FEAT_NOWAIT;
	/* bio_split_to_limits() then cuts bios so one SQE carries each. */
	if (l.max_segments > URING_MAX_IOV)
		l.max_segments = URING_MAX_IOV;
	disk = blk_alloc_disk(&l, -1);
	if (!disk)
		return NULL;
	ud = calloc(1, sizeof(*ud) + queue_depth * sizeof(ud->slots[0]));
	if (!ud) {
		put_disk(disk);
		bvec__set_errno(ENOMEM);
		return NULL;
	}
	ud->fd = fd;
	ud->depth = queue_depth;
	bio_list_init(&ud->backlog);
	for (i = 0; i < queue_depth; i++) {
		ud->slots[i].iov = ud->slots[i].inline_iov;
		ud->slots[i].iov_cap = URING_INLINE_IOV;
		ud->slots[i].next_free = i + 1 < queue_depth ? &ud->slots[i + 1] : NULL;
	}
	ud->free = &ud->slots[0];
	/* A CQ twice the SQ (liburing's default) leaves room for put_disk()'s
	 * wake-up on top of a full set of slots. */
	ud->efd = eventfd(0, EFD_CLOEXEC);
	if (ud->efd < 0) {
		ret = -errno;
		goto fail;
	}
	ret = io_uring_queue_init(queue_depth, &ud->ring, 0);
	if (ret < 0)
		goto fail_efd;
	ret = io_uring_queue_init(queue_depth, &ud->pring, 0);
	if (ret < 0) {
		io_uring_queue_exit(&ud->ring);
		goto fail_efd;
	}
	/* Only the valgrind way of waiting reads it (wait_cqe()). */
	if (under_valgrind()) {
		ret = io_uring_register_eventfd(&ud->ring, ud->efd);
		if (ret < 0)
			goto fail_ring;
	}
	ret = -pthread_mutex_init(&ud->lock, NULL);
	if (ret)
		goto fail_ring;
	ret = -pthread_mutex_init(&ud->poll_lock, NULL);
	if (ret)
		goto fail_lock;
	ret = -pthread_cond_init(&ud->cond, NULL);
	if (ret)
		goto fail_poll_lock;
	ret = -pthread_create(&ud->thread, NULL, completion_thread, ud);
	if (ret)
		goto fail_cond;
	disk->fops = &uring_fops;
	disk->private_data = ud;
	strncpy(disk->disk_name, "uring", sizeof(disk->disk_name) - 1);
	set_capacity(disk, bvec__fd_sectors(fd, &st));
	return disk;

fail_cond:
	pthread_cond_destroy(&ud->cond);
fail_poll_lock:
	pthread_mutex_destroy(&ud->poll_lock);
fail_lock:
	pthread_mutex_destroy(&ud->lock);
fail_ring:
	io_uring_queue_exit(&ud->pring);
	io_uring_queue_exit(&ud->ring);
fail_efd:
	close(ud->efd);
fail:
	free(ud);
	put_disk(disk);
	bvec__set_errno(-ret);
	return NULL;
}

void bvec__uring_disk_set_max_io(struct gendisk *disk, unsigned int bytes)
{
	struct uring_disk *ud = disk->private_data;

	pthread_mutex_lock(&ud->lock);
	ud->max_io = bytes;
	pthread_mutex_unlock(&ud->lock);
}

void bvec__uring_disk_stats(struct gendisk *disk, struct bvec__uring_stats *st)
{
	struct uring_disk *ud = disk->private_data;

	pthread_mutex_lock(&ud->lock);
	*st = ud->stats;
	st->fixed_in_flight = ud->fixed_in_flight;
	pthread_mutex_unlock(&ud->lock);
}

static int cmp_buf(const void *a, const void *b)
{
	uintptr_t x = ((const struct reg_buf *)a)->start, y = ((const struct reg_buf *)b)->start;

	return x < y ? -1 : x > y;
}

int bvec_uring_disk_register_buffers(struct gendisk *disk, const struct iovec *iov,
				     unsigned int nr)
{
	struct uring_disk *ud;
	struct reg_buf *bufs;
	unsigned int i;
	int ret;

	if (!disk || disk->fops != &uring_fops || !iov || !nr || nr > URING_MAX_BUFS)
		return -EINVAL;
	ud = disk->private_data;
	bufs = malloc(nr * sizeof(*bufs));
	if (!bufs)
		return -ENOMEM;
	for (i = 0; i < nr; i++) {
		bufs[i].start = (uintptr_t)iov[i].iov_base;
		bufs[i].len = iov[i].iov_len;
		bufs[i].index = i;
		if (!bufs[i].start || !bufs[i].len || bufs[i].len > UINTPTR_MAX - bufs[i].start) {
			free(bufs);
			return -EINVAL;
		}
	}
	qsort(bufs, nr, sizeof(*bufs), cmp_buf);
	/* find_buf() looks at one candidate: the last that starts below. */
	for (i = 1; i < nr; i++)
		if (bufs[i].start - bufs[i - 1].start < bufs[i - 1].len) {
			free(bufs);
			return -EINVAL;
		}
	pthread_mutex_lock(&ud->lock);
	ret = ud->bufs ? -EBUSY : io_uring_register_buffers(&ud->ring, iov, nr);
	if (!ret) {
		ud->bufs = bufs;
		ud->nr_bufs = nr;
		bufs = NULL;
	}
	pthread_mutex_unlock(&ud->lock);
	free(bufs);
	return ret;
}

int bvec_uring_disk_unregister_buffers(struct gendisk *disk)
{
	struct uring_disk *ud;
	int ret = 0;

	if (!disk || disk->fops != &uring_fops)
		return -EINVAL;
	ud = disk->private_data;
	pthread_mutex_lock(&ud->lock);
	if (!ud->bufs) {
		ret = -ENXIO;
	} else if (completing == ud && ud->fixed_in_flight) {
		ret = -EBUSY;
	} else {
		/* New SQEs stop using them now; the kernel must not unpin
		 * pages a READ_FIXED/WRITE_FIXED in flight still reads. */
		ud->nr_bufs = 0;
		while (ud->fixed_in_flight)
			pthread_cond_wait(&ud->cond, &ud->lock);
		if (!ud->bufs) {
			ret = -ENXIO;	/* another caller got here first */
		} else {
			ret = io_uring_unregister_buffers(&ud->ring);
			free(ud->bufs);
			ud->bufs = NULL;
		}
	}
	pthread_mutex_unlock(&ud->lock);
	return ret;
}

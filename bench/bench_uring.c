// SPDX-License-Identifier: MIT
/*
 * One point of bench/uring_vs_fio.sh: I/O through bios on the io_uring disk
 * (or the synchronous file disk) over FILE opened O_DIRECT, for SECONDS.
 *
 *   bench_uring FILE randread|randwrite|read|write BS QD SECONDS [MODE]
 *
 * Prints "IOPS,MB/s".  On the io_uring disk, QD bios are kept in flight the
 * way fio's io_uring engine keeps its depth: each bi_end_io (on the
 * completion thread) submits the next I/O, so one thread reaps and submits.
 * The file disk completes inside submit_bio(), so one thread gets queue
 * depth 1 from it; "file" runs that one thread whatever QD says (what a
 * storage engine gets from one thread), "fileN" runs QD threads, each
 * submitting its own bios one after another (depth QD through QD threads).
 * On the io_uring disk, MODE "uring" (the default) is the above, "fixed" the
 * same with the QD buffers registered (bvec_uring_disk_register_buffers(),
 * so each bio goes as READ_FIXED/WRITE_FIXED), and "wait" and "poll" run QD
 * threads that each loop on submit_bio_wait(), the "poll" ones with
 * REQ_POLLED so that each thread reaps its own completion.
 */
#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <libbvec/blkdev.h>

struct unit {
	struct bench *b;
	unsigned char *buf;
	uint64_t rng;
	uint64_t seq;
};

struct bench {
	struct gendisk *disk;
	enum req_op op;
	bool random;
	unsigned int bs;
	uint64_t blocks;	/* bs-sized blocks in the file */
	_Atomic uint64_t next_seq; /* sequential: next block */
	bool sync;		/* the file disk: completes inside submit_bio() */
	blk_opf_t wait_flags;	/* "wait"/"poll": submit_bio_wait() with these */
	_Atomic bool stop;
	_Atomic unsigned long done;
	unsigned int busy;
	int error;
	pthread_mutex_t lock;
	pthread_cond_t idle;
};

static uint64_t next_block(struct bench *b, struct unit *u)
{
	if (!b->random)
		return atomic_fetch_add_explicit(&b->next_seq, 1, memory_order_relaxed) % b->blocks;
	u->rng ^= u->rng >> 12;
	u->rng ^= u->rng << 25;
	u->rng ^= u->rng >> 27;
	return (u->rng * 2685821657736338717ull) % b->blocks;
}

static void end_io(struct bio *bio);

static void submit(struct unit *u)
{
	struct bench *b = u->b;
	struct bio *bio = bio_alloc(b->disk->part0, 1, b->op, GFP_KERNEL);

	bio_add_virt(bio, u->buf, b->bs);
	bio->bi_iter.bi_sector = next_block(b, u) * (b->bs >> 9);
	bio->bi_private = u;
	bio->bi_end_io = end_io;
	submit_bio(bio);
}

static void end_io(struct bio *bio)
{
	struct unit *u = bio->bi_private;
	struct bench *b = u->b;

	if (bio->bi_status)
		b->error = blk_status_to_errno(bio->bi_status);
	bio_put(bio);
	atomic_fetch_add_explicit(&b->done, 1, memory_order_relaxed);
	if (b->sync)
		return;
	if (!atomic_load(&b->stop) && !b->error) {
		submit(u);
		return;
	}
	pthread_mutex_lock(&b->lock);
	if (!--b->busy)
		pthread_cond_signal(&b->idle);
	pthread_mutex_unlock(&b->lock);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One thread of "wait" and "poll": one bio at a time, waited for. */
static void wait_one(struct unit *u)
{
	struct bench *b = u->b;
	struct bio *bio = bio_alloc(b->disk->part0, 1, b->op | b->wait_flags, GFP_KERNEL);
	int ret;

	bio_add_virt(bio, u->buf, b->bs);
	bio->bi_iter.bi_sector = next_block(b, u) * (b->bs >> 9);
	ret = submit_bio_wait(bio);
	if (ret)
		b->error = ret;
	bio_put(bio);
	atomic_fetch_add_explicit(&b->done, 1, memory_order_relaxed);
}

struct sync_arg {
	struct unit *u;
	double t0, secs;
};

/* One thread of the file disk: each submit_bio() completes before it returns. */
static void *sync_thread(void *p)
{
	struct sync_arg *a = p;
	struct bench *b = a->u->b;
	unsigned int i;

	while (now() - a->t0 < a->secs && !b->error)
		for (i = 0; i < 16; i++) {
			if (b->sync)
				submit(a->u);
			else
				wait_one(a->u);
		}
	return NULL;
}

static void usage(void)
{
	fprintf(stderr, "usage: bench_uring FILE randread|randwrite|read|write BS QD SECONDS [uring|file|fileN]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct bench b = { .busy = 0 };
	struct queue_limits lim = { .logical_block_size = 512 };
	struct unit *units;
	unsigned int qd, i, threads = 1;
	double secs, t0, t;
	bool sync_disk;
	const char *mode = argc == 7 ? argv[6] : "uring";
	bool threaded;
	struct stat st;
	int fd;

	if (argc < 6 || argc > 7)
		usage();
	b.random = !strncmp(argv[2], "rand", 4);
	if (!strcmp(argv[2] + (b.random ? 4 : 0), "read"))
		b.op = REQ_OP_READ;
	else if (!strcmp(argv[2] + (b.random ? 4 : 0), "write"))
		b.op = REQ_OP_WRITE;
	else
		usage();
	b.bs = (unsigned int)strtoul(argv[3], NULL, 0);
	qd = (unsigned int)strtoul(argv[4], NULL, 0);
	secs = strtod(argv[5], NULL);
	sync_disk = b.sync = !strcmp(mode, "file") || !strcmp(mode, "fileN");
	threaded = sync_disk || !strcmp(mode, "wait") || !strcmp(mode, "poll");
	if (!threaded && strcmp(mode, "uring") && strcmp(mode, "fixed"))
		usage();
	if (!strcmp(mode, "poll"))
		b.wait_flags = REQ_POLLED;
	if (!b.bs || b.bs % 4096 || !qd || qd > 4096 || secs <= 0)
		usage();
	fd = open(argv[1], (b.op == REQ_OP_READ ? O_RDONLY : O_RDWR) | O_DIRECT);
	if (fd < 0 || fstat(fd, &st)) {
		fprintf(stderr, "bench_uring: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	b.blocks = (uint64_t)st.st_size / b.bs;
	if (!b.blocks) {
		fprintf(stderr, "bench_uring: %s is smaller than one block\n", argv[1]);
		return 1;
	}
	b.disk = sync_disk ? bvec_file_disk_create(fd, &lim) : bvec_uring_disk_create(fd, &lim, qd);
	if (!b.disk) {
		fprintf(stderr, "bench_uring: no disk: %s\n", strerror(errno));
		return errno == ENOSYS ? 77 : 1;
	}
	pthread_mutex_init(&b.lock, NULL);
	pthread_cond_init(&b.idle, NULL);
	units = calloc(qd, sizeof(*units));
	for (i = 0; i < qd; i++) {
		units[i].b = &b;
		units[i].rng = 0x9E3779B97F4A7C15ull * (i + 1);
		if (posix_memalign((void **)&units[i].buf, 4096, b.bs))
			return 1;
		memset(units[i].buf, (int)i, b.bs);
	}
	if (!strcmp(mode, "fixed")) {
		struct iovec *iov = calloc(qd, sizeof(*iov));
		int ret;

		for (i = 0; i < qd; i++)
			iov[i] = (struct iovec){ units[i].buf, b.bs };
		ret = bvec_uring_disk_register_buffers(b.disk, iov, qd);
		free(iov);
		if (ret) {
			fprintf(stderr, "bench_uring: register buffers: %s\n", strerror(-ret));
			return 1;
		}
	}
	t0 = now();
	if (threaded) {
		struct sync_arg *args = calloc(qd, sizeof(*args));
		pthread_t *th = calloc(qd, sizeof(*th));

		if (strcmp(mode, "file"))
			threads = qd;
		for (i = 0; i < threads; i++) {
			args[i] = (struct sync_arg){ .u = &units[i], .t0 = t0, .secs = secs };
			if (pthread_create(&th[i], NULL, sync_thread, &args[i]))
				return 1;
		}
		for (i = 0; i < threads; i++)
			pthread_join(th[i], NULL);
		free(args);
		free(th);
	} else {
		b.busy = qd;
		for (i = 0; i < qd; i++)
			submit(&units[i]);
		while (now() - t0 < secs)
			usleep(10000);
	}
	atomic_store(&b.stop, true);
	pthread_mutex_lock(&b.lock);
	while (!threaded && b.busy)
		pthread_cond_wait(&b.idle, &b.lock);
	pthread_mutex_unlock(&b.lock);
	t = now() - t0;
	put_disk(b.disk);
	close(fd);
	if (b.error) {
		fprintf(stderr, "bench_uring: I/O error: %s\n", strerror(-b.error));
		return 1;
	}
	printf("%.0f,%.1f\n", (double)atomic_load(&b.done) / t,
	       (double)atomic_load(&b.done) * b.bs / t / 1e6);
	for (i = 0; i < qd; i++)
		free(units[i].buf);
	free(units);
	return 0;
}

// SPDX-License-Identifier: MIT
// cc uring_copy.c $(pkg-config --cflags --libs libbvec) -pthread -o uring_copy
/*
 * Copy a file through bios at queue depth 32: uring_copy SRC DST.  With no
 * arguments it copies a file of its own making and compares the two.
 *
 * Each of 32 buffers goes round a loop: a read bio on the source disk; its
 * bi_end_io (on the source's completion thread) submits a write bio over the
 * same buffer to the destination; that one's bi_end_io reads the next chunk.
 * The destination takes at most 128 KiB per bio, so the disk splits each
 * 1 MiB write and chains the parts; short transfers are resubmitted inside
 * the disk.  The source's last partial sector is read past the end of the
 * file, where the disk returns zeroes; DST is cut to SRC's size at the end.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libbvec/blkdev.h>

#define DEPTH 32
#define CHUNK (1u << 20)

struct copy {
	struct gendisk *src, *dst;
	uint64_t size;		/* bytes to copy, rounded up to a sector */
	uint64_t next;		/* next offset to read; under lock */
	unsigned int busy;	/* buffers still going round */
	int error;
	pthread_mutex_t lock;
	pthread_cond_t idle;
};

struct buffer {
	struct copy *c;
	unsigned char *mem;
	uint64_t off;
	unsigned int len;
};

static void start_read(struct buffer *b);

static void finish(struct buffer *b, struct bio *bio)
{
	struct copy *c = b->c;

	pthread_mutex_lock(&c->lock);
	if (bio->bi_status && !c->error)
		c->error = blk_status_to_errno(bio->bi_status);
	pthread_mutex_unlock(&c->lock);
	bio_put(bio);
}

static void write_done(struct bio *bio)
{
	struct buffer *b = bio->bi_private;

	finish(b, bio);
	start_read(b);
}

static void read_done(struct bio *bio)
{
	struct buffer *b = bio->bi_private;
	struct bio *w;

	finish(b, bio);
	w = bio_alloc(b->c->dst->part0, 1, REQ_OP_WRITE, GFP_KERNEL);
	bio_add_virt(w, b->mem, b->len);
	w->bi_iter.bi_sector = b->off >> 9;
	w->bi_private = b;
	w->bi_end_io = write_done;
	submit_bio(w);
}

/* Take the next chunk and read it, or retire the buffer when none is left. */
static void start_read(struct buffer *b)
{
	struct copy *c = b->c;
	struct bio *bio;

	pthread_mutex_lock(&c->lock);
	if (c->next >= c->size || c->error) {
		if (!--c->busy)
			pthread_cond_signal(&c->idle);
		pthread_mutex_unlock(&c->lock);
		return;
	}
	b->off = c->next;
	b->len = c->size - c->next < CHUNK ? (unsigned int)(c->size - c->next) : CHUNK;
	c->next += b->len;
	pthread_mutex_unlock(&c->lock);

	bio = bio_alloc(c->src->part0, 1, REQ_OP_READ, GFP_KERNEL);
	bio_add_virt(bio, b->mem, b->len);
	bio->bi_iter.bi_sector = b->off >> 9;
	bio->bi_private = b;
	bio->bi_end_io = read_done;
	submit_bio(bio);
}

/* The io_uring disk, or where this libbvec was built without it, the
 * synchronous file disk: the same bios work on both. */
static struct gendisk *open_disk(int fd, const struct queue_limits *lim)
{
	struct gendisk *disk = bvec_uring_disk_create(fd, lim, DEPTH);

	if (!disk && errno == ENOSYS) {
		fprintf(stderr, "uring_copy: no io_uring here; using the file disk\n");
		disk = bvec_file_disk_create(fd, lim);
	}
	return disk;
}

static int copy_fd(int in, int out)
{
	struct queue_limits dst_lim = { .max_sectors = 256 }; /* 128 KiB */
	struct buffer bufs[DEPTH];
	struct copy c = { .busy = DEPTH };
	struct stat st;
	struct bio *flush;
	unsigned int i;

	if (fstat(in, &st))
		return -errno;
	c.size = ((uint64_t)st.st_size + 511) & ~(uint64_t)511;
	if (ftruncate(out, (off_t)c.size))
		return -errno;
	c.src = open_disk(in, NULL);
	c.dst = open_disk(out, &dst_lim);
	if (!c.src || !c.dst) {
		c.error = -errno;
		put_disk(c.src);
		put_disk(c.dst);
		return c.error;
	}
	/* Cover the partial last sector: the disk reads zeroes past the end. */
	set_capacity(c.src, c.size >> 9);
	pthread_mutex_init(&c.lock, NULL);
	pthread_cond_init(&c.idle, NULL);
	for (i = 0; i < DEPTH; i++) {
		bufs[i].c = &c;
		bufs[i].mem = malloc(CHUNK);
		if (!bufs[i].mem)
			abort();
	}
	for (i = 0; i < DEPTH; i++)
		start_read(&bufs[i]);
	pthread_mutex_lock(&c.lock);
	while (c.busy)
		pthread_cond_wait(&c.idle, &c.lock);
	pthread_mutex_unlock(&c.lock);

	/* Durable before we say so: an empty write with REQ_PREFLUSH. */
	flush = bio_alloc(c.dst->part0, 0, REQ_OP_WRITE | REQ_PREFLUSH, GFP_KERNEL);
	if (!c.error)
		c.error = submit_bio_wait(flush);
	bio_put(flush);
	put_disk(c.src);
	put_disk(c.dst);
	for (i = 0; i < DEPTH; i++)
		free(bufs[i].mem);
	pthread_cond_destroy(&c.idle);
	pthread_mutex_destroy(&c.lock);
	if (!c.error && ftruncate(out, st.st_size))
		c.error = -errno;
	return c.error;
}

static int copy_path(const char *src, const char *dst)
{
	int in = open(src, O_RDONLY), out, ret;

	if (in < 0) {
		fprintf(stderr, "uring_copy: %s: %s\n", src, strerror(errno));
		return -1;
	}
	out = open(dst, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (out < 0) {
		fprintf(stderr, "uring_copy: %s: %s\n", dst, strerror(errno));
		close(in);
		return -1;
	}
	ret = copy_fd(in, out);
	if (ret)
		fprintf(stderr, "uring_copy: %s -> %s: %s\n", src, dst, strerror(-ret));
	close(in);
	close(out);
	return ret;
}

/* No arguments: 40 MiB and a bit of known bytes, copied and compared. */
static int self_test(void)
{
	char src[] = "/tmp/uring_copy-src-XXXXXX", dst[] = "/tmp/uring_copy-dst-XXXXXX";
	const size_t size = 40 * CHUNK + 1234;
	unsigned char *a = malloc(size), *b = malloc(size);
	int in = mkstemp(src), out = mkstemp(dst), ok = 0;
	uint32_t x = 12345;
	size_t i;

	if (!a || !b || in < 0 || out < 0)
		return 1;
	close(out);
	for (i = 0; i < size; i++) {
		x = x * 1103515245u + 12345u;
		a[i] = (unsigned char)(x >> 16);
	}
	if (write(in, a, size) == (ssize_t)size && !copy_path(src, dst)) {
		out = open(dst, O_RDONLY);
		ok = out >= 0 && read(out, b, size) == (ssize_t)size &&
		     read(out, b, 1) == 0 && !memcmp(a, b, size);
		close(out);
	}
	printf("copied %zu bytes through bios: %s\n", size, ok ? "identical" : "DIFFERENT");
	close(in);
	unlink(src);
	unlink(dst);
	free(a);
	free(b);
	return !ok;
}

int main(int argc, char **argv)
{
	if (argc == 1)
		return self_test();
	if (argc != 3) {
		fprintf(stderr, "usage: uring_copy [SRC DST]\n");
		return 2;
	}
	return copy_path(argv[1], argv[2]) ? 1 : 0;
}

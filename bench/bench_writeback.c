// SPDX-License-Identifier: MIT
/*
 * zram's writeback tier on a page corpus (anon-64m.bin):
 *
 *   bench_writeback CORPUS [DIR]
 *
 * The corpus is written to a zram device whose backing file is made in DIR
 * (default: the current directory), opened O_DIRECT where the filesystem
 * allows it so that reads and writes reach the disk, not the page cache.
 *
 * 1. Memory: mm_stat before and after "echo all > idle; echo idle >
 *    writeback" (and a compaction), with bd_stat.
 * 2. Read latency, p50 and p99 of one-page reads of random pages, while
 *    they are in memory and once they are written back.
 * 3. Writeback throughput with the io_uring disk (bios complete on its own
 *    thread): batch size 32, Linux 6.19's default, against 1, which is what
 *    Linux 6.12-6.18 do (one synchronous page at a time).  Skipped without
 *    liburing.
 * 4. What a writeback budget buys: every page offered (ZRAM_WB_ALL) under a
 *    budget of an eighth, a quarter and half of the pages, and the memory
 *    each frees.  A page costs one page of budget whatever its object's
 *    size, so the order pages are taken in decides it (largest first, as
 *    Linux since 6.13).
 *
 * Exit 77 when the corpus is missing.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libbvec/zram.h>

#define PG BVEC_PAGE_SIZE
#define SAMPLES 20000

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int io(struct zram *z, blk_opf_t op, uint64_t page, void *mem)
{
	struct bio_vec bv;
	struct bio bio;

	bio_init(&bio, zram_disk(z)->part0, &bv, 1, op);
	bio.bi_iter.bi_sector = page * (PG >> 9);
	bio_add_virt(&bio, mem, PG);
	return submit_bio_wait(&bio);
}

static void write_all(struct zram *z, const unsigned char *data, size_t pages)
{
	size_t i;

	for (i = 0; i < pages; i++)
		if (io(z, REQ_OP_WRITE, i, (void *)(data + i * PG))) {
			fprintf(stderr, "write of page %zu failed\n", i);
			exit(1);
		}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* p50 and p99 of one-page reads of @n random stored pages, in microseconds. */
static void read_latency(struct zram *z, const unsigned char *data, size_t pages,
			 const char *what)
{
	static double t[SAMPLES];
	unsigned char *buf = aligned_alloc(PG, PG);
	unsigned long long seed = 42;
	size_t i;

	for (i = 0; i < SAMPLES; i++) {
		size_t p;
		double t0;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		p = (size_t)(seed >> 33) % pages;
		t0 = now();
		if (io(z, REQ_OP_READ, p, buf) || memcmp(buf, data + p * PG, PG)) {
			fprintf(stderr, "read of page %zu failed or differs\n", p);
			exit(1);
		}
		t[i] = (now() - t0) * 1e6;
	}
	qsort(t, SAMPLES, sizeof(t[0]), cmp_double);
	printf("read latency, %-22s p50 %8.1f us   p99 %8.1f us   (%d random one-page reads)\n",
	       what, t[SAMPLES / 2], t[SAMPLES * 99 / 100], SAMPLES);
	free(buf);
}

static void show(struct zram *z, const char *when)
{
	struct zpool_stats st;
	struct zram_bd_stat bd;

	zram_mm_stat(z, &st);
	zram_bd_stat(z, &bd);
	printf("%-28s orig %6.1f MiB  compr %6.1f MiB  mem_used_total %6.1f MiB  "
	       "bd_count %6.1f MiB\n",
	       when, st.orig_data_size / 1048576.0, st.compr_data_size / 1048576.0,
	       st.mem_used_total / 1048576.0, bd.bd_count * 4096 / 1048576.0);
}

static struct zram *device(size_t pages)
{
	struct zram_config cfg = ZRAM_CONFIG_INIT;
	struct zram *z;

	cfg.disksize = (uint64_t)pages * PG;
	z = zram_create(&cfg);
	if (!z) {
		perror("zram_create");
		exit(1);
	}
	return z;
}

/* A fresh device over @disk, written, then written back under a budget of @num/@den. */
static void budget(struct gendisk *disk, const unsigned char *data, size_t pages,
		   unsigned int num, unsigned int den)
{
	const uint64_t units = PG >= 4096 ? PG / 4096 : 1; /* Linux's 4 KiB units */
	struct zpool_stats before, after;
	struct zram *z = device(pages);
	int64_t n;

	if (zram_set_backing(z, disk)) {
		fprintf(stderr, "cannot set up the device\n");
		exit(1);
	}
	write_all(z, data, pages);
	zram_mm_stat(z, &before);
	zram_set_writeback_limit_enable(z, true);
	zram_set_writeback_limit(z, (uint64_t)pages * num / den * units);
	n = zram_writeback(z, ZRAM_WB_ALL, 0, UINT64_MAX);
	zram_compact(z);
	zram_mm_stat(z, &after);
	printf("  %u/%u: %6zu pages: compr_data_size %5.1f%% freed, mem_used_total %5.1f%% freed%s\n",
	       num, den, pages * num / den,
	       100.0 * ((double)before.compr_data_size - (double)after.compr_data_size) /
	       (double)before.compr_data_size,
	       100.0 * ((double)before.mem_used_total - (double)after.mem_used_total) /
	       (double)before.mem_used_total,
	       n == -EIO ? "" : " (the budget was not spent)");
	zram_destroy(z);
}

/* Write everything, mark it idle, time the writeback of it all. */
static double timed_writeback(struct zram *z, const unsigned char *data, size_t pages,
			      int64_t *n)
{
	double t0;

	write_all(z, data, pages);
	zram_idle_mark(z, 0);
	t0 = now();
	*n = zram_writeback(z, ZRAM_WB_IDLE, 0, UINT64_MAX);
	return now() - t0;
}

int main(int argc, char **argv)
{
	const char *dir = argc > 2 ? argv[2] : ".";
	unsigned char *data;
	char path[4096];
	size_t pages, len;
	struct gendisk *disk;
	struct zram *z;
	struct queue_limits lim;
	int fd, direct = 1;
	int64_t n;
	double t;
	FILE *f;

	if (argc < 2 || !(f = fopen(argv[1], "rb"))) {
		fprintf(stderr, "usage: bench_writeback CORPUS [DIR] (corpus missing)\n");
		return 77;
	}
	fseek(f, 0, SEEK_END);
	len = (size_t)ftell(f) / PG * PG;
	rewind(f);
	data = aligned_alloc(PG, len);
	if (!data || fread(data, 1, len, f) != len) {
		fprintf(stderr, "cannot read %s\n", argv[1]);
		return 1;
	}
	fclose(f);
	pages = len / PG;
	snprintf(path, sizeof(path), "%s/bench_writeback.backing", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0600);
	if (fd < 0) {
		direct = 0;
		fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	}
	if (fd < 0 || ftruncate(fd, (off_t)len)) {
		perror(path);
		return 1;
	}
	unlink(path);
	blk_set_stacking_limits(&lim);
	lim.logical_block_size = 4096; /* O_DIRECT alignment */
	printf("corpus %s: %zu pages of %u bytes; backing file in %s%s\n\n", argv[1], pages,
	       (unsigned int)PG, dir, direct ? " (O_DIRECT)" : " (page cache: no O_DIRECT here)");

	z = device(pages);
	disk = bvec_file_disk_create(fd, &lim);
	if (!disk || zram_set_backing(z, disk)) {
		fprintf(stderr, "cannot make the backing disk\n");
		return 1;
	}
	write_all(z, data, pages);
	show(z, "written:");
	read_latency(z, data, pages, "in memory:");
	zram_idle_mark(z, 0);
	t = now();
	n = zram_writeback(z, ZRAM_WB_IDLE, 0, UINT64_MAX);
	t = now() - t;
	show(z, "after idle writeback:");
	zram_compact(z);
	show(z, "after compaction:");
	printf("writeback: %lld pages in %.2f s on the file disk (synchronous, one at a time)\n",
	       (long long)n, t);
	read_latency(z, data, pages, "written back:");
	zram_destroy(z);
	printf("\nwhat a writeback budget frees (every page offered, the budget a share of them):\n");
	budget(disk, data, pages, 1, 8);
	budget(disk, data, pages, 1, 4);
	budget(disk, data, pages, 1, 2);
	put_disk(disk);

	disk = bvec_uring_disk_create(fd, &lim, 64);
	if (!disk) {
		printf("\nbatching: skipped (no io_uring disk in this build: %s)\n", strerror(errno));
		return 0;
	}
	printf("\nwriteback throughput on the io_uring disk (%zu MiB, every page idle):\n",
	       len >> 20);
	for (unsigned int batch = 1; batch <= 32; batch *= 32) {
		z = device(pages);
		if (zram_set_backing(z, disk) || zram_set_writeback_batch_size(z, batch)) {
			fprintf(stderr, "cannot set up the device\n");
			return 1;
		}
		t = timed_writeback(z, data, pages, &n);
		printf("  batch %2u: %lld pages in %.3f s: %7.1f MiB/s, %8.0f pages/s\n", batch,
		       (long long)n, t, (double)n * PG / 1048576.0 / t, (double)n / t);
		if (batch > 1)
			read_latency(z, data, pages, "written back (uring):");
		zram_destroy(z);
	}
	put_disk(disk);
	close(fd);
	free(data);
	return 0;
}

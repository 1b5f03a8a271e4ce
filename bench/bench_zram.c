// SPDX-License-Identifier: MIT
/*
 * The zram device through bios, on a page corpus and on zero pages:
 *
 *   bench_zram CORPUS [RUNS]
 *
 * Each input (the corpus, then as many bytes of zeroes) is written to a new
 * device in 1 MiB bios, read back and compared, RUNS times (default 5); it
 * prints the last run's mm_stat, bytes of memory per page and the best
 * write and read throughput.  The zero pages show what a page that is only
 * a mark in its slot costs: the slot table, nothing in the pool.  The
 * kernel's figure for the same zeroes: dd if=ZEROES of=/dev/zram0 bs=1M
 * oflag=direct, then /sys/block/zram0/mm_stat (which leaves its slot table
 * out).
 *
 * Exit 77 when the corpus is missing.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libbvec/zram.h>

#define CHUNK (1u << 20)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int io(struct zram *z, blk_opf_t op, size_t off, unsigned char *buf, size_t len)
{
	struct bio_vec bv;
	struct bio bio;

	bio_init(&bio, zram_disk(z)->part0, &bv, 1, op);
	bio.bi_iter.bi_sector = off >> BVEC_SECTOR_SHIFT;
	if (bio_add_virt(&bio, buf, (unsigned int)len) != (int)len)
		return -EINVAL;
	return submit_bio_wait(&bio);
}

/* @size bytes at @data (a whole number of CHUNKs) through a device, @runs times. */
static int measure(const char *name, unsigned char *data, size_t size, int runs)
{
	unsigned char *out = malloc(size);
	double best_w = 1e30, best_r = 1e30, t;
	struct zpool_stats ms;
	char line[256];
	size_t off;
	int r, ret = 0;

	if (!out)
		return -ENOMEM;
	for (r = 0; r < runs && !ret; r++) {
		struct zram_config cfg = ZRAM_CONFIG_INIT;
		struct zram *z;

		cfg.disksize = size;
		z = zram_create(&cfg);
		if (!z) {
			ret = -ENOMEM;
			break;
		}
		t = now();
		for (off = 0; off < size && !ret; off += CHUNK)
			ret = io(z, REQ_OP_WRITE, off, data + off, CHUNK);
		t = now() - t;
		best_w = t < best_w ? t : best_w;
		t = now();
		for (off = 0; off < size && !ret; off += CHUNK)
			ret = io(z, REQ_OP_READ, off, out + off, CHUNK);
		t = now() - t;
		best_r = t < best_r ? t : best_r;
		if (!ret && memcmp(out, data, size))
			ret = -EIO;
		zram_mm_stat(z, &ms);
		zram_destroy(z);
	}
	free(out);
	if (ret) {
		fprintf(stderr, "bench_zram: %s: error %d\n", name, ret);
		return ret;
	}
	zram_format_mm_stat(&ms, line, sizeof(line));
	printf("%s: mm_stat %s", name, line);
	printf("%s: mem_used_total %llu bytes, %.1f a page; write %.0f MB/s, read %.0f MB/s "
	       "(best of %d)\n",
	       name, (unsigned long long)ms.mem_used_total,
	       (double)ms.mem_used_total / (double)(size / BVEC_PAGE_SIZE), (double)size / best_w / 1e6,
	       (double)size / best_r / 1e6, runs);
	return 0;
}

int main(int argc, char **argv)
{
	int runs = argc > 2 ? atoi(argv[2]) : 5;
	unsigned char *data;
	size_t size;
	FILE *f;
	int ret;

	if (argc < 2 || runs < 1) {
		fprintf(stderr, "usage: bench_zram CORPUS [RUNS]\n");
		return 2;
	}
	f = fopen(argv[1], "rb");
	if (!f) {
		printf("skip: no corpus at %s\n", argv[1]);
		return 77;
	}
	fseek(f, 0, SEEK_END);
	size = (size_t)ftell(f) / CHUNK * CHUNK;
	rewind(f);
	data = size ? malloc(size) : NULL;
	if (!data || fread(data, 1, size, f) != size) {
		fprintf(stderr, "bench_zram: cannot read %s\n", argv[1]);
		return 1;
	}
	fclose(f);
	ret = measure("corpus", data, size, runs);
	memset(data, 0, size);
	if (!ret)
		ret = measure("zeroes", data, size, runs);
	free(data);
	return ret ? 1 : 0;
}

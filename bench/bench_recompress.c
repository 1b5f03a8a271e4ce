// SPDX-License-Identifier: MIT
/*
 * Recompression and trained dictionaries on a page corpus (anon-64m.bin):
 *
 *   bench_recompress CORPUS
 *
 * 1. Every page written with lz4, all marked idle, recompressed with zstd
 *    (zram_recompress, type=idle; it compacts after): compr_data_size and
 *    mem_used_total before and after, and the time it took.
 * 2. For zstd and lz4: a dictionary trained on the first half of the corpus
 *    (zram_train_dict, 64 KiB), the first half discarded, the second half
 *    written with it; its compression ratio (orig_data_size /
 *    compr_data_size) against the second half written with no dictionary,
 *    and the average object (compr_data_size per page not same-filled).
 *
 * Exit 77 when the corpus is missing or zstd was not built.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <libbvec/zram.h>

#define PG BVEC_PAGE_SIZE

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int io(struct zram *z, blk_opf_t op, uint64_t first, void *mem, size_t pages)
{
	struct bio_vec bv;
	struct bio bio;

	bio_init(&bio, zram_disk(z)->part0, &bv, 1, op);
	bio.bi_iter.bi_sector = first * (PG >> 9);
	if (mem)
		bio_add_virt(&bio, mem, (unsigned int)(pages * PG));
	else
		bio.bi_iter.bi_size = (unsigned int)(pages * PG);
	return submit_bio_wait(&bio);
}

/* Pages [@first, @first + @n) of @data into the same pages of @z. */
static void write_pages(struct zram *z, const unsigned char *data, uint64_t first, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (io(z, REQ_OP_WRITE, first + i, (void *)(data + (first + i) * PG), 1)) {
			fprintf(stderr, "write of page %zu failed\n", (size_t)(first + i));
			exit(1);
		}
}

static struct zram *device(const char *comp, size_t pages)
{
	struct zram_config cfg = ZRAM_CONFIG_INIT;
	struct zram *z;

	cfg.disksize = (uint64_t)pages * PG;
	cfg.pool.compressor = comp;
	z = zram_create(&cfg);
	if (!z) {
		perror("zram_create");
		exit(1);
	}
	return z;
}

static void recompress_idle(const unsigned char *data, size_t pages)
{
	struct zram_recompress_params p = ZRAM_RECOMPRESS_PARAMS_INIT;
	struct zram *z = device("lz4", pages);
	struct zpool_stats a, b;
	double t;
	int64_t n;

	write_pages(z, data, 0, pages);
	zram_compact(z);
	zram_mm_stat(z, &a);
	zram_idle_mark(z, 0);
	if (zram_set_recomp_algorithm(z, "zstd", 1)) {
		fprintf(stderr, "no zstd\n");
		exit(1);
	}
	p.type = ZRAM_RECOMP_IDLE;
	t = now();
	n = zram_recompress(z, &p);
	t = now() - t;
	zram_mm_stat(z, &b);
	printf("recompress idle lz4 -> zstd: %lld of %zu pages recompressed in %.2f s\n",
	       (long long)n, pages, t);
	printf("  compr_data_size %llu -> %llu (%.1f%%)\n",
	       (unsigned long long)a.compr_data_size, (unsigned long long)b.compr_data_size,
	       100.0 * ((double)b.compr_data_size / (double)a.compr_data_size - 1));
	printf("  mem_used_total  %llu -> %llu (%.1f%%)\n",
	       (unsigned long long)a.mem_used_total, (unsigned long long)b.mem_used_total,
	       100.0 * ((double)b.mem_used_total / (double)a.mem_used_total - 1));
	printf("csv,recompress,%s,%llu,%llu,%llu,%llu,%.3f\n", "lz4-zstd",
	       (unsigned long long)a.compr_data_size, (unsigned long long)b.compr_data_size,
	       (unsigned long long)a.mem_used_total, (unsigned long long)b.mem_used_total, t);
	zram_destroy(z);
}

static double ratio(const struct zpool_stats *s)
{
	return (double)s->orig_data_size / (double)s->compr_data_size;
}

/* Bytes per stored object: what a frame header costs shows here. */
static double per_object(const struct zpool_stats *s)
{
	uint64_t objs = s->orig_data_size / PG - s->same_pages;

	return objs ? (double)s->compr_data_size / (double)objs : 0;
}

static void dict_gain(const char *comp, const unsigned char *data, size_t pages)
{
	size_t half = pages / 2;
	struct zram *plain = device(comp, pages), *dict = device(comp, pages);
	struct zpool_stats a, b;
	double t;
	int len;

	write_pages(plain, data, half, pages - half);
	zram_mm_stat(plain, &a);
	write_pages(dict, data, 0, half);
	t = now();
	len = zram_train_dict(dict, 0, 65536);
	t = now() - t;
	if (len < 0) {
		fprintf(stderr, "zram_train_dict: %d\n", len);
		exit(1);
	}
	io(dict, REQ_OP_DISCARD, 0, NULL, half);
	write_pages(dict, data, half, pages - half);
	zram_mm_stat(dict, &b);
	printf("%s dictionary (%d bytes, trained in %.2f s on the first half), second half:\n",
	       comp, len, t);
	printf("  ratio %.3f -> %.3f (%+.1f%%); compr_data_size %llu -> %llu; "
	       "mem_used_total %llu -> %llu\n", ratio(&a), ratio(&b),
	       100.0 * (ratio(&b) / ratio(&a) - 1),
	       (unsigned long long)a.compr_data_size, (unsigned long long)b.compr_data_size,
	       (unsigned long long)a.mem_used_total, (unsigned long long)b.mem_used_total);
	printf("  bytes per object %.1f -> %.1f\n", per_object(&a), per_object(&b));
	printf("csv,dict,%s,%d,%.4f,%.4f,%llu,%llu\n", comp, len, ratio(&a), ratio(&b),
	       (unsigned long long)a.mem_used_total, (unsigned long long)b.mem_used_total);
	zram_destroy(plain);
	zram_destroy(dict);
}

int main(int argc, char **argv)
{
	unsigned char *data;
	size_t pages, got;
	FILE *f;
	long size;

	if (argc < 2 || !(f = fopen(argv[1], "rb"))) {
		printf("no corpus (bench_recompress CORPUS)\n");
		return 77;
	}
	if (!zpool_has_compressor("zstd")) {
		printf("built without zstd\n");
		fclose(f);
		return 77;
	}
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	rewind(f);
	pages = (size_t)size / PG;
	data = malloc(pages * PG);
	if (!data || (got = fread(data, PG, pages, f)) != pages) {
		fprintf(stderr, "cannot read %s\n", argv[1]);
		return 1;
	}
	fclose(f);
	recompress_idle(data, pages);
	dict_gain("zstd", data, pages);
	dict_gain("lz4", data, pages);
	free(data);
	return 0;
}

// SPDX-License-Identifier: MIT
/* zram device: bios of every shape against a flat model, limits, stats. */
#include <pthread.h>
#include <stdio.h>

#include <libbvec/zram.h>

#include "pages.h"

#define DISK_PAGES 64
#define DISK_BYTES (DISK_PAGES * PG)

static struct zram *new_zram(uint64_t bytes, uint64_t limit)
{
	struct zram_config cfg = ZRAM_CONFIG_INIT;
	struct zram *z;

	cfg.disksize = bytes;
	cfg.mem_limit = limit;
	cfg.flags = ZPOOL_F_CHECKSUM;
	z = zram_create(&cfg);
	ck_assert_ptr_nonnull(z);
	return z;
}

/* One bio over @len bytes at @mem (any alignment), in 1 to 3 pieces. */
static int do_io(struct zram *z, blk_opf_t op, uint64_t byte_off, void *mem,
		 unsigned int len, unsigned int pieces)
{
	struct bio_vec table[3];
	struct bio bio;
	unsigned int i, done = 0;

	bio_init(&bio, zram_disk(z)->part0, table, 3, op);
	bio.bi_iter.bi_sector = byte_off >> 9;
	if (mem) {
		for (i = 0; i < pieces; i++) {
			unsigned int n = i == pieces - 1 ? len - done : len / pieces;

			/* A gap between pieces keeps them separate bvecs. */
			if (n)
				ck_assert_int_eq(bio_add_virt(&bio, (char *)mem + done + i, n), (int)n);
			if (i < pieces - 1)
				memmove((char *)mem + done + i + n + 1, (char *)mem + done + i + n,
					len - done - n);
			done += n;
		}
	} else {
		bio.bi_iter.bi_size = len;
	}
	return submit_bio_wait(&bio);
}

START_TEST(test_invalid_config)
{
	struct zram_config cfg = ZRAM_CONFIG_INIT;

	errno = 0;
	ck_assert_ptr_null(zram_create(&cfg));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(zram_create(NULL));
	cfg.disksize = 1 << 20;
	cfg.compressor = "nope";
	ck_assert_ptr_null(zram_create(&cfg));
	ck_assert_int_eq(errno, EINVAL);
	zram_destroy(NULL);
}
END_TEST

/* Random reads, writes, discards and zeroings against a flat model. */
START_TEST(test_model)
{
	struct zram *z = new_zram(DISK_BYTES - 1000, 0); /* rounds up to a page */
	unsigned char *model = calloc(1, DISK_BYTES);
	unsigned char *buf = malloc(3 * PG + 64), *got = malloc(3 * PG + 64);
	bool stored[DISK_PAGES] = { false };
	struct rng rng = { 4242 + (uint64_t)_i };
	unsigned int step, i;

	ck_assert_uint_eq(get_capacity(zram_disk(z)), DISK_BYTES / 512);
	for (step = 0; step < test_scale(3000); step++) {
		unsigned int sectors = rng_range(&rng, 1, (unsigned int)(2 * PG / 512));
		uint64_t start = (uint64_t)rng_range(&rng, 0, DISK_BYTES / 512 - sectors) * 512;
		unsigned int len = sectors * 512, op = rng_range(&rng, 0, 9);
		unsigned int pieces = rng_range(&rng, 1, 3);
		unsigned int mis = rng_range(&rng, 0, 7); /* memory misalignment */
		struct zram_mm_stat ms;
		uint64_t n_stored = 0;

		if (op < 4) {
			for (i = 0; i < len; i++)
				buf[mis + i] = (unsigned char)(rng_next(&rng) % (op == 0 ? 2 : 256));
			memcpy(model + start, buf + mis, len);
			ck_assert_int_eq(do_io(z, REQ_OP_WRITE, start, buf + mis, len, pieces), 0);
			for (i = (unsigned int)(start / PG); i <= (start + len - 1) / PG; i++)
				stored[i] = true;
		} else if (op < 8) {
			ck_assert_int_eq(do_io(z, REQ_OP_READ, start, got + mis, len, 1), 0);
			ck_assert_mem_eq(got + mis, model + start, len);
		} else {
			blk_opf_t o = op == 8 ? REQ_OP_DISCARD : REQ_OP_WRITE_ZEROES;
			uint64_t p;

			ck_assert_int_eq(do_io(z, o, start, NULL, len, 1), 0);
			memset(model + start, 0, len);
			for (p = (start + PG - 1) / PG; (p + 1) * PG <= start + len; p++)
				stored[p] = false;
		}
		zram_mm_stat(z, &ms);
		for (i = 0; i < DISK_PAGES; i++)
			n_stored += stored[i];
		ck_assert_uint_eq(ms.orig_data_size, n_stored * PG);
	}
	/* Everything, through one large bio. */
	free(got);
	got = malloc(DISK_BYTES + 8);
	ck_assert_int_eq(do_io(z, REQ_OP_READ, 0, got + 3, DISK_BYTES, 1), 0);
	ck_assert_mem_eq(got + 3, model, DISK_BYTES);
	zram_destroy(z);
	free(model);
	free(buf);
	free(got);
}
END_TEST

START_TEST(test_invalid_io)
{
	struct zram *z = new_zram(DISK_BYTES, 0);
	unsigned char buf[2048];
	struct zram_io_stat io;
	struct bio bio;

	ck_assert_int_eq(do_io(z, REQ_OP_WRITE, 0, buf, 700, 1), -EIO); /* not sectors */
	ck_assert_int_eq(do_io(z, REQ_OP_WRITE, DISK_BYTES - 512, buf, 1024, 1), -EIO);
	ck_assert_int_eq(do_io(z, REQ_OP_READ, DISK_BYTES, buf, 512, 1), -EIO);
	bio_init(&bio, zram_disk(z)->part0, NULL, 0, REQ_OP_FLUSH);
	ck_assert_int_eq(submit_bio_wait(&bio), 0);
	bio_init(&bio, zram_disk(z)->part0, NULL, 0, (blk_opf_t)7);
	ck_assert_int_eq(submit_bio_wait(&bio), -EOPNOTSUPP);
	zram_io_stat(z, &io);
	ck_assert_uint_eq(io.invalid_io, 4);
	ck_assert_uint_eq(io.failed_writes, 0);
	zram_destroy(z);
}
END_TEST

/* A write refused by mem_limit fails with EIO; old contents stay readable. */
START_TEST(test_mem_limit_keeps_old_data)
{
	struct zram *z = new_zram(256 * PG, 0);
	unsigned char page[PG], out[PG];
	struct zram_mm_stat ms;
	struct zram_io_stat io;
	unsigned int i, ok = 0;
	int ret = 0;

	zram_mm_stat(z, &ms);
	zram_set_mem_limit(z, ms.mem_used_total + 24 * PG);
	for (i = 0; i < 256; i++) {
		make_page(page, PAGE_RANDOM, i, 0);
		ret = do_io(z, REQ_OP_WRITE, (uint64_t)i * PG, page, (unsigned int)PG, 1);
		if (ret)
			break;
		ok++;
	}
	ck_assert_int_eq(ret, -EIO);
	ck_assert_uint_gt(ok, 5);
	/* Overwriting a stored page also fails, and keeps the old page. */
	make_page(page, PAGE_RANDOM, 1000, 0);
	ck_assert_int_eq(do_io(z, REQ_OP_WRITE, 0, page, (unsigned int)PG, 1), -EIO);
	for (i = 0; i < ok; i++) {
		make_page(page, PAGE_RANDOM, i, 0);
		ck_assert_int_eq(do_io(z, REQ_OP_READ, (uint64_t)i * PG, out, (unsigned int)PG, 1), 0);
		ck_assert_mem_eq(out, page, PG);
	}
	zram_io_stat(z, &io);
	ck_assert_uint_eq(io.failed_writes, 2);
	zram_destroy(z);
}
END_TEST

START_TEST(test_stats_idle_compact_reset)
{
	struct zram *z = new_zram(DISK_BYTES, 0);
	unsigned char page[PG], out[PG];
	char text[256];
	unsigned long long f[9];
	struct zram_mm_stat ms;
	struct zram_io_stat io;
	unsigned int i;

	for (i = 0; i < DISK_PAGES; i++) {
		make_page(page, (enum page_kind)(i % PAGE_KINDS), i, 100 * i);
		ck_assert_int_eq(do_io(z, REQ_OP_WRITE, (uint64_t)i * PG, page, (unsigned int)PG, 1), 0);
	}
	zram_mm_stat(z, &ms);
	ck_assert_int_gt(zram_format_mm_stat(&ms, text, sizeof(text)), 0);
	ck_assert_int_eq(sscanf(text, "%llu %llu %llu %llu %llu %llu %llu %llu %llu", &f[0],
				&f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7], &f[8]), 9);
	ck_assert_uint_eq(f[0], ms.orig_data_size);
	ck_assert_uint_eq(f[0], DISK_BYTES);
	ck_assert_uint_eq(f[2], ms.mem_used_total);
	ck_assert_uint_gt(ms.same_pages, 0);
	ck_assert_uint_gt(ms.huge_pages, 0);
	zram_io_stat(z, &io);
	ck_assert_int_gt(zram_format_io_stat(&io, text, sizeof(text)), 0);
	ck_assert_int_eq(sscanf(text, "%llu %llu %llu %llu", &f[0], &f[1], &f[2], &f[3]), 4);

	ck_assert_uint_eq(zram_idle_mark(z, 0), DISK_PAGES);
	ck_assert_uint_eq(zram_idle_pages(z), DISK_PAGES);
	ck_assert_uint_eq(zram_idle_mark(z, 3600), 0); /* nothing is an hour old */
	ck_assert_int_eq(do_io(z, REQ_OP_READ, 5 * PG, out, (unsigned int)PG, 1), 0);
	ck_assert_uint_eq(zram_idle_pages(z), DISK_PAGES - 1);

	for (i = 0; i < DISK_PAGES; i += 2)
		ck_assert_int_eq(do_io(z, REQ_OP_DISCARD, (uint64_t)i * PG, NULL, (unsigned int)PG, 1), 0);
	zram_compact(z);
	zram_io_stat(z, &io);
	ck_assert_uint_eq(io.notify_free, DISK_PAGES / 2);
	zram_reset(z);
	zram_mm_stat(z, &ms);
	ck_assert_uint_eq(ms.orig_data_size, 0);
	ck_assert_int_eq(do_io(z, REQ_OP_READ, PG, out, (unsigned int)PG, 1), 0);
	memset(page, 0, PG);
	ck_assert_mem_eq(out, page, PG);
	zram_destroy(z);
}
END_TEST

/* Two threads write disjoint halves of the same pages: no lost update. */
struct half {
	struct zram *z;
	unsigned int which, rounds;
	int err;
};

static void *write_half(void *arg)
{
	struct half *h = arg;
	unsigned char buf[PG / 2];
	unsigned int r, p;

	for (r = 0; r < h->rounds; r++)
		for (p = 0; p < 8; p++) {
			memset(buf, (int)(h->which * 100 + r % 50 + 1), sizeof(buf));
			h->err |= do_io(h->z, REQ_OP_WRITE, p * PG + h->which * PG / 2, buf,
					(unsigned int)(PG / 2), 1);
		}
	return NULL;
}

START_TEST(test_concurrent_sub_page_writes)
{
	struct zram *z = new_zram(8 * PG, 0);
	struct half h[2];
	pthread_t t[2];
	unsigned char out[PG];
	unsigned int i, p, rounds = test_scale(400);

	for (i = 0; i < 2; i++) {
		h[i].z = z;
		h[i].which = i;
		h[i].rounds = rounds;
		h[i].err = 0;
		pthread_create(&t[i], NULL, write_half, &h[i]);
	}
	for (i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		ck_assert_int_eq(h[i].err, 0);
	}
	for (p = 0; p < 8; p++) {
		ck_assert_int_eq(do_io(z, REQ_OP_READ, p * PG, out, (unsigned int)PG, 1), 0);
		for (i = 0; i < PG; i++)
			ck_assert_uint_eq(out[i], (i < PG / 2 ? 0 : 100) + (rounds - 1) % 50 + 1);
	}
	zram_destroy(z);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("zram");
	TCase *tc = tcase_create("device");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_invalid_config);
	tcase_add_loop_test(tc, test_model, 0, 3);
	tcase_add_test(tc, test_invalid_io);
	tcase_add_test(tc, test_mem_limit_keeps_old_data);
	tcase_add_test(tc, test_stats_idle_compact_reset);
	tcase_add_test(tc, test_concurrent_sub_page_writes);
	suite_add_tcase(s, tc);
	return test_run(s);
}

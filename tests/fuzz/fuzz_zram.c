// SPDX-License-Identifier: MIT
/*
 * Fuzz target: a zram device against a flat byte model.  The input picks
 * the device (size, compressor, checksum flag, zspage chain) and then a
 * sequence of READ/WRITE/DISCARD/WRITE_ZEROES/FLUSH bios at any sector,
 * with multi-segment payloads scattered over unaligned buffers and of any
 * byte lengths, some past the end, some not whole logical blocks.  Every
 * read is compared with the model; a bio the device must refuse (past the
 * end, not whole logical blocks) must fail, count as invalid_io and change
 * nothing.  Under a mem_limit a write may fail, but each byte it covered
 * must then hold either the old or the new data, and nothing outside it
 * may change.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <libbvec/zram.h>

#include "fuzz.h"

#define PS ((size_t)BVEC_PAGE_SIZE)
#define MAX_PAGES 24
#define MAX_SEGS 8
#define SEG_MAX (3 * PS)
#define ARENA (MAX_SEGS * (SEG_MAX + 256) + PS)

static unsigned char *model, *arena, *old;

static uint64_t invalid_io(struct zram *z)
{
	struct zram_io_stat st;

	zram_io_stat(z, &st);
	return st.invalid_io;
}

/*
 * Submit @bio and release it.  A bio the device must refuse has to fail
 * with EIO and count once in invalid_io.
 */
static int submit_judged(struct zram *z, struct bio *bio, bool refuse)
{
	uint64_t before = invalid_io(z);
	int ret = submit_bio_wait(bio);

	bio_uninit(bio);
	if (refuse && (ret != -EIO || invalid_io(z) != before + 1))
		abort();
	return ret;
}

/* Read the whole device in one page-sized bio at a time and compare. */
static void verify_all(struct zram *z, size_t bytes)
{
	struct block_device *bdev = zram_disk(z)->part0;
	size_t pos;

	for (pos = 0; pos < bytes; pos += PS) {
		struct bio_vec bv;
		struct bio bio;

		memset(arena, 0x5a, PS);
		bio_init(&bio, bdev, &bv, 1, REQ_OP_READ);
		bio.bi_iter.bi_sector = pos >> BVEC_SECTOR_SHIFT;
		if (bio_add_virt(&bio, arena, (unsigned int)PS) != (int)PS ||
		    submit_bio_wait(&bio) || memcmp(arena, model + pos, PS))
			abort();
		bio_uninit(&bio);
	}
}

/*
 * After a write failed under mem_limit: each byte of the range holds the
 * old or the new data; adopt what the device holds as the model's.
 */
static void resync(struct zram *z, size_t bytes, uint64_t start, const unsigned char *want,
		   size_t len)
{
	size_t i;

	memcpy(old, model, bytes);
	for (i = 0; i < bytes; i += PS) {
		struct bio_vec bv;
		struct bio bio;

		bio_init(&bio, zram_disk(z)->part0, &bv, 1, REQ_OP_READ);
		bio.bi_iter.bi_sector = i >> BVEC_SECTOR_SHIFT;
		if (bio_add_virt(&bio, model + i, (unsigned int)PS) != (int)PS ||
		    submit_bio_wait(&bio))
			abort();
		bio_uninit(&bio);
	}
	for (i = 0; i < bytes; i++) {
		bool in = i >= start && i - start < len;

		if (model[i] != old[i] && (!in || model[i] != (want ? want[i - start] : 0)))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static const char *const comps[] = { "lz4", "lz4hc", "zstd", NULL };
	static unsigned char *wdata;
	struct zram_config cfg = ZRAM_CONFIG_INIT;
	struct input in = { data, size };
	struct block_device *bdev;
	size_t bytes, sectors;
	unsigned int lbs;
	bool limited = false;
	struct zram *z;
	unsigned int c;

	if (!model) {
		model = malloc(MAX_PAGES * PS);
		old = malloc(MAX_PAGES * PS);
		wdata = malloc(MAX_SEGS * SEG_MAX + PS);
		arena = malloc(ARENA);
		if (!model || !old || !wdata || !arena)
			abort();
	}
	/* A disksize that is not a whole page is rounded up. */
	cfg.disksize = (1 + take(&in, 1) % MAX_PAGES) * PS;
	cfg.disksize -= take(&in, 1) & 1 ? 511 : 0;
	bytes = (cfg.disksize + PS - 1) / PS * PS;
	sectors = bytes >> BVEC_SECTOR_SHIFT;
	c = take(&in, 1);
	cfg.pool.compressor = comps[c % 4];
	if (cfg.pool.compressor && !zpool_has_compressor(cfg.pool.compressor))
		cfg.pool.compressor = NULL;
	cfg.pool.flags = c & 4 ? ZPOOL_F_CHECKSUM : 0;
	cfg.pool.max_pages_per_zspage = c >> 3 & 15;
	z = zram_create(&cfg);
	if (!z)
		abort();
	bdev = zram_disk(z)->part0;
	lbs = bdev_logical_block_size(bdev);
	if (get_capacity(zram_disk(z)) != sectors)
		abort();
	memset(model, 0, bytes);

	while (in.left) {
		unsigned int op = take(&in, 1), nseg, i;
		struct bio_vec table[MAX_SEGS];
		uint64_t sector;
		unsigned char *segp[MAX_SEGS];
		unsigned int segl[MAX_SEGS];
		size_t total = 0, cursor;
		bool refuse;
		struct bio bio;
		int ret;

		/* Mostly in range; sometimes just past the end, or far past it. */
		sector = take(&in, 2);
		if (sector & 0x8000)
			sector = sectors - (sector & 7) + (sector & 0x4000 ? sector >> 8 & 63 : 0);
		else
			sector %= sectors + 1;
		switch (op % 8) {
		case 0: /* READ */
		case 1: /* WRITE */
		case 2:
			nseg = 1 + take(&in, 1) % MAX_SEGS;
			cursor = 0;
			for (i = 0; i < nseg; i++) {
				cursor += take(&in, 1);	/* unaligned, scattered */
				segl[i] = 1 + take(&in, 2) % (unsigned int)SEG_MAX;
				segp[i] = arena + cursor;
				cursor += segl[i];
				total += segl[i];
			}
			/* Usually whole blocks: the last piece takes up the slack. */
			if (!(op & 0x80) && total % lbs) {
				unsigned int add = lbs - (unsigned int)(total % lbs);

				segl[nseg - 1] += add;
				total += add;
			}
			refuse = total % lbs || sector % (lbs / BVEC_SECTOR_SIZE) ||
				 sector + total / BVEC_SECTOR_SIZE > sectors;
			bio_init(&bio, bdev, table, MAX_SEGS,
				 op % 8 == 0 ? REQ_OP_READ : REQ_OP_WRITE | (op & 0x40 ? REQ_FUA : 0));
			bio.bi_iter.bi_sector = sector;
			for (i = 0, cursor = 0; i < nseg; i++) {
				if (op % 8 == 0) {
					memset(segp[i], 0xa5, segl[i]);
				} else {
					uint32_t s = (op << 16 ^ segl[i] ^ (uint32_t)sector << 3) | 1;
					unsigned int j;

					for (j = 0; j < segl[i]; j++) {
						s ^= s << 13;
						s ^= s >> 17;
						s ^= s << 5;
						/* some runs, so pages compress to varied sizes */
						segp[i][j] = (unsigned char)(op & 0x20 || s % 3 == 0 ? s : j / 64);
					}
					memcpy(wdata + cursor, segp[i], segl[i]);
				}
				cursor += segl[i];
				if (bio_add_virt(&bio, segp[i], segl[i]) != (int)segl[i])
					abort();
			}
			ret = submit_judged(z, &bio, refuse);
			if (refuse) {
				/* checked by submit_judged(); the model stays as it is */
			} else if (op % 8 == 0) {
				if (ret)
					abort();
				for (i = 0, cursor = 0; i < nseg; i++) {
					if (memcmp(segp[i], model + sector * BVEC_SECTOR_SIZE + cursor,
						   segl[i]))
						abort();
					cursor += segl[i];
				}
			} else if (!ret) {
				memcpy(model + sector * BVEC_SECTOR_SIZE, wdata, total);
			} else if (limited && ret == -EIO) {
				resync(z, bytes, sector * BVEC_SECTOR_SIZE, wdata, total);
			} else {
				abort();
			}
			break;
		case 3: /* DISCARD */
		case 4: /* WRITE_ZEROES */
			total = (size_t)(take(&in, 1) % (2 * PS / BVEC_SECTOR_SIZE + 2)) * BVEC_SECTOR_SIZE;
			if (op & 0x80)
				total += (size_t)take(&in, 1) * PS; /* whole pages */
			/* As in Linux, an empty bio is not checked against the end. */
			refuse = total % lbs || (total && sector % (lbs / BVEC_SECTOR_SIZE)) ||
				 (total && sector + total / BVEC_SECTOR_SIZE > sectors);
			bio_init(&bio, bdev, NULL, 0, op % 8 == 3 ? REQ_OP_DISCARD : REQ_OP_WRITE_ZEROES);
			bio.bi_iter.bi_sector = sector;
			bio.bi_iter.bi_size = (unsigned int)total;
			ret = submit_judged(z, &bio, refuse);
			if (refuse) {
				/* checked by submit_judged(); the model stays as it is */
			} else if (!ret) {
				memset(model + sector * BVEC_SECTOR_SIZE, 0, total);
			} else if (limited && ret == -EIO) {
				resync(z, bytes, sector * BVEC_SECTOR_SIZE, NULL, total);
			} else {
				abort();
			}
			break;
		case 5: /* FLUSH, empty, at sector 0 as the kernel sends it */
			bio_init(&bio, bdev, NULL, 0, REQ_OP_FLUSH | REQ_PREFLUSH);
			if (submit_bio_wait(&bio))
				abort();
			bio_uninit(&bio);
			break;
		case 6: /* mem_limit: lift it, or set it near what is used */
			c = take(&in, 2);
			if (c & 1) {
				zram_set_mem_limit(z, 0);
				limited = false;
			} else {
				struct zpool_stats mm;

				zram_mm_stat(z, &mm);
				zram_set_mem_limit(z, mm.mem_used_total + (c >> 1) * 16);
				limited = true;
			}
			break;
		default:
			if (op & 0x80)
				zram_compact(z);
			else
				verify_all(z, bytes);
		}
	}
	verify_all(z, bytes);
	zram_destroy(z);
	return 0;
}

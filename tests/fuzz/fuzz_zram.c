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
 *
 * Bit 1 of the second byte (unused before) sets ZPOOL_F_MULTI_PAGE: then
 * a segment may be up to nine pages, so runs of whole pages cover groups
 * and cut them at any page, and the data written compresses well enough
 * that groups form.
 *
 * Op 7 with any of bits 3-6 set drives the writeback tier and recompression
 * (op 7 and 0x87 keep their old meaning): a backing RAM disk (attached at
 * creation when bit 7 of the compressor byte is set, replaceable later)
 * that can be told to fail reads or writes, idle marking, zram_writeback()
 * in every mode over page ranges, the writeback budget, secondary
 * algorithms, levels and a small dictionary, and zram_recompress().  The
 * model stays the flat bytes; on top, each such call must return what the
 * header documents (ENODEV, EINVAL, EBUSY, ENOSPC, EIO for the budget or a
 * failed backing write), a read over a written-back page fails exactly
 * while backing reads fail, and bd_stat's bd_count always equals the pages
 * zram_block_state() reports on the backing disk.
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
#define SEG_MAX_MULTI (9 * PS) /* with ZPOOL_F_MULTI_PAGE */
#define ARENA (MAX_SEGS * (SEG_MAX_MULTI + 256) + PS)

#define UNITS (PS >= 4096 ? PS / 4096 : 1) /* bd_stat units a page */
#define DICT_LEN 2048

static unsigned char *model, *arena, *old, *dict;

/* The backing disk: RAM that completes each bio inside submit_bio(). */
struct fdisk {
	struct gendisk *disk;
	unsigned char *mem;
};

static bool fail_reads, fail_writes;

static void fdisk_submit(struct bio *bio)
{
	struct fdisk *d = bio->bi_bdev->bd_disk->private_data;
	uint64_t pos = (uint64_t)bio->bi_iter.bi_sector << BVEC_SECTOR_SHIFT;
	bool write = op_is_write(bio->bi_opf);
	struct bvec_iter iter;
	struct bio_vec bv;

	if (write ? fail_writes : fail_reads) {
		bio->bi_status = BLK_STS_IOERR;
	} else {
		bio_for_each_segment(bv, bio, iter) {
			if (write)
				memcpy(d->mem + pos, bvec_virt(&bv), bv.bv_len);
			else
				memcpy(bvec_virt(&bv), d->mem + pos, bv.bv_len);
			pos += bv.bv_len;
		}
	}
	bio_endio(bio);
}

static const struct block_device_operations fdisk_fops = { .submit_bio = fdisk_submit };

/* A backing disk of @sectors (not always whole pages). */
static struct fdisk *fdisk_new(uint64_t sectors)
{
	struct fdisk *d = calloc(1, sizeof(*d));
	struct queue_limits lim;

	if (!d || !(d->mem = calloc(1, sectors * BVEC_SECTOR_SIZE + 1)))
		abort();
	blk_set_stacking_limits(&lim);
	d->disk = blk_alloc_disk(&lim, -1);
	if (!d->disk)
		abort();
	d->disk->fops = &fdisk_fops;
	d->disk->private_data = d;
	set_capacity(d->disk, sectors);
	return d;
}

static void fdisk_free(struct fdisk *d)
{
	if (!d)
		return;
	put_disk(d->disk);
	free(d->mem);
	free(d);
}

/* Is page @idx on the backing disk, as zram_block_state() reports it? */
static bool page_wb(struct zram *z, uint64_t idx)
{
	struct zram_block_state st;
	uint64_t i = idx;

	return !zram_block_state(z, &i, &st) && i == idx && (st.flags & ZRAM_BS_WB);
}

/* Does any page of the byte range [@start, @start + @len) lie on the backing disk? */
static bool range_wb(struct zram *z, uint64_t start, size_t len)
{
	uint64_t i;

	if (!len)
		return false;
	for (i = start / PS; i <= (start + len - 1) / PS; i++)
		if (page_wb(z, i))
			return true;
	return false;
}

/* Pages on the backing disk; bd_count must say the same. */
static uint64_t wb_pages(struct zram *z)
{
	struct zram_block_state st;
	struct zram_bd_stat bd;
	uint64_t i = 0, n = 0;

	while (!zram_block_state(z, &i, &st)) {
		n += (st.flags & ZRAM_BS_WB) != 0;
		i++;
	}
	zram_bd_stat(z, &bd);
	if (bd.bd_count != n * UNITS)
		abort();
	return n;
}

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

/*
 * Read the whole device in one page-sized bio at a time and compare.  While
 * backing reads fail, exactly the written-back pages must fail to read.
 */
static void verify_all(struct zram *z, size_t bytes)
{
	struct block_device *bdev = zram_disk(z)->part0;
	size_t pos;

	for (pos = 0; pos < bytes; pos += PS) {
		bool fail = fail_reads && page_wb(z, pos / PS);
		struct bio_vec bv;
		struct bio bio;
		int ret;

		memset(arena, 0x5a, PS);
		bio_init(&bio, bdev, &bv, 1, REQ_OP_READ);
		bio.bi_iter.bi_sector = pos >> BVEC_SECTOR_SHIFT;
		if (bio_add_virt(&bio, arena, (unsigned int)PS) != (int)PS)
			abort();
		ret = submit_bio_wait(&bio);
		if (fail ? ret != -EIO : ret || memcmp(arena, model + pos, PS))
			abort();
		bio_uninit(&bio);
	}
	wb_pages(z);
}

/*
 * After a write failed under mem_limit: each byte of the range holds the
 * old or the new data; adopt what the device holds as the model's.
 */
static void resync(struct zram *z, size_t bytes, uint64_t start, const unsigned char *want,
		   size_t len)
{
	bool fr = fail_reads;
	size_t i;

	fail_reads = false;
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
	fail_reads = fr;
}

/* What the tier operations read and keep of the device's state. */
struct tier {
	struct zram *z;
	struct fdisk **bd;
	size_t npages;
	bool limited;
	bool *wb_on;
	uint64_t *budget;
	const char **prio_alg;
};

static void tier_writeback(struct tier *t, unsigned int op, struct input *in)
{
	unsigned int mode = take(in, 1) % 6; /* 5: unknown */
	uint64_t first = take(in, 1) % (t->npages + 2), count = take(in, 1);
	struct zram_bd_stat bs0, bs1;
	uint64_t before = wb_pages(t->z), after, budget;
	bool enabled;
	int64_t ret;

	count = count == 0xff ? UINT64_MAX : count % (t->npages + 1);
	zram_bd_stat(t->z, &bs0);
	if (op & 0x80)
		zram_set_writeback_batch_size(t->z, 1 + take(in, 1) % 4);
	ret = zram_writeback(t->z, (enum zram_wb_mode)mode, first, count);
	zram_bd_stat(t->z, &bs1);
	after = wb_pages(t->z);
	budget = zram_writeback_limit(t->z, &enabled);
	if (enabled != *t->wb_on)
		abort();
	if (mode > ZRAM_WB_INCOMPRESSIBLE) {
		if (ret != -EINVAL)
			abort();
	} else if (!*t->bd) {
		if (ret != -ENODEV)
			abort();
	} else if (first >= t->npages) {
		if (ret != -EINVAL)
			abort();
	} else if (ret >= 0) {
		if ((uint64_t)ret != after - before || (ret && fail_writes))
			abort();
	} else if (ret == -ENOSPC) {
		if (after != get_capacity((*t->bd)->disk) / (PS / BVEC_SECTOR_SIZE))
			abort();
	} else if (ret == -EIO) {
		/* a failed backing write, or the budget spent */
		if (!fail_writes && !(*t->wb_on && budget < UNITS))
			abort();
	} else if (!(t->limited && ret == -ENOMEM)) {
		abort();
	}
	/* Each page that landed was written once and paid for once. */
	if (after < before || bs1.bd_writes - bs0.bd_writes != (after - before) * UNITS)
		abort();
	if (*t->wb_on) {
		if (*t->budget - budget != (after - before) * UNITS)
			abort();
	} else if (budget != *t->budget) {
		abort();
	}
	*t->budget = budget;
}

static void tier_recompress(struct tier *t, unsigned int op, struct input *in)
{
	static const char *const algos[] = { NULL, "lz4hc", "zstd", "lz4" };
	struct zram_recompress_params p = ZRAM_RECOMPRESS_PARAMS_INIT;
	unsigned int b = take(in, 1), prio;
	bool found = false;
	int64_t ret;

	p.type = (enum zram_recomp_type)(b & 3);
	p.algo = algos[b >> 2 & 3];
	p.priority = b >> 4 & 3;
	p.threshold = op & 0x80 ? (uint64_t)take(in, 1) * PS / 256 : 0;
	p.max_pages = b & 0x40 ? take(in, 1) % 4 : 0;
	for (prio = 1; prio <= ZRAM_MAX_RECOMP_PRIO; prio++)
		found |= t->prio_alg[prio] && (!p.algo || !strcmp(p.algo, t->prio_alg[prio])) &&
			 (!p.priority || p.priority == prio);
	ret = zram_recompress(t->z, &p);
	if (!found ? ret != -EINVAL :
	    ret < 0 ? !(t->limited && ret == -ENOMEM) :
	    p.max_pages && (uint64_t)ret > p.max_pages)
		abort();
}

/* Level and dictionary of a priority: refused exactly when documented. */
static void tier_params(struct tier *t, struct input *in)
{
	unsigned int b = take(in, 1), prio = b & 3;
	int level = (int)(take(in, 1) % 32) - 8;
	size_t len = (size_t)(b >> 2) * 32;
	const char *alg = t->prio_alg[prio];
	bool ok = alg && (level == 0 || (!strcmp(alg, "lz4") ? level >= 1 :
					 !strcmp(alg, "lz4hc") ? level >= 1 && level <= 12 :
					 level >= -7 && level <= 22));
	int ret = zram_set_algorithm_params(t->z, prio, level, len ? dict : NULL, len);

	if (ok ? ret != 0 && !(ret == -ENOMEM && t->limited) : ret != -EINVAL)
		abort();
}

/*
 * Op 7 with bits 3-6 not all clear: one call of the writeback tier or of
 * recompression, judged against what zram.h documents.
 */
static void tier_op(struct tier *t, unsigned int op, struct input *in)
{
	static const char *const names[] = { "lz4hc", "zstd", "lz4", "lzo" };
	unsigned int b;
	int ret;

	switch (op >> 3 & 15) {
	case 1: /* idle marking: all, or none yet old enough */
		zram_idle_mark(t->z, op & 0x80 ? 100000 : 0);
		break;
	case 2:
	case 3:
		tier_writeback(t, op, in);
		break;
	case 4: /* the budget: off, on, or a new amount */
		b = take(in, 1);
		if (b & 2) {
			*t->budget = (uint64_t)(b >> 2) * UNITS / 4;
			zram_set_writeback_limit(t->z, *t->budget);
		} else {
			*t->wb_on = b & 1;
			zram_set_writeback_limit_enable(t->z, *t->wb_on);
		}
		if (zram_writeback_limit(t->z, NULL) != *t->budget)
			abort();
		break;
	case 5: /* the backing disk starts or stops failing */
		b = take(in, 1);
		fail_reads = b & 1;
		fail_writes = b & 2;
		break;
	case 6: { /* another backing disk, none, or one of no whole page */
		struct fdisk *d = NULL;
		uint64_t on = wb_pages(t->z);

		b = take(in, 1);
		if (b & 1)
			d = fdisk_new(b & 2 ? (b >> 2) % (PS / BVEC_SECTOR_SIZE) :
				      (1 + (b >> 2)) * (PS / BVEC_SECTOR_SIZE));
		ret = zram_set_backing(t->z, d ? d->disk : NULL);
		if (d && get_capacity(d->disk) < PS / BVEC_SECTOR_SIZE) {
			if (ret != -EINVAL)
				abort();
		} else if (on ? ret != -EBUSY : ret != 0) {
			abort();
		}
		if (ret) {
			fdisk_free(d);
		} else {
			fdisk_free(*t->bd);
			*t->bd = d;
		}
		break;
	}
	case 7: { /* a secondary algorithm */
		const char *name = names[take(in, 1) % 4];
		unsigned int prio = take(in, 1) % 5;
		bool ok = prio >= 1 && prio <= ZRAM_MAX_RECOMP_PRIO && strcmp(name, "lzo") &&
			  zpool_has_compressor(name);

		ret = zram_set_recomp_algorithm(t->z, name, prio);
		if (ok ? ret != 0 && !(ret == -ENOMEM && t->limited) : ret != -EINVAL)
			abort();
		if (!ret)
			t->prio_alg[prio] = name;
		break;
	}
	case 8:
		tier_params(t, in);
		break;
	case 9:
	case 10:
		tier_recompress(t, op, in);
		break;
	case 11:
		zram_compact(t->z);
		break;
	default: /* 12-15 */
		verify_all(t->z, t->npages * PS);
	}
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static const char *const comps[] = { "lz4", "lz4hc", "zstd", NULL };
	static unsigned char *wdata;
	struct zram_config cfg = ZRAM_CONFIG_INIT;
	struct input in = { data, size };
	/* The algorithm at each priority, NULL for none; [0] is the primary. */
	const char *prio_alg[ZRAM_MAX_RECOMP_PRIO + 1] = { NULL };
	struct block_device *bdev;
	struct fdisk *bd = NULL;
	size_t bytes, sectors, npages;
	unsigned int lbs, b0;
	bool limited = false, wb_on = false, multi;
	unsigned int seg_max, rnd;
	uint64_t budget = 0;
	struct zram *z;
	unsigned int c;

	if (!model) {
		model = malloc(MAX_PAGES * PS);
		old = malloc(MAX_PAGES * PS);
		wdata = malloc(MAX_SEGS * SEG_MAX_MULTI + PS);
		arena = malloc(ARENA);
		dict = malloc(DICT_LEN);
		if (!model || !old || !wdata || !arena || !dict)
			abort();
		/* Runs and words like the pages the writes make. */
		for (c = 0; c < DICT_LEN; c++)
			dict[c] = (unsigned char)(c % 192 < 64 ? c / 64 : c * 37 >> 3);
	}
	fail_reads = fail_writes = false;
	/* A disksize that is not a whole page is rounded up. */
	b0 = take(&in, 1);
	cfg.disksize = (1 + b0 % MAX_PAGES) * PS;
	c = take(&in, 1);
	cfg.disksize -= c & 1 ? 511 : 0;
	multi = c & 2;
	seg_max = (unsigned int)(multi ? SEG_MAX_MULTI : SEG_MAX);
	rnd = multi ? 61 : 3; /* one byte in @rnd is noise: groups need little */
	bytes = (cfg.disksize + PS - 1) / PS * PS;
	npages = bytes / PS;
	sectors = bytes >> BVEC_SECTOR_SHIFT;
	c = take(&in, 1);
	cfg.pool.compressor = comps[c % 4];
	if (cfg.pool.compressor && !zpool_has_compressor(cfg.pool.compressor))
		cfg.pool.compressor = NULL;
	cfg.pool.flags = (c & 4 ? ZPOOL_F_CHECKSUM : 0) | (multi ? ZPOOL_F_MULTI_PAGE : 0);
	cfg.pool.max_pages_per_zspage = c >> 3 & 15;
	z = zram_create(&cfg);
	if (!z)
		abort();
	bdev = zram_disk(z)->part0;
	lbs = bdev_logical_block_size(bdev);
	if (get_capacity(zram_disk(z)) != sectors)
		abort();
	memset(model, 0, bytes);
	prio_alg[0] = cfg.pool.compressor ? cfg.pool.compressor : "lz4";
	/* Bit 7 of the compressor byte: a backing disk from the start. */
	if (c & 0x80) {
		bd = fdisk_new((1 + b0 / MAX_PAGES * 3) * (PS / BVEC_SECTOR_SIZE));
		if (zram_set_backing(z, bd->disk))
			abort();
	}

	while (in.left) {
		unsigned int op = take(&in, 1), nseg, i;
		struct bio_vec table[MAX_SEGS];
		uint64_t sector;
		unsigned char *segp[MAX_SEGS];
		unsigned int segl[MAX_SEGS];
		size_t total = 0, cursor;
		bool refuse, may_fail;
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
				segl[i] = 1 + take(&in, 2) % seg_max;
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
			/* Only a page on a failing backing disk may fail the bio. */
			may_fail = !refuse && fail_reads &&
				   range_wb(z, sector * BVEC_SECTOR_SIZE, total);
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
						segp[i][j] = (unsigned char)(op & 0x20 ||
									     !(s % rnd) ? s : j / 64);
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
				if (may_fail ? ret != -EIO : ret != 0)
					abort();
				for (i = 0, cursor = 0; i < nseg && !ret; i++) {
					if (memcmp(segp[i], model + sector * BVEC_SECTOR_SIZE + cursor,
						   segl[i]))
						abort();
					cursor += segl[i];
				}
			} else if (!ret) {
				memcpy(model + sector * BVEC_SECTOR_SIZE, wdata, total);
			} else if ((limited || may_fail) && ret == -EIO) {
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
			/* A partial edge over a page on a failing backing disk may fail. */
			may_fail = !refuse && fail_reads &&
				   range_wb(z, sector * BVEC_SECTOR_SIZE, total);
			bio_init(&bio, bdev, NULL, 0, op % 8 == 3 ? REQ_OP_DISCARD : REQ_OP_WRITE_ZEROES);
			bio.bi_iter.bi_sector = sector;
			bio.bi_iter.bi_size = (unsigned int)total;
			ret = submit_judged(z, &bio, refuse);
			if (refuse) {
				/* checked by submit_judged(); the model stays as it is */
			} else if (!ret) {
				memset(model + sector * BVEC_SECTOR_SIZE, 0, total);
			} else if ((limited || may_fail) && ret == -EIO) {
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
			if (op & 0x78) {
				struct tier t = { z, &bd, npages, limited, &wb_on, &budget, prio_alg };

				tier_op(&t, op, &in);
				wb_pages(z);
			} else if (op & 0x80) {
				zram_compact(z);
			} else {
				verify_all(z, bytes);
			}
		}
	}
	fail_reads = fail_writes = false;
	verify_all(z, bytes);
	zram_destroy(z);
	fdisk_free(bd);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * Three small drivers written the way kernel drivers are, with kernel
 * spellings only (<libbvec/linux.h>), and what the tests need to drive
 * and inspect them.  Written for these tests from the documented
 * semantics; no kernel source.
 */
#ifndef KTEST_DRIVERS_H
#define KTEST_DRIVERS_H

#include <libbvec/linux.h>

/* kbrd.c: a RAM disk of lazily allocated pages, brd-like. */
struct kbrd {
	struct gendisk *disk;
	struct page **pages;	/* one per PAGE_SIZE of capacity, NULL = zeroes */
	unsigned long nr_pages;
	atomic_t calls;		/* bios that reached kbrd_submit_bio */
	atomic_t flushes;	/* of them, with REQ_PREFLUSH */
	atomic_t fuas;		/* of them, with REQ_FUA */
	atomic64_t allocated;	/* pages held */
	blk_opf_t last_opf;	/* of the last bio seen */
};

struct kbrd *kbrd_create(sector_t sectors, unsigned int lbs, bool write_cache);
void kbrd_destroy(struct kbrd *brd);

/* kzram.c: a page store with zram's 4 KiB logical blocks and whole-page discard. */
struct kzram {
	struct gendisk *disk;
	struct page **slots;	/* NULL = a page of zeroes (nothing stored) */
	unsigned long nr_pages;
	atomic_t calls;
	atomic_t discards;
	atomic64_t stored;	/* pages held */
};

struct kzram *kzram_create(unsigned long nr_pages);
void kzram_destroy(struct kzram *zram);

/* kstripe.c: striping over other disks, dm-stripe-like (one child: dm-linear). */
struct kstripe {
	struct gendisk *disk;
	struct gendisk *children[8];
	unsigned int nr;
	unsigned int chunk_sectors;	/* a power of two */
	struct bio_set bs;
	atomic_t calls;
	atomic_t splits;
};

struct kstripe *kstripe_create(struct gendisk **children, unsigned int nr,
			       unsigned int chunk_sectors);
void kstripe_destroy(struct kstripe *sc);

#endif

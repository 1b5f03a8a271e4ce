// SPDX-License-Identifier: MIT
/*
 * Fuzz target: random queue_limits and random bios (scattered, unaligned,
 * multi-page pieces) through bio_split_rw_at() and bio_split_to_limits().
 * The oracle recounts segments itself (each multi-page segment cut at
 * max_segment_size and at the boundary mask, none merged, as documented):
 *  - bio_split_rw_at(): 0 only if the whole bio fits, with *segs exact; a
 *    front that fits, is whole logical blocks and is the longest such
 *    front; -EINVAL only when no logical block fits;
 *  - bio_split_to_limits() on a disk whose driver splits every bio it gets:
 *    every front piece fits the limits, the pieces arrive in order and
 *    cover the original's bytes exactly, and the bio completes without
 *    error unless some remainder could not be split.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <libbvec/blkdev.h>

#include "fuzz.h"

#define PS ((size_t)BVEC_PAGE_SIZE)
#define ARENA (64 * PS)
#define MAX_SEGS 16
#define MAX_RANGES 4096

/* Byte ranges in order, adjacent ones merged, to compare coverage. */
struct ranges {
	uintptr_t addr[MAX_RANGES];
	size_t len[MAX_RANGES];
	unsigned int n;
};

static void ranges_add(struct ranges *r, uintptr_t addr, size_t len)
{
	if (r->n && r->addr[r->n - 1] + r->len[r->n - 1] == addr) {
		r->len[r->n - 1] += len;
		return;
	}
	if (r->n == MAX_RANGES)
		abort();
	r->addr[r->n] = addr;
	r->len[r->n++] = len;
}

static void ranges_of(struct ranges *r, struct bio *bio)
{
	struct bvec_iter iter;
	struct bio_vec bv;

	bio_for_each_bvec(bv, bio, iter)
		ranges_add(r, (uintptr_t)bvec_virt(&bv), bv.bv_len);
}

/* Bytes of one segment starting at @addr: the documented cut. */
static size_t seg_len(const struct queue_limits *lim, uintptr_t addr, size_t len)
{
	uint64_t mask = lim->seg_boundary_mask;
	uint64_t room = mask - ((uint64_t)addr & mask); /* bytes to the boundary, less 1 */

	if (room < len - 1)
		len = (size_t)room + 1;
	if (len > lim->max_segment_size)
		len = lim->max_segment_size;
	return len;
}

/* Segments in the first @bytes of @bio from its iterator. */
static unsigned long count_segs(const struct queue_limits *lim, struct bio *bio, size_t bytes)
{
	struct bvec_iter iter;
	struct bio_vec bv;
	unsigned long n = 0;

	bio_for_each_bvec(bv, bio, iter) {
		uintptr_t addr = (uintptr_t)bvec_virt(&bv);
		size_t len = bv.bv_len < bytes ? bv.bv_len : bytes;

		bytes -= len;
		while (len) {
			size_t s = seg_len(lim, addr, len);

			n++;
			addr += s;
			len -= s;
		}
		if (!bytes)
			break;
	}
	return n;
}

static bool fits(const struct queue_limits *lim, struct bio *bio, size_t bytes, size_t max_bytes)
{
	return bytes <= max_bytes && count_segs(lim, bio, bytes) <= lim->max_segments;
}

static struct {
	struct ranges seen;
	uint64_t next_sector;
	unsigned int pieces;
	bool failed;
} st;

static void split_submit(struct bio *bio)
{
	const struct queue_limits *lim = bdev_limits(bio->bi_bdev);
	struct bio *front = bio_split_to_limits(bio);
	size_t bytes;

	if (!front) {
		st.failed = true; /* completed with an error by the split */
		return;
	}
	bytes = front->bi_iter.bi_size;
	if (front->bi_iter.bi_sector != st.next_sector || !bytes ||
	    bytes % lim->logical_block_size ||
	    !fits(lim, front, bytes, (size_t)lim->max_sectors << BVEC_SECTOR_SHIFT))
		abort();
	st.next_sector += bytes >> BVEC_SECTOR_SHIFT;
	st.pieces++;
	ranges_of(&st.seen, front);
	bio_endio(front);
}

static const struct block_device_operations split_fops = {
	.submit_bio = split_submit,
};

static void check_split_rw_at(const struct queue_limits *lim, struct bio *bio, size_t max_bytes)
{
	size_t total = bio->bi_iter.bi_size, front;
	unsigned int segs = 0;
	int ret;

	ret = bio_split_rw_at(bio, lim, &segs, (unsigned int)max_bytes);
	if (ret == 0) {
		if (!fits(lim, bio, total, max_bytes) || segs != count_segs(lim, bio, total))
			abort();
		return;
	}
	if (fits(lim, bio, total, max_bytes))
		abort(); /* split a bio that fits */
	if (ret == -EINVAL) {
		if (fits(lim, bio, lim->logical_block_size, max_bytes))
			abort(); /* a whole logical block would have fitted */
		return;
	}
	if (ret < 0)
		abort();
	front = (size_t)ret << BVEC_SECTOR_SHIFT;
	if (front >= total || front % lim->logical_block_size || !fits(lim, bio, front, max_bytes) ||
	    segs < count_segs(lim, bio, front) || segs > lim->max_segments)
		abort();
	/* the longest such front */
	if (front + lim->logical_block_size <= total &&
	    fits(lim, bio, front + lim->logical_block_size, max_bytes))
		abort();
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static unsigned char *arena;
	struct input in = { data, size };
	struct queue_limits lim;
	struct bio_vec table[MAX_SEGS];
	struct gendisk *disk;
	struct ranges *want;
	unsigned int nseg, i, lbs, c;
	size_t total = 0;
	sector_t start;
	struct bio bio;
	int ret;

	if (!arena && !(arena = aligned_alloc(ARENA, ARENA)))
		abort();
	want = malloc(sizeof(*want));
	if (!want)
		abort();

	/* Limits: mostly valid, sometimes not; zero fields take defaults. */
	memset(&lim, 0, sizeof(lim));
	c = take(&in, 1);
	lim.logical_block_size = c & 0x80 ? take(&in, 2) : 512u << (c % 8);
	lim.max_sectors = c & 0x40 ? take(&in, 4) : take(&in, 1) * 8;
	lim.max_segments = take(&in, 1) % 20;
	c = take(&in, 1);
	lim.max_segment_size = c & 0x80 ? take(&in, 4) : (unsigned int)PS << (c % 4);
	c = take(&in, 1);
	lim.seg_boundary_mask = c & 0x80 ? UINT64_MAX : c ? (UINT64_C(1) << (c % 40)) - 1 : 0;
	disk = blk_alloc_disk(&lim, -1);
	if (!disk) {
		if (errno != EINVAL)
			abort();
		free(want);
		return 0;
	}
	disk->fops = &split_fops;
	set_capacity(disk, (sector_t)1 << 40);
	lim = disk->limits;
	lbs = lim.logical_block_size;

	/* The bio: scattered pieces of any length, then padded to whole blocks. */
	nseg = 1 + take(&in, 1) % MAX_SEGS;
	bio_init(&bio, disk->part0, table, MAX_SEGS, take(&in, 1) & 1 ? REQ_OP_READ : REQ_OP_WRITE);
	/* submit_bio() refuses a start that is not on a logical block */
	bio.bi_iter.bi_sector = take(&in, 2) & ~(sector_t)(lbs / BVEC_SECTOR_SIZE - 1);
	for (i = 0; i < nseg; i++) {
		unsigned int len = 1 + take(&in, 2) % (unsigned int)(3 * PS);
		size_t off = take(&in, 3) % (ARENA - 4 * PS);

		if (i + 1 == nseg && (total + len) % lbs)
			len += lbs - (unsigned int)((total + len) % lbs);
		if (bio_add_virt(&bio, arena + off, len) != (int)len)
			abort();
		total += len;
	}
	memset(want, 0, sizeof(*want));
	ranges_of(want, &bio);

	check_split_rw_at(&lim, &bio, (size_t)lim.max_sectors << BVEC_SECTOR_SHIFT);
	check_split_rw_at(&lim, &bio, take(&in, 3));

	memset(&st, 0, sizeof(st));
	st.next_sector = start = bio.bi_iter.bi_sector;
	ret = submit_bio_wait(&bio);
	if (st.failed != (ret != 0))
		abort();
	if (!ret) {
		if (st.next_sector != start + total / BVEC_SECTOR_SIZE ||
		    st.seen.n != want->n ||
		    memcmp(st.seen.addr, want->addr, want->n * sizeof(want->addr[0])) ||
		    memcmp(st.seen.len, want->len, want->n * sizeof(want->len[0])))
			abort();
	}
	bio_uninit(&bio);
	put_disk(disk);
	free(want);
	return 0;
}

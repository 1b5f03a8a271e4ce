// SPDX-License-Identifier: MIT
// cc brd.c $(pkg-config --cflags --libs libbvec) -o brd
/*
 * A RAM disk written the way a kernel driver is: kernel names only, through
 * <libbvec/linux.h>.  Stacked under it, main() submits a large scattered
 * write, which the driver splits to its limits, then reads it back and
 * checks every byte.
 */
#include <stdlib.h>
#include <libbvec/linux.h>

#define BRD_SECTORS 8192 /* 4 MiB */

struct brd_device {
	struct gendisk *disk;
	u8 *data;
};

static void brd_submit_bio(struct bio *bio)
{
	struct brd_device *brd = bio->bi_bdev->bd_disk->private_data;
	struct bio_vec bvec;
	struct bvec_iter iter;
	u8 *mem;

	bio = bio_split_to_limits(bio);
	if (!bio)
		return;
	/*
	 * Count bytes, not sectors: userspace buffers need not be sector
	 * aligned, so a segment cut at a page boundary may be any length.
	 */
	mem = brd->data + (bio->bi_iter.bi_sector << SECTOR_SHIFT);
	bio_for_each_segment(bvec, bio, iter) {
		if (op_is_write(bio_op(bio)))
			memcpy_from_bvec((char *)mem, &bvec);
		else
			memcpy_to_bvec(&bvec, (const char *)mem);
		mem += bvec.bv_len;
	}
	bio_endio(bio);
}

static const struct block_device_operations brd_fops = {
	.submit_bio = brd_submit_bio,
};

static int brd_alloc(struct brd_device *brd)
{
	struct queue_limits lim = {
		.max_sectors = PAGE_SIZE >> SECTOR_SHIFT, /* the smallest allowed */
		.max_segments = 4,			  /* forces splits */
	};

	brd->data = calloc(BRD_SECTORS, SECTOR_SIZE);
	if (!brd->data)
		return -ENOMEM;
	brd->disk = blk_alloc_disk(&lim, -1); /* ERR_PTR on failure, as in 6.9+ */
	if (IS_ERR(brd->disk))
		return PTR_ERR(brd->disk);
	brd->disk->fops = &brd_fops;
	brd->disk->private_data = brd;
	set_capacity(brd->disk, BRD_SECTORS);
	return 0;
}

/* One bio over 64 scattered 1.5 KiB buffers. */
static int transfer(struct brd_device *brd, u8 *buf, blk_opf_t op)
{
	struct bio *bio = bio_alloc(brd->disk->part0, 64, op, GFP_KERNEL);
	int i, ret;

	for (i = 0; i < 64; i++)
		bio_add_page(bio, virt_to_page(buf + i * 2048), 1536,
			     offset_in_page(buf + i * 2048));
	bio->bi_iter.bi_sector = 100;
	ret = submit_bio_wait(bio);
	bio_put(bio);
	return ret;
}

int main(void)
{
	struct brd_device brd;
	u8 *out = malloc(64 * 2048), *in = calloc(64, 2048);
	int i, bad = 0;

	if (!out || !in || brd_alloc(&brd))
		return 1;
	for (i = 0; i < 64 * 2048; i++)
		out[i] = (u8)(i * 31 + 7);
	if (transfer(&brd, out, REQ_OP_WRITE) || transfer(&brd, in, REQ_OP_READ))
		return 1;
	for (i = 0; i < 64 * 2048; i++)
		bad += i % 2048 < 1536 && in[i] != out[i];
	printf("brd: 96 KiB written and read back in split pieces, %d bad bytes\n", bad);
	put_disk(brd.disk);
	free(brd.data);
	free(out);
	free(in);
	return bad ? 1 : 0;
}

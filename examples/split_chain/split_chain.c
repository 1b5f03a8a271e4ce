// SPDX-License-Identifier: MIT
// cc split_chain.c $(pkg-config --cflags --libs libbvec) -o split_chain
#include <stdio.h>
#include <libbvec/bio.h>

static int completions;

static void done(struct bio *bio)
{
	printf("parent done, status %d\n", bio->bi_status);
	completions++;
}

int main(void)
{
	static char a[3000], b[5192];
	struct bio *bio = bio_alloc(NULL, 2, REQ_OP_WRITE, GFP_KERNEL);
	struct bvec_iter iter;
	struct bio_vec bv;

	bio_add_virt(bio, a, sizeof(a));		/* two scattered buffers, */
	bio_add_virt(bio, b, sizeof(b));		/* 16 sectors in all */
	bio->bi_end_io = done;

	struct bio *front = bio_split(bio, 4, GFP_NOIO, NULL);	/* shares the table */
	bio_chain(front, bio);				/* bio completes last */
	bio_for_each_segment(bv, front, iter)
		printf("front: %u bytes at offset %u\n", bv.bv_len, bv.bv_offset);
	printf("rest: sector %llu, %u bytes\n",
	       (unsigned long long)bio->bi_iter.bi_sector, bio->bi_iter.bi_size);
	bio_endio(front);				/* nothing printed yet */
	bio_endio(bio);					/* now "parent done" */
	bio_put(bio);
	return completions == 1 ? 0 : 1;		/* exactly once */
}

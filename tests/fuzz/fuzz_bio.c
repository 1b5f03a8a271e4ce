// SPDX-License-Identifier: MIT
/*
 * Fuzz target: a bio built from the input (scattered, unaligned, multi-page
 * pieces) and a sequence of advance/split/trim/truncate/clone operations
 * (clones both allocated and embedded, bio_init_clone())
 * read from the input; after each, the three views of the bio (single-page
 * segments, multi-page segments, iovecs) must agree with bi_size and with
 * each other.  Built with -fsanitize=fuzzer when the fuzz option is on;
 * always built as a test that replays tests/fuzz/corpus/bio/.
 */
#include <stdlib.h>
#include <string.h>

#include <libbvec/blkdev.h>

#include "fuzz.h"

#define PS ((unsigned int)BVEC_PAGE_SIZE)
#define ARENA (16 * PS)

/* Aborting is how a fuzz target reports; the replay test turns it into a failure. */
static void check(const struct bio *bio)
{
	struct bvec_iter iter;
	struct bio_vec bv;
	struct iovec iov[64];
	unsigned int total = 0, segs = 0, mp = 0;
	int n, i;

	bio_for_each_segment(bv, bio, iter) {
		if (!bv.bv_len || bv.bv_offset + bv.bv_len > PS)
			abort();
		total += bv.bv_len;
		segs++;
	}
	if (total != bio->bi_iter.bi_size || segs != bio_segments(bio))
		abort();
	total = 0;
	bio_for_each_bvec(bv, bio, iter) {
		total += bv.bv_len;
		mp++;
	}
	if (total != bio->bi_iter.bi_size || mp > segs)
		abort();
	n = bvec_bio_to_iovec(bio, bio->bi_iter, iov, 64);
	if (n < 0 || n != bvec_bio_iovec_count(bio, bio->bi_iter))
		abort();
	for (total = 0, i = 0; i < n; i++)
		total += (unsigned int)iov[i].iov_len;
	if (total != bio->bi_iter.bi_size)
		abort();
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static unsigned char *arena;
	struct input in = { data, size };
	struct bio_vec table[17];
	struct bio bio, *live[8], embedded[8];
	unsigned int nseg, i, total = 0, nlive = 1, nemb = 0;

	if (!arena && !(arena = aligned_alloc(PS, ARENA)))
		abort();
	nseg = 1 + take(&in, 1) % 16;
	bio_init(&bio, NULL, table, 17, take(&in, 1) & 1 ? REQ_OP_READ : REQ_OP_WRITE);
	for (i = 0; i < nseg; i++) {
		unsigned int len = take(&in, 2) % (3 * PS), off = take(&in, 2) % (ARENA - 3 * PS);

		/* Zero lengths go in by hand: bio_add_page() refuses them. */
		if (!len)
			bvec_set_virt(&table[bio.bi_vcnt++], arena + off, 0);
		else if (bio_add_virt(&bio, arena + off, len) == (int)len)
			total += len;
	}
	if (total % 512) /* whole sectors, so split and trim have room */
		bio_add_virt(&bio, arena + ARENA - 1024, 512 - total % 512);
	live[0] = &bio;
	check(&bio);
	while (in.left) {
		struct bio *b = live[take(&in, 1) % nlive], *n;
		unsigned int op = take(&in, 1) % 6, arg = take(&in, 2);
		unsigned int sectors = bio_sectors(b);

		switch (op) {
		case 0:
			bio_advance(b, b->bi_iter.bi_size ? arg % (b->bi_iter.bi_size + 1) : 0);
			break;
		case 1:
			if (sectors > 1 && nlive < 8 && !(b->bi_iter.bi_size % 512)) {
				n = bio_split(b, (int)(1 + arg % (sectors - 1)), GFP_NOIO, NULL);
				if (!n)
					abort();
				live[nlive++] = n;
				check(n);
			}
			break;
		case 2:
			if (sectors && bio_trim(b, arg % sectors, (arg >> 8) % (sectors - arg % sectors + 1)))
				abort();
			break;
		case 3:
			bio_truncate(b, b->bi_iter.bi_size ? arg % b->bi_iter.bi_size : 0);
			break;
		case 4:
			if (nlive < 8 && (n = bio_alloc_clone(NULL, b, GFP_NOIO, NULL)))
				live[nlive++] = n;
			break;
		default:
			if (nlive < 8) {
				n = &embedded[nemb++];
				/* No integrity payload to copy, so it cannot fail. */
				if (bio_init_clone(NULL, n, b, GFP_NOIO) || bio_first_bvec_all(n))
					abort();
				live[nlive++] = n;
				check(n);
			}
		}
		check(b);
	}
	/* bio_put() of an embedded clone only uninitialises it. */
	for (i = 1; i < nlive; i++)
		bio_put(live[i]);
	bio_uninit(&bio);
	return 0;
}

// SPDX-License-Identifier: MIT
/*
 * bench_split: the immutable-biovec claim, measured.
 *
 * Splitting a fixed 64 KiB front off a bio shares the table, so its cost
 * should not depend on how many segments the bio has.  The alternatives a
 * mutable design forces, copying the vector and bouncing the data, grow with
 * the bio.  Also: cost per segment of the bio loops against a plain loop
 * over a struct iovec array covering the same memory.
 *
 *   bench_split [--csv]
 *
 * All figures come from one run on the same bios; compare columns, not
 * runs: absolute times drift on a shared machine.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libbvec/blkdev.h>

#define FRONT_SECTORS 128 /* 64 KiB */
#define MAX_SEGS 4096

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Keeps results alive so the compiler cannot drop the measured work. */
static volatile unsigned long sink;

struct fixture {
	struct bio bio;
	struct bio_vec *table;
	unsigned char *data;
	struct iovec *iov;
	unsigned int nseg, seglen;
};

/* Segments of at least 4 KiB, and at least 128 KiB in all so a 64 KiB
 * front always leaves a remainder. */
static void fixture_init(struct fixture *f, unsigned int nseg)
{
	unsigned int i, stride;

	f->nseg = nseg;
	f->seglen = 4096;
	if (nseg * f->seglen < 2 * FRONT_SECTORS * 512)
		f->seglen = 2 * FRONT_SECTORS * 512 / nseg;
	stride = f->seglen + 64; /* a gap keeps bio_add_page from merging */
	f->data = aligned_alloc(4096, ((size_t)nseg * stride + 4095) / 4096 * 4096);
	f->table = calloc(nseg, sizeof(*f->table));
	f->iov = calloc(nseg, sizeof(*f->iov));
	if (!f->data || !f->table || !f->iov) {
		perror("bench_split");
		exit(1);
	}
	memset(f->data, 1, (size_t)nseg * stride);
	bio_init(&f->bio, NULL, f->table, (unsigned short)nseg, REQ_OP_WRITE);
	for (i = 0; i < nseg; i++) {
		unsigned char *p = f->data + (size_t)i * stride;

		f->table[i].bv_page = virt_to_page(p);
		f->table[i].bv_offset = offset_in_page(p);
		f->table[i].bv_len = f->seglen;
		f->iov[i].iov_base = p;
		f->iov[i].iov_len = f->seglen;
	}
	f->bio.bi_vcnt = (unsigned short)nseg;
	f->bio.bi_iter.bi_size = nseg * f->seglen;
}

static void fixture_exit(struct fixture *f)
{
	bio_uninit(&f->bio);
	free(f->data);
	free(f->table);
	free(f->iov);
}

/* Runs @body @reps times per sample; the result is the best ns per run of 9
 * (a shared machine spikes a sample now and then). */
#define MEASURE(result, reps, body)                                         \
	do {                                                                \
		double best_ = 1e30;                                        \
		for (int s_ = 0; s_ < 9; s_++) {                            \
			double t0_ = now_ns();                              \
			for (unsigned long r_ = 0; r_ < (reps); r_++) {     \
				body;                                       \
			}                                                   \
			double t_ = (now_ns() - t0_) / (double)(reps);      \
			if (t_ < best_)                                     \
				best_ = t_;                                 \
		}                                                           \
		(result) = best_;                                           \
	} while (0)

static unsigned long reps_for(unsigned long work_units)
{
	unsigned long r = 4000000ul / (work_units + 16);

	return r < 20 ? 20 : r;
}

int main(int argc, char **argv)
{
	bool csv = argc > 1 && !strcmp(argv[1], "--csv");
	struct bio_set bs;
	unsigned int nseg;
	unsigned char *bounce = malloc((size_t)MAX_SEGS * 4096);

	if (!bounce || bioset_init(&bs, 4, 0, 0)) {
		fprintf(stderr, "bench_split: out of memory\n");
		return 1;
	}
	if (csv)
		printf("segments,bio_bytes,split_ns,copy_vec_ns,copy_data_ns,"
		       "seg_loop_ns_per_seg,bvec_loop_ns_per_seg,iovec_loop_ns_per_seg\n");
	else
		printf("%8s %10s %10s %12s %13s | %12s %12s %12s\n", "segments",
		       "bio bytes", "split ns", "copy vec ns", "copy data ns",
		       "segment ns/s", "bvec ns/s", "iovec ns/s");

	for (nseg = 1; nseg <= MAX_SEGS; nseg *= 2) {
		struct fixture f;
		struct bvec_iter saved;
		double split, copy_vec, copy_data, seg_loop, bvec_loop, iov_loop;
		unsigned long reps = reps_for(nseg);
		unsigned int bytes;

		fixture_init(&f, nseg);
		saved = f.bio.bi_iter;
		bytes = saved.bi_size;

		/* Split: a new bio sharing the table; the original advances. */
		MEASURE(split, 200000ul, {
			struct bio *front = bio_split(&f.bio, FRONT_SECTORS, GFP_NOIO, &bs);
			sink += front->bi_iter.bi_size;
			bio_put(front);
			f.bio.bi_iter = saved;
		});

		/* What a mutable-vector design does: duplicate the table. */
		MEASURE(copy_vec, reps, {
			struct bio_vec *t = malloc(nseg * sizeof(*t));
			memcpy(t, f.table, nseg * sizeof(*t));
			sink += t[nseg - 1].bv_len;
			free(t);
		});

		/* Bouncing: copy the bio's data to a flat buffer. */
		MEASURE(copy_data, reps_for((unsigned long)bytes / 256), {
			struct bvec_iter it;
			struct bio_vec bv;
			unsigned char *q = bounce;
			bio_for_each_bvec(bv, &f.bio, it) {
				memcpy(q, bvec_virt(&bv), bv.bv_len);
				q += bv.bv_len;
			}
			sink += q[-1];
		});

		MEASURE(seg_loop, reps, {
			struct bvec_iter it;
			struct bio_vec bv;
			unsigned long acc = 0;
			bio_for_each_segment(bv, &f.bio, it)
				acc += bv.bv_len + *(unsigned char *)bvec_virt(&bv);
			sink += acc;
		});
		MEASURE(bvec_loop, reps, {
			struct bvec_iter it;
			struct bio_vec bv;
			unsigned long acc = 0;
			bio_for_each_bvec(bv, &f.bio, it)
				acc += bv.bv_len + *(unsigned char *)bvec_virt(&bv);
			sink += acc;
		});
		MEASURE(iov_loop, reps, {
			unsigned long acc = 0;
			for (unsigned int i = 0; i < nseg; i++)
				acc += f.iov[i].iov_len + *(unsigned char *)f.iov[i].iov_base;
			sink += acc;
		});
		{
			/* Per segment of the same walk (single-page segments for
			 * the segment loop, which are more when segments are big). */
			unsigned int segs = bio_segments(&f.bio);

			seg_loop /= segs;
			bvec_loop /= nseg;
			iov_loop /= nseg;
		}
		if (csv)
			printf("%u,%u,%.1f,%.1f,%.1f,%.2f,%.2f,%.2f\n", nseg, bytes, split,
			       copy_vec, copy_data, seg_loop, bvec_loop, iov_loop);
		else
			printf("%8u %10u %10.1f %12.1f %13.1f | %12.2f %12.2f %12.2f\n",
			       nseg, bytes, split, copy_vec, copy_data, seg_loop,
			       bvec_loop, iov_loop);
		fixture_exit(&f);
	}
	bioset_exit(&bs);
	free(bounce);
	return 0;
}

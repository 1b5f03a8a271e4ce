// SPDX-License-Identifier: MIT
/*
 * The bridge between bios and struct iovec arrays.  Both describe memory the
 * same way in userspace, so nothing is copied: only the descriptors change
 * shape.
 */
#include <limits.h>

#include "internal.h"

long bvec_bio_add_iovec(struct bio *bio, const struct iovec *iov, int iovcnt)
{
	const char *end = NULL;
	unsigned int need = 0;
	uint64_t total = 0;
	int i;

	if (!bio || iovcnt < 0 || (iovcnt && !iov) ||
	    bio_flagged(bio, BIO_CLONED))
		return -EINVAL;
	/* Check everything first: the bio is changed only if all of it fits. */
	if (bio->bi_vcnt) {
		const struct bio_vec *last = &bio->bi_io_vec[bio->bi_vcnt - 1];

		end = (const char *)bvec_virt(last) + last->bv_len;
	}
	for (i = 0; i < iovcnt; i++) {
		if (!iov[i].iov_len)
			continue;
		if (iov[i].iov_len > UINT32_MAX || !iov[i].iov_base)
			return -EINVAL;
		if ((const char *)iov[i].iov_base != end)
			need++;
		end = (const char *)iov[i].iov_base + iov[i].iov_len;
		total += iov[i].iov_len;
	}
	if (need > (unsigned int)(bio->bi_max_vecs - bio->bi_vcnt) ||
	    total + bio->bi_iter.bi_size > UINT32_MAX || total > LONG_MAX)
		return -EINVAL;
	for (i = 0; i < iovcnt; i++)
		if (iov[i].iov_len)
			bio_add_virt(bio, iov[i].iov_base, (unsigned int)iov[i].iov_len);
	return (long)total;
}

/* Walks the multi-page segments from @iter, merging contiguous runs. */
static int to_iovec(const struct bio *bio, struct bvec_iter iter,
		    struct iovec *iov, int iovcnt)
{
	struct bvec_iter it;
	struct bio_vec bv;
	char *end = NULL;
	int n = 0;

	if (bio_no_advance_iter(bio))
		return -EINVAL;
	__bio_for_each_bvec(bv, bio, it, iter) {
		char *p = bvec_virt(&bv);

		if (n && p == end) {
			if (iov)
				iov[n - 1].iov_len += bv.bv_len;
		} else {
			if (iov && n == iovcnt)
				return -ENOSPC;
			if (iov) {
				iov[n].iov_base = p;
				iov[n].iov_len = bv.bv_len;
			}
			n++;
		}
		end = p + bv.bv_len;
	}
	return n;
}

int bvec_bio_to_iovec(const struct bio *bio, struct bvec_iter iter,
		      struct iovec *iov, int iovcnt)
{
	if (!bio || !iov || iovcnt < 0)
		return -EINVAL;
	return to_iovec(bio, iter, iov, iovcnt);
}

int bvec_bio_iovec_count(const struct bio *bio, struct bvec_iter iter)
{
	if (!bio)
		return -EINVAL;
	return to_iovec(bio, iter, NULL, 0);
}

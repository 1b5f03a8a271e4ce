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

int bvec__bio_iovec_batch(const struct bio *bio, struct bvec_iter *iter,
			  struct iovec *iov, int max)
{
	char *end = NULL;
	int n = 0;

	while (bvec_iter_skip_empty(bio->bi_io_vec, iter)) {
		struct bio_vec bv = mp_bvec_iter_bvec(bio->bi_io_vec, *iter);
		char *p = bvec_virt(&bv);

		if (n && p == end) {
			iov[n - 1].iov_len += bv.bv_len;
		} else {
			if (n == max)
				break;
			iov[n].iov_base = p;
			iov[n].iov_len = bv.bv_len;
			n++;
		}
		end = p + bv.bv_len;
		bio_advance_iter_single(bio, iter, bv.bv_len);
	}
	return n;
}

int bvec_bio_to_iovec(const struct bio *bio, struct bvec_iter iter,
		      struct iovec *iov, int iovcnt)
{
	int n;

	if (!bio || !iov || iovcnt < 0 || bio_no_advance_iter(bio))
		return -EINVAL;
	n = bvec__bio_iovec_batch(bio, &iter, iov, iovcnt);
	return iter.bi_size ? -ENOSPC : n;
}

int bvec_bio_iovec_count(const struct bio *bio, struct bvec_iter iter)
{
	struct iovec iov[16];
	int n, total = 0;

	if (!bio || bio_no_advance_iter(bio))
		return -EINVAL;
	while ((n = bvec__bio_iovec_batch(bio, &iter, iov, 16)) > 0)
		total += n;
	return total;
}

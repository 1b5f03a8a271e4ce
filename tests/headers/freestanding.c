// SPDX-License-Identifier: MIT
/*
 * bvec.h with nothing but the compiler's own headers:
 * -ffreestanding -nostdinc -isystem $(cc -print-file-name=include).
 */
#include <libbvec/bvec.h>
#include <libbvec/bvec.h>

unsigned int bvec_freestanding_total(const struct bio_vec *table,
				     struct bvec_iter start);

unsigned int bvec_freestanding_total(const struct bio_vec *table,
				     struct bvec_iter start)
{
	struct bvec_iter iter;
	struct bio_vec bv;
	unsigned int n = 0;

	for_each_bvec(bv, table, iter, start)
		n += bv.bv_len;
	return n;
}

// SPDX-License-Identifier: MIT
/* Compiled with -std=c11 -pedantic-errors -Werror: the headers are ISO C. */
#include "all_headers.h"

int main(void)
{
	unsigned char buf[1024];
	struct bio_vec table[2], bv;
	struct bvec_iter iter;
	struct bio bio;
	unsigned int n = 0;

	bio_init(&bio, NULL, table, 2, REQ_OP_WRITE);
	bio_add_virt(&bio, buf, 512);
	bio_add_virt(&bio, buf + 600, 300);
	bio_for_each_segment(bv, &bio, iter)
		n += bv.bv_len;
	bio_uninit(&bio);
	return n == 812 && LIBBVEC_VERSION_MAJOR == bvec_major_version() ? 0 : 1;
}

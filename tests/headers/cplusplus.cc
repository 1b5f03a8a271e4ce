// SPDX-License-Identifier: MIT
// The headers compile and link as C++ (-std=c++11 -pedantic-errors).
#include "all_headers.h"

int main()
{
	unsigned char buf[1024];
	struct bio_vec table[1], bv;
	struct bvec_iter iter;
	struct bio bio;
	unsigned int n = 0;

	bio_init(&bio, nullptr, table, 1, REQ_OP_READ);
	bio_add_virt(&bio, buf, 700);
	bio_for_each_bvec(bv, &bio, iter)
		n += bv.bv_len;
	bio_uninit(&bio);
	return n == 700 ? 0 : 1;
}

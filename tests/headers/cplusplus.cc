// SPDX-License-Identifier: MIT
// The headers compile and link as C++ (-std=c++11 -pedantic-errors), and
// C++ sees the structs with atomic members as C does (layout.h).
#include <cstdio>

#include "all_headers.h"
#include "layout.h"

static int layout_differs()
{
	static const size_t cxx[] = { HDR_LAYOUT_LIST };
	static const char *const names[] = { HDR_LAYOUT_NAMES };
	int bad = 0;

	for (size_t i = 0; i < sizeof(cxx) / sizeof(cxx[0]); i++)
		if (cxx[i] != hdr_layout_c[i]) {
			std::printf("%s: %zu in C++, %zu in C\n", names[i], cxx[i], hdr_layout_c[i]);
			bad = 1;
		}
	return bad;
}

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
	if (layout_differs())
		return 1;
	return n == 700 ? 0 : 1;
}

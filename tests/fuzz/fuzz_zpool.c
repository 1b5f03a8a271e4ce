// SPDX-License-Identifier: MIT
/*
 * Fuzz target: whatever bytes end up in a stored object, zpool_load()
 * returns 0 or -EIO and never reads or writes out of bounds.  The input
 * overwrites a stored object in place (through the corruption test hook);
 * with checksums on, nothing but -EIO may come back.
 */
#include <stdlib.h>
#include <string.h>

#include <libbvec/zpool.h>

#include "../../src/zpool/internal.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static struct zpool *plain, *summed;

/* The pools live across inputs; give them back so leak checkers stay quiet. */
static void destroy_pools(void)
{
	zpool_destroy(plain);
	zpool_destroy(summed);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	unsigned char page[BVEC_PAGE_SIZE], out[BVEC_PAGE_SIZE];
	struct zpool *pools[2];
	size_t i, p;

	if (!plain) {
		struct zpool_config cfg = ZPOOL_CONFIG_INIT;

		plain = zpool_create(&cfg);
		cfg.flags = ZPOOL_F_CHECKSUM;
		summed = zpool_create(&cfg);
		if (!plain || !summed)
			abort();
		atexit(destroy_pools);
	}
	pools[0] = plain;
	pools[1] = summed;
	/* A page that compresses to a mid-size object, different per input. */
	for (i = 0; i < BVEC_PAGE_SIZE; i++)
		page[i] = (unsigned char)(i % 97 == 0 ? (size ? data[i % size] : 1) : i / 64);
	for (p = 0; p < 2; p++) {
		zpool_handle_t h;
		size_t len;
		int ret;

		if (zpool_store(pools[p], page, &h))
			abort();
		len = zpool_obj_size(pools[p], h);
		/* XOR the input over the object: every byte of it can change. */
		for (i = 0; i < size; i++)
			zpool__corrupt(pools[p], h, i % len, data[i]);
		ret = zpool_load(pools[p], h, out);
		if (ret != 0 && ret != -EIO)
			abort();
		if (p == 1 && ret == 0 && memcmp(out, page, sizeof(page)))
			abort(); /* checksummed: wrong bytes must never come back */
		zpool_free(pools[p], h);
	}
	return 0;
}

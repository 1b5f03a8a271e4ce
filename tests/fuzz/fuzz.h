/* SPDX-License-Identifier: MIT */
/*
 * Shared by the fuzz targets: the libFuzzer entry point's prototype and a
 * cursor that reads the input as big-endian numbers.  Past the end it reads
 * zeroes, so every input decodes to some complete run of operations.
 */
#ifndef BVEC_FUZZ_H
#define BVEC_FUZZ_H

#include <stddef.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

struct input {
	const unsigned char *p;
	size_t left;
};

/* The next @bytes bytes (at most 4) as a big-endian number. */
static inline unsigned int take(struct input *in, unsigned int bytes)
{
	unsigned int v = 0;

	while (bytes--) {
		v = v << 8 | (in->left ? *in->p : 0);
		if (in->left) {
			in->p++;
			in->left--;
		}
	}
	return v;
}

#endif

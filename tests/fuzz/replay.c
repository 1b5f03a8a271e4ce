// SPDX-License-Identifier: MIT
/*
 * Replays every file of a corpus directory through a fuzz target, so the
 * corpus runs as an ordinary test (lz4's and xxHash's way).
 *   replay DIR
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int main(int argc, char **argv)
{
	static unsigned char buf[1 << 16];
	struct dirent *e;
	int count = 0;
	DIR *d;

	if (argc != 2 || !(d = opendir(argv[1]))) {
		fprintf(stderr, "usage: replay CORPUS_DIR\n");
		return 2;
	}
	while ((e = readdir(d))) {
		char path[4096];
		size_t n;
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", argv[1], e->d_name);
		f = fopen(path, "rb");
		if (!f)
			continue;
		n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		LLVMFuzzerTestOneInput(buf, n);
		count++;
	}
	closedir(d);
	printf("%d passed, 0 failed\n", count);
	return count ? 0 : 1;
}

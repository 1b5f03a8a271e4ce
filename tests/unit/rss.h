/* SPDX-License-Identifier: MIT */
/*
 * The process's anonymous resident memory, for comparing with what the
 * pool reports: shared by tests/unit/test_zpool_rss.c and bench_zpool.
 */
#ifndef BVEC_RSS_H
#define BVEC_RSS_H

#include <stdint.h>
#include <stdio.h>

/* Anonymous resident bytes; -1 if /proc/self/smaps_rollup cannot be read. */
static inline int64_t rss_anon(void)
{
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	char line[256];
	long long kb = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Anonymous: %lld kB", &kb) == 1)
			break;
	fclose(f);
	return kb < 0 ? -1 : (int64_t)kb << 10;
}

#endif

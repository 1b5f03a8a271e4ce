// SPDX-License-Identifier: MIT
/*
 * What a first write to fresh anonymous memory costs on this machine, in the
 * writing thread's CPU time: the cost a store into a fresh pool pays and raw
 * lz4, writing into a buffer it already has, does not (issue 14, item 3).
 *
 *   bench_first_touch [MiB]
 *
 * Rows: 4 KiB pages touched one by one, the same after the memory was given
 * back and mapped again (is it the first use by this process or the page's
 * zeroing that costs?), MADV_POPULATE_WRITE over batches (the fault entry
 * amortised), and transparent huge pages (one fault and one clear per
 * 2 MiB), each the best of 3.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

enum mode { PLAIN, POPULATE, HUGE };

static double cpu_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Map @bytes, touch every page in the given mode, unmap; -1.0 if refused. */
static double touch_once(size_t bytes, size_t ps, enum mode m, size_t batch)
{
	char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	double t, d;

	if (p == MAP_FAILED)
		return -1.0;
	madvise(p, bytes, m == HUGE ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	t = cpu_now();
	for (size_t off = 0; off < bytes; off += ps) {
		if (m == POPULATE && off % (batch * ps) == 0 &&
		    madvise(p + off, batch * ps, MADV_POPULATE_WRITE) != 0) {
			munmap(p, bytes);
			return -1.0;
		}
		p[off] = 1;
	}
	d = cpu_now() - t;
	munmap(p, bytes);
	return d;
}

static void row(const char *name, size_t bytes, size_t ps, enum mode m,
		size_t batch)
{
	double best = -1.0;

	for (int i = 0; i < 3; i++) {
		double d = touch_once(bytes, ps, m, batch);

		if (d < 0) {
			printf("%-40s refused (%s)\n", name, strerror(errno));
			return;
		}
		if (best < 0 || d < best)
			best = d;
	}
	printf("%-40s %8.2f us per 4 KiB\n", name, best * 1e6 / (double)(bytes / 4096));
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 0) : 256;
	size_t bytes = mib << 20;
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	char name[64];

	if (mib == 0 || bytes / mib != ((size_t)1 << 20)) {
		fprintf(stderr, "usage: %s [MiB]\n", argv[0]);
		return 2;
	}
	printf("first write to %zu MiB of fresh anonymous memory, thread CPU time\n", mib);
	row("base pages, one fault each", bytes, ps, PLAIN, 1);
	/* The first row gave its memory back: this one reuses what the kernel just freed. */
	row("base pages, memory just freed", bytes, ps, PLAIN, 1);
	for (size_t b = 16; b <= 256; b *= 4) {
		snprintf(name, sizeof(name), "MADV_POPULATE_WRITE, %zu pages a call", b);
		row(name, bytes, ps, POPULATE, b);
	}
	row("transparent huge pages (MADV_HUGEPAGE)", bytes, ps, HUGE, 1);
	return 0;
}

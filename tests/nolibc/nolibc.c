// SPDX-License-Identifier: MIT
/*
 * The bio core linked into a program with no C library at all: built with
 * -ffreestanding -nostdinc -nostdlib -static and BVEC_FREESTANDING, it
 * brings its own entry point, memcpy/memset and a fixed arena for its
 * bio_set, then splits, chains, completes and copies bios.  The exit status
 * is the number of the first check that failed (0: all passed).  x86-64
 * Linux only, for the exit system call.
 */
#include <libbvec/bio.h>

void *memcpy(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void _start(void);

extern int bvec_errno;

/* Linux's values, as the library's BVEC_FREESTANDING build uses. */
#define ENOMEM_VALUE 12
#define EINVAL_VALUE 22

void *memcpy(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

	while (n--)
		*d++ = *s++;
	return dst;
}

void *memmove(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

	if (d < s)
		return memcpy(dst, src, n);
	while (n--)
		d[n] = s[n];
	return dst;
}

void *memset(void *dst, int c, size_t n)
{
	unsigned char *d = dst;

	while (n--)
		*d++ = (unsigned char)c;
	return dst;
}

/* A bump arena with a count of what is outstanding. */
static _Alignas(16) unsigned char heap[256 * 1024];
static size_t heap_used;
static long outstanding;

static void *arena_alloc(void *ctx, size_t size)
{
	void *p;

	(void)ctx;
	size = (size + 15) & ~(size_t)15;
	if (size > sizeof(heap) - heap_used)
		return NULL;
	p = heap + heap_used;
	heap_used += size;
	outstanding++;
	return p;
}

static void arena_free(void *ctx, void *p, size_t size)
{
	(void)ctx;
	(void)p;
	(void)size;
	outstanding--;
}

static int completions;
static blk_status_t last_status;

static void done(struct bio *bio)
{
	completions++;
	last_status = bio->bi_status;
}

static unsigned char src[3 * 4096 + 100], dst[3 * 4096 + 100];

static int run(void)
{
	struct bvec_allocator a = { .alloc = arena_alloc, .free = arena_free };
	struct bio_set bs;
	struct bio *bio, *front, *copy, *held[2];
	struct bvec_iter iter;
	struct bio_vec bv;
	unsigned int i, n = 0, total = 0;

	for (i = 0; i < sizeof(src); i++)
		src[i] = (unsigned char)(i * 7 + 1);
	if (bioset_init(&bs, 2, 0, 0) != -ENOMEM_VALUE)
		return 1; /* no default allocator without a C library */
	if (bvec_bioset_init(&bs, 2, 0, BIOSET_NEED_BVECS, &a))
		return 2;
	bio = bio_alloc_bioset(0, 8, REQ_OP_WRITE, GFP_KERNEL, &bs);
	if (!bio)
		return 3;
	if (bio_add_virt(bio, src + 100, 4000) != 4000 ||
	    bio_add_virt(bio, src + 4100, 8096) != 8096) /* merges: contiguous */
		return 4;
	bio->bi_end_io = done;
	bio_for_each_segment(bv, bio, iter) {
		n++;
		total += bv.bv_len;
	}
	if (total != 12096 || bio->bi_vcnt != 1 || n != bio_segments(bio))
		return 5;
	front = bio_split(bio, 8, GFP_NOIO, &bs);
	if (!front || front->bi_iter.bi_size != 4096 || bio->bi_iter.bi_sector != 8)
		return 6;
	if (bio_chain(front, bio))
		return 7;
	copy = bio_alloc_bioset(0, 1, REQ_OP_READ, GFP_KERNEL, &bs);
	if (!copy || bio_add_virt(copy, dst, 4096) != 4096)
		return 8;
	bio_copy_data(copy, front);
	for (i = 0; i < 4096; i++)
		if (dst[i] != src[100 + i])
			return 9;
	front->bi_status = BLK_STS_IOERR;
	bio_endio(front);
	if (completions)
		return 10;
	bio_endio(bio);
	if (completions != 1 || last_status != BLK_STS_IOERR)
		return 11;
	bio_put(copy);
	bio_put(bio);
	/* Reserve and arena exhausted: a blocking allocation fails, no hang. */
	held[0] = bio_alloc_bioset(0, 0, REQ_OP_READ, GFP_NOIO, &bs);
	held[1] = bio_alloc_bioset(0, 0, REQ_OP_READ, GFP_NOIO, &bs);
	while (bio_alloc_bioset(0, 0, REQ_OP_READ, GFP_NOIO, &bs))
		;
	if (!held[0] || !held[1] || bvec_errno != ENOMEM_VALUE)
		return 12;
	bvec_errno = 0;
	if (bio_split(held[0], 1, GFP_NOIO, &bs) || bvec_errno != EINVAL_VALUE)
		return 13;
	return 0;
}

static __attribute__((noreturn)) void sys_exit(long status)
{
#if defined(__x86_64__)
	__asm__ volatile("syscall" : : "a"(60L), "D"(status) : "rcx", "r11", "memory");
#elif defined(__mips__)
	register long v0 __asm__("$2") = 4001; /* o32 __NR_exit */
	register long a0 __asm__("$4") = status;

	__asm__ volatile("syscall" : : "r"(v0), "r"(a0) : "memory");
#elif defined(__s390x__)
	register long r2 __asm__("r2") = status;

	__asm__ volatile("svc 1" : : "r"(r2) : "memory");
#else
#error "add this architecture's exit system call"
#endif
	__builtin_unreachable();
}

/* On x86-64 the kernel enters with a 16-byte aligned stack, not a call's. */
#if defined(__x86_64__)
__attribute__((force_align_arg_pointer))
#endif
__attribute__((noreturn)) void _start(void)
{
	sys_exit(run());
}

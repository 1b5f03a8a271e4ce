/* SPDX-License-Identifier: MIT */
/**
 * DOC: libbvec/linux.h - opt-in kernel spellings for ported driver code
 *
 * Include this instead of <linux/bio.h>, <linux/blkdev.h> and
 * <linux/kernel.h> when porting a driver; programs that do not include it
 * see none of these short names.  WARN_ON and WARN_ON_ONCE print to stderr
 * and evaluate to the condition; BUG_ON warns instead of stopping, because
 * a library must not abort its host.
 */
#ifndef LIBBVEC_LINUX_H
#define LIBBVEC_LINUX_H

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <libbvec/bio.h>
#include <libbvec/blkdev.h>

#define PAGE_SHIFT BVEC_PAGE_SHIFT
#define PAGE_SIZE BVEC_PAGE_SIZE
#define PAGE_MASK (~(PAGE_SIZE - 1))
#define SECTOR_SHIFT BVEC_SECTOR_SHIFT
#define SECTOR_SIZE BVEC_SECTOR_SIZE

#ifndef READ
#define READ 0
#define WRITE 1
#endif

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int8_t s8;
typedef int16_t s16;
typedef int32_t s32;
typedef int64_t s64;

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define container_of(ptr, type, member)                                     \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

#define min(a, b) ((a) < (b) ? (a) : (b))
#define max(a, b) ((a) > (b) ? (a) : (b))
#define min_t(t, a, b) ((t)(a) < (t)(b) ? (t)(a) : (t)(b))
#define max_t(t, a, b) ((t)(a) > (t)(b) ? (t)(a) : (t)(b))
#define round_down(x, y) ((x) & ~((__typeof__(x))(y) - 1))
#define round_up(x, y) ((((x) - 1) | ((__typeof__(x))(y) - 1)) + 1)
#define DIV_ROUND_UP(n, d) (((n) + (d) - 1) / (d))
#define IS_ALIGNED(x, a) (((x) & ((__typeof__(x))(a) - 1)) == 0)

#define WARN_ON(cond)                                                       \
	__extension__({                                                     \
		int __ret = !!(cond);                                       \
		if (__ret)                                                  \
			fprintf(stderr, "WARNING: %s:%d: %s\n", __FILE__,  \
				__LINE__, #cond);                           \
		__ret;                                                      \
	})
#define WARN_ON_ONCE(cond)                                                  \
	__extension__({                                                     \
		static int __warned;                                        \
		int __ret = !!(cond);                                       \
		if (__ret && !__warned) {                                   \
			__warned = 1;                                       \
			fprintf(stderr, "WARNING: %s:%d: %s\n", __FILE__,  \
				__LINE__, #cond);                           \
		}                                                           \
		__ret;                                                      \
	})
#define BUG_ON(cond) ((void)WARN_ON(cond))

/* Pages are always mapped in userspace: kmap is the identity. */
#define kmap_local_page(page) page_address(page)
#define kunmap_local(addr) ((void)(addr))
#define bvec_kmap_local(bv) bvec_virt(bv)

/**
 * memcpy_from_bvec() - copy a bio_vec's memory out
 * @to: destination
 * @bvec: source range
 */
static inline void memcpy_from_bvec(char *to, const struct bio_vec *bvec)
{
	memcpy(to, bvec_virt(bvec), bvec->bv_len);
}

/**
 * memcpy_to_bvec() - copy into a bio_vec's memory
 * @bvec: destination range
 * @from: source
 */
static inline void memcpy_to_bvec(const struct bio_vec *bvec, const char *from)
{
	memcpy(bvec_virt(bvec), from, bvec->bv_len);
}

/**
 * zero_user() - zero part of a page
 * @page: the page
 * @start: offset of the first byte
 * @size: bytes
 */
static inline void zero_user(struct page *page, unsigned int start,
			     unsigned int size)
{
	memset((char *)page_address(page) + start, 0, size);
}

#endif /* LIBBVEC_LINUX_H */

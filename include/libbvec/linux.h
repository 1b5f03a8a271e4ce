/* SPDX-License-Identifier: MIT */
/**
 * DOC: libbvec/linux.h - opt-in kernel spellings for ported driver code
 *
 * Include this instead of <linux/bio.h>, <linux/blkdev.h>,
 * <linux/highmem.h>, <linux/module.h> and <linux/kernel.h> when porting a
 * driver; programs that do not include it see none of these short names.
 * It includes <libbvec/kernel.h> (bits, error pointers, atomics, pages).
 * WARN_ON and WARN_ON_ONCE print to stderr and evaluate to the condition;
 * BUG_ON warns instead of stopping, because a library must not abort its
 * host.
 *
 * PAGE_SIZE, PAGE_SHIFT, SECTOR_SHIFT, SECTOR_SIZE, PAGE_SECTORS and
 * PAGE_SECTORS_SHIFT are integer constant expressions the preprocessor can
 * evaluate, so "#if PAGE_SIZE != 4096" works as in the kernel; PAGE_SIZE
 * is an unsigned long, as in Linux.
 *
 * blk_alloc_disk() changes meaning here: as in Linux 6.9+, it returns
 * ERR_PTR(-errno) on failure, never NULL.  Code that does not include this
 * header gets the library's NULL-and-errno convention.
 */
#ifndef LIBBVEC_LINUX_H
#define LIBBVEC_LINUX_H

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <libbvec/bio.h>
#include <libbvec/blkdev.h>
#include <libbvec/kernel.h>

/*
 * Spelled without casts so #if can test them.  1UL << PAGE_SHIFT has the
 * same value as BVEC_PAGE_SIZE (a size_t) and Linux's type.
 */
#define PAGE_SHIFT BVEC_PAGE_SHIFT
/*
 * musl's <limits.h> (included above, through kernel.h) defines PAGE_SIZE as
 * the MMU's page; a ported driver means the bvec page, which differs from
 * it in the 16 and 64 KiB page builds.
 */
#undef PAGE_SIZE
#define PAGE_SIZE (1UL << PAGE_SHIFT)
#define PAGE_MASK (~(PAGE_SIZE - 1))
#define SECTOR_SHIFT BVEC_SECTOR_SHIFT
#define SECTOR_SIZE BVEC_SECTOR_SIZE
/* Sectors per page, and its log2; SECTOR_MASK masks a sector's page offset. */
#define PAGE_SECTORS_SHIFT (PAGE_SHIFT - SECTOR_SHIFT)
#define PAGE_SECTORS (1 << PAGE_SECTORS_SHIFT)
#define SECTOR_MASK (PAGE_SECTORS - 1)

/* Modules do not exist: every driver is built in, as with CONFIG_MODULES=n. */
#define THIS_MODULE ((struct module *)0)

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

/**
 * likely() - branch hint: @x is usually true
 * @x: condition
 */
#define likely(x) __builtin_expect(!!(x), 1)
/**
 * unlikely() - branch hint: @x is usually false
 * @x: condition
 */
#define unlikely(x) __builtin_expect(!!(x), 0)

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
/**
 * container_of() - the struct that contains a member
 * @ptr: pointer to the member
 * @type: the containing struct's type
 * @member: the member's name in @type
 */
#define container_of(ptr, type, member)                                     \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

/**
 * min() - the smaller of two values (each evaluated twice)
 * @a: a value
 * @b: a value of a compatible type
 */
#define min(a, b) ((a) < (b) ? (a) : (b))
/**
 * max() - the larger of two values (each evaluated twice)
 * @a: a value
 * @b: a value of a compatible type
 */
#define max(a, b) ((a) > (b) ? (a) : (b))
/**
 * min_t() - the smaller of two values, both converted to @t first
 * @t: the type to compare in
 * @a: a value
 * @b: a value
 */
#define min_t(t, a, b) ((t)(a) < (t)(b) ? (t)(a) : (t)(b))
/**
 * max_t() - the larger of two values, both converted to @t first
 * @t: the type to compare in
 * @a: a value
 * @b: a value
 */
#define max_t(t, a, b) ((t)(a) > (t)(b) ? (t)(a) : (t)(b))
/**
 * round_down() - round down to a multiple of a power of two
 * @x: the value
 * @y: a power of two
 */
#define round_down(x, y) ((x) & ~((__typeof__(x))(y) - 1))
/**
 * round_up() - round up to a multiple of a power of two
 * @x: the value
 * @y: a power of two
 */
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

/**
 * kmap_local_page() - map a page for the current thread
 * @page: the page
 *
 * Pages are always mapped in userspace: this is page_address().
 */
#define kmap_local_page(page) page_address(page)

/**
 * kunmap_local() - undo kmap_local_page(); nothing to do here
 * @addr: the address kmap_local_page() or bvec_kmap_local() returned
 */
#define kunmap_local(addr) ((void)(addr))

/**
 * bvec_kmap_local() - map a bio_vec's memory: bvec_virt()
 * @bv: the bio_vec
 */
#define bvec_kmap_local(bv) bvec_virt(bv)

/**
 * flush_dcache_page() - make CPU writes to a page visible to other mappings
 * @page: the page
 *
 * Nothing to do: a userspace page has one mapping, and the CPU's data cache
 * is coherent with itself.
 */
static inline void flush_dcache_page(struct page *page)
{
	(void)page;
}

/**
 * memcpy_to_page() - copy into part of a page
 * @page: the destination page (of a multi-page run, any page)
 * @offset: byte offset into @page; @offset + @len may cross into the
 *	following pages of a contiguous run
 * @from: source
 * @len: bytes
 */
static inline void memcpy_to_page(struct page *page, size_t offset,
				  const char *from, size_t len)
{
	memcpy((char *)page_address(page) + offset, from, len);
}

/**
 * memcpy_from_page() - copy out of part of a page
 * @to: destination
 * @page: the source page
 * @offset: byte offset into @page
 * @len: bytes
 */
static inline void memcpy_from_page(char *to, struct page *page,
				    size_t offset, size_t len)
{
	memcpy(to, (const char *)page_address(page) + offset, len);
}

/**
 * bvec__blk_alloc_disk_err() - private: blk_alloc_disk() as Linux 6.9+ has it
 * @lim: limits, or NULL
 * @node: NUMA node, ignored
 *
 * Return: the disk, or ERR_PTR(-errno).
 */
static inline struct gendisk *bvec__blk_alloc_disk_err(const struct queue_limits *lim,
							int node)
{
	struct gendisk *disk = (blk_alloc_disk)(lim, node);

	if (!disk)
		return (struct gendisk *)ERR_PTR(errno ? -errno : -ENOMEM);
	return disk;
}

/* The library's blk_alloc_disk() returns NULL with errno; drivers expect this. */
#define blk_alloc_disk(lim, node) bvec__blk_alloc_disk_err((lim), (node))

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

/**
 * memzero_page() - zero part of a page
 * @page: the page
 * @offset: offset of the first byte; @offset + @len may cross into the
 *	following pages of a contiguous run
 * @len: bytes
 */
static inline void memzero_page(struct page *page, size_t offset, size_t len)
{
	memset((char *)page_address(page) + offset, 0, len);
}

/**
 * memzero_bvec() - zero a bio_vec's memory
 * @bvec: the range
 */
static inline void memzero_bvec(const struct bio_vec *bvec)
{
	memset(bvec_virt(bvec), 0, bvec->bv_len);
}

/**
 * kmap_atomic() - map a page, the older spelling of kmap_local_page()
 * @page: the page
 *
 * Deprecated in Linux but still in many drivers; page_address() here.
 */
#define kmap_atomic(page) page_address(page)

/**
 * kunmap_atomic() - undo kmap_atomic(); nothing to do here
 * @addr: the address kmap_atomic() returned
 */
#define kunmap_atomic(addr) ((void)(addr))

/**
 * __bio_add_page() - append a range to a bio as a new bvec, never merging
 * @bio: a bio you own that is not a clone
 * @page: first page
 * @len: bytes, not 0
 * @off: offset from page_address(@page)
 *
 * Linux's caller makes sure the table has room, and nothing is checked.
 * Here a full table, a clone, a zero @len or a bi_size that would overflow
 * warns once and adds nothing, rather than write past the table.
 */
static inline void __bio_add_page(struct bio *bio, struct page *page, unsigned int len,
				  unsigned int off)
{
	if (WARN_ON_ONCE(!len || bio_flagged(bio, BIO_CLONED) ||
			 bio->bi_vcnt >= bio->bi_max_vecs ||
			 bio->bi_iter.bi_size > UINT32_MAX - len))
		return;
	bvec_set_page(&bio->bi_io_vec[bio->bi_vcnt], page, len, off);
	bio->bi_vcnt++;
	bio->bi_iter.bi_size += len;
}

/**
 * bio_add_virt_nofail() - __bio_add_page() of a virtual address range
 * @bio: a bio you own that is not a clone
 * @vaddr: first byte
 * @len: bytes, not 0
 */
static inline void bio_add_virt_nofail(struct bio *bio, void *vaddr, unsigned int len)
{
	__bio_add_page(bio, virt_to_page(vaddr), len, offset_in_page(vaddr));
}

#endif /* LIBBVEC_LINUX_H */

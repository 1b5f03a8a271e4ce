/* SPDX-License-Identifier: MIT */
/**
 * DOC: libbvec/bvec.h - bio_vec and bvec_iter, the immutable-biovec cursor
 *
 * Header-only and freestanding: it needs nothing but the compiler's own
 * <stddef.h>, <stdint.h> and <stdbool.h>, so it can be used in programs
 * without a C library.
 *
 * A "page" is BVEC_PAGE_SIZE bytes of ordinary memory.  &struct page is
 * opaque: a struct page pointer is simply the address of the page's first
 * byte, so page_address() and virt_to_page() are casts and any contiguous
 * buffer is a valid multi-page bio_vec (as in Linux since 5.1, bv_offset may
 * exceed the page size).
 *
 * Style follows the kernel: iterators are values.  Accessors take a const
 * table and an iterator by value and return a bio_vec by value; only the
 * *_advance* functions mutate.
 *
 * Zero-length bvecs: bio_add_page() refuses them (as Linux does since 5.12),
 * but a table built by hand may hold them.  bvec_iter_advance() treats them
 * exactly as Linux does; the segment loops (for_each_bvec and the bio loops
 * in <libbvec/bio.h>) step over them and never yield a zero-length segment,
 * so a loop over such a table always terminates.
 */
#ifndef LIBBVEC_BVEC_H
#define LIBBVEC_BVEC_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include <libbvec/config.h>

#ifdef __cplusplus
extern "C" {
#endif

/* BVEC_PAGE_SHIFT comes from <libbvec/config.h> (meson option page_size). */
#define BVEC_PAGE_SIZE ((size_t)1 << BVEC_PAGE_SHIFT)
#define BVEC_SECTOR_SHIFT 9
#define BVEC_SECTOR_SIZE (1u << BVEC_SECTOR_SHIFT)

/**
 * typedef sector_t - a 512-byte sector number, 64 bits on every target
 */
typedef uint64_t sector_t;

/**
 * struct page - opaque: BVEC_PAGE_SIZE bytes of memory
 *
 * Never defined.  A struct page pointer is the address of the memory it
 * names; use nth_page() rather than pointer arithmetic on it.
 */
struct page;

/**
 * page_address() - the memory a page names
 * @page: a page pointer
 *
 * Return: the address of the page's first byte.
 */
static inline void *page_address(const struct page *page)
{
	return (void *)(uintptr_t)page;
}

/**
 * virt_to_page() - the page that holds an address
 * @addr: any address
 *
 * Return: @addr rounded down to a multiple of BVEC_PAGE_SIZE, as a page.
 */
static inline struct page *virt_to_page(const void *addr)
{
	return (struct page *)((uintptr_t)addr & ~(uintptr_t)(BVEC_PAGE_SIZE - 1));
}

/**
 * offset_in_page() - an address's offset inside its page
 * @addr: any address
 *
 * Return: @addr modulo BVEC_PAGE_SIZE.
 */
static inline unsigned int offset_in_page(const void *addr)
{
	return (unsigned int)((uintptr_t)addr & (uintptr_t)(BVEC_PAGE_SIZE - 1));
}

/**
 * nth_page() - the page @n pages after @page
 * @page: a page pointer
 * @n: number of pages to step
 *
 * Return: the page at page_address(@page) + @n * BVEC_PAGE_SIZE.
 */
static inline struct page *nth_page(const struct page *page, size_t n)
{
	return (struct page *)((uintptr_t)page + n * BVEC_PAGE_SIZE);
}

/**
 * struct bio_vec - a contiguous range of memory
 * @bv_page: first page of the range
 * @bv_len: length in bytes
 * @bv_offset: offset of the first byte from page_address(@bv_page); may be
 *	larger than BVEC_PAGE_SIZE (multi-page bvec)
 */
struct bio_vec {
	struct page *bv_page;
	unsigned int bv_len;
	unsigned int bv_offset;
};

/**
 * struct bvec_iter - a cursor over a table of bio_vecs
 * @bi_sector: device address in 512-byte sectors
 * @bi_size: bytes left; the only field that says where the I/O ends
 * @bi_idx: current index into the table
 * @bi_bvec_done: bytes already consumed of the current bvec
 *
 * An iterator is a value: copy it to walk a table without disturbing the
 * owner's position.
 */
struct bvec_iter {
	sector_t bi_sector;
	unsigned int bi_size;
	unsigned int bi_idx;
	unsigned int bi_bvec_done;
};

/**
 * struct bvec_iter_all - cursor of bio_for_each_segment_all()
 * @bv: the current single-page segment
 * @idx: index of the bvec it comes from
 * @done: bytes of that bvec already walked
 */
struct bvec_iter_all {
	struct bio_vec bv;
	int idx;
	unsigned int done;
};

/**
 * bvec_set_page() - fill a bio_vec
 * @bv: bio_vec to fill
 * @page: first page
 * @len: length in bytes
 * @offset: offset from page_address(@page)
 */
static inline void bvec_set_page(struct bio_vec *bv, struct page *page,
				 unsigned int len, unsigned int offset)
{
	bv->bv_page = page;
	bv->bv_len = len;
	bv->bv_offset = offset;
}

/**
 * bvec_set_virt() - fill a bio_vec from an address
 * @bv: bio_vec to fill
 * @vaddr: first byte
 * @len: length in bytes
 */
static inline void bvec_set_virt(struct bio_vec *bv, void *vaddr,
				 unsigned int len)
{
	bvec_set_page(bv, virt_to_page(vaddr), len, offset_in_page(vaddr));
}

/**
 * bvec_virt() - address of a bio_vec's first byte
 * @bv: the bio_vec
 *
 * Return: page_address(@bv->bv_page) + @bv->bv_offset.
 */
static inline void *bvec_virt(const struct bio_vec *bv)
{
	return (char *)page_address(bv->bv_page) + bv->bv_offset;
}

static inline unsigned int bvec__min(unsigned int a, unsigned int b)
{
	return a < b ? a : b;
}

/**
 * mp_bvec_iter_bvec() - the multi-page segment under a cursor
 * @bvec: the table
 * @iter: the cursor (by value)
 *
 * Return: the rest of the current bvec, clipped to @iter.bi_size; its page
 * is the bvec's first page and its offset may exceed BVEC_PAGE_SIZE.
 */
static inline struct bio_vec mp_bvec_iter_bvec(const struct bio_vec *bvec,
					       struct bvec_iter iter)
{
	const struct bio_vec *cur = &bvec[iter.bi_idx];
	struct bio_vec bv;

	bv.bv_page = cur->bv_page;
	bv.bv_len = bvec__min(iter.bi_size, cur->bv_len - iter.bi_bvec_done);
	bv.bv_offset = cur->bv_offset + iter.bi_bvec_done;
	return bv;
}

/**
 * bvec_iter_bvec() - the single-page segment under a cursor
 * @bvec: the table
 * @iter: the cursor (by value)
 *
 * Return: like mp_bvec_iter_bvec(), but with the page advanced to the one
 * holding the first byte, the offset reduced below BVEC_PAGE_SIZE, and the
 * length clipped to the end of that page.
 */
static inline struct bio_vec bvec_iter_bvec(const struct bio_vec *bvec,
					    struct bvec_iter iter)
{
	struct bio_vec mp = mp_bvec_iter_bvec(bvec, iter);
	unsigned int in_page = mp.bv_offset & (unsigned int)(BVEC_PAGE_SIZE - 1);
	struct bio_vec bv;

	bv.bv_page = nth_page(mp.bv_page, mp.bv_offset >> BVEC_PAGE_SHIFT);
	bv.bv_offset = in_page;
	bv.bv_len = bvec__min(mp.bv_len, (unsigned int)BVEC_PAGE_SIZE - in_page);
	return bv;
}

/* Kernel accessor spellings, each a field of the segments above. */
#define mp_bvec_iter_page(bvec, iter) (mp_bvec_iter_bvec((bvec), (iter)).bv_page)
#define mp_bvec_iter_len(bvec, iter) (mp_bvec_iter_bvec((bvec), (iter)).bv_len)
#define mp_bvec_iter_offset(bvec, iter) (mp_bvec_iter_bvec((bvec), (iter)).bv_offset)
#define bvec_iter_page(bvec, iter) (bvec_iter_bvec((bvec), (iter)).bv_page)
#define bvec_iter_len(bvec, iter) (bvec_iter_bvec((bvec), (iter)).bv_len)
#define bvec_iter_offset(bvec, iter) (bvec_iter_bvec((bvec), (iter)).bv_offset)

/**
 * bvec_iter_sectors() - what is left under a cursor, in 512-byte sectors
 * @iter: the cursor (a value)
 */
#define bvec_iter_sectors(iter) ((iter).bi_size >> 9)

/**
 * bvec_iter_advance() - move a cursor forward
 * @bv: the table
 * @iter: the cursor to move
 * @bytes: how far
 *
 * Whole bvecs are skipped while the remaining count reaches their end; an
 * advance that stops exactly on a boundary leaves bi_bvec_done at 0 and does
 * not step over a following zero-length bvec.
 *
 * Return: true.  If @bytes exceeds @iter->bi_size, bi_size becomes 0,
 * bi_idx and bi_bvec_done are left alone and the result is false (the
 * kernel also warns once; see WARN_ON_ONCE in <libbvec/linux.h>).
 */
static inline bool bvec_iter_advance(const struct bio_vec *bv,
				     struct bvec_iter *iter, unsigned int bytes)
{
	unsigned int idx = iter->bi_idx;

	if (bytes > iter->bi_size) {
		iter->bi_size = 0;
		return false;
	}
	iter->bi_size -= bytes;
	bytes += iter->bi_bvec_done;
	while (bytes && bytes >= bv[idx].bv_len) {
		bytes -= bv[idx].bv_len;
		idx++;
	}
	iter->bi_idx = idx;
	iter->bi_bvec_done = bytes;
	return true;
}

/**
 * bvec_iter_advance_single() - move a cursor inside its current bvec
 * @bv: the table
 * @iter: the cursor to move
 * @bytes: how far; must not pass the end of the current bvec
 *
 * O(1) step used by the segment loops; reaching the end of the bvec moves
 * bi_idx on.
 */
static inline void bvec_iter_advance_single(const struct bio_vec *bv,
					    struct bvec_iter *iter,
					    unsigned int bytes)
{
	unsigned int done = iter->bi_bvec_done + bytes;

	if (done == bv[iter->bi_idx].bv_len) {
		done = 0;
		iter->bi_idx++;
	}
	iter->bi_bvec_done = done;
	iter->bi_size -= bytes;
}

/**
 * bvec_iter_skip_empty() - step a cursor over zero-length bvecs
 * @bv: the table
 * @iter: the cursor
 *
 * Used by the segment loops to carry out the zero-length bvec policy.
 *
 * Return: true if bytes remain, so that a segment can be taken.
 */
static inline bool bvec_iter_skip_empty(const struct bio_vec *bv,
					struct bvec_iter *iter)
{
	if (!iter->bi_size)
		return false;
	while (bv[iter->bi_idx].bv_len == iter->bi_bvec_done) {
		iter->bi_idx++;
		iter->bi_bvec_done = 0;
	}
	return true;
}

/**
 * for_each_bvec() - walk single-page segments of a table
 * @bvl: struct bio_vec variable that receives each segment
 * @bio_vec: the table
 * @iter: struct bvec_iter variable used as the cursor
 * @start: the starting cursor (copied)
 */
#define for_each_bvec(bvl, bio_vec, iter, start)                            \
	for ((iter) = (start);                                              \
	     bvec_iter_skip_empty((bio_vec), &(iter)) &&                    \
	     (((bvl) = bvec_iter_bvec((bio_vec), (iter))), 1);              \
	     bvec_iter_advance_single((bio_vec), &(iter), (bvl).bv_len))

/**
 * for_each_mp_bvec() - walk multi-page segments of a table
 * @bvl: struct bio_vec variable that receives each segment
 * @bio_vec: the table
 * @iter: struct bvec_iter variable used as the cursor
 * @start: the starting cursor (copied)
 */
#define for_each_mp_bvec(bvl, bio_vec, iter, start)                         \
	for ((iter) = (start);                                              \
	     bvec_iter_skip_empty((bio_vec), &(iter)) &&                    \
	     (((bvl) = mp_bvec_iter_bvec((bio_vec), (iter))), 1);           \
	     bvec_iter_advance_single((bio_vec), &(iter), (bvl).bv_len))

#ifdef __cplusplus
}
#endif

#endif /* LIBBVEC_BVEC_H */

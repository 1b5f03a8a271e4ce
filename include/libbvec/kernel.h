/* SPDX-License-Identifier: MIT */
/**
 * DOC: libbvec/kernel.h - opt-in general kernel pieces ported drivers lean on
 *
 * Include this (or <libbvec/linux.h>, which includes it) instead of
 * <linux/bits.h>, <linux/err.h>, <linux/atomic.h>, <linux/gfp.h> and
 * <linux/rcupdate.h>.  Programs that do not include it see none of these
 * short names.  Only what a single userspace process can honour truthfully
 * is here: atomics are C11 atomics, pages come from aligned_alloc(), and an
 * RCU read section is empty because nothing in the library frees memory
 * through RCU and no grace-period primitive (synchronize_rcu(), call_rcu(),
 * kfree_rcu()) is offered, so no reader can rely on one.
 *
 * C only: the atomics need C11's _Atomic, which C++ before C++23 lacks.
 */
#ifndef LIBBVEC_KERNEL_H
#define LIBBVEC_KERNEL_H

#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <libbvec/blk_types.h>

/* ======== Bits ======== */

/**
 * BIT() - an unsigned long with bit @nr set
 * @nr: bit number, below the width of unsigned long (32 on 32-bit targets)
 */
#define BIT(nr) (1UL << (nr))

/**
 * BIT_ULL() - an unsigned long long with bit @nr set
 * @nr: bit number, below 64
 */
#define BIT_ULL(nr) (1ULL << (nr))

/**
 * bvec__sector_div() - private: the body of sector_div()
 * @n: the dividend, replaced by the quotient
 * @base: the divisor
 *
 * Return: the remainder.
 */
static inline uint32_t bvec__sector_div(uint64_t *n, uint32_t base)
{
	uint32_t rem = (uint32_t)(*n % base);

	*n /= base;
	return rem;
}

/**
 * sector_div() - divide a sector number in place
 * @n: an lvalue of type sector_t (or u64); replaced by @n / @base
 * @base: a 32-bit divisor, not 0
 *
 * As in Linux, the quotient is stored back into @n, so @n must be a
 * 64-bit unsigned lvalue: any other type is a compile-time error here
 * rather than a silent truncation.
 *
 * Return: the remainder, a uint32_t.
 */
#define sector_div(n, base) bvec__sector_div(&(n), (base))

/* Fixed-width limits (UINT_MAX, ULONG_MAX come from <limits.h>). */
#define U8_MAX ((uint8_t)~0U)
#define U16_MAX ((uint16_t)~0U)
#define U32_MAX ((uint32_t)~0U)
#define U64_MAX ((uint64_t)~0ULL)
#define S64_MAX ((int64_t)(U64_MAX >> 1))

/* "Any NUMA node": userspace allocations have no placement. */
#define NUMA_NO_NODE (-1)

/* ======== Sparse and compiler annotations ======== */

/*
 * Lock-context and bounds annotations checked by sparse or by compilers
 * that know them; here they document the code and compile to nothing.
 */
#ifndef __acquires
/**
 * __acquires() - annotation: the function returns holding @x
 * @x: the lock
 */
#define __acquires(x)
#endif
#ifndef __releases
/**
 * __releases() - annotation: the function is entered holding @x and releases it
 * @x: the lock
 */
#define __releases(x)
#endif
#ifndef __must_hold
/**
 * __must_hold() - annotation: the caller holds @x throughout
 * @x: the lock
 */
#define __must_hold(x)
#endif
#ifndef __counted_by
/**
 * __counted_by() - annotation: a flexible array's length is in @member
 * @member: the struct member holding the element count
 */
#define __counted_by(member)
#endif

/* ======== Error pointers ======== */

/* The largest errno an error pointer carries, as in Linux. */
#define MAX_ERRNO 4095

/**
 * ERR_PTR() - encode a negative errno as a pointer
 * @error: -MAX_ERRNO .. -1
 *
 * Return: a pointer in the last page of the address space, which no object
 * occupies; IS_ERR() recognises it.
 */
static inline void *ERR_PTR(long error)
{
	return (void *)(intptr_t)error;
}

/**
 * PTR_ERR() - the errno an error pointer carries
 * @ptr: a pointer for which IS_ERR() is true
 *
 * Return: the negative errno.
 */
static inline long PTR_ERR(const void *ptr)
{
	return (long)(intptr_t)ptr;
}

/**
 * IS_ERR() - is a pointer an encoded errno?
 * @ptr: any pointer
 *
 * Return: true for ERR_PTR(-MAX_ERRNO) .. ERR_PTR(-1).
 */
static inline bool IS_ERR(const void *ptr)
{
	return (uintptr_t)ptr >= (uintptr_t)-MAX_ERRNO;
}

/**
 * IS_ERR_OR_NULL() - is a pointer NULL or an encoded errno?
 * @ptr: any pointer
 *
 * Return: true if @ptr is NULL or IS_ERR(@ptr).
 */
static inline bool IS_ERR_OR_NULL(const void *ptr)
{
	return !ptr || IS_ERR(ptr);
}

/**
 * PTR_ERR_OR_ZERO() - the errno of an error pointer, or 0
 * @ptr: any pointer
 *
 * Return: PTR_ERR(@ptr) if IS_ERR(@ptr), else 0.
 */
static inline int PTR_ERR_OR_ZERO(const void *ptr)
{
	return IS_ERR(ptr) ? (int)PTR_ERR(ptr) : 0;
}

/* ======== Atomics ======== */

/**
 * typedef atomic_t - an int updated atomically
 *
 * Initialise with ATOMIC_INIT() or atomic_set().  As in Linux, the plain
 * operations (atomic_read(), atomic_set(), atomic_inc(), atomic_add(), ...)
 * imply no ordering (C11 memory_order_relaxed), and those that return a
 * value from a modification (atomic_inc_return(), atomic_dec_and_test(),
 * atomic_cmpxchg()) are fully ordered (memory_order_seq_cst).
 */
typedef struct {
	_Atomic int counter;
} atomic_t;

/**
 * typedef atomic64_t - an s64 updated atomically, with atomic_t's ordering
 */
typedef struct {
	_Atomic int64_t counter;
} atomic64_t;

/* Static initialisers: atomic_t a = ATOMIC_INIT(1); */
#define ATOMIC_INIT(i) { (i) }
#define ATOMIC64_INIT(i) { (i) }

/**
 * atomic_read() - load an atomic_t (unordered)
 * @v: the atomic
 *
 * Return: its value.
 */
static inline int atomic_read(const atomic_t *v)
{
	return atomic_load_explicit((_Atomic int *)&v->counter, memory_order_relaxed);
}

/**
 * atomic_set() - store into an atomic_t (unordered)
 * @v: the atomic
 * @i: the new value
 */
static inline void atomic_set(atomic_t *v, int i)
{
	atomic_store_explicit(&v->counter, i, memory_order_relaxed);
}

/**
 * atomic_add() - add to an atomic_t (unordered)
 * @i: the addend
 * @v: the atomic
 */
static inline void atomic_add(int i, atomic_t *v)
{
	atomic_fetch_add_explicit(&v->counter, i, memory_order_relaxed);
}

/**
 * atomic_sub() - subtract from an atomic_t (unordered)
 * @i: the subtrahend
 * @v: the atomic
 */
static inline void atomic_sub(int i, atomic_t *v)
{
	atomic_fetch_sub_explicit(&v->counter, i, memory_order_relaxed);
}

/**
 * atomic_inc() - add 1 to an atomic_t (unordered)
 * @v: the atomic
 */
static inline void atomic_inc(atomic_t *v)
{
	atomic_add(1, v);
}

/**
 * atomic_dec() - subtract 1 from an atomic_t (unordered)
 * @v: the atomic
 */
static inline void atomic_dec(atomic_t *v)
{
	atomic_sub(1, v);
}

/**
 * atomic_inc_return() - add 1 to an atomic_t (fully ordered)
 * @v: the atomic
 *
 * Return: the new value.
 */
static inline int atomic_inc_return(atomic_t *v)
{
	return atomic_fetch_add(&v->counter, 1) + 1;
}

/**
 * atomic_dec_and_test() - subtract 1 from an atomic_t (fully ordered)
 * @v: the atomic
 *
 * Return: true if the new value is 0: the caller dropped the last reference.
 */
static inline bool atomic_dec_and_test(atomic_t *v)
{
	return atomic_fetch_sub(&v->counter, 1) == 1;
}

/**
 * atomic_cmpxchg() - replace an atomic_t's value if it is @old (fully ordered)
 * @v: the atomic
 * @old: the value expected
 * @new: the value stored if @v held @old
 *
 * Return: the value @v held before: @old on success.
 */
static inline int atomic_cmpxchg(atomic_t *v, int old, int new)
{
	atomic_compare_exchange_strong(&v->counter, &old, new);
	return old;
}

/**
 * atomic64_read() - load an atomic64_t (unordered)
 * @v: the atomic
 *
 * Return: its value.
 */
static inline int64_t atomic64_read(const atomic64_t *v)
{
	return atomic_load_explicit((_Atomic int64_t *)&v->counter, memory_order_relaxed);
}

/**
 * atomic64_set() - store into an atomic64_t (unordered)
 * @v: the atomic
 * @i: the new value
 */
static inline void atomic64_set(atomic64_t *v, int64_t i)
{
	atomic_store_explicit(&v->counter, i, memory_order_relaxed);
}

/**
 * atomic64_add() - add to an atomic64_t (unordered)
 * @i: the addend
 * @v: the atomic
 */
static inline void atomic64_add(int64_t i, atomic64_t *v)
{
	atomic_fetch_add_explicit(&v->counter, i, memory_order_relaxed);
}

/**
 * atomic64_sub() - subtract from an atomic64_t (unordered)
 * @i: the subtrahend
 * @v: the atomic
 */
static inline void atomic64_sub(int64_t i, atomic64_t *v)
{
	atomic_fetch_sub_explicit(&v->counter, i, memory_order_relaxed);
}

/**
 * atomic64_inc() - add 1 to an atomic64_t (unordered)
 * @v: the atomic
 */
static inline void atomic64_inc(atomic64_t *v)
{
	atomic64_add(1, v);
}

/**
 * atomic64_dec() - subtract 1 from an atomic64_t (unordered)
 * @v: the atomic
 */
static inline void atomic64_dec(atomic64_t *v)
{
	atomic64_sub(1, v);
}

/**
 * atomic64_inc_return() - add 1 to an atomic64_t (fully ordered)
 * @v: the atomic
 *
 * Return: the new value.
 */
static inline int64_t atomic64_inc_return(atomic64_t *v)
{
	return atomic_fetch_add(&v->counter, 1) + 1;
}

/**
 * atomic64_dec_and_test() - subtract 1 from an atomic64_t (fully ordered)
 * @v: the atomic
 *
 * Return: true if the new value is 0.
 */
static inline bool atomic64_dec_and_test(atomic64_t *v)
{
	return atomic_fetch_sub(&v->counter, 1) == 1;
}

/**
 * atomic64_cmpxchg() - replace an atomic64_t's value if it is @old (fully ordered)
 * @v: the atomic
 * @old: the value expected
 * @new: the value stored if @v held @old
 *
 * Return: the value @v held before: @old on success.
 */
static inline int64_t atomic64_cmpxchg(atomic64_t *v, int64_t old, int64_t new)
{
	atomic_compare_exchange_strong(&v->counter, &old, new);
	return old;
}

/* ======== Pages ======== */

/* Allocation flag: the page comes back zeroed (Linux's value). */
#ifndef __GFP_ZERO
#define __GFP_ZERO 0x100u
#endif

/**
 * alloc_pages() - allocate 2^@order contiguous, page-aligned pages
 * @gfp: GFP_* flags; __GFP_ZERO zeroes the memory, the rest are ignored
 *	(userspace allocation neither sleeps in reclaim nor does I/O)
 * @order: log2 of the page count
 *
 * The memory comes from aligned_alloc(), aligned to its own size, so
 * page_address() of the result is the memory and virt_to_page() of any
 * byte in the first page gives the result back.  Free with __free_pages()
 * and the same @order.
 *
 * Return: the first page, or NULL when memory is short or the size does
 * not fit a size_t.
 */
static inline struct page *alloc_pages(gfp_t gfp, unsigned int order)
{
	size_t size;
	void *mem;

	if (order >= sizeof(size_t) * 8 - BVEC_PAGE_SHIFT)
		return NULL;
	size = BVEC_PAGE_SIZE << order;
	mem = aligned_alloc(size, size);
	if (mem && (gfp & __GFP_ZERO))
		memset(mem, 0, size);
	return (struct page *)mem;
}

/**
 * alloc_page() - allocate one page
 * @gfp: GFP_* flags, as for alloc_pages()
 *
 * Return: the page, or NULL when memory is short.  Free with __free_page().
 */
static inline struct page *alloc_page(gfp_t gfp)
{
	return alloc_pages(gfp, 0);
}

/**
 * __free_pages() - free pages from alloc_pages()
 * @page: the first page, or NULL
 * @order: the order it was allocated with
 */
static inline void __free_pages(struct page *page, unsigned int order)
{
	(void)order;
	free(page_address(page));
}

/**
 * __free_page() - free a page from alloc_page()
 * @page: the page, or NULL
 */
static inline void __free_page(struct page *page)
{
	__free_pages(page, 0);
}

/* ======== RCU read sections ======== */

/**
 * rcu_read_lock() - enter an RCU read-side section: here, nothing to do
 *
 * Honest only because nothing frees memory through RCU: the library frees
 * no object after a grace period, and no grace-period primitive is offered
 * (code calling synchronize_rcu() or call_rcu() does not compile), so no
 * reader can be relying on one.  A port that needs deferred freeing must
 * bring its own reclamation scheme (reference counts, a lock, or liburcu).
 */
static inline void rcu_read_lock(void)
{
}

/**
 * rcu_read_unlock() - leave an RCU read-side section: here, nothing to do
 *
 * See rcu_read_lock().
 */
static inline void rcu_read_unlock(void)
{
}

#endif /* LIBBVEC_KERNEL_H */

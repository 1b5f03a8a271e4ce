/* SPDX-License-Identifier: MIT */
/**
 * DOC: libbvec/compiler.h - export and atomic-type macros shared by the headers
 *
 * BVEC_API marks every exported symbol: the library is built with hidden
 * default visibility and a linker version script, so nothing else leaks.
 * Define BVEC_STATIC when linking the static library on Windows-like
 * targets; on ELF it changes nothing.
 *
 * BVEC_ATOMIC(T) declares a struct member of C11's type _Atomic(T) in C.
 * C++ before C++23 has no compatible spelling, so C++ sees the plain type,
 * aligned to its size as _Atomic(T) is: a plain 64-bit member is only
 * 4-aligned on i386, which put C++'s struct gendisk 8 bytes short of C's
 * (and GCC before 11 aligned the _Atomic one so in C too).
 * C++ code must only touch such fields through the library's functions.
 * It is for member declarations only (it may carry an alignment
 * specifier).
 *
 * How public structs grow without breaking the ABI (one rule, followed by
 * every header; the layouts are pinned in tests/headers/abi_layout.h):
 *
 * - A struct the caller fills in and passes by pointer, once, to a create
 *   function (zpool_config, zram_config) starts with a size_t @size that
 *   the caller sets to sizeof() as it was compiled.  The library reads only
 *   the fields that fit in @size and gives the rest their defaults; a newer
 *   caller on an older library gets -EINVAL.
 * - A struct that is embedded in the caller's structs or copied by value
 *   (struct bio, bio_set, queue_limits, bvec_allocator, zpool_page_source)
 *   keeps Linux's shape where Linux has one and ends in a private
 *   bvec_reserved[] array that must be zero, which
 *   designated initialisers, memset() and the library's init functions
 *   guarantee; new fields take reserved room, and zero means "default".
 *   struct bio and bio_set follow Linux's layout exactly and have no
 *   reserved room: growing them needs a new SONAME.
 * - State the caller never reads is opaque: a pointer to an incomplete type
 *   (struct zpool, struct zram), or kept inside memory the caller hands
 *   over (zpool_arena_init() keeps the arena's state in its block).
 *
 * Symbols: every exported name is in a versioned node of the linker
 * script (LIBBVEC_0.1, ...), so a program that also links another library
 * defining kernel names (bio_alloc, submit_bio, ...) gets the version the
 * symbol was linked against.  An XXH_NAMESPACE-style prefix macro was
 * considered and not adopted: ported drivers must call the kernel's names,
 * and a renaming macro would rename their own definitions too.
 */
#ifndef LIBBVEC_COMPILER_H
#define LIBBVEC_COMPILER_H

#if defined(BVEC_BUILDING) && defined(__GNUC__)
#define BVEC_API __attribute__((visibility("default")))
#else
#define BVEC_API
#endif

#if defined(__cplusplus)
#define BVEC_ATOMIC(T) alignas(sizeof(T)) T
#elif defined(__STDC_NO_ATOMICS__)
#define BVEC_ATOMIC(T) _Alignas(sizeof(T)) T
#else
/* GCC before 11 4-aligned _Atomic 64-bit members on i386: pinned here. */
#define BVEC_ATOMIC(T) _Alignas(sizeof(T)) _Atomic(T)
#endif

#endif /* LIBBVEC_COMPILER_H */

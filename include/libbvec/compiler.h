/* SPDX-License-Identifier: MIT */
/**
 * DOC: libbvec/compiler.h - export and atomic-type macros shared by the headers
 *
 * BVEC_API marks every exported symbol: the library is built with hidden
 * default visibility and a linker version script, so nothing else leaks.
 * Define BVEC_STATIC when linking the static library on Windows-like
 * targets; on ELF it changes nothing.
 *
 * BVEC_ATOMIC(T) is C11's _Atomic(T) in C.  C++ before C++23 has no
 * compatible spelling, so C++ sees the plain type, which has the same size
 * and alignment on every supported ABI; C++ code must only touch such fields
 * through the library's functions.
 */
#ifndef LIBBVEC_COMPILER_H
#define LIBBVEC_COMPILER_H

#if defined(BVEC_BUILDING) && defined(__GNUC__)
#define BVEC_API __attribute__((visibility("default")))
#else
#define BVEC_API
#endif

#if defined(__cplusplus) || defined(__STDC_NO_ATOMICS__)
#define BVEC_ATOMIC(T) T
#else
#define BVEC_ATOMIC(T) _Atomic(T)
#endif

#endif /* LIBBVEC_COMPILER_H */

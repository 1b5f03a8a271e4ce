/* SPDX-License-Identifier: MIT */
/*
 * What the bio core takes from a C library, for builds without one
 * (BVEC_FREESTANDING): Linux's errno values, and the compiler's own
 * memcpy/memset (the program provides the out-of-line symbols, as every
 * freestanding C program must).
 */
#ifndef BVEC_FREESTANDING_H
#define BVEC_FREESTANDING_H

#define EIO 5
#define EAGAIN 11
#define ENOMEM 12
#define EBUSY 16
#define ENODEV 19
#define EINVAL 22
#define ENOSPC 28
#define EDEADLK 35
#define EBADE 52
#define ENODATA 61
#define ENOLINK 67
#define EILSEQ 84
#define EOPNOTSUPP 95
#define ETIMEDOUT 110
#define EREMOTEIO 121

#define memcpy __builtin_memcpy
#define memset __builtin_memset

#endif

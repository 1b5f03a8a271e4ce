/* SPDX-License-Identifier: MIT */
/**
 * DOC: libbvec/blk_types.h - the types and constants of a block request
 *
 * What Linux keeps in <linux/blk_types.h>: struct bio itself, the operation
 * and flag encoding of bi_opf (REQ_OP_*, REQ_*), block statuses (BLK_STS_*)
 * and their errno mapping, allocation flags (GFP_*) and the bio state bits.
 * <libbvec/bio.h> includes it; include it alone where only the types are
 * needed.
 */
#ifndef LIBBVEC_BLK_TYPES_H
#define LIBBVEC_BLK_TYPES_H

#include <libbvec/bvec.h>
#include <libbvec/compiler.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * typedef blk_opf_t - operation (low 8 bits) and REQ_* flags of a bio
 */
typedef uint32_t blk_opf_t;

/**
 * typedef blk_status_t - a block-layer status code (BLK_STS_*)
 */
typedef uint8_t blk_status_t;

/**
 * typedef gfp_t - allocation flags (GFP_KERNEL, GFP_NOIO, GFP_NOWAIT)
 */
typedef unsigned int gfp_t;

/* May the allocation wait for a bio_set reserve to refill? */
#define __GFP_DIRECT_RECLAIM 0x400u
#define __GFP_IO 0x40u
#define __GFP_FS 0x80u
#define GFP_NOWAIT 0u
#define GFP_NOIO (__GFP_DIRECT_RECLAIM)
#define GFP_KERNEL (__GFP_DIRECT_RECLAIM | __GFP_IO | __GFP_FS)

/**
 * gfpflags_allow_blocking() - may an allocation with @gfp wait?
 * @gfp: allocation flags
 *
 * Return: true for GFP_KERNEL and GFP_NOIO, false for GFP_NOWAIT.
 */
static inline bool gfpflags_allow_blocking(gfp_t gfp)
{
	return (gfp & __GFP_DIRECT_RECLAIM) != 0;
}

/**
 * enum req_op - what a bio asks for; the kernel's values
 * @REQ_OP_READ: read sectors into the bio's memory
 * @REQ_OP_WRITE: write the bio's memory to sectors
 * @REQ_OP_FLUSH: deprecated spelling of an empty REQ_OP_WRITE | REQ_PREFLUSH;
 *	submit_bio() rewrites it to that before any driver sees it (in Linux
 *	bios never carry it)
 * @REQ_OP_DISCARD: the range's contents are no longer needed; no data
 * @REQ_OP_SECURE_ERASE: like discard, and the data must be unrecoverable
 * @REQ_OP_WRITE_ZEROES: the range must read back as zeroes; no data
 */
enum req_op {
	REQ_OP_READ = 0,
	REQ_OP_WRITE = 1,
	REQ_OP_FLUSH = 2,
	REQ_OP_DISCARD = 3,
	REQ_OP_SECURE_ERASE = 5,
	REQ_OP_WRITE_ZEROES = 9
};

#define REQ_OP_BITS 8
#define REQ_OP_MASK ((1u << REQ_OP_BITS) - 1)

/* REQ_* flags, above the operation bits (kernel meanings). */
#define REQ_FAILFAST_DEV (1u << 8)
#define REQ_FAILFAST_TRANSPORT (1u << 9)
#define REQ_FAILFAST_DRIVER (1u << 10)
#define REQ_SYNC (1u << 11)
#define REQ_META (1u << 12)
#define REQ_PRIO (1u << 13)
#define REQ_NOMERGE (1u << 14)
#define REQ_IDLE (1u << 15)
#define REQ_INTEGRITY (1u << 16)
#define REQ_FUA (1u << 17)
#define REQ_PREFLUSH (1u << 18)
#define REQ_RAHEAD (1u << 19)
#define REQ_BACKGROUND (1u << 20)
#define REQ_NOWAIT (1u << 21)
/*
 * The submitter reaps the completion itself with bio_poll() (set by io_uring's
 * IOPOLL and by preadv2(RWF_HIPRI) in Linux).  The block layer clears it on a
 * device without BLK_FEAT_POLL and on a bio it splits; such a bio completes
 * the ordinary way.
 */
#define REQ_POLLED (1u << 22)

/* Block status codes (kernel values) */
#define BLK_STS_OK ((blk_status_t)0)
#define BLK_STS_NOTSUPP ((blk_status_t)1)
#define BLK_STS_TIMEOUT ((blk_status_t)2)
#define BLK_STS_NOSPC ((blk_status_t)3)
#define BLK_STS_TRANSPORT ((blk_status_t)4)
#define BLK_STS_TARGET ((blk_status_t)5)
#define BLK_STS_RESV_CONFLICT ((blk_status_t)6)
#define BLK_STS_MEDIUM ((blk_status_t)7)
#define BLK_STS_PROTECTION ((blk_status_t)8)
#define BLK_STS_RESOURCE ((blk_status_t)9)
#define BLK_STS_IOERR ((blk_status_t)10)
#define BLK_STS_AGAIN ((blk_status_t)12)
#define BLK_STS_DEV_RESOURCE ((blk_status_t)13)
#define BLK_STS_OFFLINE ((blk_status_t)16)
#define BLK_STS_INVAL ((blk_status_t)19)

/**
 * blk_status_to_errno() - the errno for a block status
 * @status: a BLK_STS_* code
 *
 * Return: 0 for BLK_STS_OK, else a negative errno (-EIO for unknown codes).
 */
BVEC_API int blk_status_to_errno(blk_status_t status);

/**
 * errno_to_blk_status() - the block status for an errno
 * @errnum: 0 or an errno, positive or negative
 *
 * Return: the matching BLK_STS_* code; BLK_STS_IOERR for unknown errnos.
 */
BVEC_API blk_status_t errno_to_blk_status(int errnum);

/**
 * blk_status_to_str() - a short description of a block status
 * @status: a BLK_STS_* code
 *
 * Return: a static string such as "I/O"; never NULL.
 */
BVEC_API const char *blk_status_to_str(blk_status_t status);

struct bio;
struct bio_set;
struct block_device;

/**
 * typedef bio_end_io_t - completion callback, run once by bio_endio()
 */
typedef void(bio_end_io_t)(struct bio *bio);

/* bi_flags bits */
enum {
	BIO_CLONED = 1,	  /* shares another bio's bi_io_vec */
	BIO_CHAIN = 7,	  /* __bi_remaining is in use */
	BIO_REFFED = 8	  /* bio_get() was called */
};

struct bio_integrity_payload;

/**
 * struct bio - one block I/O request
 * @bi_next: link for bio lists owned by the current holder
 * @bi_bdev: the target device
 * @bi_opf: operation and REQ_* flags
 * @bi_flags: BIO_* state bits
 * @bi_ioprio: I/O priority, passed through untouched
 * @bi_status: completion status, BLK_STS_*; atomic so that chained children
 *	on several threads can report the first error
 * @__bi_remaining: completions still expected (chaining)
 * @bi_iter: the cursor: where the I/O starts, how much is left
 * @bi_end_io: completion callback
 * @bi_private: owner's data for @bi_end_io
 * @bi_integrity: integrity payload or NULL
 * @bi_vcnt: entries used in @bi_io_vec; meaningful only to the bio's owner
 * @bi_max_vecs: entries @bi_io_vec can hold
 * @__bi_cnt: reference count, meaningful after bio_get()
 * @bi_io_vec: the table of memory ranges
 * @bi_pool: the bio_set this bio came from, or NULL
 *
 * Fields before @bi_max_vecs are cleared by bio_reset(); the rest survive
 * it, as in Linux.  Up to BIO_INLINE_VECS entries live right after the
 * struct when the bio comes from a bio_set.
 */
struct bio {
	struct bio *bi_next;
	struct block_device *bi_bdev;
	blk_opf_t bi_opf;
	unsigned short bi_flags;
	unsigned short bi_ioprio;
	BVEC_ATOMIC(blk_status_t) bi_status;
	BVEC_ATOMIC(int) __bi_remaining;
	struct bvec_iter bi_iter;
	bio_end_io_t *bi_end_io;
	void *bi_private;
	struct bio_integrity_payload *bi_integrity;
	unsigned short bi_vcnt;

	unsigned short bi_max_vecs;
	BVEC_ATOMIC(int) __bi_cnt;
	struct bio_vec *bi_io_vec;
	struct bio_set *bi_pool;
};

#define BIO_INLINE_VECS 4
#define BIO_MAX_VECS 256
#define BIO_MAX_SECTORS (UINT32_MAX >> 9)

/**
 * bio_op() - the operation of a bio
 * @bio: the bio
 *
 * Return: the REQ_OP_* in the low bits of bi_opf.
 */
static inline enum req_op bio_op(const struct bio *bio)
{
	return (enum req_op)(bio->bi_opf & REQ_OP_MASK);
}

/**
 * op_is_write() - does an operation move data towards the device?
 * @op: a REQ_OP_* or a whole blk_opf_t
 *
 * Return: true for WRITE, DISCARD, SECURE_ERASE and WRITE_ZEROES.
 */
static inline bool op_is_write(blk_opf_t op)
{
	return (op & 1) != 0;
}

/**
 * op_is_flush() - does a request ask for a cache flush or forced unit access?
 * @op: a whole blk_opf_t
 *
 * Return: true if REQ_PREFLUSH or REQ_FUA is set.
 */
static inline bool op_is_flush(blk_opf_t op)
{
	return (op & (REQ_PREFLUSH | REQ_FUA)) != 0;
}

/**
 * op_is_discard() - is a request a discard?
 * @op: a REQ_OP_* or a whole blk_opf_t
 *
 * Return: true for REQ_OP_DISCARD.
 */
static inline bool op_is_discard(blk_opf_t op)
{
	return (op & REQ_OP_MASK) == REQ_OP_DISCARD;
}

#ifdef __cplusplus
}
#endif

#endif /* LIBBVEC_BLK_TYPES_H */

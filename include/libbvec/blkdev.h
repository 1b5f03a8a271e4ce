/* SPDX-License-Identifier: MIT */
/**
 * DOC: libbvec/blkdev.h - a minimal block-device model so drivers stack
 *
 * A &struct gendisk is a device with a submit_bio operation, queue limits
 * and a capacity; bios name it through bi_bdev (the disk's &struct
 * block_device).  submit_bio() never recurses: a bio submitted from inside
 * a driver's submit_bio is queued on a per-thread list and run by the
 * outermost submit_bio() in a loop, as in Linux.
 *
 * Also here: the userspace bridge between bios and struct iovec arrays, so
 * storage engines can build bios over their buffers without copying and
 * hand a bio's memory to preadv()/pwritev()/io_uring, and a disk over a
 * file.  Those need an operating system: defining BVEC_FREESTANDING (a
 * build of the core without a C library) leaves them out.
 */
#ifndef LIBBVEC_BLKDEV_H
#define LIBBVEC_BLKDEV_H

#ifndef BVEC_FREESTANDING
#include <sys/uio.h>
#endif
#include <libbvec/bio.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * typedef blk_features_t - BLK_FEAT_* bits of &struct queue_limits
 */
typedef unsigned int blk_features_t;

/* The device has a volatile write cache: REQ_PREFLUSH and REQ_FUA matter. */
#define BLK_FEAT_WRITE_CACHE ((blk_features_t)1u << 0)
/* The device implements REQ_FUA itself (meaningful with a write cache). */
#define BLK_FEAT_FUA ((blk_features_t)1u << 1)
/* The driver completes REQ_POLLED bios from its poll_bio operation. */
#define BLK_FEAT_POLL ((blk_features_t)1u << 2)
/*
 * The driver serves REQ_NOWAIT bios without blocking: where it would wait
 * (for memory, a lock held across I/O, a free slot) it ends the bio with
 * BLK_STS_AGAIN instead.  submit_bio() ends a REQ_NOWAIT bio to a device
 * without it with BLK_STS_NOTSUPP.  A stacking driver sets it and clears it
 * again if any device below lacks it, as Linux's blk_stack_limits() does.
 */
#define BLK_FEAT_NOWAIT ((blk_features_t)1u << 3)

/* bio_poll() flags: look once, do not wait for a completion. */
#define BLK_POLL_ONESHOT (1u << 0)

/**
 * struct io_comp_batch - opaque: Linux's batch of polled completions
 *
 * Never defined; bio_poll() and &block_device_operations.poll_bio carry it
 * so that drivers keep Linux's signature.  Callers pass NULL.
 */
struct io_comp_batch;

/**
 * struct queue_limits - what a device accepts in one bio
 * @logical_block_size: smallest addressable unit, bytes (power of two >= 512)
 * @physical_block_size: preferred unit, bytes
 * @max_sectors: largest bio, in sectors
 * @max_segments: most segments in one bio
 * @max_segment_size: largest segment, bytes
 * @seg_boundary_mask: a segment never crosses an address boundary of
 *	(@seg_boundary_mask + 1); all ones for none
 * @max_discard_sectors: largest DISCARD; 0 = not supported.  Drivers set
 *	@max_hw_discard_sectors as in Linux 6.x; this is then derived from it
 * @max_write_zeroes_sectors: largest WRITE_ZEROES; 0 = not supported
 * @integrity_interval_exp: log2 bytes per integrity tuple; 0 = no integrity
 * @integrity_tuple_size: bytes of protection information per interval
 * @features: BLK_FEAT_* bits: what the device does (write cache, FUA,
 *	polling, REQ_NOWAIT)
 * @io_min: smallest preferred I/O size, bytes (advisory); raised to
 *	@physical_block_size
 * @io_opt: optimal I/O size, bytes (advisory)
 * @max_hw_discard_sectors: largest DISCARD the hardware takes; 0 = none
 * @max_secure_erase_sectors: largest SECURE_ERASE; 0 = not supported
 * @discard_granularity: bytes a discard is best aligned to: at least
 *	@physical_block_size where DISCARD is supported, 0 where it is not;
 *	bio_split_to_limits() splits DISCARD and SECURE_ERASE on it
 * @bvec_reserved: private: leave zero; room to add fields without an ABI break
 *
 * A field left 0 when the disk is allocated gets the kernel's default.
 * Initialise with designated initialisers (or memset, or
 * blk_set_stacking_limits()) so that fields added later read as 0.
 */
struct queue_limits {
	unsigned int logical_block_size;
	unsigned int physical_block_size;
	unsigned int max_sectors;
	unsigned int max_segments;
	unsigned int max_segment_size;
	uint64_t seg_boundary_mask;
	unsigned int max_discard_sectors;
	unsigned int max_write_zeroes_sectors;
	unsigned char integrity_interval_exp;
	unsigned char integrity_tuple_size;
	blk_features_t features;
	unsigned int io_min;
	unsigned int io_opt;
	unsigned int max_hw_discard_sectors;
	unsigned int max_secure_erase_sectors;
	unsigned int discard_granularity;
	unsigned int bvec_reserved[7];
};

/* Kernel defaults for unset limits */
#define BLK_DEF_MAX_SECTORS 2560u
#define BLK_MAX_SEGMENTS 128u
#define BLK_MAX_SEGMENT_SIZE 65536u
#define BLK_SEG_BOUNDARY_MASK 0xFFFFFFFFull

struct gendisk;

/**
 * struct module - opaque: a loadable module; userspace has none
 *
 * Never defined; it exists so &struct block_device_operations can carry
 * Linux's @owner field.  <libbvec/linux.h> defines THIS_MODULE as NULL.
 */
struct module;

/**
 * struct block_device - what a bio targets
 * @bd_disk: the disk
 */
struct block_device {
	struct gendisk *bd_disk;
};

/**
 * struct block_device_operations - a driver's operations
 * @submit_bio: take a bio; complete it with bio_endio() now or later, from
 *	any thread.  May submit further bios to any device.
 * @free_disk: optional; called by put_disk() before the disk is freed
 * @owner: the module implementing the operations (THIS_MODULE); never read,
 *	there for Linux's designated initialisers.  After the operations
 *	older tables have, so that those tables remain valid.
 * @poll_bio: optional; reap completions of REQ_POLLED bios on the calling
 *	thread (their bi_end_io runs there), as Linux's poll_bio: called by
 *	bio_poll() with the bio the caller waits for, an &struct
 *	io_comp_batch (NULL here) and BLK_POLL_* flags; returns how many
 *	completions it found, 0 if none.  Read only when the disk's limits
 *	carry BLK_FEAT_POLL, so a table compiled before this member existed
 *	(and its disk, which cannot have that feature) is never read past
 *	its end.
 */
struct block_device_operations {
	void (*submit_bio)(struct bio *bio);
	void (*free_disk)(struct gendisk *disk);
	struct module *owner;
	int (*poll_bio)(struct bio *bio, struct io_comp_batch *iob, unsigned int flags);
};

/**
 * struct gendisk - a block device
 * @part0: the device bios target (points into the disk)
 * @fops: the driver's operations; set before the first submit_bio()
 * @private_data: the driver's data
 * @limits: the queue limits, validated when the disk was allocated
 * @capacity: size in sectors; see set_capacity()
 * @disk_name: name for messages
 * @bio_split: bio_set that bio_split_to_limits() takes front parts from
 * @nr_refused: bios submit_bio() completed with an error before the driver
 *	saw them: past the end, not aligned to the logical
 *	block size, an operation the limits say the disk does not support,
 *	or REQ_NOWAIT to a disk without BLK_FEAT_NOWAIT
 * @bdev: storage for @part0
 */
struct gendisk {
	struct block_device *part0;
	const struct block_device_operations *fops;
	void *private_data;
	struct queue_limits limits;
	sector_t capacity;
	char disk_name[32];
	struct bio_set bio_split;
	BVEC_ATOMIC(uint64_t) nr_refused;
	struct block_device bdev;
};

/**
 * blk_alloc_disk() - allocate a disk
 * @lim: limits (copied; zero fields get defaults), or NULL for all defaults
 * @node: NUMA node, ignored
 *
 * A physical block size below the logical one is raised to it, as Linux
 * does.
 *
 * Return: the disk with capacity 0, or NULL with errno EINVAL (limits that
 * cannot work: block size not a power of two from 512 to the page size,
 * max_segment_size below the page size, boundary mask below page size - 1)
 * or ENOMEM.  Code that includes <libbvec/linux.h> gets Linux 6.9+'s
 * convention instead: ERR_PTR(-EINVAL) or ERR_PTR(-ENOMEM), never NULL.
 */
BVEC_API struct gendisk *blk_alloc_disk(const struct queue_limits *lim,
					int node);

/**
 * blk_set_stacking_limits() - limits that restrict nothing
 * @lim: the limits to set
 *
 * For drivers that take bios of any shape: stacking drivers that split for
 * themselves, and devices with no hardware behind them.  As in Linux 6.x,
 * every field is 0 except: 512-byte logical and physical blocks, io_min
 * and discard_granularity; no limit on size, segments or boundaries; the
 * largest DISCARD, SECURE_ERASE and WRITE_ZEROES.  Set these, then raise
 * or lower what the driver really needs (a stacking driver: what its
 * children need).  No features are set: a driver that serves REQ_NOWAIT
 * adds BLK_FEAT_NOWAIT itself, and a stacking driver keeps it only if
 * every device below has it.
 */
BVEC_API void blk_set_stacking_limits(struct queue_limits *lim);

/**
 * put_disk() - free a disk
 * @disk: the disk, or NULL; no bio may be in flight to it
 */
BVEC_API void put_disk(struct gendisk *disk);

/**
 * set_capacity() - set a disk's size
 * @disk: the disk
 * @sectors: size in 512-byte sectors
 */
static inline void set_capacity(struct gendisk *disk, sector_t sectors)
{
	disk->capacity = sectors;
}

/**
 * get_capacity() - a disk's size
 * @disk: the disk
 *
 * Return: size in sectors.
 */
static inline sector_t get_capacity(const struct gendisk *disk)
{
	return disk->capacity;
}

/**
 * bdev_nr_sectors() - a device's size
 * @bdev: the device
 *
 * Return: size in sectors.
 */
static inline sector_t bdev_nr_sectors(const struct block_device *bdev)
{
	return bdev->bd_disk->capacity;
}

/**
 * bdev_limits() - a device's queue limits
 * @bdev: the device
 *
 * Return: the limits, owned by the disk.
 */
static inline const struct queue_limits *bdev_limits(const struct block_device *bdev)
{
	return &bdev->bd_disk->limits;
}

/**
 * bdev_logical_block_size() - a device's logical block size
 * @bdev: the device
 *
 * Return: bytes.
 */
static inline unsigned int bdev_logical_block_size(const struct block_device *bdev)
{
	return bdev->bd_disk->limits.logical_block_size;
}

/**
 * bdev_write_cache() - does a device have a volatile write cache?
 * @bdev: the device
 *
 * Return: true if its limits carry BLK_FEAT_WRITE_CACHE; submit_bio() strips
 * REQ_PREFLUSH and REQ_FUA from bios to a device without one.
 */
static inline bool bdev_write_cache(const struct block_device *bdev)
{
	return (bdev->bd_disk->limits.features & BLK_FEAT_WRITE_CACHE) != 0;
}

/**
 * bdev_fua() - does a device implement forced unit access itself?
 * @bdev: the device
 *
 * Return: true if its limits carry BLK_FEAT_FUA.
 */
static inline bool bdev_fua(const struct block_device *bdev)
{
	return (bdev->bd_disk->limits.features & BLK_FEAT_FUA) != 0;
}

/**
 * bdev_nowait() - does a device serve REQ_NOWAIT bios?
 * @bdev: the device
 *
 * Return: true if its limits carry BLK_FEAT_NOWAIT; submit_bio() ends a
 * REQ_NOWAIT bio to a device without it with BLK_STS_NOTSUPP.
 */
static inline bool bdev_nowait(const struct block_device *bdev)
{
	return (bdev->bd_disk->limits.features & BLK_FEAT_NOWAIT) != 0;
}

/**
 * bdev_max_discard_sectors() - the largest DISCARD a device takes
 * @bdev: the device
 *
 * Return: sectors; 0 if it does not support DISCARD.
 */
static inline unsigned int bdev_max_discard_sectors(const struct block_device *bdev)
{
	return bdev->bd_disk->limits.max_discard_sectors;
}

/**
 * bdev_max_secure_erase_sectors() - the largest SECURE_ERASE a device takes
 * @bdev: the device
 *
 * Return: sectors; 0 if it does not support SECURE_ERASE.
 */
static inline unsigned int bdev_max_secure_erase_sectors(const struct block_device *bdev)
{
	return bdev->bd_disk->limits.max_secure_erase_sectors;
}

/**
 * bdev_write_zeroes_sectors() - the largest WRITE_ZEROES a device takes
 * @bdev: the device
 *
 * Return: sectors; 0 if it does not support WRITE_ZEROES.
 */
static inline unsigned int bdev_write_zeroes_sectors(const struct block_device *bdev)
{
	return bdev->bd_disk->limits.max_write_zeroes_sectors;
}

/**
 * bio_set_dev() - point a bio at a device
 * @bio: the bio
 * @bdev: the device
 */
static inline void bio_set_dev(struct bio *bio, struct block_device *bdev)
{
	bio->bi_bdev = bdev;
}

/**
 * bio_wouldblock_error() - complete a bio with BLK_STS_AGAIN
 * @bio: the bio
 *
 * For a REQ_NOWAIT bio the driver cannot serve without waiting: a driver
 * whose limits carry BLK_FEAT_NOWAIT ends such a bio this way where it
 * would otherwise block, for the submitter to retry where it may.
 */
static inline void bio_wouldblock_error(struct bio *bio)
{
	bio->bi_status = BLK_STS_AGAIN;
	bio_endio(bio);
}

/**
 * enum bvec_stat_group - the groups /sys/block/<disk>/stat counts apart
 * @BVEC_STAT_READ: REQ_OP_READ
 * @BVEC_STAT_WRITE: every other operation that writes (op_is_write()):
 *	WRITE, SECURE_ERASE, WRITE_ZEROES
 * @BVEC_STAT_DISCARD: REQ_OP_DISCARD
 * @BVEC_STAT_FLUSH: an empty REQ_OP_WRITE | REQ_PREFLUSH (a flush)
 * @BVEC_NR_STAT_GROUPS: the number of groups
 */
enum bvec_stat_group {
	BVEC_STAT_READ,
	BVEC_STAT_WRITE,
	BVEC_STAT_DISCARD,
	BVEC_STAT_FLUSH,
	BVEC_NR_STAT_GROUPS
};

/**
 * struct bvec_disk_stat - a disk's I/O statistics, as /sys/block/<disk>/stat
 * @ios: completed I/Os per group
 * @merges: merged I/Os per group; always 0 (bio-based devices do not merge)
 * @sectors: 512-byte sectors transferred per group (0 for flushes)
 * @ticks: milliseconds spent on the group's I/Os, from bio_start_io_acct()
 *	to bio_end_io_acct(), summed over I/Os
 * @in_flight: I/Os started and not yet ended, [0] reads, [1] writes
 *	(everything op_is_write(), discards included, as Linux counts them)
 * @io_ticks: milliseconds during which at least one I/O was in flight
 * @time_in_queue: the sum of @ticks over all groups, milliseconds
 * @bvec_reserved: private: zero; room to grow without an ABI break
 *
 * /sys/block/<disk>/stat prints, in order: ios, merges, sectors and ticks
 * of READ, the same of WRITE, in_flight[0] + in_flight[1], io_ticks,
 * time_in_queue, the four of DISCARD, then ios and ticks of FLUSH.  Only
 * I/O that drivers account with bio_start_io_acct() counts.
 */
struct bvec_disk_stat {
	uint64_t ios[BVEC_NR_STAT_GROUPS];
	uint64_t merges[BVEC_NR_STAT_GROUPS];
	uint64_t sectors[BVEC_NR_STAT_GROUPS];
	uint64_t ticks[BVEC_NR_STAT_GROUPS];
	uint64_t in_flight[2];
	uint64_t io_ticks;
	uint64_t time_in_queue;
	uint64_t bvec_reserved[4];
};

/**
 * bio_start_io_acct() - account the start of a bio's I/O
 * @bio: the bio; its device (bi_bdev) is the disk that counts it
 *
 * For drivers, as in Linux: call it when the driver starts serving a bio
 * and pass its result to bio_end_io_acct() when done.  Counts the bio in
 * flight on its disk.  Thread-safe (atomic counters); no lock is held.  A
 * bio without a device is not counted, and neither is its end.
 *
 * Return: the start time, an opaque reading of a monotonic clock (in
 * microseconds; Linux returns jiffies) for bio_end_io_acct().
 */
BVEC_API unsigned long bio_start_io_acct(struct bio *bio);

/**
 * bio_end_io_acct_remapped() - account the end of a bio's I/O on a device
 * @bio: the bio; its operation and its remaining size (bio_sectors()) count
 * @start_time: what bio_start_io_acct() returned for it
 * @orig_bdev: the device bio_start_io_acct() counted it on (the bio may
 *	have been remapped to another since)
 *
 * Counts one completed I/O of the bio's group, its sectors, and the time
 * since @start_time; takes it out of flight.  Durations are computed modulo
 * the width of unsigned long, so on 32-bit targets an I/O longer than 71
 * minutes is under-counted.  Thread-safe.
 */
BVEC_API void bio_end_io_acct_remapped(struct bio *bio, unsigned long start_time,
				       struct block_device *orig_bdev);

/**
 * bio_end_io_acct() - account the end of a bio's I/O
 * @bio: the bio, on the device it was started on
 * @start_time: what bio_start_io_acct() returned for it
 *
 * Call it before bio_endio(), while the bio is still the driver's.
 */
static inline void bio_end_io_acct(struct bio *bio, unsigned long start_time)
{
	bio_end_io_acct_remapped(bio, start_time, bio->bi_bdev);
}

/**
 * bvec_disk_stat() - read a disk's I/O statistics
 * @disk: a disk from blk_alloc_disk()
 * @st: receives the statistics; the caller owns it
 *
 * Each counter is read atomically, but not all at one instant: while I/O
 * runs, the set may mix moments (as /sys/block/<disk>/stat does).  While
 * I/O is in flight, io_ticks is first brought up to now, which is why
 * @disk is not const.  Thread-safe; no lock is taken.
 *
 * Return: 0, or -EINVAL if @disk or @st is NULL.
 */
BVEC_API int bvec_disk_stat(struct gendisk *disk, struct bvec_disk_stat *st);

/**
 * submit_bio() - send a bio to its device
 * @bio: the bio; bi_bdev must be set
 *
 * Before the driver sees a bio, it is checked as Linux 6.x's
 * submit_bio_noacct() checks it:
 *
 * - REQ_NOWAIT to a device without BLK_FEAT_NOWAIT (bdev_nowait()):
 *   completes at once with BLK_STS_NOTSUPP, before the end-of-device,
 *   alignment and flush checks below;
 * - no device or driver, past the end of the device (bio_check_eod), or a
 *   position or size that is not a multiple of the logical block size:
 *   completes at once with BLK_STS_IOERR;
 * - REQ_PREFLUSH / REQ_FUA on a device without BLK_FEAT_WRITE_CACHE: the
 *   flags are stripped, and a flush that carries no data completes at once
 *   with BLK_STS_OK;
 * - DISCARD, SECURE_ERASE or WRITE_ZEROES to a device whose limit for it is
 *   0, and any other operation than READ, WRITE and those: completes at once
 *   with BLK_STS_NOTSUPP.
 *
 * A flush is REQ_OP_WRITE | REQ_PREFLUSH with no data, as in Linux; the
 * older spelling REQ_OP_FLUSH is rewritten to it here.  Each refusal counts
 * in the disk's nr_refused.
 *
 * Called from inside a driver's submit_bio, it only queues the bio; the
 * outermost call drains the queue, so stacking depth never grows the stack.
 * The bio may complete before or after this returns.
 */
BVEC_API void submit_bio(struct bio *bio);

/**
 * submit_bio_noacct() - submit_bio() for re-submission by drivers
 * @bio: the bio
 *
 * The same checks and queueing as submit_bio(); drivers use it to pass a
 * bio on (remapped, split) to the device below.
 */
BVEC_API void submit_bio_noacct(struct bio *bio);

/**
 * submit_bio_wait() - submit a bio and wait for it to complete
 * @bio: the bio; its bi_end_io and bi_private are used and left set
 *
 * Must not be called from inside a driver's submit_bio.  A bio with
 * REQ_POLLED that is still polled once submitted (its device has
 * BLK_FEAT_POLL and it was not split) is waited for with bio_poll() on
 * this thread, so its bi_end_io runs here; it falls back to sleeping
 * until another thread completes it once bio_poll() finds nothing to reap.
 * Linux's submit_bio_wait() never polls; waiting any other way for a bio
 * that only polling completes would never end.
 *
 * Return: 0 or the negative errno of the bio's status.
 */
BVEC_API int submit_bio_wait(struct bio *bio);

/**
 * bio_chain_and_submit() - chain a bio to the next one and submit it
 * @prev: the bio built so far, or NULL for the first of a run
 * @next: the next bio; it becomes @prev's parent
 *
 * Linux 6.11's step for issuing a range as a run of bios: @prev completes
 * into @next (bio_chain()) and is submitted, and the caller goes on with
 * @next, finally waiting for the last one (submit_bio_wait()), which
 * completes only after all before it.  A NULL @next (a failed allocation)
 * returns NULL and leaves @prev as it was, neither chained nor submitted,
 * so the caller can still complete or free it; Linux's allocations here
 * cannot fail.
 *
 * Return: @next; NULL for a NULL @next, or with errno EINVAL if @prev
 * already has a completion (nothing is then changed).
 */
BVEC_API struct bio *bio_chain_and_submit(struct bio *prev, struct bio *next);

/**
 * blk_next_bio() - allocate the next bio of a run and submit the previous
 * @bio: the bio built so far, or NULL
 * @bdev: target device of the new bio
 * @nr_pages: table entries for it
 * @opf: its operation and flags
 * @gfp: allocation flags; GFP_KERNEL and GFP_NOIO wait on fs_bio_set's
 *	reserve and so do not fail, as in Linux
 *
 * bio_alloc() then bio_chain_and_submit().
 *
 * Return: the new bio, or NULL with errno (the allocation's, or EINVAL as
 * bio_chain_and_submit()); @bio is then left unsubmitted and unchanged.
 */
BVEC_API struct bio *blk_next_bio(struct bio *bio, struct block_device *bdev,
				  unsigned int nr_pages, blk_opf_t opf, gfp_t gfp);

/**
 * bio_poll() - reap completions of a polled bio's device on this thread
 * @bio: a bio submitted with REQ_POLLED, still owned by the caller (it is
 *	read, not completed, so it must not be freed while this runs)
 * @iob: NULL (Linux's completion batch)
 * @flags: 0, or BLK_POLL_ONESHOT to look once without waiting
 *
 * Calls the driver's poll_bio when the bio still has REQ_POLLED and its
 * disk has BLK_FEAT_POLL and a poll_bio operation; bi_end_io of whatever
 * the driver reaps (this bio or others of the same device) runs on the
 * calling thread.  Thread-safe as far as the driver's poll_bio is.
 *
 * Return: completions found, 0 when there was nothing to poll or nothing
 * had completed.
 */
BVEC_API int bio_poll(struct bio *bio, struct io_comp_batch *iob, unsigned int flags);

/**
 * bio_clear_polled() - make a bio complete the ordinary way
 * @bio: the bio
 *
 * Clears REQ_POLLED, as the block layer does for a bio it splits or sends
 * to a device that cannot poll.
 */
static inline void bio_clear_polled(struct bio *bio)
{
	bio->bi_opf &= ~(blk_opf_t)REQ_POLLED;
}

/**
 * bio_split_rw_at() - where a bio must be split to meet limits
 * @bio: the bio
 * @lim: the limits
 * @segs: receives the segment count of the front part
 * @max_bytes: largest front part, bytes
 *
 * Walks multi-page segments, cutting them at max_segment_size and at the
 * segment boundary, and stops at max_segments or @max_bytes.  The split
 * point is aligned down to the logical block size.
 *
 * Return: 0 if the bio fits whole, the sectors of the front part,
 * -EINVAL when the front part would be empty, or -EAGAIN when a
 * REQ_NOWAIT bio would need a split (as Linux 6.x: a split may wait).
 */
BVEC_API int bio_split_rw_at(struct bio *bio, const struct queue_limits *lim,
			     unsigned int *segs, unsigned int max_bytes);

/**
 * bio_split_to_limits() - make a bio fit its device's limits
 * @bio: the bio (bi_bdev set)
 *
 * If the bio is too large, the front part that fits is split off, the rest
 * is chained to it and re-submitted, and the front is returned for the
 * driver to process now.  READ and WRITE split as bio_split_rw_at() says;
 * DISCARD at max_discard_sectors and SECURE_ERASE at
 * max_secure_erase_sectors, each split point on the discard_granularity
 * when the limit holds at least one granule; WRITE_ZEROES at
 * max_write_zeroes_sectors.  Split sizes are whole logical blocks.
 *
 * Return: the bio to process, or NULL if the bio was completed with an error
 * (invalid split, allocation failure; BLK_STS_AGAIN for a REQ_NOWAIT READ
 * or WRITE that would need a split, with none of it done).
 */
BVEC_API struct bio *bio_split_to_limits(struct bio *bio);

/**
 * bvec_max_segment_size() - bytes of a range that fit one segment
 * @lim: the limits
 * @addr: address of the range's first byte
 * @len: length of the range
 *
 * min(@len, min(mask - (mask & @addr), max_segment_size - 1) + 1): the +1
 * goes on the smaller term, so an all-ones mask at address 0 cannot
 * overflow.
 *
 * Return: bytes, at least 1 for @len > 0.
 */
BVEC_API unsigned int bvec_max_segment_size(const struct queue_limits *lim,
					    uintptr_t addr, unsigned int len);

#ifndef BVEC_FREESTANDING
/**
 * bvec_bio_add_iovec() - append a struct iovec array to a bio, no copying
 * @bio: a bio you own
 * @iov: the array; its memory must outlive the bio
 * @iovcnt: entries
 *
 * Adds all or nothing; zero-length entries are skipped.
 *
 * Return: bytes added, or -EINVAL (bad arguments, table too small,
 * bi_size overflow) with the bio unchanged.
 */
BVEC_API long bvec_bio_add_iovec(struct bio *bio, const struct iovec *iov,
				 int iovcnt);

/**
 * bvec_bio_to_iovec() - export a bio's remaining range as a struct iovec array
 * @bio: the bio
 * @iter: where to start (e.g. @bio->bi_iter)
 * @iov: receives the ranges; adjacent ranges are merged
 * @iovcnt: entries available in @iov
 *
 * Return: entries filled, or -ENOSPC if @iovcnt is too small (see
 * bvec_bio_iovec_count()), or -EINVAL.
 */
BVEC_API int bvec_bio_to_iovec(const struct bio *bio, struct bvec_iter iter,
			       struct iovec *iov, int iovcnt);

/**
 * bvec_bio_iovec_count() - iovec entries bvec_bio_to_iovec() needs
 * @bio: the bio
 * @iter: where to start
 *
 * Return: entry count.
 */
BVEC_API int bvec_bio_iovec_count(const struct bio *bio, struct bvec_iter iter);

/**
 * bvec_file_disk_create() - a disk over a file
 * @fd: a file open for reading and writing; the disk does not close it
 * @lim: limits, or NULL for a device that takes bios of any shape
 *
 * READ and WRITE become preadv()/pwritev() over the bio's own memory (no
 * copy), FLUSH and REQ_PREFLUSH/REQ_FUA become fdatasync(), DISCARD punches
 * a hole, WRITE_ZEROES zeroes the range (punching a hole where zeroing is
 * not supported), both keeping the size.  Where the file takes neither
 * (vfat, ramfs, some FUSE filesystems; a block device's ZERO_RANGE always
 * works, as Linux writes zeroes itself), WRITE_ZEROES writes zeroes over
 * the range instead, from a page-aligned buffer (so an O_DIRECT @fd works
 * when the range is aligned as its data must be), up to the end of a
 * regular file only, which does not grow; so it succeeds wherever writes
 * would.  A DISCARD there fails with BLK_STS_NOTSUPP.  Bios complete before
 * submit_bio() returns.  The capacity
 * is the file's size at creation, in whole sectors; a block device's, as
 * the kernel reports it (BLKGETSIZE64).  Those calls may sleep, so the disk
 * never has BLK_FEAT_NOWAIT, whatever @lim says: submit_bio() refuses
 * REQ_NOWAIT bios to it with BLK_STS_NOTSUPP.  Free with put_disk().
 *
 * Return: the disk, or NULL with errno EINVAL (bad @fd, one opened with
 * O_APPEND, where every write would go to the end of the file, or bad
 * limits) or ENOMEM.
 */
BVEC_API struct gendisk *bvec_file_disk_create(int fd, const struct queue_limits *lim);

/**
 * bvec_uring_disk_create() - a disk over a file that completes bios asynchronously
 * @fd: a file or block device open for reading and writing (O_DIRECT
 *	allowed: then buffers, positions and sizes must meet its alignment, so
 *	pass limits with that logical_block_size); the disk does not close it
 * @lim: limits, or NULL for a device that takes bios of any shape;
 *	max_segments is lowered to 1024 so that one SQE carries each bio
 *	(bio_split_to_limits() splits and chains larger ones)
 * @queue_depth: most bios in flight at once, 1 to 4096; 0 for 64
 *
 * The disk owns an io_uring of @queue_depth entries and one completion
 * thread.  submit_bio() returns once the bio is queued; when all
 * @queue_depth slots are busy it waits for one rather than failing, so the
 * disk never has BLK_FEAT_NOWAIT, whatever @lim says: submit_bio() refuses
 * REQ_NOWAIT bios to it with BLK_STS_NOTSUPP.  Each
 * bio's bi_end_io runs later on the completion thread (never inside
 * submit_bio()), which may submit more bios from there, to this disk or to
 * another io_uring disk; those never wait (they queue in the disk when it
 * is full), so two disks whose bi_end_io submit to each other cannot each
 * wait for the other.  submit_bio() is safe from any
 * number of threads at once (one lock guards the submission ring); do not
 * call submit_bio_wait() from a bi_end_io of this disk, since the
 * completion thread is the one it would wait for.  The bio's own bi_iter
 * is left as submitted.
 *
 * READ and WRITE become readv/writev SQEs over the bio's own memory (no
 * copy), or READ_FIXED/WRITE_FIXED inside buffers registered with
 * bvec_uring_disk_register_buffers().  A short transfer advances the
 * driver's copy of the bio's iterator and resubmits the rest; a read that
 * meets the end of the file returns zeroes for the rest (as the loop driver
 * reads a short file), a write that transfers nothing fails.  -EAGAIN is
 * retried.  REQ_PREFLUSH becomes an fdatasync SQE issued before the data,
 * so it covers every write that completed before the bio was submitted
 * (Linux's ordering: writes still in flight are not covered); REQ_FUA on a
 * write becomes RWF_DSYNC, and on anything else an fdatasync after it.
 * DISCARD and SECURE_ERASE punch a hole, WRITE_ZEROES zeroes the range
 * (punching a hole where zeroing is not supported), both keeping the size.
 * Where the file takes neither (vfat, ramfs, some FUSE filesystems),
 * WRITE_ZEROES becomes WRITEV SQEs of a page-aligned buffer of zeroes over
 * the range (so an O_DIRECT @fd works when the range is aligned as its
 * data must be), up to the end of a regular file only, which does not
 * grow; so it succeeds wherever writes would.  A DISCARD there fails with
 * BLK_STS_NOTSUPP.
 * Errors complete the bio with errno_to_blk_status() of the errno (EIO,
 * EBADF... BLK_STS_IOERR; ENOSPC BLK_STS_NOSPC; EOPNOTSUPP
 * BLK_STS_NOTSUPP; EINVAL BLK_STS_INVAL).  The capacity is the file's size
 * (a block device's size) at creation, in whole sectors.
 *
 * Polling: the disk has BLK_FEAT_POLL.  A REQ_POLLED bio goes to a second
 * ring that no thread waits on (Linux's poll queues) and completes only when
 * some thread polls: bio_poll(), or submit_bio_wait(), which polls for a
 * REQ_POLLED bio.  submit_bio() only prepares its SQE; the next poll sends
 * it (as Linux's bio_poll() first flushes the plug) and waits in the same
 * io_uring_enter(), so the completion work runs on the polling thread.  The
 * poller reaps every completed polled bio of the disk, not only its own, and
 * their bi_end_io run on the poller's thread (as Linux allows); a poller
 * that finds nothing completed but I/O in flight sleeps in io_uring_enter()
 * until a completion arrives, unless BLK_POLL_ONESHOT.  One thread polls at
 * a time.  Polled bios never use registered buffers; one submitted from a
 * bi_end_io on an io_uring disk's completion thread completes the ordinary
 * way (REQ_POLLED cleared).
 * A polled bio nobody polls is reaped by put_disk(), which must not be called
 * from a polled bio's bi_end_io (it would wait for that very bio).
 *
 * put_disk() first waits for every bio in flight to complete.  Called from
 * a bi_end_io of this disk, it cannot wait: the completion thread then
 * frees the disk once what is in flight has completed, and nothing else
 * may be in flight then, as for any disk.
 *
 * Declared in every build; <libbvec/config.h> defines BVEC_HAVE_URING when
 * it is built.  Without it (no liburing at build time) this fails with
 * ENOSYS, and so it does where the kernel has no io_uring.
 *
 * Return: the disk, or NULL with errno EINVAL (bad @fd, one opened with
 * O_APPEND, @queue_depth or limits), ENOMEM, ENOSYS (no io_uring) or
 * another errno of io_uring_setup() (EPERM where io_uring is disabled,
 * EMFILE).
 */
BVEC_API struct gendisk *bvec_uring_disk_create(int fd, const struct queue_limits *lim,
						unsigned int queue_depth);

/**
 * bvec_uring_disk_register_buffers() - let READ/WRITE inside buffers skip page pinning
 * @disk: a disk from bvec_uring_disk_create()
 * @iov: @nr buffers (non-empty, not overlapping); copied, but their memory
 *	is pinned by the kernel and must stay mapped until unregistered
 * @nr: entries, 1 to 16384
 *
 * Registers the buffers with the disk's io_uring (io_uring_register_buffers()),
 * so the kernel pins their pages once instead of on every I/O.  From then on
 * a READ or WRITE bio (not REQ_POLLED) whose data, or the rest of it after
 * a short transfer, is one contiguous range lying wholly inside one of the
 * buffers goes as IORING_OP_READ_FIXED/WRITE_FIXED; every other bio
 * (several ranges, memory outside the buffers) keeps readv/writev.  Nothing
 * changes in what a bio reads or writes.  Thread-safe; I/O may be in flight.
 *
 * Return: 0; -EINVAL (not an io_uring disk, @iov NULL, @nr out of range, an
 * empty or overlapping entry), -EBUSY (buffers already registered:
 * unregister first), or an error of io_uring_register_buffers(): -ENOMEM
 * (over RLIMIT_MEMLOCK), -EFAULT (memory not mapped, an entry over 1 GiB).
 * -ENOSYS in a build without liburing.
 */
BVEC_API int bvec_uring_disk_register_buffers(struct gendisk *disk, const struct iovec *iov,
					      unsigned int nr);

/**
 * bvec_uring_disk_unregister_buffers() - stop using the registered buffers
 * @disk: a disk from bvec_uring_disk_create()
 *
 * New bios stop using the buffers at once; this then waits until no
 * READ_FIXED/WRITE_FIXED is in flight before the kernel unpins them.
 * From a bi_end_io of this disk (the completion thread, which is what ends
 * those I/Os) it cannot wait, so it refuses while any is in flight.
 * put_disk() unregisters by itself.  Thread-safe.
 *
 * Return: 0; -EINVAL (not an io_uring disk), -ENXIO (none registered),
 * -EBUSY (called from this disk's bi_end_io while fixed I/O is in flight:
 * nothing changed), -ENOSYS in a build without liburing.
 */
BVEC_API int bvec_uring_disk_unregister_buffers(struct gendisk *disk);
#endif /* BVEC_FREESTANDING */

#ifdef __cplusplus
}
#endif

#endif /* LIBBVEC_BLKDEV_H */

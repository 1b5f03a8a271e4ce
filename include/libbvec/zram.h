/* SPDX-License-Identifier: MIT */
/**
 * DOC: libbvec/zram.h - a zram-style compressed RAM block device on bios
 *
 * A zram device is a disk of libbvec's device model whose pages live in a
 * libzpool pool.  Submit bios to zram_disk(zram)->part0 like to any disk.
 * It walks them with bio_for_each_segment(); READ and WRITE work at any
 * 512-byte sector and length (sub-page writes read, patch and store the page
 * under its slot's lock); DISCARD and WRITE_ZEROES free whole pages and zero
 * the partial edges; FLUSH completes at once (memory is the medium).
 *
 * Statistics have zram's names, order and text formats (mm_stat, io_stat).
 * mem_used_total includes the slot table (12 bytes per page of disksize),
 * which the kernel's zram leaves out.
 *
 * Locking: a lock bit per page slot; bios for different pages proceed in
 * parallel on any number of threads.
 */
#ifndef LIBBVEC_ZRAM_H
#define LIBBVEC_ZRAM_H

#include <libbvec/blkdev.h>
#include <libbvec/zpool.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * struct zram_config - how to build a zram device
 * @size: sizeof(struct zram_config) as the caller knows it
 * @disksize: bytes; rounded up to a whole page; required
 * @compressor: as &struct zpool_config (NULL: "lz4")
 * @level: as &struct zpool_config
 * @mem_limit: bytes the device may use; 0 for no limit
 * @flags: ZPOOL_F_* flags for the pool
 * @max_pages_per_zspage: as &struct zpool_config
 */
struct zram_config {
	size_t size;
	uint64_t disksize;
	const char *compressor;
	int level;
	uint64_t mem_limit;
	unsigned int flags;
	unsigned int max_pages_per_zspage;
};

/**
 * ZRAM_CONFIG_INIT - a zram_config with every optional field at its default
 */
#define ZRAM_CONFIG_INIT { sizeof(struct zram_config), 0, NULL, 0, 0, 0, 0 }

/**
 * struct zram_mm_stat - zram's mm_stat, in its order
 * @orig_data_size: bytes of pages stored
 * @compr_data_size: bytes of their compressed forms
 * @mem_used_total: bytes used: the pool and the slot table
 * @mem_limit: the limit, 0 for none
 * @mem_used_max: highest @mem_used_total
 * @same_pages: pages stored as one repeated word
 * @pages_compacted: pages freed by compaction, in all
 * @huge_pages: pages stored raw
 * @huge_pages_since: pages stored raw since creation or reset
 */
struct zram_mm_stat {
	uint64_t orig_data_size;
	uint64_t compr_data_size;
	uint64_t mem_used_total;
	uint64_t mem_limit;
	uint64_t mem_used_max;
	uint64_t same_pages;
	uint64_t pages_compacted;
	uint64_t huge_pages;
	uint64_t huge_pages_since;
};

/**
 * struct zram_io_stat - zram's io_stat, in its order
 * @failed_reads: reads that failed (corrupt or undecodable page)
 * @failed_writes: writes that failed (memory or mem_limit)
 * @invalid_io: bios refused: misaligned, past the end, unknown operation
 * @notify_free: pages freed by DISCARD or WRITE_ZEROES
 */
struct zram_io_stat {
	uint64_t failed_reads;
	uint64_t failed_writes;
	uint64_t invalid_io;
	uint64_t notify_free;
};

struct zram;

/**
 * zram_create() - make a zram device
 * @cfg: the configuration; @cfg->disksize must be set
 *
 * Return: the device, or NULL with errno EINVAL or ENOMEM.
 */
BVEC_API struct zram *zram_create(const struct zram_config *cfg);

/**
 * zram_destroy() - free a device and its data
 * @zram: the device, or NULL; no bio may be in flight
 */
BVEC_API void zram_destroy(struct zram *zram);

/**
 * zram_disk() - the device's disk, for submit_bio() and stacking
 * @zram: the device
 *
 * Return: the disk, owned by the device.
 */
BVEC_API struct gendisk *zram_disk(struct zram *zram);

/**
 * zram_mm_stat() - memory statistics
 * @zram: the device
 * @st: receives them
 */
BVEC_API void zram_mm_stat(struct zram *zram, struct zram_mm_stat *st);

/**
 * zram_io_stat() - I/O error statistics
 * @zram: the device
 * @st: receives them
 */
BVEC_API void zram_io_stat(struct zram *zram, struct zram_io_stat *st);

/**
 * zram_format_mm_stat() - mm_stat as the kernel prints it
 * @st: the statistics (from zram_mm_stat(), or a sum of several devices')
 * @buf: receives one line of nine right-aligned fields
 * @len: size of @buf
 *
 * Return: the length of the text (as snprintf()).
 */
BVEC_API int zram_format_mm_stat(const struct zram_mm_stat *st, char *buf, size_t len);

/**
 * zram_format_io_stat() - io_stat as the kernel prints it
 * @st: the statistics (from zram_io_stat(), or a sum)
 * @buf: receives one line of four right-aligned fields
 * @len: size of @buf
 *
 * Return: the length of the text (as snprintf()).
 */
BVEC_API int zram_format_io_stat(const struct zram_io_stat *st, char *buf, size_t len);

/**
 * zram_compact() - compact the pool
 * @zram: the device
 *
 * Return: pages freed.
 */
BVEC_API size_t zram_compact(struct zram *zram);

/**
 * zram_set_mem_limit() - change the memory limit at run time
 * @zram: the device
 * @bytes: new limit; 0 for none
 */
BVEC_API void zram_set_mem_limit(struct zram *zram, uint64_t bytes);

/**
 * zram_reset() - drop every page, as writing 1 to zram's reset
 * @zram: the device; no bio may be in flight
 */
BVEC_API void zram_reset(struct zram *zram);

/**
 * zram_idle_mark() - mark pages idle, as writing to zram's idle
 * @zram: the device
 * @min_age: mark pages not accessed for at least this many seconds; 0 marks
 *	every stored page
 *
 * A page loses its idle mark when it is next read or written.
 *
 * Return: pages now marked idle.
 */
BVEC_API uint64_t zram_idle_mark(struct zram *zram, unsigned int min_age);

/**
 * zram_idle_pages() - pages currently marked idle
 * @zram: the device
 *
 * Return: count.
 */
BVEC_API uint64_t zram_idle_pages(struct zram *zram);

#ifdef __cplusplus
}
#endif

#endif /* LIBBVEC_ZRAM_H */

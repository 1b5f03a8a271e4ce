// SPDX-License-Identifier: MIT
/*
 * zblk's FUSE transport: zblk's file operations served over libfuse's
 * low-level API.
 */
#ifndef ZBLK_TRANSPORT_H
#define ZBLK_TRANSPORT_H

#include <fuse.h>

/**
 * zblk__serve() - mount and serve a one-directory filesystem until unmounted
 * @args: the FUSE command line left after zblk's own options: MOUNTPOINT,
 *        -f, -s, -d, and FUSE's low-level options (clone_fd, max_threads...)
 * @ops: the operations, called with "/NAME" paths exactly as libfuse's
 *       high-level API calls them; the root's names are read once, at
 *       mount time, through @ops->readdir
 * @disk: the name of the one file whose attributes never change while
 *        mounted.  The kernel caches them (other files' are asked for at
 *        every use, so they stay current), and when @ops->open makes it
 *        direct I/O its writes may run in parallel.
 *
 * Each file is its own inode; no request looks a path up in the kernel's
 * name for it.  Requests run on libfuse's worker threads, as many at once
 * as the kernel sends, so every operation in @ops must be thread-safe.
 *
 * Context: blocks the caller; installs and removes the usual signal
 * handlers (SIGINT, SIGTERM, SIGHUP unmount).  @args and @ops stay owned
 * by the caller and must outlive the call.
 * Return: 0 after a clean unmount, 1 when mounting or serving failed (a
 * message is printed).
 */
int zblk__serve(struct fuse_args *args, const struct fuse_operations *ops, const char *disk);

/**
 * zblk__init_reply_pages() - let every request carry max_write bytes
 * @init_out: the INIT reply's argument (struct fuse_init_out), writable
 * @len: its length in bytes; shorter than max_pages' end, nothing changes
 *
 * The kernel puts at most max_pages pages of the caller's memory in one
 * request, and libfuse 3.14 asks for just the pages max_write fills, so a
 * read or write from a buffer that does not start a page is cut short of
 * max_write, inside a sector.  This raises max_pages to one page more
 * than max_write fills (the kernel takes up to 256), so that requests
 * end where max_write does.  zblk__serve() applies it on /dev/fuse, and
 * the io_uring transport to the INIT reply it rewrites.
 *
 * Context: any thread; touches only @init_out.
 */
void zblk__init_reply_pages(void *init_out, size_t len);

#endif

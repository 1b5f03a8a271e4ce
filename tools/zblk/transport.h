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

#endif

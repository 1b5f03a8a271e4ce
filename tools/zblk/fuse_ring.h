// SPDX-License-Identifier: MIT
/*
 * FUSE over io_uring for zblk: requests and replies pass through
 * registered buffers of an io_uring per processor queue instead of
 * read(2) and writev(2) on /dev/fuse.  libfuse (3.14, which predates the
 * ring) still mounts, parses and dispatches; this file speaks the ring's
 * part of the protocol (fuse_ring_abi.h).
 */
#ifndef ZBLK_FUSE_RING_H
#define ZBLK_FUSE_RING_H

#include <stddef.h>
#include <stdint.h>

struct fuse_session;

/**
 * zblk__ring_install() - route a mounted session's traffic through here
 * @se: a session after fuse_session_mount() and before its loop starts
 *
 * Installs libfuse custom I/O on the session's /dev/fuse descriptor: it
 * reads and writes /dev/fuse as libfuse would, but answers the kernel's
 * FUSE_INIT offer of FUSE_OVER_IO_URING with acceptance and, once that
 * reply is written, starts one thread and io_uring per group of queues
 * and registers the ring entries.  From then on requests arriving in
 * ring entries are handed to fuse_session_process_buf() and their replies
 * committed back through the ring; whatever still comes on /dev/fuse
 * (FORGET, INTERRUPT, requests sent before every queue had an entry) is
 * served as before.  When the kernel does not offer the ring (module
 * parameter enable_uring off, kernel older than 6.14), one line says so
 * on stderr and /dev/fuse alone is used.  splice is not used on a
 * session with custom I/O.
 *
 * Context: call once per process, from the thread that runs the session;
 * the session keeps owning its descriptor, and the ring uses a duplicate
 * of it until zblk__ring_stop().
 * Return: 0, or -1 with a message printed (the session is unchanged).
 */
int zblk__ring_install(struct fuse_session *se);

/**
 * zblk__ring_stop() - stop the ring threads and free their buffers
 *
 * Call after the session loop has returned and the filesystem is
 * unmounted (fuse_session_unmount()), before fuse_session_destroy():
 * entries still waiting for requests are cancelled when each thread
 * closes its ring.  Until then the ring serves the clients that still hold
 * files open under the lazily unmounted mountpoint; closing its duplicate
 * of /dev/fuse then ends the connection, failing what they send later.
 * Prints how many requests the ring carried.
 *
 * Context: the thread that called zblk__ring_install(); a no-op when no
 * ring was started.
 */
void zblk__ring_stop(void);

/**
 * zblk__ring_reply_buf() - where to build a reply's data without a copy
 * @size: bytes the reply's data (after its fuse_out_header) will take
 *
 * While a ring thread serves a request that brought no payload (a READ,
 * say), its entry's payload buffer is free: data built there and replied
 * with (fuse_reply_buf() and the like, from that buffer, in one piece) is
 * committed without being copied.  Other threads may fill the buffer, but
 * the reply must come before the request is done.
 *
 * Context: the thread libfuse called the operation on.
 * Return: the buffer, or NULL when the calling thread is not serving such
 * a ring request or @size does not fit (use a buffer of your own).
 */
char *zblk__ring_reply_buf(size_t size);

/**
 * zblk__ring_requests() - requests served through the ring so far
 *
 * Context: any thread.
 * Return: the count (0 when the ring is not in use).
 */
uint64_t zblk__ring_requests(void);

#endif

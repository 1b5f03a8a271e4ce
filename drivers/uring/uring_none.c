// SPDX-License-Identifier: MIT
/*
 * bvec_uring_disk_create() in a build without liburing (meson -During=disabled,
 * or no liburing found): the symbol stays, so the library's ABI is the same
 * in every build and a program can fall back at run time.
 */
#include "bvec/internal.h"

struct gendisk *bvec_uring_disk_create(int fd, const struct queue_limits *lim,
				       unsigned int queue_depth)
{
	(void)fd;
	(void)lim;
	(void)queue_depth;
	bvec__set_errno(ENOSYS);
	return NULL;
}

int bvec_uring_disk_register_buffers(struct gendisk *disk, const struct iovec *iov,
				     unsigned int nr)
{
	(void)disk;
	(void)iov;
	(void)nr;
	return -ENOSYS;
}

int bvec_uring_disk_unregister_buffers(struct gendisk *disk)
{
	(void)disk;
	return -ENOSYS;
}

// SPDX-License-Identifier: MIT
/* Block status codes, errno and text, as the kernel's blk_errors table. */
#include "internal.h"

/* Linux-only errnos fall back to portable ones elsewhere. */
#ifndef ENOLINK
#define ENOLINK EIO
#endif
#ifndef EREMOTEIO
#define EREMOTEIO EIO
#endif
#ifndef EBADE
#define EBADE EBUSY
#endif
#ifndef ENODATA
#define ENODATA EIO
#endif

static const struct {
	blk_status_t status;
	int errnum;
	const char *name;
} blk_errors[] = {
	{ BLK_STS_OK, 0, "" },
	{ BLK_STS_IOERR, EIO, "I/O" },
	{ BLK_STS_DEV_RESOURCE, EBUSY, "device resource" },
	{ BLK_STS_NOTSUPP, EOPNOTSUPP, "operation not supported" },
	{ BLK_STS_TIMEOUT, ETIMEDOUT, "timeout" },
	{ BLK_STS_NOSPC, ENOSPC, "critical space allocation" },
	{ BLK_STS_TRANSPORT, ENOLINK, "recoverable transport" },
	{ BLK_STS_TARGET, EREMOTEIO, "critical target" },
	{ BLK_STS_RESV_CONFLICT, EBADE, "reservation conflict" },
	{ BLK_STS_MEDIUM, ENODATA, "critical medium" },
	{ BLK_STS_PROTECTION, EILSEQ, "protection" },
	{ BLK_STS_RESOURCE, ENOMEM, "kernel resource" },
	{ BLK_STS_AGAIN, EAGAIN, "nonblocking retry" },
	{ BLK_STS_OFFLINE, ENODEV, "device offline" },
	{ BLK_STS_INVAL, EINVAL, "invalid" },
};

#define N_ERRORS (sizeof(blk_errors) / sizeof(blk_errors[0]))

int blk_status_to_errno(blk_status_t status)
{
	size_t i;

	for (i = 0; i < N_ERRORS; i++)
		if (blk_errors[i].status == status)
			return -blk_errors[i].errnum;
	return -EIO;
}

blk_status_t errno_to_blk_status(int errnum)
{
	size_t i;

	if (errnum < 0)
		errnum = -errnum;
	/* First match: where a Linux-only errno falls back to a common one,
	 * the code that owns the common errno is listed first. */
	for (i = 0; i < N_ERRORS; i++)
		if (blk_errors[i].errnum == errnum)
			return blk_errors[i].status;
	return BLK_STS_IOERR;
}

const char *blk_status_to_str(blk_status_t status)
{
	size_t i;

	for (i = 0; i < N_ERRORS; i++)
		if (blk_errors[i].status == status)
			return blk_errors[i].name;
	return "I/O";
}

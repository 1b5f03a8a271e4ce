// SPDX-License-Identifier: MIT
/*
 * The FUSE-over-io_uring part of the FUSE protocol (7.42, Linux 6.14+),
 * written from the protocol's documentation (include/uapi/linux/fuse.h's
 * description of FUSE_OVER_IO_URING and the ring structures, and the
 * kernel's Documentation/filesystems/fuse-io-uring.rst): Debian 12's
 * linux-libc-dev (6.1) predates it.  Every field is native-endian, as the
 * rest of the protocol.
 */
#ifndef ZBLK_FUSE_RING_ABI_H
#define ZBLK_FUSE_RING_ABI_H

#include <stdint.h>

/* FUSE_INIT flags: bit 41 of the 64-bit set, i.e. bit 9 of flags2. */
#define RING_INIT_EXT (1u << 30)
#define RING_INIT2_OVER_IO_URING (1u << 9)

#define RING_OP_INIT 26

/* Every request starts with this header, every reply with the next. */
struct ring_in_header {
	uint32_t len;		/* the whole request's bytes */
	uint32_t opcode;
	uint64_t unique;
	uint64_t nodeid;
	uint32_t uid;
	uint32_t gid;
	uint32_t pid;
	uint16_t total_extlen;
	uint16_t padding;
};

struct ring_out_header {
	uint32_t len;		/* the whole reply's bytes */
	int32_t error;
	uint64_t unique;
};

/* Where FUSE_INIT's fields sit in its argument (fuse_init_in) and reply. */
#define RING_INIT_IN_FLAGS 12
#define RING_INIT_IN_FLAGS2 16
#define RING_INIT_IN_SIZE 64
#define RING_INIT_OUT_FLAGS 12
#define RING_INIT_OUT_MAX_WRITE 20
#define RING_INIT_OUT_MAX_PAGES 28
#define RING_INIT_OUT_FLAGS2 32
#define RING_INIT_OUT_MIN 36	/* a reply long enough to hold flags2 */

/* The sqe's cmd_op for IORING_OP_URING_CMD on the /dev/fuse fd. */
#define RING_CMD_REGISTER 1
#define RING_CMD_COMMIT_AND_FETCH 2

/* Sizes of the header buffer's first two parts. */
#define RING_HEADER_IN_OUT 128
#define RING_HEADER_OP_IN 128

/* The entry's state the kernel and the server exchange. */
struct ring_ent_in_out {
	uint64_t flags;
	uint64_t commit_id;	/* set by the kernel; echoed in the commit */
	uint32_t payload_sz;	/* bytes of the payload buffer in use */
	uint32_t padding;
	uint64_t reserved;
};

/*
 * The header buffer of an entry: the fuse_in_header (or, for the reply,
 * the fuse_out_header) in in_out; the request's first argument in op_in;
 * then the entry's state.
 */
struct ring_req_header {
	char in_out[RING_HEADER_IN_OUT];
	char op_in[RING_HEADER_OP_IN];
	struct ring_ent_in_out ring_ent_in_out;
};

/* The command, in the 80-byte command area of a 128-byte sqe. */
struct ring_cmd_req {
	uint64_t flags;
	uint64_t commit_id;
	uint16_t qid;
	uint8_t padding[6];
};

_Static_assert(sizeof(struct ring_in_header) == 40, "fuse_in_header is 40 bytes");
_Static_assert(sizeof(struct ring_out_header) == 16, "fuse_out_header is 16 bytes");
_Static_assert(sizeof(struct ring_ent_in_out) == 32, "fuse_uring_ent_in_out is 32 bytes");
_Static_assert(sizeof(struct ring_req_header) == 288, "fuse_uring_req_header is 288 bytes");
_Static_assert(sizeof(struct ring_cmd_req) == 24, "fuse_uring_cmd_req is 24 bytes");

#endif

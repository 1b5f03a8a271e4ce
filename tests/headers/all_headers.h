/* SPDX-License-Identifier: MIT */
/* Every public header, twice: include guards and self-containment. */
#include <libbvec/bvec.h>
#include <libbvec/compiler.h>
#include <libbvec/bio.h>
#include <libbvec/blkdev.h>
#include <libbvec/version.h>
#include <libbvec/bvec.h>
#include <libbvec/bio.h>
#include <libbvec/blkdev.h>
#include <libbvec/version.h>

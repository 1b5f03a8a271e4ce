/* SPDX-License-Identifier: MIT */
/*
 * Every public header of libbvec, twice: include guards and
 * self-containment (each comes before the headers that include it).
 */
#include <libbvec/bvec.h>
#include <libbvec/compiler.h>
#include <libbvec/version.h>
#include <libbvec/blk_types.h>
#include <libbvec/bio_integrity.h>
#include <libbvec/bio.h>
#include <libbvec/blkdev.h>
#include <libbvec/bvec.h>
#include <libbvec/compiler.h>
#include <libbvec/version.h>
#include <libbvec/blk_types.h>
#include <libbvec/bio_integrity.h>
#include <libbvec/bio.h>
#include <libbvec/blkdev.h>

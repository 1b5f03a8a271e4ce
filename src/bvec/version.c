// SPDX-License-Identifier: MIT
/* Runtime version of the linked library, for checks against the headers. */
#include <libbvec/version.h>

#include "internal.h"

int bvec_major_version(void)
{
	return LIBBVEC_VERSION_MAJOR;
}

int bvec_minor_version(void)
{
	return LIBBVEC_VERSION_MINOR;
}

const char *bvec_version_string(void)
{
	return LIBBVEC_VERSION_STRING;
}

bool bvec_check_version(int major, int minor)
{
	return major == LIBBVEC_VERSION_MAJOR && minor <= LIBBVEC_VERSION_MINOR;
}

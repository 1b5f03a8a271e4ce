// SPDX-License-Identifier: MIT
/* The C side of the C/C++ layout comparison (layout.h). */
#include "layout.h"

const size_t hdr_layout_c[] = { HDR_LAYOUT_LIST };

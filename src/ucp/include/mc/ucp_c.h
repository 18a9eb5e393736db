// SPDX-License-Identifier: Apache-2.0
// The UCP C API under its short name: #include <mc/ucp_c.h>. Forwards to
// the real header (installed as <includedir>/mc/ucp/api/ucp_c.h, found next
// to this file; in the source tree through -I<top>/src).
#ifndef MC_UCP_C_FORWARD_H
#define MC_UCP_C_FORWARD_H

#include "ucp/api/ucp_c.h"

#endif

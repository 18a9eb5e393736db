// SPDX-License-Identifier: Apache-2.0
// The UCP C++ API under its short name: #include <mc/ucp.h>. Forwards to
// ucp/api/ucp.h (installed under <includedir>/mc, found next to this file;
// in the source tree through -I<top>/src).
#pragma once

#include "ucp/api/ucp.h"

// SPDX-License-Identifier: Apache-2.0
// Symbol visibility. libmc_ucp is built with -fvisibility=hidden: what an
// application calls (the installed api/ headers) is marked MC_API, and what
// mc's own tools, tests and fuzz targets call besides is marked
// MC_INTERNAL. Both are exported; an MC_INTERNAL name is in no installed
// header and carries no ABI promise (test/integration/abi_check.sh checks
// the API's names only). Everything else stays inside the library.
#pragma once

#define MC_API __attribute__((visibility("default")))
#define MC_INTERNAL __attribute__((visibility("default")))

// SPDX-License-Identifier: Apache-2.0
// Symbol visibility. libmc_ucp and libmc_te are built with
// -fvisibility=hidden. What an application calls is exported: libmc_ucp's
// installed api/ headers mark it MC_API, and libmc_te's two installed
// headers export all they declare (a visibility pragma; they include
// nothing of mc's). What mc's own tools, tests and fuzz targets call
// besides is marked MC_INTERNAL: exported too, but in no installed header
// and with no ABI promise (test/integration/abi_check.sh checks the API's
// names only). Everything else stays inside the library.
#pragma once

#define MC_API __attribute__((visibility("default")))
#define MC_INTERNAL __attribute__((visibility("default")))

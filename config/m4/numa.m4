# SPDX-License-Identifier: Apache-2.0
# libnuma: binding bounce buffers and progress threads near a NIC.
AC_DEFUN([MC_CHECK_NUMA], [
  MC_CHECK_DEP([numa], [libnuma],
    [#include <numa.h>], [numa_available();], [-lnuma])
])

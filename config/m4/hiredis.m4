# SPDX-License-Identifier: Apache-2.0
# hiredis: the Redis metadata backend.
AC_DEFUN([MC_CHECK_HIREDIS], [
  MC_CHECK_DEP([hiredis], [hiredis],
    [#include <hiredis/hiredis.h>], [redisFree(nullptr);], [-lhiredis])
])

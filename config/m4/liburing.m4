# SPDX-License-Identifier: Apache-2.0
# liburing: asynchronous file I/O for the nvmeof transport.
AC_DEFUN([MC_CHECK_LIBURING], [
  MC_CHECK_DEP([liburing], [liburing],
    [#include <liburing.h>], [struct io_uring r; io_uring_queue_init(8, &r, 0);], [-luring])
])

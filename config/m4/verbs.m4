# SPDX-License-Identifier: Apache-2.0
# rdma-core: libibverbs for the rc_verbs transport, mlx5dv for rc_mlx5.
AC_DEFUN([MC_CHECK_VERBS], [
  MC_CHECK_DEP([verbs], [rdma-core libibverbs],
    [#include <infiniband/verbs.h>], [ibv_get_device_list(nullptr);], [-libverbs])
])

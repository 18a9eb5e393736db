# SPDX-License-Identifier: Apache-2.0
# rdma-core mlx5 direct verbs: the rc_mlx5 fast path.
AC_DEFUN([MC_CHECK_MLX5DV], [
  MC_CHECK_DEP([mlx5dv], [rdma-core mlx5dv],
    [#include <infiniband/mlx5dv.h>], [mlx5dv_is_supported(nullptr);], [-lmlx5 -libverbs])
])

# SPDX-License-Identifier: Apache-2.0
# rdma-core: libibverbs for the rc_verbs transport, mlx5dv for rc_mlx5.
AC_DEFUN([MC_CHECK_VERBS], [
  MC_CHECK_DEP([verbs], [rdma-core libibverbs],
    [#include <infiniband/verbs.h>], [ibv_get_device_list(nullptr);], [-libverbs])
])

# The peer-memory path of GPU registration (plain ibv_reg_mr on GPU memory,
# served by the nvidia_peermem kernel module): built unless
# --without-nvidia-peermem; nothing is needed at build time. A compiler flag
# of the ib modules, not a config.h entry.
AC_DEFUN([MC_CHECK_NVIDIA_PEERMEM], [
  AC_ARG_WITH([nvidia-peermem],
    [AS_HELP_STRING([--with-nvidia-peermem],
      [let the verbs transports register GPU memory with plain ibv_reg_mr when the
       nvidia_peermem (or nv_peer_mem) kernel module is loaded (MC_IB_GPU_REG=peermem,
       and the fallback of auto) @<:@default=yes@:>@])],
    [], [with_nvidia_peermem=yes])
  AS_IF([test "x$with_nvidia_peermem" = xno],
    [mc_have_nvidia_peermem=no
     NVIDIA_PEERMEM_CPPFLAGS="-DWITH_NVIDIA_PEERMEM=0"],
    [mc_have_nvidia_peermem=yes
     NVIDIA_PEERMEM_CPPFLAGS="-DWITH_NVIDIA_PEERMEM=1"])
  AC_SUBST([NVIDIA_PEERMEM_CPPFLAGS])
])

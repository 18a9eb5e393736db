# SPDX-License-Identifier: Apache-2.0
# The CUDA transports (cuda_copy, cuda_ipc) declare the driver API subset they
# call (src/uct/cuda/base/cu_api.h) and load libcuda.so.1 at run time, so they
# are built without the CUDA toolkit: --without-cuda is the only way to leave
# them out. --with-cuda=DIR names the toolkit.
#
# The toolkit (default /usr/local/cuda when present; --without-cuda-toolkit
# ignores it, as on a machine that has none) adds two things: a compile-time
# check of those declarations against cuda.h, and the tests that allocate GPU
# memory through the CUDA runtime (-lcudart).
AC_DEFUN([MC_CHECK_CUDA], [
  AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@],
      [the CUDA transports, built without the toolkit; DIR: the CUDA toolkit
       (default: build them; --without-cuda leaves them out)])],
    [], [with_cuda=yes])
  AS_CASE([$with_cuda],
    [no], [mc_have_cuda=no; mc_why_cuda="disabled by --without-cuda"],
    [mc_have_cuda=yes; mc_why_cuda="driver API declared here, libcuda.so.1 loaded at run time"])
  AS_CASE([$with_cuda], [yes|no], [], [with_cuda_toolkit=$with_cuda])
  AS_IF([test "$mc_have_cuda" = no], [with_cuda_toolkit=no])
  MC_CHECK_DEP([cuda-toolkit], [CUDA toolkit (cuda.h and the CUDA runtime)],
    [#include <cuda.h>
     #include <cuda_runtime.h>], [int n; cudaGetDeviceCount(&n); CUresult r = CUDA_SUCCESS; (void)r;], [-lcudart],
    [/usr/local/cuda])
  AS_IF([test "$mc_have_cuda" = no], [mc_why_cuda_toolkit="disabled by --without-cuda"])
  AS_IF([test "$mc_have_cuda" = yes],
        [AC_DEFINE([HAVE_CUDA], [1], [Define when the CUDA transports are built])])
  AM_CONDITIONAL([HAVE_CUDA], [test "$mc_have_cuda" = yes])
])

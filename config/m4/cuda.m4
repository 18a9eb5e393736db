# SPDX-License-Identifier: Apache-2.0
# CUDA runtime for the cuda_copy transport. Default location /usr/local/cuda.
AC_DEFUN([MC_CHECK_CUDA], [
  MC_CHECK_DEP([cuda], [CUDA runtime],
    [#include <cuda_runtime.h>], [int n; cudaGetDeviceCount(&n);], [-lcudart], [/usr/local/cuda])
])

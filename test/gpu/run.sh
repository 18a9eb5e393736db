#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Builds mc with CUDA and runs the GPU tests: cuda_copy round trips between
# host and device and device to device, memory-type detection, the range
# cache, bounce buffers; UCP's staging protocol (cudaMalloc'd memory put to
# and got from a host buffer over tcp and sm through cuda_copy), and the
# Transfer Engine writing and reading device memory (to a peer's host buffer,
# and to a file segment through pinned bounce buffers: TeCudaFile, which
# needs liburing); cuda_ipc between two processes on the GPU (CudaIpcGpu.*)
# and over the fake driver (CudaIpc*, UcpCudaIpc*). Run from the top of the
# tree on a machine with a GPU (test/gpu/h200-run.sh: on a bare one).
#   test/gpu/run.sh [build-dir]        (default: build-gpu-run)
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$top/build-gpu-run}
cuda=${CUDA_HOME:-/usr/local/cuda}

command -v nvidia-smi >/dev/null && nvidia-smi -L || echo "nvidia-smi: not found"
[ -x "$top/configure" ] || (cd "$top" && ./autogen.sh)
mkdir -p "$build"
cd "$build"
if [ ! -f config.status ]; then
  "$top/configure" --enable-debug --with-cuda="$cuda" >configure.log 2>&1 ||
    { tail -30 configure.log; exit 1; }
fi
jobs=$(nproc)
make -j"$jobs" -C src/ucs >/dev/null
make -j"$jobs" -C src/uct >/dev/null
make -j"$jobs" -C src/tools/info >/dev/null 2>&1 || true
make -j"$jobs" >/dev/null
make -j"$jobs" -C test/gtest check TESTS= >/dev/null

[ -x src/tools/info/mc_info ] && src/tools/info/mc_info -d | sed -n '/Component: cuda_copy/,/^#$/p'
export MC_LOG_LEVEL=${MC_LOG_LEVEL:-info}
test/gtest/mc_gtest --gtest_filter='CudaCopy*:MemTypeCache*:*CudaStaging*:*TeCuda*:*CudaIpc*' "${@:2}"

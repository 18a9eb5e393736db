#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The GPU check of the CUDA transports, as one script for a bare GPU machine
# (one H200, no libtool, glog or GoogleTest installed, nothing to download):
#   test/gpu/h200-run.sh --prepare    here, on a build machine (the README's
#                                     dependencies installed): writes
#                                     build-gpu-bundle/ (the source tarball of
#                                     `make dist`, which needs no autotools,
#                                     and glog, gflags, GoogleTest, libunwind:
#                                     headers and libraries), about 3 MiB
#   test/gpu/h200-run.sh              there, from the top of the tree with
#                                     build-gpu-bundle/ beside it: builds with
#                                     the CUDA toolkit and runs
#     1. mc_info -d: cuda_copy and cuda_ipc with their devices and notes;
#     2. cuda_ipc between two processes on the one GPU, cudaMalloc'd (legacy
#        IPC) and cuMemCreate'd (VMM, POSIX fd) memory, put and get 8 B to
#        64 MiB with the data checked on both sides, and its bandwidth beside
#        cudaMemcpy device to device (CudaIpcGpu.*, printed lines);
#     3. the whole of test/gpu/run.sh (CudaCopy*, MemTypeCache*, *CudaStaging*
#        with CudaStagingRemote.*, *TeCuda*, CudaIpc*, UcpCudaIpc*);
#     4. mc_perftest -m cuda (it says it does not support cuda memory yet:
#        the bandwidth comparison is step 2's).
# Output: everything on stdout; exit status 0 when every step passed.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
bundle=$top/build-gpu-bundle

if [ "${1:-}" = --prepare ]; then
  set -e
  build=${BUILD_DIR:-$top/build}
  [ -f "$build/Makefile" ] || { echo "configure a build in $build first (contrib/build.sh)"; exit 1; }
  rm -rf "$bundle"
  mkdir -p "$bundle/deps/include" "$bundle/deps/lib"
  make -C "$build" dist >/dev/null 2>&1 || true  # tar: the topology fixture's symlink loops
  ls "$build"/mc-*.tar.gz >/dev/null
  mv "$build"/mc-*.tar.gz "$bundle/"
  for h in glog gflags gtest gmock; do cp -r "/usr/include/$h" "$bundle/deps/include/"; done
  lib=/usr/lib/x86_64-linux-gnu
  cp -P "$lib"/libglog.so* "$lib"/libgflags.so* "$lib"/libunwind.so.8* "$bundle/deps/lib/"
  cp "$lib"/libgtest.a "$lib"/libgmock.a "$bundle/deps/lib/"
  du -sh "$bundle"
  exit 0
fi

start=$SECONDS
fail=0
step() { echo; echo "=== $* ($((SECONDS - start)) s) ==="; }
cuda=${CUDA_HOME:-/usr/local/cuda}
deps=$bundle/deps
export LD_LIBRARY_PATH=$deps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

step "machine"
nvidia-smi -L || echo "nvidia-smi: not found"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
g++ --version | head -1
ls "$cuda/include/cuda.h" || { echo "no CUDA toolkit at $cuda (CUDA_HOME)"; exit 1; }

step "build (make dist tarball, the bundle's glog and GoogleTest)"
tarball=$(ls "$bundle"/mc-*.tar.gz 2>/dev/null | head -1)
[ -n "$tarball" ] || { echo "no $bundle/mc-*.tar.gz: run test/gpu/h200-run.sh --prepare on a build machine"; exit 1; }
src=${TMPDIR:-/tmp}/mc-gpu-src
build=${TMPDIR:-/tmp}/mc-gpu-build
rm -rf "$src" "$build"
mkdir -p "$src" "$build"
# make dist cannot store the topology fixture's sysfs symlink loops (tar
# names too long): that fixture is not used here, its errors are dropped.
tar -xzf "$tarball" -C "$src" --strip-components=1 2>/dev/null
[ -x "$src/configure" ] || { echo "$tarball: no configure in it"; exit 1; }
cd "$build"
"$src/configure" --enable-debug --with-cuda="$cuda" --with-glog="$deps" --with-gtest="$deps" \
  --without-benchmark CXXFLAGS=-g1 CFLAGS=-g1 >configure.log 2>&1 || { tail -40 configure.log; exit 1; }
sed -n '/^Transports/,$p' configure.log | head -40
jobs=$(nproc)
make -j"$jobs" >make.log 2>&1 || { grep -B2 -A8 'error' make.log | head -60; exit 1; }
make -j"$jobs" -C test/gtest check TESTS= >make-check.log 2>&1 ||
  { grep -B2 -A8 'error' make-check.log | head -60; exit 1; }
echo "built in $((SECONDS - start)) s"

step "1. mc_info -d: the CUDA transports"
src/tools/info/mc_info -m | grep -E 'cuda|left out' || true
src/tools/info/mc_info -d | sed -n '/Component: cuda_copy/,/Component: [^c]/p' | head -60

step "2. cuda_ipc between two processes on one GPU, 8 B to 64 MiB, and cudaMemcpy D2D"
test/gtest/mc_gtest --gtest_filter='*CudaIpcGpu.*' || fail=1

step "3. test/gpu/run.sh (cuda_copy, staging with CudaStagingRemote, Transfer Engine, cuda_ipc)"
"$top/test/gpu/run.sh" "$build" || fail=1

step "4. mc_perftest -m cuda"
src/tools/perf/mc_perftest -t put_bw -m cuda -s 67108864 -n 20 2>&1 | head -5 || true

step "done: $([ $fail -eq 0 ] && echo passed || echo FAILED)"
exit $fail

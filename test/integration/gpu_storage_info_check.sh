#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# mc_info -d and -m show the cuda_copy and nvmeof transports: nvmeof with its
# "file" device, cuda_copy with its device or, without a GPU or driver, the
# reason ("no CUDA device: <cuda error>"). A transport that configure left out
# (no liburing, no CUDA) is skipped with the reason.
#   test/integration/gpu_storage_info_check.sh [build-dir]
set -euo pipefail

build=${1:-$(cd "$(dirname "$0")/../.." && pwd)/build}
info=$build/src/tools/info/mc_info
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

"$info" -d > "$tmp/d" 2>&1
"$info" -m > "$tmp/m" 2>&1

expect() {  # expect FILE REGEX WHAT
  if grep -E -q "$2" "$1"; then
    echo "ok: $3"
  else
    echo "FAILED: $3 (no line matching '$2' in mc_info $(basename "$1" | sed 's/^/-/'))"
    fail=1
  fi
}

if grep -q '^#define HAVE_LIBURING 1' "$build/config.h"; then
  expect "$tmp/d" '^# Component: nvmeof$' "mc_info -d lists the nvmeof component"
  expect "$tmp/d" 'transport nvmeof on file \(storage' "nvmeof offers the file device"
  expect "$tmp/d" 'register files yes' "the nvmeof memory domain registers files"
else
  echo "skipped: nvmeof (configure found no liburing)"
fi

if grep -q '^#define HAVE_CUDA 1' "$build/config.h"; then
  expect "$tmp/m" 'uct +cuda +loaded' "libmc_uct_cuda.so loads, GPU or not"
  expect "$tmp/d" '^# Component: cuda_copy$' "mc_info -d lists the cuda_copy component"
  if grep -q 'no CUDA device: ' "$tmp/d"; then
    expect "$tmp/d" 'no memory domain: no CUDA device: cuda[A-Za-z]+: ' "the no-device reason names the CUDA error"
    expect "$tmp/m" 'uct component cuda_copy: no CUDA device: ' "mc_info -m gives the same reason"
  else
    expect "$tmp/d" 'transport cuda_copy on cuda \(acc' "cuda_copy offers the cuda device"
    expect "$tmp/d" 'detect cuda[|]cuda-managed' "the cuda_copy memory domain detects CUDA memory"
  fi
else
  echo "skipped: cuda_copy (configure found no CUDA)"
fi

# The other transports are listed as before.
expect "$tmp/d" 'transport self on memory' "self is unaffected"
exit $fail

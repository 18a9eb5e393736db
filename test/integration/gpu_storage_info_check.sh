#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# mc_info -d and -m show the CUDA and nvmeof transports: nvmeof with its
# "file" device; cuda_copy and cuda_ipc (built without the CUDA toolkit) with
# their device or, without a GPU or driver, the reason ("no CUDA device:
# libcuda.so.1 not found: ..."), and over the test's fake driver
# (MC_CUDA_DRIVER) with their devices and cuda_ipc's fabric-handle note. A
# module configure left out (no liburing, --without-cuda) is listed by
# mc_info -m with configure's reason.
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
  expect "$tmp/m" '^#   uct +nvmeof +left out +by configure' "mc_info -m lists nvmeof as left out"
fi

if grep -q '^#define HAVE_CUDA 1' "$build/config.h"; then
  for m in cuda cuda_ipc; do
    expect "$tmp/m" "uct +$m +loaded" "libmc_uct_$m.so loads, GPU or not"
  done
  for c in cuda_copy cuda_ipc; do
    expect "$tmp/d" "^# Component: $c\$" "mc_info -d lists the $c component"
    if grep -q "uct component $c: no CUDA device: " "$tmp/m"; then
      expect "$tmp/d" 'no memory domain: no CUDA device: (libcuda.so.1 not found: |cuInit: CUDA_ERROR|cuDeviceGetCount)' \
        "$c: the no-device reason names the driver's failure"
    else
      expect "$tmp/d" "transport $c on cuda \\(acc" "$c offers the cuda device"
    fi
  done
  # Over the fake driver (built by make check): both offer their device.
  fake=$build/test/gtest/.libs/libmc_test_fakecuda.so
  if [ -e "$fake" ]; then
    MC_CUDA_DRIVER=$fake "$info" -d > "$tmp/fd" 2>&1
    expect "$tmp/fd" 'transport cuda_copy on cuda \(acc' "fake driver: cuda_copy offers the cuda device"
    expect "$tmp/fd" 'transport cuda_ipc on cuda \(acc' "fake driver: cuda_ipc offers the cuda device"
    expect "$tmp/fd" 'fabric handles \(MNNVL\): unavailable: GPU 0 does not support fabric handles' \
      "fake driver: cuda_ipc says why there are no fabric handles"
    expect "$tmp/fd" '1 GPU\(s\); peer access: ' "fake driver: cuda_ipc lists its GPUs and peer access"
  else
    echo "skipped: the fake CUDA driver checks (no $fake: run make check first)"
  fi
else
  for m in cuda cuda_ipc; do
    expect "$tmp/m" "^#   uct +$m +left out +by configure" "mc_info -m lists $m as left out"
  done
  expect "$tmp/m" 'reason: disabled by --without-cuda' "mc_info -m gives configure's reason"
fi

# The other transports are listed as before.
expect "$tmp/d" 'transport self on memory' "self is unaffected"
exit $fail

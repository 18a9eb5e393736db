#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Configures and builds mc in a build directory (default: build/ at the top of
# the tree). Reconfigures only when the flags change.
#   BUILD_DIR=dir CONFIGURE_FLAGS="--enable-debug" contrib/build.sh [make targets]
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${BUILD_DIR:-$top/build}
flags=${CONFIGURE_FLAGS:-}
jobs=${JOBS:-$(nproc)}

cd "$top"
if [ ! -x configure ] || [ configure.ac -nt configure ]; then
  echo "build: generating configure"
  ./autogen.sh >/dev/null
fi

mkdir -p "$build_dir"
cd "$build_dir"
if [ ! -f Makefile ] || [ "$(cat .configure-flags 2>/dev/null)" != "$flags" ]; then
  echo "build: configuring in $build_dir with: ${flags:-(defaults)}"
  # shellcheck disable=SC2086
  "$top/configure" $flags
  echo "$flags" > .configure-flags
fi
echo "build: make -j$jobs $*"
make -j"$jobs" "$@"

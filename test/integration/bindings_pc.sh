#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Writes mc-te-uninstalled.pc into DIR: pkg-config's "uninstalled" variant of
# mc-te, pointing at this source tree's C header and at BUILD_DIR's
# libraries (with their run paths), so that the Go and Rust bindings, which
# ask pkg-config for mc-te, build and run against a build tree with
# PKG_CONFIG_PATH=DIR. pkg-config prefers NAME-uninstalled.pc over NAME.pc.
#   test/integration/bindings_pc.sh BUILD_DIR DIR
set -euo pipefail

src=$(cd "$(dirname "$0")/../../src" && pwd)
build_dir=$(cd "${1:?usage: bindings_pc.sh BUILD_DIR DIR}" && pwd)
dir=${2:?usage: bindings_pc.sh BUILD_DIR DIR}

rpath=
for d in ucs uct ucp ucp/metadata ucp/te; do
  lib=$build_dir/src/$d/.libs
  rpath+="${rpath:+:}$lib"
done
[ -e "$build_dir/src/ucp/te/.libs/libmc_te.so" ] ||
  { echo "bindings_pc: no libmc_te.so in $build_dir/src/ucp/te/.libs (build first)" >&2; exit 1; }
libs="-L$build_dir/src/ucp/te/.libs -Wl,-rpath,$rpath -lmc_te"
version=$(sed -n 's/^Version: //p' "$build_dir/mc-te.pc")
mkdir -p "$dir"
cat > "$dir/mc-te-uninstalled.pc" <<PC
# mc-te of the build tree $build_dir (test/integration/bindings_pc.sh)
Name: mc-te
Description: mc Transfer Engine C API, uninstalled (build tree)
Version: $version
Cflags: -I$src/ucp/te/include
Libs: $libs
PC

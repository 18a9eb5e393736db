#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# An installed mc for the Go, Rust and Python bindings to build against, as
# an application would: the make install of BUILD_DIR (staged_install.sh,
# shared by the checks of one contrib/run-tests.sh run, else into DIR), and
# DIR/pkg-config, a pkg-config that points the .pc files' prefix into the
# staging directory:
#   PKG_CONFIG=DIR/pkg-config PKG_CONFIG_PATH=ROOT/lib/pkgconfig, run with
#   LD_LIBRARY_PATH=ROOT/lib (an installed mc has no run path into DIR).
# Prints ROOT, the installed prefix.
#   test/integration/bindings_install.sh BUILD_DIR DIR
set -euo pipefail

build_dir=$(cd "${1:?usage: bindings_install.sh BUILD_DIR DIR}" && pwd)
dir=${2:?usage: bindings_install.sh BUILD_DIR DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

root=$("$(dirname "$0")/staged_install.sh" "$build_dir" "$dir/staging")
[ -e "$root/include/mc/transfer_engine_c.h" ] && [ -e "$root/lib/pkgconfig/mc-te.pc" ] ||
  { echo "bindings_install: no transfer_engine_c.h or mc-te.pc under $root" >&2; exit 1; }
cat > "$dir/pkg-config" <<SH
#!/bin/sh
exec pkg-config --define-variable=prefix=$root "\$@"
SH
chmod +x "$dir/pkg-config"
echo "$root"

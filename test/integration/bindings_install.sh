#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs what the Go, Rust and Python bindings link (the libraries, the modules,
# the headers and the mc-*.pc files) from BUILD_DIR into the staging
# directory DIR (make install DESTDIR=DIR), and writes DIR/pkg-config, a
# pkg-config that points the .pc files' prefix into DIR, so that the
# bindings build against an installed mc as an application would:
#   PKG_CONFIG=DIR/pkg-config PKG_CONFIG_PATH=ROOT/lib/pkgconfig, run with
#   LD_LIBRARY_PATH=ROOT/lib (an installed mc has no run path into DIR).
# Prints ROOT, the installed prefix inside DIR.
#   test/integration/bindings_install.sh BUILD_DIR DIR
set -euo pipefail

build_dir=$(cd "${1:?usage: bindings_install.sh BUILD_DIR DIR}" && pwd)
dir=${2:?usage: bindings_install.sh BUILD_DIR DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

for d in src/ucs src/uct src/ucp src/ucp/metadata src/ucp/te src/ucp/te/mooncake; do
  make -C "$build_dir/$d" install DESTDIR="$dir/dest" > "$dir/install.log" 2>&1 ||
    { cat "$dir/install.log" >&2; echo "bindings_install: make install in $d failed" >&2; exit 1; }
done
make -C "$build_dir" install-pkgconfigDATA DESTDIR="$dir/dest" > "$dir/install.log" 2>&1 ||
  { cat "$dir/install.log" >&2; echo "bindings_install: installing the .pc files failed" >&2; exit 1; }
prefix=$(sed -n 's/^prefix=//p' "$build_dir/mc-te.pc")
root=$dir/dest$prefix
[ -e "$root/include/mc/transfer_engine_c.h" ] && [ -e "$root/lib/pkgconfig/mc-te.pc" ] ||
  { echo "bindings_install: no transfer_engine_c.h or mc-te.pc under $root" >&2; exit 1; }
cat > "$dir/pkg-config" <<SH
#!/bin/sh
exec pkg-config --define-variable=prefix=$root "\$@"
SH
chmod +x "$dir/pkg-config"
echo "$root"

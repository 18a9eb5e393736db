#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The make install of a build tree into a staging directory (DESTDIR), for
# the checks that build and run against an installed mc, as an application
# would: prints ROOT, the installed prefix inside it. The checks only read
# it; what they make goes to directories of their own.
# Under contrib/run-tests.sh, which names a directory in RUN_TESTS_STAGING,
# one install serves every check of the run: the first call makes it and
# the next ones reuse it (make install relinks every library with libtool,
# 20-30 s, and seven checks install). Run alone, a check installs into
# FALLBACK_DIR, a directory of its own that it removes.
#   root=$(test/integration/staged_install.sh BUILD_DIR FALLBACK_DIR)
set -euo pipefail

build_dir=$(cd "${1:?usage: staged_install.sh BUILD_DIR FALLBACK_DIR}" && pwd)
dir=${RUN_TESTS_STAGING:-${2:?usage: staged_install.sh BUILD_DIR FALLBACK_DIR}}
prefix=$(sed -n 's/^prefix=//p' "$build_dir/mc-ucs.pc")
[ -n "$prefix" ] || { echo "staged_install: no prefix in $build_dir/mc-ucs.pc" >&2; exit 1; }
if [ ! -e "$dir/installed" ]; then
  mkdir -p "$dir"
  make -C "$build_dir" install DESTDIR="$dir/dest" > "$dir/install.log" 2>&1 ||
    { tail -20 "$dir/install.log" >&2; echo "staged_install: make install DESTDIR=$dir/dest failed (log: $dir/install.log)" >&2; exit 1; }
  touch "$dir/installed"
fi
echo "$dir/dest$prefix"

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The vendor plugin kit end to end: installs mc (staged_install.sh),
# builds contrib/plugin-template out of tree against that prefix only, and
# checks that mc_uct_check passes on it, that UCP moves data between two
# processes over it (MC_TLS=vendor), that mc_info -m lists it, and that the
# same module built for another ABI is refused while the others still load.
#   test/integration/plugin_check.sh <build-dir>
set -euo pipefail

build_dir=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
src_dir=$(cd "$here/../.." && pwd)
name=vendor
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT

step() { echo "== $*"; }

step "install mc (staged_install.sh)"
root=$("$here/staged_install.sh" "$build_dir" "$dest/staging")
echo "installed in $root"
# In a sanitizer build the libraries need the sanitizer runtime loaded
# first: the programs built here get the build's -fsanitize flags.
san_flags=$(sed -n 's/^BASE_LDFLAGS = //p' "$build_dir/Makefile")
export PKG_CONFIG_PATH=$root/lib/pkgconfig
pc_flags="--define-variable=prefix=$root"
export LD_LIBRARY_PATH=$root/lib

# The template builds in a copy, so nothing from the source tree is on the
# include path: only what the install put under $root.
step "build the template out of tree against $root only"
cp -r "$src_dir/contrib/plugin-template" "$dest/kit"
make -C "$dest/kit" PC_FLAGS="$pc_flags" CXXFLAGS="-O2 -g -Werror $san_flags" >/dev/null
mkdir -p "$dest/modules"
cp "$dest/kit/libmc_uct_$name.so" "$dest/modules/"
export MC_MODULE_DIR=$dest/modules

step "mc_uct_check $name"
"$root/bin/mc_uct_check" "$name" | tee "$dest/check.txt"
grep -qE '^[0-9]+ passed, 0 failed$' "$dest/check.txt"

step "mc_info -m lists $name"
"$root/bin/mc_info" -m | tee "$dest/modules.txt"
grep -E "uct +$name +loaded .*$dest/modules/libmc_uct_$name.so" "$dest/modules.txt" >/dev/null ||
  { echo "module $name is not listed as loaded from $dest/modules"; exit 1; }
"$root/bin/mc_info" -d | grep -w "$name" ||
  { echo "mc_info -d does not list a $name device"; exit 1; }

step "UCP put/get across two processes with MC_TLS=$name"
# shellcheck disable=SC2086
g++ $(pkg-config $pc_flags --cflags mc-ucp) -Wall -Wextra -Werror $san_flags "$here/plugin_putget.cc" \
  -o "$dest/putget" $(pkg-config $pc_flags --libs mc-ucp mc-uct mc-ucs) -lglog \
  -Wl,-rpath,"$root/lib"
MC_TLS=$name "$dest/putget" | tee "$dest/putget.txt"
grep -q "$name/unix" "$dest/putget.txt" || { echo "UCP did not select $name"; exit 1; }

step "a module built for another ABI is refused; the others still load"
# Without optimization: the loader refuses it before any of its code runs.
make -C "$dest/kit" clean >/dev/null
make -C "$dest/kit" PC_FLAGS="$pc_flags" CXXFLAGS="-O0 -g0 $san_flags" WRONG_ABI=99 >/dev/null
cp "$dest/kit/libmc_uct_$name.so" "$dest/modules/"
"$root/bin/mc_info" -m > "$dest/modules_bad.txt" 2> "$dest/modules_bad.err" || true
cat "$dest/modules_bad.txt"
expected="built for module ABI 99, this mc runs module ABI $(pkg-config $pc_flags --variable=module_abi_version mc-uct)"
grep -F "$expected" "$dest/modules_bad.txt" "$dest/modules_bad.err" >/dev/null ||
  { echo "the refusal does not say: $expected"; exit 1; }
for m in self tcp sm; do
  grep -E "uct +$m +loaded" "$dest/modules_bad.txt" >/dev/null ||
    { echo "module $m no longer loads next to a refused module"; exit 1; }
done
if "$root/bin/mc_uct_check" "$name" >/dev/null 2>&1; then
  echo "mc_uct_check ran on a refused module"; exit 1
fi
echo "plugin_check: all passed"

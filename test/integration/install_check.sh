#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs mc into a staging DESTDIR (staged_install.sh) and checks that headers, libraries,
# tools and pkg-config files are there, and that a program using the
# installed mc-ucs.pc compiles, links and runs.
set -euo pipefail

build_dir=$1
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT

root=$("$(dirname "$0")/staged_install.sh" "$build_dir" "$dest/staging")
# In a sanitizer build the libraries need the sanitizer runtime loaded
# first: the programs built here get the build's -fsanitize flags.
san_flags=$(sed -n 's/^BASE_LDFLAGS = //p' "$build_dir/Makefile")

missing=0
for f in include/mc/ucs/status/status.h include/mc/ucs/module/module_abi.h \
         include/mc/ucs/config/table.h include/mc/uct/api/module.h \
         include/mc/ucp/api/ucp.h lib/libmc_ucp.so lib/pkgconfig/mc-ucp.pc bin/mc_perftest \
         lib/libmc_ucs.so lib/libmc_uct.so lib/pkgconfig/mc-ucs.pc lib/pkgconfig/mc-uct.pc \
         lib/mc/libmc_uct_self.so lib/mc/libmc_uct_tcp.so lib/mc/libmc_uct_sm.so bin/mc_info \
         share/man/man1/mc_info.1 share/man/man1/mc_perftest.1 share/man/man1/mc_uct_check.1 \
         share/man/man8/mc_metadata_server.8 share/man/man8/mc_nvmeof_register.8 \
         include/mooncake/transfer_engine_c.h include/mooncake/transfer_engine.h \
         lib/libtransfer_engine.so; do
  if [ -e "$root/$f" ]; then echo "installed: $f"; else echo "MISSING: $f"; missing=1; fi
done
[ $missing -eq 0 ] || exit 1

# pkg-config's variables point at $prefix; redirect them into DESTDIR.
export PKG_CONFIG_PATH=$root/lib/pkgconfig
cflags=$(pkg-config --define-variable=prefix="$root" --cflags mc-ucs)
libs=$(pkg-config --define-variable=prefix="$root" --libs mc-ucs)
cat > "$dest/app.cc" <<'SRC'
#include <ucs/config/parser.h>
#include <ucs/status/status.h>
#include <cstdio>
int main() {
  size_t v = 0;
  if (mc::ucs::config::size_parser().parse("64k", &v) != mc::ucs::Status::Ok || v != 65536) return 1;
  std::printf("installed mc-ucs works: %s\n", mc::ucs::status_string(mc::ucs::Status::NoResource));
  return 0;
}
SRC
# shellcheck disable=SC2086
g++ $cflags $san_flags "$dest/app.cc" -o "$dest/app" $libs -Wl,-rpath,"$root/lib"
"$dest/app"

# The installed mc_info finds the installed modules next to libmc_ucs.
LD_LIBRARY_PATH=$root/lib "$root/bin/mc_info" -m > "$dest/modules.txt"
cat "$dest/modules.txt"
for m in self tcp sm; do
  grep -E "uct +$m +loaded .*$root/lib/mc/libmc_uct_$m.so" "$dest/modules.txt" >/dev/null ||
    { echo "installed module $m is not loaded from $root/lib/mc"; exit 1; }
done

# The Done-when of UCP: applications built against the installed headers
# with `pkg-config mc-ucp` alone move data between two processes, one with
# the C API (<mc/ucp_c.h>) and one with the C++ API (<mc/ucp.h>); the C++ one
# forces a rendezvous for its large active message.
integration=$(cd "$(dirname "$0")" && pwd)
for f in include/mc/ucp_c.h include/mc/ucp.h include/mc/ucp/api/ucp_c.h; do
  [ -e "$root/$f" ] || { echo "MISSING: $f"; exit 1; }
done
ucp_cflags=$(pkg-config --define-variable=prefix="$root" --cflags mc-ucp)
ucp_libs=$(pkg-config --define-variable=prefix="$root" --libs mc-ucp)
# shellcheck disable=SC2086
gcc -std=c11 -Wall -Werror $san_flags $(echo $ucp_cflags | sed 's/-std=c++20//') \
  "$integration/ucp_two_proc_c.c" -o "$dest/ucp_c_app" $ucp_libs -Wl,-rpath,"$root/lib"
# shellcheck disable=SC2086
g++ $ucp_cflags $san_flags "$integration/ucp_two_proc.cc" -o "$dest/ucp_cxx_app" $ucp_libs \
  -Wl,-rpath,"$root/lib"
# libmc_ucp's own dependencies (libmc_uct, libmc_ucs) are found as for mc_info.
for tls in sm tcp; do
  export LD_LIBRARY_PATH=$root/lib MC_TLS=$tls MC_NET_DEVICES=lo MC_TRANSFER_TIMEOUT=60s
  "$dest/ucp_c_app"
  MC_RNDV_THRESH=64k "$dest/ucp_cxx_app"
done
unset LD_LIBRARY_PATH MC_TLS MC_NET_DEVICES MC_TRANSFER_TIMEOUT
echo "PASS: installed mc-ucp: C and C++ applications move data between two processes"

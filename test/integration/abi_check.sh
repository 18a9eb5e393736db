#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The installed API and ABI, as an embedder sees them after make install:
# (1) the headers are the API and nothing else: none of UCP's core/, proto/
#     or wireup/ is installed, and a program including every installed
#     header compiles with the flags of pkg-config alone;
# (2) no exported symbol of the API disappears: each library's API symbols
#     (the names of `api` below, strong exported functions) are compared with
#     the list kept in test/integration/abi/<library>.symbols. One gone from
#     the library breaks every program linked against it (raise the
#     -version-info current and reset age: README, "Library versions"). One
#     not in the list is new API: add it (--update writes every list).
# Each half is also shown to fail: on a list that has one symbol more than
# the library (as if it had been removed), and on a header that includes
# UCP's inside.
#   abi_check.sh BUILD_DIR [--update]
set -euo pipefail

build_dir=$1
update=${2:-}
lists=$(cd "$(dirname "$0")" && pwd)/abi
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT

root=$("$(dirname "$0")/staged_install.sh" "$build_dir" "$dest/staging")
fail=0

# (1) The headers.
for dir in core proto wireup; do
  if [ -e "$root/include/mc/ucp/$dir" ]; then
    echo "FAIL: include/mc/ucp/$dir is installed: UCP's inside is not API"
    fail=1
  fi
done
export PKG_CONFIG_PATH=$root/lib/pkgconfig
cflags=$(pkg-config --define-variable=prefix="$root" --cflags mc-te mc-ucp mc-uct mc-ucs)
# embedder_compiles SOURCE: whether it compiles with pkg-config's flags alone.
embedder_compiles() {
  # shellcheck disable=SC2086
  g++ $cflags -Wall -Werror -fsyntax-only "$1" 2> "$dest/embedder.err"
}
(cd "$root/include" && find . -name '*.h' | sed 's|^\./||' | sort) > "$dest/headers"
sed 's/.*/#include <&>/' "$dest/headers" > "$dest/embedder.cc"
echo 'int main() { return 0; }' >> "$dest/embedder.cc"
if embedder_compiles "$dest/embedder.cc"; then
  echo "ok: an embedder including all $(wc -l < "$dest/headers") installed headers compiles with pkg-config's flags alone"
else
  cat "$dest/embedder.err"
  echo "FAIL: the installed headers do not compile on their own (above)"
  fail=1
fi
{ echo '#include "ucp/core/worker.h"'; cat "$dest/embedder.cc"; } > "$dest/inside.cc"
if embedder_compiles "$dest/inside.cc"; then
  echo "FAIL: an embedder including ucp/core/worker.h compiles: UCP's inside is installed"
  fail=1
else
  echo "ok: UCP's inside (ucp/core/worker.h) is not there for an embedder"
fi

# (2) The symbols. The API of each library, by demangled name: UCS, UCT and
# the metadata layer install every header, so all of their namespace is;
# UCP's is api/'s classes and functions; the Transfer Engine's is the class
# (not its Impl) and the C API; libtransfer_engine is Mooncake's API only.
declare -A api=(
  [libmc_ucs]='^mc::ucs::'
  [libmc_uct]='^mc::uct::'
  [libmc_ucp]='^(mc::ucp::(Endpoint|Worker|Context|File|MemHandle|Rkey|Request)::|mc::ucp::(choose_tls|rndv_frag_size|context_config_table|register_ucp_config_tables|tl_allowed)\(|mc_ucp_)'
  [libmc_metadata]='^mc::metadata::'
  [libmc_te]='^(mc::TransferEngine::|mc_te_)'
  [libtransfer_engine]='.'
)
not_api='::Impl::'
# api_symbols LIB: the mangled API symbols the installed LIB exports, sorted.
api_symbols() {
  local so=$root/lib/$1.so
  nm -D --defined-only "$so" | awk '$2 == "T" { print $3 }' | sort -u > "$dest/mangled"
  c++filt < "$dest/mangled" > "$dest/demangled"
  paste -d '\t' "$dest/mangled" "$dest/demangled" |
    awk -F '\t' -v re="${api[$1]}" -v no="$not_api" '$2 ~ re && $2 !~ no { print $1 }' | sort
}
# compare LIB LIST NOW: says what LIST has that NOW lacks and the reverse;
# fails on either.
compare() {
  local gone new
  gone=$(comm -23 "$2" "$3" | c++filt)
  new=$(comm -13 "$2" "$3" | c++filt)
  if [ -n "$gone" ]; then
    echo "FAIL: $1 no longer exports these API symbols (an ABI break):"
    echo "$gone" | sed 's/^/  /'
  fi
  if [ -n "$new" ]; then
    echo "FAIL: $1 exports API symbols its list does not have (new API: $0 BUILD_DIR --update):"
    echo "$new" | sed 's/^/  /'
  fi
  [ -z "$gone$new" ]
}
[ "$update" = --update ] && mkdir -p "$lists"
for lib in libmc_ucs libmc_uct libmc_ucp libmc_metadata libmc_te libtransfer_engine; do
  [ -e "$root/lib/$lib.so" ] || { echo "FAIL: $lib.so is not installed"; fail=1; continue; }
  api_symbols "$lib" > "$dest/$lib.now"
  if [ "$update" = --update ]; then
    cp "$dest/$lib.now" "$lists/$lib.symbols"
    echo "wrote $lists/$lib.symbols: $(wc -l < "$dest/$lib.now") symbols"
  elif [ ! -e "$lists/$lib.symbols" ]; then
    echo "FAIL: no list $lists/$lib.symbols (--update)"
    fail=1
  elif compare "$lib" "$lists/$lib.symbols" "$dest/$lib.now"; then
    echo "ok: $lib exports the $(wc -l < "$dest/$lib.now") API symbols of its list"
  else
    fail=1
  fi
done

# The comparison fails on a symbol gone: a list with one the library lacks.
removed=_ZN2mc3ucp8Endpoint12removed_callEv
sort "$dest/libmc_ucp.now" <(echo "$removed") > "$dest/doctored"
if compare libmc_ucp "$dest/doctored" "$dest/libmc_ucp.now" > "$dest/doctored.out" ||
   ! grep -q 'mc::ucp::Endpoint::removed_call()' "$dest/doctored.out"; then
  cat "$dest/doctored.out"
  echo "FAIL: a symbol missing from libmc_ucp went unnoticed"
  fail=1
else
  echo "ok: a symbol missing from libmc_ucp is reported (mc::ucp::Endpoint::removed_call())"
fi
exit $fail

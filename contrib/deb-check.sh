#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the Debian binary packages of debian/ (dpkg-buildpackage -b -uc -us)
# from a copy of this tree, runs lintian on them, installs them into a clean
# root with dpkg --root, and runs the installed files there: mc_info -v and
# -m (the libraries and modules must come from that root), mc_perftest in
# loopback over tcp and sm, and the README's Transfer Engine example built
# against the installed libmc-dev with pkg-config and run against a target.
# Not part of the test command: the package build is a full release build
# (see docs/install.md for how long it takes). Needs the packages of
# contrib/install-deps.sh --deb.
#   contrib/deb-check.sh [--keep] [--dir DIR]
# Exit status: 0 when everything passed, 1 otherwise; lintian's errors fail
# it, its warnings are printed.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
keep=no
work=
while [ $# -gt 0 ]; do
  case $1 in
    --keep) keep=yes ;;
    --dir) work=$2; shift ;;
    *) echo "usage: $0 [--keep] [--dir DIR]" >&2; exit 2 ;;
  esac
  shift
done
for prog in dpkg-buildpackage dh lintian dpkg-architecture pkg-config g++; do
  command -v "$prog" > /dev/null ||
    { echo "deb-check: $prog not found: run contrib/install-deps.sh --deb"; exit 1; }
done
[ -n "$work" ] || work=$(mktemp -d /tmp/mc-deb.XXXXXX)
mkdir -p "$work"
cleanup() {
  [ -n "${target_pid:-}" ] && kill "$target_pid" 2> /dev/null
  if [ "$keep" = no ]; then rm -rf "$work"; else echo "deb-check: kept $work"; fi
}
trap cleanup EXIT

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok:   $*"; }

# 1. The packages, built from a copy of the tree without its build trees.
src=$work/mc
rm -rf "$src" && mkdir -p "$src"
tar -C "$top" --exclude='./build*' --exclude=./.git --exclude=./autom4te.cache \
  --exclude=./debian/.debhelper --exclude=./debian/tmp --exclude=./debian/build \
  --exclude=./debian/libmc0 --exclude=./debian/libmc-dev --exclude=./debian/mc-utils \
  --exclude=./debian/python3-mc -cf - . | tar -C "$src" -xf -
start=$SECONDS
echo "deb-check: dpkg-buildpackage -b -uc -us in $src (log: $work/build.log)"
if (cd "$src" && dpkg-buildpackage -b -uc -us) > "$work/build.log" 2>&1; then
  pass "dpkg-buildpackage -b -uc -us ($((SECONDS - start)) s)"
else
  tail -40 "$work/build.log"
  fail "dpkg-buildpackage -b -uc -us ($((SECONDS - start)) s)"
  exit 1
fi
changes=$(ls "$work"/*.changes)
debs=$(ls "$work"/*.deb)
for deb in $debs; do
  echo "  $(basename "$deb"): $(dpkg-deb -f "$deb" Depends)"
done

# 2. lintian: errors fail, warnings and the rest are listed.
lintian --info --display-info --no-tag-display-limit "$changes" > "$work/lintian.txt" 2>&1
sed 's/^/  /' "$work/lintian.txt"
errors=$(grep -c '^E:' "$work/lintian.txt")
warnings=$(grep -c '^W:' "$work/lintian.txt")
if [ "$errors" -eq 0 ]; then
  pass "lintian: 0 errors, $warnings warnings"
else
  fail "lintian: $errors errors, $warnings warnings"
fi

# 3. A clean root: nothing installed in it but these packages. Its dpkg
# database starts as the host's, so that the packages' dependencies (libc,
# glog, libibverbs, ...) are checked against what this machine has; their
# files stay outside the root, the host's.
root=$work/root
rm -rf "$root" && mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
cp /var/lib/dpkg/status "$root/var/lib/dpkg/status"
touch "$root/var/lib/dpkg/available"
# shellcheck disable=SC2086
if dpkg --root="$root" --no-triggers --force-script-chrootless -i $debs > "$work/dpkg.log" 2>&1; then
  pass "dpkg --root: $(echo $debs | wc -w) packages installed into $root"
else
  cat "$work/dpkg.log"
  fail "dpkg --root -i"
  exit 1
fi
triplet=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
libdir=$root/usr/lib/$triplet
export LD_LIBRARY_PATH=$libdir
bin=$root/usr/bin
for tool in mc_info mc_perftest mc_uct_check mc_metadata_server mc_nvmeof_register; do
  [ -x "$bin/$tool" ] || fail "$tool is not in $bin"
done

# 4. The installed tools, run from the root.
if "$bin/mc_info" -v > "$work/info-v.txt" 2>&1 && grep -qF "$libdir/libmc_ucs.so" "$work/info-v.txt"; then
  pass "mc_info -v: $(head -1 "$work/info-v.txt"), libmc_ucs from the root"
else
  cat "$work/info-v.txt"
  fail "mc_info -v does not run, or its libmc_ucs is not $libdir/libmc_ucs.so.0"
fi
sed 's/^/  /' "$work/info-v.txt"
"$bin/mc_info" -m > "$work/info-m.txt" 2>&1
for m in self tcp sm; do
  if grep -qE "uct +$m +loaded .*$libdir/mc/libmc_uct_$m.so" "$work/info-m.txt"; then
    pass "mc_info -m: module $m loaded from $libdir/mc"
  else
    cat "$work/info-m.txt"
    fail "mc_info -m: module $m not loaded from $libdir/mc"
  fi
done
for tl in tcp:lo sm:memory; do
  out=$work/perftest-${tl%%:*}.txt
  if timeout 120 "$bin/mc_perftest" -l -x "${tl%%:*}" -d "${tl#*:}" -t put_bw -s 1m -D zcopy \
       -n 200 --timeout 60 > "$out" 2>&1 && grep -q 'data check   passed' "$out"; then
    pass "mc_perftest -l -x ${tl%%:*} -t put_bw -s 1m: $(grep -m1 '^  bandwidth' "$out" | sed 's/^ *//')"
  else
    tail -20 "$out"
    fail "mc_perftest -l -x ${tl%%:*} -t put_bw"
  fi
done

# 5. libmc-dev: the README's Transfer Engine example, built with the
# installed headers and pkg-config files only, reads a target's buffer.
example=$work/read_peer.cc
awk '/^```c\+\+$/ { on = 1; next } on && /^```$/ { exit } on' "$top/README.md" > "$example"
export PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_LIBDIR=$libdir/pkgconfig
# shellcheck disable=SC2046
if g++ "$example" -o "$work/read_peer" $(pkg-config --cflags --libs mc-te) -Wl,-rpath,"$libdir" \
     > "$work/example-build.txt" 2>&1; then
  pass "the README's example builds with pkg-config mc-te from the root"
  . "$top/test/integration/free_port.sh"
  port=$(free_port)
  MC_TLS=tcp "$bin/mc_perftest" --mode=target --local_server_name="127.0.0.1:$port" \
    --buffer_size=4194304 --duration=60 > "$work/target.txt" 2>&1 &
  target_pid=$!
  for _ in $(seq 100); do grep -q 'segment' "$work/target.txt" 2> /dev/null && break; sleep 0.1; done
  if MC_TLS=tcp timeout 60 "$work/read_peer" "127.0.0.1:$port" > "$work/example.txt" \
       2> "$work/example.err" && grep -q 'COMPLETED' "$work/example.txt"; then
    pass "read_peer 127.0.0.1:$port: $(cat "$work/example.txt")"
  else
    cat "$work/target.txt" "$work/example.txt" "$work/example.err"
    fail "the README's example against an installed mc_perftest target"
  fi
  kill "$target_pid" 2> /dev/null; wait "$target_pid" 2> /dev/null; target_pid=
else
  cat "$work/example-build.txt"
  fail "the README's example does not build against the installed libmc-dev"
fi

echo "deb-check: $failures failed ($((SECONDS - start)) s in all)"
[ "$failures" -eq 0 ]

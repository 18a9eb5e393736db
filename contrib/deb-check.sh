#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the Debian binary packages of debian/ (dpkg-buildpackage -b -uc -us:
# libmc0, libmc-dev, mc-utils, python3-mc) from a copy of this tree, runs
# lintian on them, installs them into a clean root with dpkg --root, and runs
# the installed files there: mc_info -v and -m (the libraries and modules
# must come from that root), mc_perftest in loopback over tcp and sm, the
# README's Transfer Engine example built against the installed libmc-dev
# with pkg-config and run against an installed mc_perftest target, and the
# installed python3-mc: imported from the root, the README's Python example
# and python3 -m mc.bench (te_write, data checked) against the same target.
#
# By default it is a check build: it checks the packaging (what goes into
# which package, the dependencies, the install paths, that the installed
# files run), not the speed of the code, so it builds without optimization
# and without debug information, a third less compiler time than -O2 -g
# (src/ucp/core/worker.cc: 5.4 s of CPU against 8.2 s; docs/install.md):
# DEB_BUILD_OPTIONS="nocheck noopt noautodbgsym parallel=JOBS" and -g0
# appended to CFLAGS and CXXFLAGS (noopt also drops _FORTIFY_SOURCE, so
# lintian adds hardening-no-fortify-functions). The package build never
# builds the tests or the micro-benchmarks (debian/rules). --release builds
# the packages as they ship (-O2 -g, hardening, dbgsym packages).
# CI's stage 5 runs the check build. Needs the packages of
# contrib/install-deps.sh --deb.
#   [JOBS=N] contrib/deb-check.sh [--release] [--keep] [--dir DIR]
#                                 [--build-only | --reuse]
# --build-only builds the packages into DIR and stops there (DIR is kept,
# the build's exit status in DIR/build.rc); --reuse then checks the packages
# that run left in DIR instead of building them again (CI builds them in the
# background, .ci/run). A --reuse of a DIR whose build failed, or that holds
# none, fails, naming why.
# Prints how long each step of the package build took (dh's commands).
# Exit status: 0 when everything passed, 1 otherwise; lintian's errors fail
# it, its warnings are printed.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
keep=no
release=no
work=
mode=all
usage="usage: $0 [--release] [--keep] [--dir DIR] [--build-only | --reuse]"
while [ $# -gt 0 ]; do
  case $1 in
    --release) release=yes ;;
    --keep) keep=yes ;;
    --dir) [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }; work=$2; shift ;;
    --build-only) mode=build ;;
    --reuse) mode=reuse ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
  shift
done
if [ "$mode" != all ]; then
  [ -n "$work" ] || { echo "deb-check: --build-only and --reuse need --dir DIR" >&2; exit 2; }
  keep=yes
fi
python=/usr/bin/python3   # Debian's, which python3-mc is built for
for prog in dpkg-buildpackage dh dh_python3 lintian dpkg-architecture pkg-config g++ $python; do
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
build_packages() {
  src=$work/mc
  rm -rf "$src" "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$work/build.rc" && mkdir -p "$src"
  tar -C "$top" --exclude='./build*' --exclude=./.git --exclude=./autom4te.cache \
    --exclude=./debian/.debhelper --exclude=./debian/tmp --exclude=./debian/build \
    --exclude=./debian/libmc0 --exclude=./debian/libmc-dev --exclude=./debian/mc-utils \
    --exclude=./debian/python3-mc -cf - . | tar -C "$src" -xf -
  echo "deb-check: $kind, DEB_BUILD_OPTIONS=\"$DEB_BUILD_OPTIONS\""
  echo "deb-check: dpkg-buildpackage -b -uc -us in $src (log: $work/build.log)"
  # Each line of the log starts with the seconds since the build started.
  (cd "$src" && dpkg-buildpackage -b -uc -us) 2>&1 |
    while IFS= read -r line; do printf '%5d %s\n' $((SECONDS - start)) "$line"; done > "$work/build.log"
  local rc=${PIPESTATUS[0]}
  echo "$rc" > "$work/build.rc"
  return "$rc"
}
# The steps of the build: dh's commands and the overrides of debian/rules,
# each from the line that starts it to the next; those of a second or more.
build_steps() {
  awk '$2 ~ /^(dh_|dpkg-gen|debian\/rules$)/ && !/^ *[0-9]+ +dh_[a-z0-9_]+: / {
         if (name != "") t[++n] = sprintf("%s %d", name, $1 - at)
         name = ($2 == "debian/rules") ? $3 : $2; at = $1 }
       { last = $1 }
       END { if (name != "") t[++n] = sprintf("%s %d", name, last - at)
             for (i = 1; i <= n; i++) { split(t[i], f, " "); if (f[2] >= 1) printf "  %-32s %5d s\n", f[1], f[2] } }' \
    "$work/build.log"
}
jobs=${JOBS:-$(nproc)}
if [ "$release" = yes ]; then
  kind="release build"
  export DEB_BUILD_OPTIONS="parallel=$jobs"
else
  kind="check build: no optimization, no debug information"
  export DEB_BUILD_OPTIONS="nocheck noopt noautodbgsym parallel=$jobs"
  export DEB_CFLAGS_APPEND=-g0 DEB_CXXFLAGS_APPEND=-g0
fi
start=$SECONDS
if [ "$mode" = reuse ]; then
  [ -e "$work/build.rc" ] ||
    { echo "deb-check: --reuse: $work holds no build of --build-only (no build.rc)"; exit 1; }
  rc=$(cat "$work/build.rc")
  echo "deb-check: the packages that contrib/deb-check.sh --build-only built in $work (log: $work/build.log; exit status $rc)"
  total=$(awk 'END { print $1 + 0 }' "$work/build.log")
else
  build_packages
  rc=$?
  total=$((SECONDS - start))
fi
build_steps
if [ "$rc" -eq 0 ]; then
  pass "dpkg-buildpackage -b -uc -us ($kind, $total s)"
else
  tail -40 "$work/build.log"
  fail "dpkg-buildpackage -b -uc -us ($total s)"
  exit 1
fi
[ "$mode" != build ] || exit 0
changes=$(ls "$work"/*.changes)
debs=$(ls "$work"/*.deb)
for deb in $debs; do
  echo "  $(basename "$deb"): $(dpkg-deb -f "$deb" Depends)"
done

# 2. lintian: errors fail, warnings and the rest are listed.
step=$SECONDS
lintian --info --display-info --no-tag-display-limit "$changes" > "$work/lintian.txt" 2>&1
sed 's/^/  /' "$work/lintian.txt"
errors=$(grep -c '^E:' "$work/lintian.txt")
warnings=$(grep -c '^W:' "$work/lintian.txt")
if [ "$errors" -eq 0 ]; then
  pass "lintian: 0 errors, $warnings warnings ($((SECONDS - step)) s)"
else
  fail "lintian: $errors errors, $warnings warnings ($((SECONDS - step)) s)"
fi

# 3. A clean root: nothing installed in it but these packages. Its dpkg
# database starts as the host's, so that the packages' dependencies (libc,
# glog, libibverbs, ...) are checked against what this machine has; their
# files stay outside the root, the host's.
root=$work/root
rm -rf "$root" && mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
cp /var/lib/dpkg/status "$root/var/lib/dpkg/status"
touch "$root/var/lib/dpkg/available"
# python3-mc's postinst byte-compiles the package with py3compile, which
# under --root (scripts run outside the root) compiles the host's
# /usr/lib/python3/dist-packages/mc, not the root's: python3-mc is
# unpacked, and dpkg --no-act --configure checks its dependencies without
# running the script (the .pyc files are an optimization; python3 compiles
# on import).
dpkg_root=(dpkg --root="$root" --no-triggers --force-script-chrootless)
py_deb=
others=
for deb in $debs; do
  case $deb in */python3-mc_*) py_deb=$deb ;; *) others+="${others:+ }$deb" ;; esac
done
# shellcheck disable=SC2086
if "${dpkg_root[@]}" -i $others > "$work/dpkg.log" 2>&1; then
  pass "dpkg --root -i: $(echo $others | wc -w) packages installed into $root"
else
  grep -v 'files list file for package' "$work/dpkg.log"
  fail "dpkg --root -i"
  exit 1
fi
if [ -z "$py_deb" ]; then
  fail "no python3-mc package was built"
elif "${dpkg_root[@]}" --unpack "$py_deb" >> "$work/dpkg.log" 2>&1 &&
     "${dpkg_root[@]}" --no-act --configure python3-mc >> "$work/dpkg.log" 2>&1; then
  pass "dpkg --root --unpack: python3-mc, its dependencies met (dpkg --no-act --configure)"
else
  grep -v 'files list file for package' "$work/dpkg.log"
  fail "dpkg --root: python3-mc does not unpack, or its dependencies are not met"
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
else
  cat "$work/example-build.txt"
  fail "the README's example does not build against the installed libmc-dev"
fi

# 6. python3-mc: Debian's python3 imports the package from the root (with
# the root's libraries), and moves data with it: the README's Python
# example reads the installed mc_perftest target's buffer, and
# python3 -m mc.bench writes blocks into it and reads them back (check).
site=$root/usr/lib/python3/dist-packages
export PYTHONPATH=$site PYTHONDONTWRITEBYTECODE=1
if [ ! -d "$site/mc" ]; then
  fail "python3-mc: no $site/mc"
elif imported=$(cd "$work" && MC_TLS=tcp "$python" -c \
       'import mc; e = mc.TransferEngine(); print(mc.__file__, mc._mc.__file__, e.transports); e.close()' \
       2> "$work/python-import.err") && [[ $imported == "$site/mc/__init__.py"* ]]; then
  case $imported in *" $site/mc/_mc"*) pass "python3-mc: import mc: $imported" ;;
    *) fail "python3-mc: the extension mc._mc is not from $site: $imported" ;; esac
else
  cat "$work/python-import.err"
  fail "python3-mc: import mc from $site (got: ${imported:-nothing})"
fi
if [ -n "${target_pid:-}" ]; then
  awk '/^```python$/ { on = 1; next } on && /^```$/ { exit } on' "$top/README.md" > "$work/read_peer.py"
  if out=$(cd "$work" && MC_TLS=tcp timeout 60 "$python" read_peer.py "127.0.0.1:$port" 2> "$work/read_peer_py.err") &&
     [[ $out == "read "* ]]; then
    pass "python3-mc: the README's Python example: $out"
  else
    cat "$work/read_peer_py.err"
    fail "python3-mc: the README's Python example against the installed mc_perftest target (got: ${out:-nothing})"
  fi
  if (cd "$work" && MC_TLS=tcp timeout 60 "$python" -m mc.bench --mode initiator --segment_id "127.0.0.1:$port" \
        -t te_write --threads 2 --batch_size 8 --block_size 64k --duration 1) > "$work/mc-bench.txt" \
        2> "$work/mc-bench.err" && grep -q '^result test=te_write .* check=passed' "$work/mc-bench.txt"; then
    pass "python3-mc: python3 -m mc.bench -t te_write: $(grep -o "bw_MBps=[^ ]*" "$work/mc-bench.txt") check=passed"
  else
    cat "$work/mc-bench.txt" "$work/mc-bench.err"
    fail "python3-mc: python3 -m mc.bench -t te_write against the installed mc_perftest target"
  fi
  kill "$target_pid" 2> /dev/null; wait "$target_pid" 2> /dev/null; target_pid=
else
  fail "python3-mc: no mc_perftest target to transfer with (the example's step failed)"
fi

echo "deb-check: $failures failed ($((SECONDS - start)) s in all)"
[ "$failures" -eq 0 ]

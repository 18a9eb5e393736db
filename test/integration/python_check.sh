#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the Python package's tests (bindings/python/tests, pytest) against a
# build tree: the package is the build tree's (bindings/python/mc, made by
# make, on PYTHONPATH), run by the interpreter configure chose (two
# processes over P2PHANDSHAKE, mc_metadata_server, etcd and redis; bad
# inputs; notifications; the GIL released during waits; a peer killed
# mid-transfer; mc.config and mc.info; a Mooncake program through
# mc.mooncake), then imports the package from a staged make install and
# runs python3 -m mc.bench between two processes.
# pytest's counts go to the test command's summary (RUN_TESTS_COUNTS).
# In an ASan build with the sanitizer runtimes preloaded; skipped (77) in a
# TSan build.
#   test/integration/python_check.sh <build-dir>
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
build_dir=$(cd "${1:?usage: python_check.sh BUILD_DIR}" && pwd)
pkg=$build_dir/bindings/python

python=$(sed -n 's/^PYTHON = //p' "$pkg/Makefile")
if grep -q '^HAVE_PYTHON_TRUE = #' "$pkg/Makefile"; then
  echo "FAIL: configure left the Python package out (its summary says why; contrib/install-deps.sh installs python3-dev and pybind11-dev)"
  exit 1
fi
echo "python: $python, $("$python" --version 2>&1)"

san=$(sed -n 's/^BASE_LDFLAGS = //p' "$build_dir/Makefile")
run=()
case $san in
  *-fsanitize=*thread*)
    echo "SKIP: $build_dir is a TSan build; the Python package is tested in plain and ASan builds"
    exit 77 ;;
  *-fsanitize=*address*)
    preload=$(gcc -print-file-name=libasan.so)
    case $san in *-fsanitize=*undefined*) preload+=":$(gcc -print-file-name=libubsan.so)" ;; esac
    # The interpreter is not instrumented: its leaks are not mc's.
    run=(env "LD_PRELOAD=$preload" "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0")
    echo "sanitizer build: python runs with LD_PRELOAD=$preload" ;;
esac

make -C "$pkg" > /dev/null
[ -e "$pkg/mc/_mc.so" ] || { echo "FAIL: no $pkg/mc/_mc.so after make"; exit 1; }
# The libraries of the build tree (the extension's run path is the
# install's); the modules come from $build_dir/modules.
libs=
for d in ucs uct ucp ucp/metadata ucp/te ucp/te/mooncake; do libs+="${libs:+:}$build_dir/src/$d/.libs"; done
export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONPATH=$pkg PYTEST_MC_BUILD_DIR=$build_dir PYTHONDONTWRITEBYTECODE=1

out=$pkg/test
mkdir -p "$out"
# mc logs every retry of the killed-peer test: the log keeps them, the
# output shows them only when pytest fails.
rc=0
(cd "$top/bindings/python/tests" &&
  "${run[@]}" "$python" -m pytest -p no:cacheprovider -q -rs --junitxml="$out/pytest.xml" .) \
  > "$out/pytest.log" 2>&1 || rc=$?
if [ -f "$out/pytest.xml" ]; then
  counts=$("$python" - "$out/pytest.xml" <<'PY'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
s = root if root.tag == "testsuite" else root.find("testsuite")
tests, failures, errors, skipped = (int(s.get(k, 0)) for k in ("tests", "failures", "errors", "skipped"))
print(tests - failures - errors - skipped, failures + errors, skipped)
PY
)
  [ -n "${RUN_TESTS_COUNTS:-}" ] && echo "pytest $counts" >> "$RUN_TESTS_COUNTS"
fi
if [ $rc -ne 0 ]; then
  cat "$out/pytest.log"
  echo "FAIL: pytest (exit $rc; log: $out/pytest.log)"
  exit 1
fi
grep -v '^[IWE][0-9]\{8\} ' "$out/pytest.log" | tail -n 5
echo "PASS: pytest (passed, failed, skipped: ${counts:-?})"

# An installed package: the make install of the build (bindings_install.sh)
# puts it into the staging's site-packages, imported from there with the
# staged libraries.
staged=$(mktemp -d)
tmp=$(mktemp -d)
target_pid=
cleanup() {
  exec 3>&- 2>/dev/null || true
  [ -n "$target_pid" ] && kill "$target_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$staged" "$tmp"
}
trap cleanup EXIT
root=$("$top/test/integration/bindings_install.sh" "$build_dir" "$staged")
pythondir=$(sed -n 's/^pythondir = //p' "$pkg/Makefile")
prefix=$(sed -n 's/^prefix = //p' "$pkg/Makefile")
site=${root%"$prefix"}${pythondir//\$\{prefix\}/$prefix}
[ -e "$site/mc/_mc.so" ] && [ -e "$site/mc/__init__.py" ] && [ ! -e "$site/mc/_mc.la" ] ||
  { find "${root%"$prefix"}"; echo "FAIL: make install did not put mc/ (and only it) into $site"; exit 1; }
installed=$(cd "$tmp" && env -u PYTHONPATH LD_LIBRARY_PATH="$root/lib" PYTHONPATH="$site" \
  "${run[@]}" "$python" -c 'import mc, sys; e = mc.TransferEngine(); print(mc.__file__, e.transports); e.close()') ||
  { echo "FAIL: the installed package does not import and start an engine"; exit 1; }
case $installed in "$site/mc/__init__.py"*) ;; *) echo "FAIL: imported $installed, not $site"; exit 1 ;; esac
echo "PASS: the installed package ($installed)"

# python3 -m mc.bench: a target and an initiator, writes then reads.
# shellcheck source=ready_target.sh
source "$top/test/integration/ready_target.sh"
start_ready_target mc.bench "${run[@]}" "$python" -m mc.bench --mode target --buffer_size 16m
for t in te_write te_read; do
  "${run[@]}" "$python" -m mc.bench --mode initiator --segment_id "$segment" -t "$t" --threads 2 \
    --batch_size 8 --block_size 64k --duration 1 2> "$tmp/initiator.err" | tee "$tmp/initiator.out" ||
    { cat "$tmp/initiator.err"; echo "FAIL: mc.bench initiator ($t)"; exit 1; }
  grep -q "^result test=$t .* check=passed" "$tmp/initiator.out" || { echo "FAIL: mc.bench $t reported no passed result"; exit 1; }
done
if "${run[@]}" "$python" -m mc.bench --mode initiator --segment_id "$segment" --threads 64 --batch_size 16 \
  --block_size 1m --duration 1 2> "$tmp/initiator.err"; then
  echo "FAIL: mc.bench accepted more than the target's buffer"; exit 1
fi
echo "too large: $(grep mc.bench: "$tmp/initiator.err")"
exec 3>&-
wait "$target_pid" || { cat "$tmp/target.err"; echo "FAIL: mc.bench target exited $?"; exit 1; }
target_pid=
echo "PASS: python3 -m mc.bench between two processes"

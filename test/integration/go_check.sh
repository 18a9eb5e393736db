#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the Go binding (bindings/go) against a build tree and runs its
# tests: go vet, go test -race (two processes over P2PHANDSHAKE, etcd and redis;
# bad inputs; a peer killed mid-transfer; a deadline passing; notifications
# between two processes), a part of
# them again against an installed mc (test/integration/bindings_install.sh),
# and the P2P store example between two processes. cgo takes mc's flags from pkg-config mc-te, here the uninstalled
# variant that test/integration/bindings_pc.sh writes for the build tree.
# Offline: GOPROXY=off, GOTOOLCHAIN=local; the caches live in the build tree.
# In an ASan build with go test -asan; skipped (77) in a TSan build.
#   test/integration/go_check.sh <build-dir>
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
build_dir=$(cd "${1:?usage: go_check.sh BUILD_DIR}" && pwd)

# A sanitizer build: under ASan, go's -asan (the Go runtime cooperates with
# the ASan runtime that cgo links first) instead of -race, and UBSan's
# runtime linked when the libraries use it; a TSan build is skipped (77):
# Go's race detector carries a TSan runtime of its own.
san=$(sed -n 's/^BASE_LDFLAGS = //p' "$build_dir/Makefile")
go_flags=(-race)
build_flags=()
case $san in
  *-fsanitize=*thread*)
    echo "SKIP: $build_dir is a TSan build; the Go binding is tested in plain and ASan builds"
    exit 77 ;;
  *-fsanitize=*address*)
    go_flags=(-asan)
    build_flags=(-asan)
    case $san in *-fsanitize=*undefined*) export CGO_LDFLAGS="-g -O2 -fsanitize=undefined" ;; esac ;;
esac
# Debian's go (golang-go) when present, else the first in PATH.
go=/usr/bin/go
[ -x "$go" ] || go=$(command -v go)
echo "go: $go, $("$go" version)"

export GOPROXY=off GOTOOLCHAIN=local GOFLAGS= CGO_ENABLED=1
export GOCACHE=$build_dir/bindings/go/cache GOPATH=$build_dir/bindings/go/path
export PKG_CONFIG_PATH=$build_dir/bindings/pkgconfig
"$top/test/integration/bindings_pc.sh" "$build_dir" "$PKG_CONFIG_PATH"
echo "pkg-config mc-te: $(pkg-config --cflags --libs mc-te)"

cd "$top/bindings/go"
unformatted=$("$(dirname "$(readlink -f "$go")")/gofmt" -l .)
if [ -n "$unformatted" ]; then
  echo "FAIL: not gofmt-formatted: $unformatted"
  exit 1
fi
"$go" vet ./...
out=$build_dir/bindings/go
"$go" build "${build_flags[@]}" -o "$out/p2pstore" ./examples/p2pstore
# mc logs every retry of the killed-peer test: the log keeps them, the
# output shows them only when go test fails.
# With the race detector (or ASan): the binding's own locking is checked too.
go_rc=0
"$go" test "${go_flags[@]}" -count=1 -v ./... > "$out/test.log" 2>&1 || go_rc=$?
# Its counts (tests and subtests) go to the test command's summary.
if [ -n "${RUN_TESTS_COUNTS:-}" ]; then
  echo "go-test $(grep -c -- '--- PASS:' "$out/test.log") $(grep -c -- '--- FAIL:' "$out/test.log") $(grep -c -- '--- SKIP:' "$out/test.log")" >> "$RUN_TESTS_COUNTS"
fi
if [ $go_rc -eq 0 ]; then
  grep -v '^[IWE][0-9]\{8\} ' "$out/test.log"
else
  cat "$out/test.log"
  echo "FAIL: go test (log: $out/test.log)"
  exit 1
fi
echo "PASS: go test"

# Against an installed mc (bindings_install.sh):
# the build and the two-process test, as an application would build. cgo's
# C compiler warns that mc-te.pc's -std=c++20 (for C++) does not apply to C.
installed=$(mktemp -d)
root=$("$top/test/integration/bindings_install.sh" "$build_dir" "$installed")
# go does not rebuild a cached package when only what pkg-config says has
# changed: a define that names the installed root and that nothing reads
# (CGO_CPPFLAGS is in a cgo package's cache key) makes it build the binding
# against this root, while the standard library, built for -race or -asan
# above, comes from the cache (a cache of its own built it again: 30 s). LD_LIBRARY_PATH also for the link: the linker
# looks for libmc_te's own dependencies there (an mc installed for real is
# in the linker's default directories).
export PKG_CONFIG=$installed/pkg-config PKG_CONFIG_PATH=$root/lib/pkgconfig LD_LIBRARY_PATH=$root/lib
test_bin=$out/te-installed.test
CGO_CPPFLAGS="${CGO_CPPFLAGS:-} -DMC_GO_CHECK_ROOT=$root" "$go" test "${go_flags[@]}" -c -o "$test_bin" . > "$out/test-installed.log" 2>&1 ||
  { cat "$out/test-installed.log"; rm -rf "$installed"; echo "FAIL: go test -c against $root"; exit 1; }
if grep -q -F "$build_dir/src/ucs/.libs" "$test_bin"; then
  rm -rf "$installed"
  echo "FAIL: the test binary built against $root names the build tree"
  exit 1
fi
"$test_bin" -test.count=1 -test.run 'TestTwoProcessesP2PHandshake|TestBadInputs|TestNotifications' >> "$out/test-installed.log" 2>&1 ||
  { cat "$out/test-installed.log"; rm -rf "$installed"; echo "FAIL: go test against $root"; exit 1; }
grep -v '^[IWE][0-9]\{8\} ' "$out/test-installed.log"
unset PKG_CONFIG LD_LIBRARY_PATH
export PKG_CONFIG_PATH=$build_dir/bindings/pkgconfig
rm -rf "$installed"
echo "PASS: go test against an installed mc (pkg-config mc-te of $root)"

# The P2P store example, two processes, with mc_metadata_server of the build
# tree as the store: put publishes a payload's name, get fetches it.
# shellcheck source=free_port.sh
source "$top/test/integration/free_port.sh"
tmp=$(mktemp -d)
server_pid=
put_pid=
cleanup() {
  exec 3>&- 2>/dev/null || true
  for pid in $put_pid $server_pid; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
port=$(free_port)
server=$build_dir/src/tools/metadata/mc_metadata_server
[ -x "$server" ] || { echo "FAIL: no $server (build src/tools/metadata)"; exit 1; }
"$server" --host 127.0.0.1 --port "$port" > "$tmp/server.log" 2>&1 &
server_pid=$!
answered=no
for _ in $(seq 200); do
  curl -sf "http://127.0.0.1:$port/health" > /dev/null && { answered=yes; break; }
  sleep 0.05
done
[ $answered = yes ] || { cat "$tmp/server.log"; echo "FAIL: mc_metadata_server did not answer"; exit 1; }
store=http://127.0.0.1:$port/metadata
head -c 3000000 /dev/urandom > "$tmp/payload"
mkfifo "$tmp/put.in"
"$out/p2pstore" -metadata "$store" -local "127.0.0.1:$(free_port)" \
  put weights "$tmp/payload" < "$tmp/put.in" > "$tmp/put.out" 2> "$tmp/put.err" &
put_pid=$!
exec 3> "$tmp/put.in"
for _ in $(seq 600); do
  grep -q '^READY' "$tmp/put.out" 2>/dev/null && break
  kill -0 "$put_pid" 2>/dev/null || break
  sleep 0.05
done
grep '^READY' "$tmp/put.out" || { cat "$tmp/put.out" "$tmp/put.err"; echo "FAIL: p2pstore put did not start"; exit 1; }
"$out/p2pstore" -metadata "$store" -local "127.0.0.1:$(free_port)" \
  get weights "$tmp/fetched"
cmp "$tmp/payload" "$tmp/fetched" || { echo "FAIL: p2pstore get fetched other bytes"; exit 1; }
if "$out/p2pstore" -metadata "$store" get nothing-by-that-name "$tmp/x" 2> "$tmp/miss.err"; then
  echo "FAIL: p2pstore get of an unknown name succeeded"; exit 1
fi
echo "an unknown name: $(cat "$tmp/miss.err")"
exec 3>&-
wait "$put_pid" || { cat "$tmp/put.err"; echo "FAIL: p2pstore put exited $?"; exit 1; }
put_pid=
echo "PASS: the P2P store example moves a payload between two processes by name"
echo "PASS: the Go binding builds against $build_dir and its tests pass"

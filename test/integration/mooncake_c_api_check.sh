#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Mooncake's C API as a library: installs mc into a staging DESTDIR
# (staged_install.sh), builds
# mooncake_c_app.c as C11 against the installed <mooncake/transfer_engine_c.h>
# with -ltransfer_engine, and runs it as a target and an initiator over
# P2PHANDSHAKE, then over etcd and Redis when they are installed; the same
# with mooncake_cxx_app.cc against <mooncake/transfer_engine.h> over
# P2PHANDSHAKE; the C pair also with ip_or_host_name ::1 (IPv6) and
# localhost (a host name), over P2PHANDSHAKE and etcd. Each pair: a warm-up,
# a write with a notification (the target checks its memory when it takes
# it), a read back, the NIC load, an out-of-bounds write that ends FAILED,
# bad arguments.
#   test/integration/mooncake_c_api_check.sh <build-dir>
set -uo pipefail

build_dir=$1
here=$(cd "$(dirname "$0")" && pwd)
dest=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$dest"
}
trap cleanup EXIT

root=$("$here/staged_install.sh" "$build_dir" "$dest/staging") || exit 1
san_flags=$(sed -n 's/^BASE_LDFLAGS = //p' "$build_dir/Makefile")
for f in include/mooncake/transfer_engine_c.h lib/libtransfer_engine.so; do
  [ -e "$root/$f" ] || { echo "MISSING: $f"; exit 1; }
done
# shellcheck disable=SC2086
gcc -std=c11 -Wall -Wextra -Werror -pedantic $san_flags -I"$root/include" \
  "$here/mooncake_c_app.c" -o "$dest/app" -L"$root/lib" -ltransfer_engine \
  -Wl,-rpath,"$root/lib" || exit 1
echo "PASS: a C11 program builds against the installed header with -ltransfer_engine"
# shellcheck disable=SC2086
g++ -std=c++17 -Wall -Wextra -Werror $san_flags -I"$root/include" \
  "$here/mooncake_cxx_app.cc" -o "$dest/cxx_app" -L"$root/lib" -ltransfer_engine \
  -Wl,-rpath,"$root/lib" || exit 1
echo "PASS: a C++17 program builds against the installed <mooncake/transfer_engine.h>"

export LD_LIBRARY_PATH=$root/lib MC_TLS=tcp MC_NET_DEVICES=lo MC_TRANSFER_TIMEOUT=60s
fail=0

# Runs target and initiator (app or cxx_app: $3, default app) over one
# metadata string; 0 when both pass.
run_pair() {
  local conn=$1 tag=$2 app=$dest/${3:-app} target segment addr len out
  : > "$dest/target.out"
  timeout 120 "$app" target "$conn" "mc-target-$tag" > "$dest/target.out" 2> "$dest/target.err" &
  target=$!
  pids+=("$target")
  segment=
  for _ in $(seq 1 300); do
    read -r segment addr len < <(sed -n 's/^READY segment=\([^ ]*\) addr=\([0-9]*\) len=\([0-9]*\)$/\1 \2 \3/p' "$dest/target.out")
    [ -n "$segment" ] && break
    kill -0 "$target" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$segment" ]; then
    echo "FAIL ($tag): the target did not start"; sed 's/^/    /' "$dest/target.err"; return 1
  fi
  out=$(timeout 120 "$app" initiator "$conn" "mc-initiator-$tag" "$segment" "$addr" "$len" 23 2>&1)
  local irc=$?
  wait "$target"
  local trc=$?
  echo "$out" | grep -E '^(FAIL|initiator|out-of-bounds)'
  grep '^NOTIFY' "$dest/target.out"
  # A here-string, not `echo | grep -q`: under pipefail, grep leaving at
  # its match can end echo with SIGPIPE, and the pair read as failed.
  if [ $irc -ne 0 ] || [ $trc -ne 0 ] || ! grep -q '^NOTIFY ok seed=23$' "$dest/target.out" ||
    ! grep -q '^out-of-bounds write ended FAILED$' <<< "$out"; then
    echo "FAIL ($tag): initiator exit $irc, target exit $trc"
    sed 's/^/    target: /' "$dest/target.err" | tail -20
    echo "$out" | tail -20 | sed 's/^/    initiator: /'
    return 1
  fi
  echo "PASS ($tag): warm-up, write with notify checked at the target, read back, NIC load, out of bounds FAILED, bad arguments"
}

# True when this machine can listen on ::1.
have_ipv6() {
  python3 -c 'import socket; s = socket.socket(socket.AF_INET6); s.bind(("::1", 0))' 2>/dev/null
}

run_pair P2PHANDSHAKE p2p || fail=1
run_pair P2PHANDSHAKE p2p-cxx cxx_app || fail=1
export APP_HOST=localhost
run_pair P2PHANDSHAKE p2p-hostname || fail=1
if have_ipv6; then
  export APP_HOST=::1
  run_pair P2PHANDSHAKE p2p-ipv6 || fail=1
else
  echo "SKIP (p2p-ipv6): no IPv6 loopback"
fi
unset APP_HOST

# shellcheck source=free_port.sh
source "$here/free_port.sh"
if command -v etcd > /dev/null; then
  port=$(free_port) peer=$(free_port)
  etcd --data-dir "$dest/etcd" --listen-client-urls "http://127.0.0.1:$port" \
    --advertise-client-urls "http://127.0.0.1:$port" \
    --listen-peer-urls "http://127.0.0.1:$peer" > "$dest/etcd.log" 2>&1 &
  pids+=("$!")
  for _ in $(seq 1 100); do
    curl -s "http://127.0.0.1:$port/health" 2>/dev/null | grep -q true && break
    sleep 0.1
  done
  # No scheme: etcd, as in Mooncake.
  run_pair "127.0.0.1:$port" etcd || fail=1
  if have_ipv6; then
    # The RPC address published is IPv6.
    APP_HOST=::1 run_pair "127.0.0.1:$port" etcd-ipv6 || fail=1
  fi
else
  echo "SKIP (etcd): not installed"
fi
if command -v redis-server > /dev/null; then
  port=$(free_port)
  redis-server --port "$port" --bind 127.0.0.1 --save '' --dir "$dest" > "$dest/redis.log" 2>&1 &
  pids+=("$!")
  for _ in $(seq 1 100); do
    redis-cli -p "$port" ping 2>/dev/null | grep -q PONG && break
    sleep 0.1
  done
  run_pair "redis://127.0.0.1:$port" redis || fail=1
else
  echo "SKIP (redis): not installed"
fi
exit $fail

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Quick start: installs dependencies, builds mc, shows what it found
# (mc_info), and runs the main job: a transfer benchmark between two processes
# on this machine, over shared memory and over TCP loopback (mc_perftest).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
"$top/contrib/install-deps.sh"
"$top/contrib/build.sh"

build_dir=${BUILD_DIR:-$top/build}
info=$build_dir/src/tools/info/mc_info
perftest=$build_dir/src/tools/perf/mc_perftest

echo
echo "=== mc_info: version, modules, devices, configuration ==="
"$info" -v -m -d -c

# One benchmark: a server process and a client process on 127.0.0.1.
. "$top/test/integration/free_port.sh"   # free_port: a control port per run

bench() {  # <transport> <device> <test> <size> <iterations> [options...]
  local tl=$1 dev=$2 test=$3 size=$4 iters=$5; shift 5
  local port
  port=$(free_port)
  echo
  echo "=== $tl/$dev $test, $size bytes, two processes ==="
  echo "\$ mc_perftest -x $tl -d $dev -p $port &   # server"
  echo "\$ mc_perftest 127.0.0.1 -x $tl -d $dev -p $port -t $test -s $size -n $iters $*"
  "$perftest" -x "$tl" -d "$dev" -p "$port" --timeout 30 > /dev/null 2>&1 &
  local server=$!
  "$perftest" 127.0.0.1 -x "$tl" -d "$dev" -p "$port" --timeout 30 -f \
    -t "$test" -s "$size" -n "$iters" "$@"
  wait "$server"
}

# UCP with its default selection: the report names the transport, protocol
# and lanes it chose for this peer and size.
bench_ucp() {  # <test> <size> <iterations>
  local port
  port=$(free_port)
  echo
  echo "=== UCP $1, $2 bytes, default transport selection, two processes ==="
  echo "\$ mc_perftest -p $port &   # server"
  echo "\$ mc_perftest 127.0.0.1 -p $port -t $1 -s $2 -n $3"
  "$perftest" -p "$port" --timeout 30 > /dev/null 2>&1 &
  local server=$!
  "$perftest" 127.0.0.1 -p "$port" --timeout 30 -t "$1" -s "$2" -n "$3"
  wait "$server"
}

bench_ucp ucp_put_bw 1m 2000
bench_ucp ucp_put_lat 8 100000
bench sm memory put_bw 1m 2000 -D zcopy
bench sm memory am_lat 8 100000
bench tcp lo put_bw 1m 2000 -D zcopy
bench tcp lo am_lat 8 20000
echo
echo "quickstart: done. More: mc_perftest -h, mc_info -h, README.md and docs/."

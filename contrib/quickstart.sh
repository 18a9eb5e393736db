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
bench() {  # <transport> <device> <test> <size> <iterations> [options...]
  local tl=$1 dev=$2 test=$3 size=$4 iters=$5; shift 5
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
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

bench sm memory put_bw 1m 2000 -D zcopy
bench sm memory am_lat 8 100000
bench tcp lo put_bw 1m 2000 -D zcopy
bench tcp lo am_lat 8 20000
echo
echo "quickstart: done. More: mc_perftest -h, mc_info -h, README.md."

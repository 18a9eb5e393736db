#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs uct_hello_world over self (one process), tcp and sm (two processes),
# with short, bcopy and zcopy messages.
set -u
here=$(cd "$(dirname "$0")" && pwd)
prog=${UCT_HELLO_WORLD:-$here/uct_hello_world}
[ -x "$prog" ] || prog=$(pwd)/uct_hello_world
fail=0

# A port below the kernel's ephemeral range: a port the kernel hands out
# (bind to 0) can be taken by any outgoing connection before the server
# listens on it.
. "$here/../test/integration/free_port.sh"

run() {
  local desc=$1; shift
  if out=$("$@" 2>&1); then
    echo "PASS: $desc"
  else
    echo "FAIL: $desc"; echo "$out" | sed 's/^/    /'; fail=1
  fi
}

for proto in "" -b -z; do
  run "self ${proto:-(short)} loopback" timeout 60 "$prog" -t self -l $proto -s 64
  for tl in tcp sm; do
    dev=""; [ "$tl" = tcp ] && dev="-d lo"
    port=$(free_port)
    timeout 60 "$prog" -t "$tl" $dev -p "$port" $proto -s 100 > "/tmp/hw_server.$$" 2>&1 &
    server=$!
    run "$tl ${proto:-(short)} client" timeout 60 "$prog" -t "$tl" $dev -p "$port" -n 127.0.0.1 $proto -s 100
    if wait $server; then
      echo "PASS: $tl ${proto:-(short)} server"
    else
      echo "FAIL: $tl ${proto:-(short)} server"; sed 's/^/    /' "/tmp/hw_server.$$"; fail=1
    fi
    rm -f "/tmp/hw_server.$$"
  done
done
exit $fail

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs ucp_client_server as two processes over tcp, sm and UCP's own choice
# (every transport), at a small and a large size; the client checks put and
# get data, the server checks the put data and the active message.
set -u
here=$(cd "$(dirname "$0")" && pwd)
prog=${UCP_CLIENT_SERVER:-$here/ucp_client_server}
[ -x "$prog" ] || prog=$(pwd)/ucp_client_server
fail=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# A port below the kernel's ephemeral range: a port the kernel hands out
# (bind to 0) can be taken by any outgoing connection before the server
# listens on it.
. "$here/../test/integration/free_port.sh"

for tls in tcp sm ""; do
  for size in 100 1048576; do
    desc="${tls:-default} size $size"
    port=$(free_port)
    targs=(); [ -n "$tls" ] && targs=(-t "$tls")
    timeout 60 "$prog" "${targs[@]}" -p "$port" -s "$size" > "$log" 2>&1 &
    server=$!
    if out=$(timeout 60 "$prog" "${targs[@]}" -p "$port" -s "$size" -n 127.0.0.1 2>&1); then
      echo "PASS: $desc client"
    else
      echo "FAIL: $desc client"; echo "$out" | sed 's/^/    /'; fail=1
    fi
    if wait $server; then
      echo "PASS: $desc server"
    else
      echo "FAIL: $desc server"; sed 's/^/    /' "$log"; fail=1
    fi
  done
done
exit $fail

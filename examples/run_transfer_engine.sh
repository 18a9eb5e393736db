#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the Transfer Engine examples as two processes through P2PHANDSHAKE over
# tcp and sm: a C++ target with a C++ initiator, with a C initiator, and a C
# target with a C++ initiator. The initiator checks every byte it reads
# (the target's pattern, then its own write read back).
set -u
here=$(cd "$(dirname "$0")" && pwd)
cxx=${TE_EXAMPLE:-$here/transfer_engine_example}
[ -x "$cxx" ] || cxx=$(pwd)/transfer_engine_example
cex=${TE_C_EXAMPLE:-$here/transfer_engine_c_example}
[ -x "$cex" ] || cex=$(pwd)/transfer_engine_c_example
fail=0
tmp=$(mktemp -d)
target=
cleanup() {
  [ -n "$target" ] && kill "$target" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

# Starts a target (its command in "$@"); sets $target and $segment.
start_target() {
  # Emptied here, not only by the redirection in the background child: that
  # may come after the first read below, which would find the READY line of
  # the previous target.
  : > "$tmp/target.out"
  "$@" > "$tmp/target.out" 2> "$tmp/target.err" &
  target=$!
  segment=
  for _ in $(seq 1 300); do
    segment=$(sed -n 's/^READY segment=\([^ ]*\) .*/\1/p' "$tmp/target.out")
    [ -n "$segment" ] && return 0
    kill -0 "$target" 2>/dev/null || break
    sleep 0.1
  done
  echo "target did not start:"; sed 's/^/    /' "$tmp/target.err"
  return 1
}

stop_target() {
  kill -TERM "$target" 2>/dev/null
  wait "$target"
  local rc=$?
  target=
  return $rc
}

for tls in tcp sm; do
  export MC_TLS=$tls MC_NET_DEVICES=lo
  for combo in "cxx cxx" "cxx c" "c cxx"; do
    set -- $combo
    desc="$tls: $1 target, $2 initiator"
    if [ "$1" = cxx ]; then
      start_target timeout 120 "$cxx" --mode target --buffer-size 1m --seed 11 || { fail=1; continue; }
    else
      start_target timeout 120 "$cex" target P2PHANDSHAKE 127.0.0.1 1048576 11 || { fail=1; continue; }
    fi
    if [ "$2" = cxx ]; then
      out=$(timeout 120 "$cxx" --mode initiator --segment "$segment" --seed 11 --batch-size 8 2>&1)
    else
      out=$(timeout 120 "$cex" initiator P2PHANDSHAKE 127.0.0.1 "$segment" 11 2>&1)
    fi
    if [ $? -eq 0 ]; then
      echo "PASS: $desc"
    else
      echo "FAIL: $desc"; echo "$out" | sed 's/^/    /'; fail=1
    fi
    if stop_target; then
      echo "PASS: $desc (target exited cleanly)"
    else
      echo "FAIL: $desc (target)"; sed 's/^/    /' "$tmp/target.err"; fail=1
    fi
  done
done
exit $fail

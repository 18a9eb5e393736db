#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The metadata server killed and restarted under a running Transfer Engine,
# across network namespaces: the server (etcd, redis-server, then
# mc_metadata_server) in one namespace holding a bridge, a target and an
# initiator (te_fault_peer --metadata URL) in two others, joined to the
# bridge by veth pairs (10.198.0.0/24). For each server, asserted:
#   killed (SIGKILL)  -> the running initiator's rounds go on (its open
#                        segment needs no store); the target logs the outage
#   restarted         -> (etcd with its data, redis and http empty) the target
#                        puts its keys again and logs it once; a new initiator
#                        process finds the target and completes a round
# and at the end the target's canaries are intact.
#   test/integration/netns_metadata_faults.sh BUILD_DIR
# Exits 0 when every check passed, 1 on a failure, 77 (skipped, said loudly)
# when network namespaces cannot be created.
set -u

build_dir=${1:-$(cd "$(dirname "$0")/../.." && pwd)/build}
peer=$build_dir/test/gtest/te_fault_peer
mdserver=$build_dir/src/tools/metadata/mc_metadata_server
[ -x "$peer" ] || { echo "FAIL: $peer not built (make check TESTS=)"; exit 1; }
[ -x "$mdserver" ] || { echo "FAIL: $mdserver not built"; exit 1; }
for bin in etcd redis-server curl; do
  command -v "$bin" > /dev/null || { echo "FAIL: $bin not installed (contrib/install-deps.sh)"; exit 1; }
done

tag=$$
nsm=mcmm$tag   # metadata server
nst=mcmt$tag   # target
nsi=mcmi$tag   # initiator
tmp=$(mktemp -d)
server_pid=
target_pid=
init_pid=
fail=0

cleanup() {
  for p in "$init_pid" "$target_pid" "$server_pid"; do
    [ -n "$p" ] && kill -KILL "$p" 2>/dev/null
  done
  ip netns del "$nsm" 2>/dev/null
  ip netns del "$nst" 2>/dev/null
  ip netns del "$nsi" 2>/dev/null
  if [ -n "${KEEP_TMP:-}" ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

if ! why=$(ip netns add "$nsm" 2>&1); then
  echo "SKIPPED: cannot create network namespaces: $why"
  echo "SKIPPED: the metadata server fault tests did NOT run"
  exit 77
fi
ip netns add "$nst" && ip netns add "$nsi" || { echo "FAIL: more namespaces"; exit 1; }
ip -n "$nsm" link add br0 type bridge || { echo "FAIL: bridge"; exit 1; }
ip -n "$nsm" addr add 10.198.0.1/24 dev br0
ip -n "$nsm" link set br0 up
ip -n "$nsm" link set lo up
n=2
for ns in "$nst" "$nsi"; do
  ip link add "mcb$n$tag" type veth peer name "mce$n$tag" || exit 1
  ip link set "mcb$n$tag" netns "$nsm" && ip link set "mce$n$tag" netns "$ns" || exit 1
  ip -n "$nsm" link set "mcb$n$tag" master br0 up
  ip -n "$ns" link set "mce$n$tag" name m0
  ip -n "$ns" addr add "10.198.0.$n/24" dev m0
  ip -n "$ns" link set m0 up
  ip -n "$ns" link set lo up
  n=$((n + 1))
done

export MC_TLS=tcp MC_NET_DEVICES=m0
export MC_TCP_USER_TIMEOUT=2s MC_TCP_KEEPIDLE=1s MC_TCP_KEEPINTVL=1s MC_TCP_KEEPCNT=2
export MC_TCP_CONN_TIMEOUT=3s MC_HANDSHAKE_TIMEOUT=3s MC_TRANSFER_TIMEOUT=10s
export MC_METADATA_TIMEOUT=2s MC_METADATA_REFRESH_INTERVAL=500ms MC_ETCD_LEASE_TTL=3s
bound=20  # a hang detector, not a timing check
segment=10.198.0.2:16300
out=$tmp/initiator.out

check() {  # check "description" command...
  local desc=$1; shift
  if "$@"; then echo "PASS: $desc"; else echo "FAIL: $desc"; fail=1; fi
}

# wait_until SECONDS command...: polls every 0.2 s
wait_until() {
  local end=$((SECONDS + $1)); shift
  while [ $SECONDS -lt $end ]; do
    "$@" && return 0
    sleep 0.2
  done
  "$@"
}

answers() {  # answers KIND: the server serves requests
  case $1 in
    etcd) ip netns exec "$nsm" curl -sf -m 1 http://10.198.0.1:2379/health | grep -q true ;;
    redis) ip netns exec "$nsm" bash -c \
             'exec 3<>/dev/tcp/10.198.0.1/6379 && printf "PING\r\n" >&3 && head -c5 <&3' \
             2>/dev/null | grep -q PONG ;;
    http) ip netns exec "$nsm" curl -sf -m 1 -o /dev/null http://10.198.0.1:8080/health ;;
  esac
}

start_server() {  # start_server KIND [fresh]: etcd keeps its data dir unless fresh
  case $1 in
    etcd)
      [ "${2:-}" = fresh ] && rm -rf "$tmp/etcd"
      ip netns exec "$nsm" etcd --name mc --data-dir "$tmp/etcd" \
        --listen-client-urls http://10.198.0.1:2379 --advertise-client-urls http://10.198.0.1:2379 \
        --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
        --initial-cluster mc=http://127.0.0.1:2380 >> "$tmp/server.log" 2>&1 &
      ;;
    redis)
      ip netns exec "$nsm" redis-server --bind 10.198.0.1 --port 6379 --save '' \
        --appendonly no --protected-mode no >> "$tmp/server.log" 2>&1 &
      ;;
    http)
      ip netns exec "$nsm" "$mdserver" --host 10.198.0.1 --port 8080 >> "$tmp/server.log" 2>&1 &
      ;;
  esac
  server_pid=$!
  wait_until $bound answers "$1" && return 0
  echo "    $1 did not start:"; tail -5 "$tmp/server.log" | sed 's/^/    /'
  return 1
}

kill_server() {
  kill -KILL "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null
  server_pid=
}

lines() { wc -l < "$out"; }
ok_after() { [ "$(tail -n +$(($1 + 1)) "$out" | grep -c ' ok ')" -ge "$2" ]; }
no_failed_after() { ! tail -n +$(($1 + 1)) "$out" | grep -q ' failed '; }
target_says() { [ "$(grep -c "$1" "$tmp/target.err")" -ge "${2:-1}" ]; }
target_says_once() { [ "$(grep -c "$1" "$tmp/target.err")" -eq 1 ]; }
# A new initiator process completes one round against the target.
fresh_round() {
  ip netns exec "$nsi" timeout $bound "$peer" --mode initiator --metadata "$url" \
    --local 10.198.0.3:16400 --segment "$segment" --buffer-size 1m --remote-offset 1m \
    --seed 7 --rounds 1 > "$tmp/fresh.out" 2>&1
}

for kind in etcd redis http; do
  case $kind in
    etcd) url=etcd://10.198.0.1:2379 ;;
    redis) url=redis://10.198.0.1:6379 ;;
    http) url=http://10.198.0.1:8080/metadata ;;
  esac
  echo "--- $kind ($url)"
  : > "$tmp/target.err"; : > "$tmp/target.out"; : > "$out"; rm -f "$tmp/stop"
  start_server $kind fresh || { fail=1; continue; }
  ip netns exec "$nst" "$peer" --mode target --metadata "$url" --local "$segment" \
    --buffer-size 2m > "$tmp/target.out" 2>> "$tmp/target.err" &
  target_pid=$!
  check "$kind: target up" wait_until $bound grep -q '^READY' "$tmp/target.out"
  ip netns exec "$nsi" "$peer" --mode initiator --metadata "$url" --local 10.198.0.3 \
    --segment "$segment" --buffer-size 1m --rounds 0 --stop-file "$tmp/stop" \
    > "$out" 2> "$tmp/initiator.err" &
  init_pid=$!
  check "$kind: 2 rounds complete" wait_until $bound ok_after 0 2

  m=$(lines)
  kill_server
  check "$kind: server killed: 3 more rounds complete" wait_until $bound ok_after "$m" 3
  check "$kind: server killed: no round failed" no_failed_after "$m"
  check "$kind: server killed: the target logs the outage" \
    wait_until $bound target_says "is unreachable"

  start_server $kind || { fail=1; continue; }
  check "$kind: restarted: the target re-published its keys (logged once)" \
    wait_until $bound target_says "is reachable again; re-published"
  check "$kind: restarted: a new initiator finds the target and completes a round" \
    wait_until $bound fresh_round
  check "$kind: the outage was logged once" target_says_once "is unreachable"
  m=$(lines)
  check "$kind: restarted: the running initiator goes on" wait_until $bound ok_after "$m" 2

  touch "$tmp/stop"
  if timeout $bound tail --pid="$init_pid" -f /dev/null; then
    wait "$init_pid"; rc=$?
    check "$kind: initiator exits 0 after its last round" test $rc -eq 0
  else
    echo "FAIL: $kind: initiator did not stop"; fail=1
  fi
  init_pid=
  kill -TERM "$target_pid"
  if timeout $bound tail --pid="$target_pid" -f /dev/null; then
    wait "$target_pid"; rc=$?
    check "$kind: target: canaries intact and clean exit" test $rc -eq 0
  else
    echo "FAIL: $kind: target did not stop"; fail=1
  fi
  target_pid=
  check "$kind: no corruption reported" \
    bash -c "! grep -q corruption '$out' '$tmp/target.out' '$tmp/fresh.out'"
  if [ $fail -ne 0 ]; then
    echo "--- initiator output (last 10 lines)"; tail -10 "$out" | sed 's/^/    /'
    echo "--- initiator log (last 10 lines)"; tail -10 "$tmp/initiator.err" | sed 's/^/    /'
    echo "--- new initiator (last 10 lines)"; tail -10 "$tmp/fresh.out" 2>/dev/null | sed 's/^/    /'
    echo "--- target log (last 20 lines)"; tail -20 "$tmp/target.err" | sed 's/^/    /'
    echo "--- $kind log (last 10 lines)"; tail -10 "$tmp/server.log" | sed 's/^/    /'
  fi
  kill_server
done
exit $fail

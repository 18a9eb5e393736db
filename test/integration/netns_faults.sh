#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Real network faults under the Transfer Engine: two network namespaces
# joined by two veth pairs (two rails, 10.199.1.0/24 and 10.199.2.0/24, rate
# limited with tc tbf so that a round is long enough to be cut), a target
# (te_fault_peer) in one, an initiator in the other running rounds of
# write + read back with every byte checked, over tcp on both rails.
# First, topology: with the initiator's NIC priority matrix preferring rail 2
# (MC_TOPO_PRIORITY_MATRIX) its transfers take rail 2 only.
# Faults, each asserted: rail 1 black-holed when the initiator starts (it
# works on rail 2, then puts rail 1 back to use once it answers: the same
# endpoint reconnects the lane), one rail down and back (the same initiator
# uses it again), both down, rails back, 30% loss on one rail, target
# SIGSTOP/SIGCONT, target SIGKILL, target restarted under the same name
# (reconnected in the same initiator process). Canaries around both
# registered buffers are checked at the end.
#   test/integration/netns_faults.sh BUILD_DIR
# Exits 0 when every check passed, 1 on a failure, 77 (skipped, said loudly)
# when network namespaces cannot be created.
set -u

build_dir=${1:-$(cd "$(dirname "$0")/../.." && pwd)/build}
peer=$build_dir/test/gtest/te_fault_peer
[ -x "$peer" ] || { echo "FAIL: $peer not built (make check TESTS=)"; exit 1; }

tag=$$
nst=mcft$tag   # target
nsi=mcfi$tag   # initiator
tmp=$(mktemp -d)
target_pid=
init_pid=
fail=0

cleanup() {
  [ -n "$init_pid" ] && kill -KILL "$init_pid" 2>/dev/null
  [ -n "$target_pid" ] && kill -CONT "$target_pid" 2>/dev/null && kill -KILL "$target_pid" 2>/dev/null
  ip netns del "$nst" 2>/dev/null
  ip netns del "$nsi" 2>/dev/null
  if [ -n "${KEEP_TMP:-}" ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

if ! why=$(ip netns add "$nst" 2>&1); then
  echo "SKIPPED: cannot create network namespaces: $why"
  echo "SKIPPED: the multi-rail fault tests did NOT run"
  exit 77
fi
ip netns add "$nsi" || { echo "FAIL: second namespace"; exit 1; }

for r in 1 2; do
  ip link add "mct$r$tag" type veth peer name "mci$r$tag" || exit 1
  ip link set "mct$r$tag" netns "$nst" && ip link set "mci$r$tag" netns "$nsi" || exit 1
  ip -n "$nst" link set "mct$r$tag" name "r$r"
  ip -n "$nsi" link set "mci$r$tag" name "r$r"
  ip -n "$nst" addr add "10.199.$r.1/24" dev "r$r"
  ip -n "$nsi" addr add "10.199.$r.2/24" dev "r$r"
  for ns in "$nst" "$nsi"; do
    ip -n "$ns" link set "r$r" up
    tc -n "$ns" qdisc add dev "r$r" root tbf rate 200mbit burst 256kb latency 100ms || exit 1
  done
done
ip -n "$nst" link set lo up
ip -n "$nsi" link set lo up

export MC_TLS=tcp MC_NET_DEVICES=r1,r2 MC_MAX_RMA_RAILS=2
export MC_TCP_USER_TIMEOUT=2s MC_TCP_KEEPIDLE=1s MC_TCP_KEEPINTVL=1s MC_TCP_KEEPCNT=2
export MC_TCP_CONN_TIMEOUT=3s MC_HANDSHAKE_TIMEOUT=3s MC_TRANSFER_TIMEOUT=10s
export MC_LANE_RECONNECT_INTERVAL=500ms  # backoff up to 4 s
deadline=$((10 + 20))  # MC_TRANSFER_TIMEOUT + slack: a hang detector, not a timing check
segment=10.199.1.1:16123
out=$tmp/initiator.out

check() {  # check "description" command...
  local desc=$1; shift
  if "$@"; then echo "PASS: $desc"; else echo "FAIL: $desc"; fail=1; fi
}

start_target() {
  ip netns exec "$nst" "$peer" --mode target --local "$segment" --buffer-size 4m \
    >> "$tmp/target.out" 2>> "$tmp/target.err" &
  target_pid=$!
  for _ in $(seq 1 100); do
    [ "$(grep -c '^READY' "$tmp/target.out")" -ge "$1" ] && return 0
    kill -0 "$target_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "target did not start:"; sed 's/^/    /' "$tmp/target.err" | tail -20
  return 1
}

rail_bytes() {  # rail_bytes N: bytes sent and received on the initiator's rail N
  local d=/sys/class/net/r$1/statistics
  ip netns exec "$nsi" sh -c "echo \$((\$(cat $d/tx_bytes) + \$(cat $d/rx_bytes)))"
}

lines() { wc -l < "$out"; }
# wait_ok MARK N SECONDS: N ok rounds after line MARK within SECONDS
wait_ok() {
  local end=$((SECONDS + $3))
  while [ $SECONDS -lt $end ]; do
    [ "$(tail -n +$(($1 + 1)) "$out" | grep -c ' ok ')" -ge "$2" ] && return 0
    kill -0 "$init_pid" 2>/dev/null || return 1
    sleep 0.2
  done
  return 1
}
# wait_failed MARK SECONDS: a failed round after MARK whose tasks all ended
# FAILED or TIMEOUT (other=0), within SECONDS
wait_failed() {
  local end=$((SECONDS + $2))
  while [ $SECONDS -lt $end ]; do
    tail -n +$(($1 + 1)) "$out" | grep -q ' failed .* other=0 ' && return 0
    kill -0 "$init_pid" 2>/dev/null || return 1
    sleep 0.2
  done
  return 1
}
no_failed_after() { ! tail -n +$(($1 + 1)) "$out" | grep -q ' failed '; }
no_other_after() { ! tail -n +$(($1 + 1)) "$out" | grep -q 'other=[1-9]'; }
no_corruption() { ! grep -q corruption "$out" "$tmp/target.out"; }

# grows N BYTES SECONDS: rail N's bytes grow by BYTES within SECONDS
grows() {
  local from end=$((SECONDS + $3))
  from=$(rail_bytes "$1")
  while [ $SECONDS -lt $end ]; do
    [ $(($(rail_bytes "$1") - from)) -gt "$2" ] && return 0
    sleep 0.2
  done
  return 1
}
# Rail 1 black-holed at the target (the handshake port excepted, since the
# segment's name is on rail 1): the initiator's lane there cannot connect.
rail1_hole() {
  ip netns exec "$nst" iptables "$1" INPUT -i r1 -p tcp ! --dport "${segment#*:}" -j DROP
}

start_target 1 || exit 1

# Topology: the initiator's NIC priority matrix prefers rail 2 for cpu:0
# memory (rail 1 secondary; the veths are no PCI NICs, so the target has no
# entry and ranks both alike): a transfer goes over rail 2, rail 1 carries at
# most small control traffic.
b1=$(rail_bytes 1); b2=$(rail_bytes 2)
if ip netns exec "$nsi" env MC_TOPO_PRIORITY_MATRIX='cpu:0=r2|r1' timeout $deadline "$peer" \
     --mode initiator --local 10.199.1.2 --segment "$segment" --buffer-size 2m \
     --remote-offset 2m --seed 77 --rounds 2 > "$tmp/prio.out" 2>&1; then
  echo "PASS: priority matrix cpu:0=r2|r1: an initiator completes 2 rounds"
else
  echo "FAIL: priority matrix cpu:0=r2|r1: the initiator"; sed 's/^/    /' "$tmp/prio.out" | tail; fail=1
fi
d1=$(($(rail_bytes 1) - b1)); d2=$(($(rail_bytes 2) - b2))
echo "    rail 1 carried $d1 bytes, rail 2 $d2 bytes"
check "priority matrix: the preferred rail 2 carried the rounds (> 8 MB)" test "$d2" -gt 8000000
check "priority matrix: rail 1 carried under 2% of that" test $((d1 * 50)) -lt "$d2"

rail1_hole -A
b2=$(rail_bytes 2)
ip netns exec "$nsi" "$peer" --mode initiator --local 10.199.1.2 --segment "$segment" \
  --buffer-size 2m --block-size 256k --batch-size 4 --rounds 0 --stop-file "$tmp/stop" \
  > "$out" 2> "$tmp/initiator.err" &
init_pid=$!

# Started while rail 1 is down: its lane there never connects (it fails by
# MC_TCP_CONN_TIMEOUT, its slices move to rail 2) and is retried with backoff.
check "initiator started while rail 1 is down completes on rail 2" wait_ok 0 3 $deadline
check "rail 1 down at start: no round failed" no_failed_after 0
check "rail 1 down at start: rail 2 carried the rounds" test $(($(rail_bytes 2) - b2)) -gt 1000000
# Rail 1 answers again: the same endpoint reconnects its lane and uses it.
rail1_hole -D
check "rail 1 back: the SAME long-lived initiator uses it again (rail 1 bytes grow)" \
  grows 1 1000000 $deadline
check "rail 1 back: the initiator logged the lane reconnected" \
  grep -q "reconnected" "$tmp/initiator.err"

# Both rails up: rounds complete and both rails carry data.
m=$(lines)
b1=$(rail_bytes 1); b2=$(rail_bytes 2)
check "both rails up: 3 rounds complete" wait_ok "$m" 3 60
d1=$(($(rail_bytes 1) - b1)); d2=$(($(rail_bytes 2) - b2))
echo "    rail 1 carried $d1 bytes, rail 2 $d2 bytes"
check "both rails carry data (multi-rail)" test "$d1" -gt 1000000 -a "$d2" -gt 1000000

# Rail 1 cut mid-round: the rounds go on over rail 2, every byte checked.
m=$(lines); b2=$(rail_bytes 2)
ip -n "$nsi" link set r1 down
check "rail 1 down: 3 rounds complete on rail 2" wait_ok "$m" 3 $deadline
check "rail 1 down: no round failed" no_failed_after "$m"
check "rail 1 down: rail 2 carried the rounds" test $(($(rail_bytes 2) - b2)) -gt 1000000

# Rail 1 back: the same initiator (its lane reconnected) and new transfers
# (a fresh initiator process) use it again.
ip -n "$nsi" link set r1 up
check "rail 1 link back: the SAME long-lived initiator uses it again (rail 1 bytes grow)" \
  grows 1 1000000 $deadline
b1=$(rail_bytes 1)
if ip netns exec "$nsi" timeout $deadline "$peer" --mode initiator --local 10.199.1.2 \
     --segment "$segment" --buffer-size 2m --remote-offset 2m --seed 99 --rounds 3 \
     > "$tmp/fresh.out" 2>&1; then
  echo "PASS: rail 1 back: a new initiator completes 3 rounds"
else
  echo "FAIL: rail 1 back: a new initiator"; sed 's/^/    /' "$tmp/fresh.out" | tail; fail=1
fi
check "rail 1 back: it carries data again" test $(($(rail_bytes 1) - b1)) -gt 1000000

# Both rails cut: every task ends FAILED or TIMEOUT within the deadline.
m=$(lines)
ip -n "$nsi" link set r1 down
ip -n "$nsi" link set r2 down
check "both rails down: a round ends with every task FAILED or TIMEOUT" wait_failed "$m" $deadline
check "both rails down: the initiator is alive" kill -0 "$init_pid"
m=$(lines)
ip -n "$nsi" link set r1 up
ip -n "$nsi" link set r2 up
check "both rails back: rounds complete again" wait_ok "$m" 3 $((deadline * 2))

# 30% packet loss on rail 2 (iptables statistic; no netem here).
m=$(lines)
for ns in "$nst" "$nsi"; do
  ip netns exec "$ns" iptables -A INPUT -i r2 -m statistic --mode random --probability 0.3 -j DROP
done
check "30% loss on rail 2: 3 rounds complete" wait_ok "$m" 3 $((deadline * 2))
check "30% loss on rail 2: no task lost its data (no 'other')" no_other_after "$m"
for ns in "$nst" "$nsi"; do ip netns exec "$ns" iptables -F INPUT; done
m=$(lines)
check "loss removed: rounds complete" wait_ok "$m" 2 $deadline

# Target stopped for 4 s, then resumed: rounds complete or time out cleanly,
# then complete again.
m=$(lines)
kill -STOP "$target_pid"
sleep 4
kill -CONT "$target_pid"
check "target SIGSTOP/SIGCONT: rounds complete afterwards" wait_ok "$m" 3 $((deadline * 2))
check "target SIGSTOP/SIGCONT: tasks ended COMPLETED, FAILED or TIMEOUT only" no_other_after "$m"

# Target killed: tasks end FAILED or TIMEOUT within the deadline.
m=$(lines)
kill -KILL "$target_pid"; wait "$target_pid" 2>/dev/null
check "target SIGKILL: tasks end FAILED or TIMEOUT" wait_failed "$m" $deadline
check "target SIGKILL: the initiator is alive" kill -0 "$init_pid"

# Target restarted under the same name: the same initiator process
# reconnects (the new descriptor's generation differs) and rounds complete.
m=$(lines)
start_target 2 || fail=1
check "target restarted: the initiator reconnects, rounds complete" wait_ok "$m" 3 $((deadline * 2))

# Stop both; canaries around both registered buffers must be intact.
touch "$tmp/stop"
if timeout $deadline tail --pid="$init_pid" -f /dev/null; then
  wait "$init_pid"; rc=$?
  check "initiator exits 0 after its last round" test $rc -eq 0
else
  echo "FAIL: initiator did not stop"; fail=1
fi
init_pid=
kill -TERM "$target_pid"
if timeout $deadline tail --pid="$target_pid" -f /dev/null; then
  wait "$target_pid"; rc=$?
  check "target: canaries intact and clean exit" test $rc -eq 0
else
  echo "FAIL: target did not stop"; fail=1
fi
target_pid=
check "no corruption reported" no_corruption

echo "initiator rounds: $(grep -c ' ok ' "$out") ok, $(grep -c ' failed ' "$out") failed"
if [ $fail -ne 0 ]; then
  echo "--- initiator output (last 40 lines)"; tail -40 "$out" | sed 's/^/    /'
  echo "--- initiator log (last 30 lines)"; tail -30 "$tmp/initiator.err" | sed 's/^/    /'
  echo "--- target log (last 20 lines)"; tail -20 "$tmp/target.err" | sed 's/^/    /'
fi
exit $fail

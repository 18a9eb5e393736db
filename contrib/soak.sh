#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A bounded soak of the Transfer Engine (not in CI): N targets and N
# long-lived initiators (test/gtest/te_fault_peer) doing rounds of random
# sizes, write + read back with every byte checked, while random faults hit
# them: a target SIGKILLed and restarted under the same name, a target
# SIGSTOPped and resumed, and, when network namespaces can be made, a rail
# set down or 30% of its packets dropped (two rails, tcp on both).
#   contrib/soak.sh [--adversarial] [SECONDS (default 600)] [BUILD_DIR (default build)]
#   SOAK_PEERS=N (default 3), SOAK_SEED=N
# --adversarial adds hostile load beside the transfers: the targets run with
# a low file-descriptor limit (SOAK_FD_LIMIT, default 160), and an attacker
# in the initiators' namespace keeps SOAK_SLOW_CLIENTS (default 300) silent
# and trickling connections (one byte a second, never a whole request) open
# to every port the targets listen on (the RPC listener and the tcp
# transport's), opening new ones as the targets close them; it reports how
# many it opened, how many were refused, and how many the targets closed.
# Prints transfers done, bytes checked, faults injected and errors by type;
# exits non-zero on corruption (a wrong byte or canary), an initiator that
# died or made no progress for 3 deadlines, or a leak (file descriptors or
# RSS of the long-lived initiators grown between warm-up and the end).
set -u

adversarial=no
if [ "${1:-}" = --adversarial ]; then adversarial=yes; shift; fi
duration=${1:-600}
top=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${2:-$top/build}
peer=$build_dir/test/gtest/te_fault_peer
[ -x "$peer" ] || { echo "soak: $peer not built (make check TESTS=)"; exit 1; }
peers=${SOAK_PEERS:-3}
RANDOM=${SOAK_SEED:-$$}
tmp=$(mktemp -d)
tag=$$
nst=mcst$tag
nsi=mcsi$tag
declare -a tpid ipid in_t in_i
netns=no

cleanup() {
  [ -n "${attacker_pid:-}" ] && kill -KILL "$attacker_pid" 2>/dev/null
  for p in "${ipid[@]}" "${tpid[@]}"; do
    [ -n "$p" ] && kill -CONT "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null
  done
  if [ $netns = yes ]; then ip netns del "$nst" 2>/dev/null; ip netns del "$nsi" 2>/dev/null; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

export MC_TLS=tcp MC_TRANSFER_TIMEOUT=10s MC_HANDSHAKE_TIMEOUT=3s MC_TCP_CONN_TIMEOUT=3s
export MC_TCP_USER_TIMEOUT=2s MC_TCP_KEEPIDLE=1s MC_TCP_KEEPINTVL=1s MC_TCP_KEEPCNT=2
deadline=30
if why=$(ip netns add "$nst" 2>&1) && ip netns add "$nsi"; then
  netns=yes
  for r in 1 2; do
    ip link add "mst$r$tag" type veth peer name "msi$r$tag"
    ip link set "mst$r$tag" netns "$nst"; ip link set "msi$r$tag" netns "$nsi"
    ip -n "$nst" link set "mst$r$tag" name "r$r"; ip -n "$nsi" link set "msi$r$tag" name "r$r"
    ip -n "$nst" addr add "10.198.$r.1/24" dev "r$r"; ip -n "$nsi" addr add "10.198.$r.2/24" dev "r$r"
    ip -n "$nst" link set "r$r" up; ip -n "$nsi" link set "r$r" up
  done
  ip -n "$nst" link set lo up; ip -n "$nsi" link set lo up
  export MC_NET_DEVICES=r1,r2
  tip=10.198.1.1 iip=10.198.1.2
  in_t=(ip netns exec "$nst")
  in_i=(ip netns exec "$nsi")
else
  echo "soak: NO NETWORK NAMESPACES ($why): link faults are NOT injected, all on lo"
  export MC_NET_DEVICES=lo
  tip=127.0.0.1 iip=127.0.0.1
  in_t=()
  in_i=()
fi

fd_limit=${SOAK_FD_LIMIT:-160}
[ $adversarial = yes ] || fd_limit=$(ulimit -n)

start_target() {  # start_target I
  local i=$1 n
  n=$(grep -c '^READY' "$tmp/t$i.out" 2>/dev/null)
  # Not through a function: $! must be the peer itself (ip netns exec and
  # prlimit exec it).
  "${in_t[@]}" prlimit --nofile="$fd_limit" "$peer" --mode target --local "$tip:$((16300 + i))" \
    --buffer-size 4m >> "$tmp/t$i.out" 2>> "$tmp/t$i.err" &
  tpid[$i]=$!
  for _ in $(seq 1 100); do
    [ "$(grep -c '^READY' "$tmp/t$i.out")" -gt "${n:-0}" ] && return 0
    sleep 0.1
  done
  echo "soak: target $i did not start"; tail -5 "$tmp/t$i.err"
  return 1
}

for i in $(seq 0 $((peers - 1))); do
  : > "$tmp/t$i.out"
  start_target "$i" || exit 1
  "${in_i[@]}" "$peer" --mode initiator --local "$iip" --segment "$tip:$((16300 + i))" --buffer-size 4m \
    --block-size 1m --batch-size 8 --random-sizes --seed $((RANDOM + i)) --rounds 0 \
    --stop-file "$tmp/stop" > "$tmp/i$i.out" 2> "$tmp/i$i.err" &
  ipid[$i]=$!
done

# The attacker: every second, tops up its connections to each port the
# targets listen on to SOAK_SLOW_CLIENTS in all, and sends one byte on half
# of them; counts what it opened, what was refused and what was closed on it.
attacker() {
  local want=${SOAK_SLOW_CLIENTS:-300} opened=0 refused=0 closed=0 round=0 port fd
  local -a fds=() ports
  trap 'echo "attacker: opened $opened, refused $refused, closed by the targets $closed"; exit 0' TERM
  trap '' PIPE  # a write to a connection the target closed fails, and is counted
  while :; do
    ports=()
    for port in $("${in_t[@]}" ss -Hltnp 2>/dev/null | awk '/te_fault_peer/ { n = split($4, a, ":"); print a[n] }' | sort -u); do
      ports+=("$port")
    done
    if [ ${#ports[@]} -gt 0 ]; then
      local -a alive=()
      for fd in "${fds[@]}"; do
        # A byte on odd rounds for half of them; a failed write: closed on us.
        if [ $((fd % 2)) -eq $((round % 2)) ] && ! { printf x >&"$fd"; } 2>/dev/null; then
          exec {fd}>&- 2>/dev/null; closed=$((closed + 1)); continue
        fi
        alive+=("$fd")
      done
      fds=("${alive[@]}")
      while [ ${#fds[@]} -lt "$want" ]; do
        port=${ports[$((RANDOM % ${#ports[@]}))]}
        if exec {fd}<>"/dev/tcp/$tip/$port" 2>/dev/null; then
          fds+=("$fd"); opened=$((opened + 1))
        else
          refused=$((refused + 1)); break
        fi
      done
    fi
    round=$((round + 1))
    sleep 1
  done
}

fds() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
ok_rounds() { grep -c ' ok ' "$tmp/i$1.out"; }

attacker_pid=
if [ $adversarial = yes ]; then
  "${in_i[@]}" bash -c "$(declare -f attacker); tip=$tip; in_t=(${in_t[*]}); attacker" \
    > "$tmp/attacker.out" 2>&1 &
  attacker_pid=$!
fi

declare -A faults
faults=([kill_restart]=0 [stop_cont]=0 [link_down]=0 [loss]=0)
declare -a fd0 rss0 last_ok last_progress
start=$SECONDS
warm=$((start + duration / 5))
warmed=no
status=0
echo "soak: $peers targets, $peers initiators, ${duration}s, namespaces: $netns, adversarial: $adversarial$([ $adversarial = yes ] && echo " (targets' fd limit $fd_limit, ${SOAK_SLOW_CLIENTS:-300} slow clients)")"
while [ $((SECONDS - start)) -lt "$duration" ]; do
  sleep $((3 + RANDOM % 6))
  [ $((SECONDS - start)) -ge "$duration" ] && break
  if [ $warmed = no ] && [ $SECONDS -ge $warm ]; then
    for i in "${!ipid[@]}"; do fd0[$i]=$(fds "${ipid[$i]}"); rss0[$i]=$(rss_kb "${ipid[$i]}"); done
    warmed=yes
  fi
  i=$((RANDOM % peers))
  kinds=2
  [ $netns = yes ] && kinds=4
  case $((RANDOM % kinds)) in
    0) kill -KILL "${tpid[$i]}"; wait "${tpid[$i]}" 2>/dev/null
       start_target "$i" || status=1
       faults[kill_restart]=$((faults[kill_restart] + 1)) ;;
    1) kill -STOP "${tpid[$i]}"; sleep $((1 + RANDOM % 4)); kill -CONT "${tpid[$i]}"
       faults[stop_cont]=$((faults[stop_cont] + 1)) ;;
    2) r=$((1 + RANDOM % 2))
       ip -n "$nsi" link set "r$r" down; sleep $((2 + RANDOM % 4)); ip -n "$nsi" link set "r$r" up
       faults[link_down]=$((faults[link_down] + 1)) ;;
    3) r=$((1 + RANDOM % 2))
       ip netns exec "$nsi" iptables -A INPUT -i "r$r" -m statistic --mode random --probability 0.3 -j DROP
       sleep $((2 + RANDOM % 5)); ip netns exec "$nsi" iptables -F INPUT
       faults[loss]=$((faults[loss] + 1)) ;;
  esac
  # Every initiator alive and making progress.
  for i in "${!ipid[@]}"; do
    if ! kill -0 "${ipid[$i]}" 2>/dev/null; then
      echo "soak: initiator $i died"; tail -n 5 "$tmp/i$i.out" "$tmp/i$i.err"; status=1; break 2
    fi
    n=$(ok_rounds "$i")
    if [ "$n" != "${last_ok[$i]:-}" ]; then last_ok[$i]=$n; last_progress[$i]=$SECONDS; fi
    if [ $((SECONDS - ${last_progress[$i]:-$SECONDS})) -gt $((3 * deadline)) ]; then
      echo "soak: initiator $i made no progress for $((3 * deadline))s"; status=1; break 2
    fi
  done
  if grep -q corruption "$tmp"/i*.out "$tmp"/t*.out; then break; fi
done

# Leak check before stopping, then a clean stop with the canaries checked.
leak=no
if [ $warmed = yes ]; then
  for i in "${!ipid[@]}"; do
    f=$(fds "${ipid[$i]}"); r=$(rss_kb "${ipid[$i]}")
    echo "initiator $i: fds ${fd0[$i]} -> $f, RSS ${rss0[$i]} -> $r kB"
    [ "$f" -gt $((fd0[$i] + 8)) ] && leak=yes
    [ "$r" -gt $((rss0[$i] + 65536)) ] && leak=yes
  done
fi
if [ -n "$attacker_pid" ]; then
  kill -TERM "$attacker_pid" 2>/dev/null; wait "$attacker_pid" 2>/dev/null
fi
touch "$tmp/stop"
for i in "${!ipid[@]}"; do
  timeout $deadline tail --pid="${ipid[$i]}" -f /dev/null || { echo "soak: initiator $i did not stop"; status=1; }
  ipid[$i]=
done
for i in "${!tpid[@]}"; do
  kill -TERM "${tpid[$i]}"
  if ! timeout $deadline tail --pid="${tpid[$i]}" -f /dev/null; then
    echo "soak: target $i did not stop"; status=1
  else
    wait "${tpid[$i]}"; rc=$?
    if [ $rc -ne 0 ]; then
      echo "soak: target $i exited with $rc"; tail -n 3 "$tmp/t$i.out" "$tmp/t$i.err"; status=1
    fi
  fi
  tpid[$i]=
done

ok=$(cat "$tmp"/i*.out | grep -c ' ok ')
bytes=$(cat "$tmp"/i*.out | sed -n 's/.* ok bytes=\([0-9]*\).*/\1/p' | awk '{s += $1} END {printf "%.0f", s}')
sum() { cat "$tmp"/i*.out | sed -n "s/.* $1=\([0-9]*\).*/\1/p" | awk '{s += $1} END {print s + 0}'; }
corrupt=$(cat "$tmp"/i*.out "$tmp"/t*.out | grep -c corruption)
echo "soak: $((SECONDS - start))s, namespaces: $netns"
echo "transfers done: $ok rounds of write + read back ($(sum completed) more tasks completed in rounds that failed)"
echo "bytes checked: $bytes"
echo "faults injected: kill+restart ${faults[kill_restart]}, stop/cont ${faults[stop_cont]}, link down ${faults[link_down]}, loss ${faults[loss]}"
echo "errors by type: rounds failed $(cat "$tmp"/i*.out | grep -c ' failed '), tasks FAILED $(sum failed), TIMEOUT $(sum timeout), other $(sum other), corruption $corrupt"
echo "leak: $leak"
[ $adversarial = yes ] && echo "hostile load: $(tail -n 1 "$tmp/attacker.out")"
if [ "$corrupt" -ne 0 ]; then grep -h corruption "$tmp"/i*.out "$tmp"/t*.out; status=1; fi
[ $leak = yes ] && status=1
[ "$ok" -eq 0 ] && { echo "soak: no round completed"; status=1; }
echo "soak: $([ $status -eq 0 ] && echo PASS || echo FAIL)"
exit $status

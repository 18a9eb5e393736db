# SPDX-License-Identifier: Apache-2.0
# free_port: prints a TCP port no socket on this machine uses, below the
# kernel's ephemeral range (net.ipv4.ip_local_port_range) so that no outgoing
# connection can take it between the pick and the listen. Sourced by the
# scripts that start a server on a port of their own choosing.
free_port() {
  local low=32768 p i
  read -r low _ < /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
  [ "$low" -gt 21024 ] || low=61000   # a range starting low: pick above it
  for i in $(seq 200); do
    if [ "$low" -eq 61000 ]; then p=$((61000 + RANDOM % 4000)); else p=$((20000 + RANDOM % (low - 20000))); fi
    if [ -z "$(ss -Htan "( sport = :$p )" 2>/dev/null)" ]; then
      echo "$p"; return 0
    fi
  done
  echo "free_port: no free TCP port found in 200 tries" >&2
  return 1
}

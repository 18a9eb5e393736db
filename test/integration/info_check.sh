#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Checks mc_info -e / -p / -w: over MC_TLS=tcp and MC_TLS=sm the loopback
# endpoint's lane is on that transport, the other transports appear as
# rejected with a reason, the protocol table covers put, get and am; with
# every transport self is rejected as unreachable; a hex address from -w is
# accepted from a file; bad peers fail with a message; -b and --json (one
# JSON document per option, every option but -M).
#
#   test/integration/info_check.sh <build-dir>
set -uo pipefail

build_dir=${1:?usage: $0 <build-dir>}
info=$build_dir/src/tools/info/mc_info
# The soft verbs provider (a test library, built by make check) for the
# rc checks on it.
export MC_IB_SOFT_LIBRARY=${MC_IB_SOFT_LIBRARY:-$build_dir/test/gtest/.libs/libmc_ib_soft.so}
top=$(cd "$(dirname "$0")/../.." && pwd)
[ -x "$info" ] || { echo "no mc_info in $build_dir (build it first)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok:   $*"; }

# expect <description> <file> <extended regex>: the file has a matching line.
expect() {
  if grep -Eq -- "$3" "$2"; then pass "$1"; else fail "$1: no line matches '$3'"; sed 's/^/    /' "$2"; fi
}

for tl in tcp sm; do
  if ! MC_TLS=$tl timeout 60 "$info" -e loopback > "$tmp/e.$tl" 2>&1; then
    fail "MC_TLS=$tl mc_info -e loopback exited non-zero"; sed 's/^/    /' "$tmp/e.$tl"; continue
  fi
  expect "MC_TLS=$tl: lane 0 is $tl" "$tmp/e.$tl" "^  lane 0: $tl/[^ ]+ -> $tl/"
  expect "MC_TLS=$tl: a filtered candidate with its reason" "$tmp/e.$tl" \
    "^  rejected [^ ]+: filtered: filtered by MC_TLS=$tl"
  expect "MC_TLS=$tl: score terms" "$tmp/e.$tl" "^  $tl/[^ ]+ -> $tl/[^:]+: latency [0-9.]+us, overhead"
  expect "MC_TLS=$tl: path choice per memory location" "$tmp/e.$tl" \
    "^  ((cpu|cuda):[0-9]+: lane [0-9]+ $tl/[^ ]+ -> $tl/[^ ]+ rank [0-4] carries;|none: no priority matrix)"
  if ! MC_TLS=$tl timeout 60 "$info" -p loopback > "$tmp/p.$tl" 2>&1; then
    fail "MC_TLS=$tl mc_info -p loopback exited non-zero"; sed 's/^/    /' "$tmp/p.$tl"; continue
  fi
  for op in put get am; do
    expect "MC_TLS=$tl: protocol table has $op from 0" "$tmp/p.$tl" "^  $op 0\.\.[0-9]+ [a-z-]+ lanes? 0"
  done
  expect "MC_TLS=$tl: protocol table reaches inf" "$tmp/p.$tl" "^  am [0-9]+\.\.inf "
done

# Every transport: self cannot reach a second worker, and says why.
if timeout 60 "$info" -e loopback > "$tmp/e.all" 2>&1; then
  expect "all transports: self rejected as unreachable" "$tmp/e.all" \
    "^  rejected self/[^ ]+ -> self/[^:]+: unreachable: "
else
  fail "mc_info -e loopback exited non-zero"; sed 's/^/    /' "$tmp/e.all"
fi

# A worker address in hex, from a file (scored without connecting).
MC_TLS=tcp "$info" -w 2>/dev/null | tail -n 1 > "$tmp/addr.hex"
if MC_TLS=tcp timeout 60 "$info" -e "$tmp/addr.hex" -p "$tmp/addr.hex" > "$tmp/e.hex" 2>&1; then
  expect "hex address file: lane and table" "$tmp/e.hex" "^  lane 0: tcp/"
  expect "hex address file: protocol table" "$tmp/e.hex" "^  put 0\.\."
else
  fail "mc_info -e <address file> exited non-zero"; sed 's/^/    /' "$tmp/e.hex"
fi

# Bad peers: exit 1 with the reason.
for bad in zz 0a0b "$tmp/nothing-here"; do
  if "$info" -e "$bad" > "$tmp/bad" 2>&1; then
    fail "mc_info -e '$bad' succeeded"
  else
    expect "mc_info -e '$bad' fails with a reason" "$tmp/bad" "^mc_info: "
  fi
done
if MC_TLS=self "$info" -e loopback > "$tmp/self" 2>&1; then
  fail "MC_TLS=self mc_info -e loopback succeeded"
else
  expect "MC_TLS=self: loopback unreachable, with the reasons" "$tmp/self" "^  rejected sm/[^ ]+: filtered"
fi

# -b: what configure found; --json: one JSON document per report.
# Configuration mistakes are named: a module directory that is not there,
# and transport or device names this process has not.
MC_MODULE_DIR=/nonexistent/mc-modules "$info" -m > "$tmp/moddir" 2>&1
expect "MC_MODULE_DIR=/nonexistent: a warning naming it" "$tmp/moddir" \
  "MC_MODULE_DIR names '/nonexistent/mc-modules': No such file or directory"
MC_TLS=tcp,bogus MC_NET_DEVICES=lo,nosuchdev "$info" -e loopback > "$tmp/bogus" 2>&1
expect "MC_TLS=tcp,bogus: 'bogus' named" "$tmp/bogus" "MC_TLS names 'bogus', which this process has not"
expect "MC_NET_DEVICES=lo,nosuchdev: 'nosuchdev' named" "$tmp/bogus" "MC_NET_DEVICES names 'nosuchdev'"
MC_TLS=nonexistent "$info" -e loopback > "$tmp/none" 2>&1
expect "MC_TLS=nonexistent: the error says why nothing is usable" "$tmp/none" \
  "no transport resource is usable \(MC_TLS names 'nonexistent'"

"$info" -b > "$tmp/b" 2>&1 || fail "mc_info -b exited non-zero"
expect "mc_info -b: build kind" "$tmp/b" "^#   build_kind: "
expect "mc_info -b: dependencies" "$tmp/b" "^#   verbs: (found|not found)"
json_ok() {  # what, file, python expression over the document d
  if python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert $3" "$2" 2>"$tmp/py"; then
    pass "$1"
  else
    fail "$1"; sed 's/^/    /' "$2" "$tmp/py"
  fi
}
"$info" -b --json > "$tmp/bj" 2>&1 || fail "mc_info -b --json exited non-zero"
json_ok "mc_info -b --json" "$tmp/bj" "'found' in d['dependencies']['cuda'] and d['version']"
"$info" --json > "$tmp/j" 2>&1 || fail "mc_info --json exited non-zero"
json_ok "mc_info --json alone is one document" "$tmp/j" "d['build_kind']"
MC_TLS=tcp "$info" -w --json > "$tmp/wj" 2>/dev/null || fail "mc_info -w --json exited non-zero"
json_ok "mc_info -w --json" "$tmp/wj" "len(d['address']) > 0 and d['resources']"
if MC_TLS=sm,tcp timeout 60 "$info" -e loopback -p loopback --json > "$tmp/ej" 2>/dev/null; then
  json_ok "mc_info -e -p loopback --json" "$tmp/ej" \
    "d['lanes'][0]['pair'].startswith('sm/') and d['protocols']['registered']['put'][0]['min'] == 0"
else
  fail "mc_info -e loopback --json exited non-zero"
fi
"$info" -s --json > "$tmp/sj" 2>&1 || fail "mc_info -s --json exited non-zero"
json_ok "mc_info -s --json" "$tmp/sj" "d['cpus'] > 0 and d['host']"
MC_TOPO_SYSFS_ROOT="$top/test/gtest/ucs/topo_fixture" "$info" -T --json > "$tmp/tj" 2>&1 ||
  fail "mc_info -T --json exited non-zero"
json_ok "mc_info -T --json on the sysfs fixture" "$tmp/tj" \
  "[n['numa_node'] for n in d['nics'] if n['name'] == 'mlx5_1'] == [1] and 'cpu:1' in d['priority_matrix']"
"$info" -m --json > "$tmp/mj" 2>/dev/null || fail "mc_info -m --json exited non-zero"
json_ok "mc_info -m --json" "$tmp/mj" \
  "[m['state'] for m in d['modules'] if m['kind'] == 'uct' and m['name'] == 'tcp'] == ['loaded']"
MC_TLS=tcp "$info" -f --json > "$tmp/cj" 2>/dev/null || fail "mc_info -f --json exited non-zero"
json_ok "mc_info -f --json: values, origins and docs" "$tmp/cj" \
  "[(k['value'], k['default'], bool(k['doc'])) for t in d['tables'] for k in t['knobs'] if k['name'] == 'MC_TLS'] == [('tcp', 'all', True)]"
"$info" -d --json > "$tmp/dj" 2>/dev/null || fail "mc_info -d --json exited non-zero"
json_ok "mc_info -d --json: tcp on lo with its attributes" "$tmp/dj" \
  "[t['bandwidth_Bps'] > 0 for c in d['components'] for m in c['memory_domains'] for t in m.get('transports', []) if t['transport'] == 'tcp' and t['device'] == 'lo'] == [True]"

# The Mooncake document's knobs: none is warned about as unknown, mc_info -f
# documents each, and each shows its effect or its refusal.
knobs="MC_FORCE_TCP MC_FORCE_HCA MC_WORKERS_PER_CTX MC_PATH_ROUNDROBIN MC_ENABLE_DEST_DEVICE_AFFINITY
  MC_IB_PCI_RELAXED_ORDERING MC_HANDSHAKE_LISTEN_BACKLOG MC_NUM_COMP_CHANNELS_PER_CTX MC_INTRA_NVLINK
  MC_FORCE_MNNVL MC_IB_TC MC_LOG_LEVEL MC_MAX_EP_PER_CTX"
"$info" -f > "$tmp/f" 2>&1 || fail "mc_info -f exited non-zero"
for k in $knobs; do
  expect "mc_info -f documents $k" "$tmp/f" "^$k="
  awk -v k="$k" '/^# / { doc = doc $0 } /^MC_/ { if (index($0, k "=") == 1 && doc ~ /[a-z]/) ok = 1; doc = "" }
    END { exit !ok }' "$tmp/f" || fail "mc_info -f: $k has no doc line"
done
MC_FORCE_TCP=n MC_FORCE_HCA=0 MC_WORKERS_PER_CTX=2 MC_PATH_ROUNDROBIN=y MC_ENABLE_DEST_DEVICE_AFFINITY=y \
  MC_IB_PCI_RELAXED_ORDERING=y MC_HANDSHAKE_LISTEN_BACKLOG=64 MC_NUM_COMP_CHANNELS_PER_CTX=2 \
  MC_INTRA_NVLINK=n MC_FORCE_MNNVL=n MC_LOG_LEVEL=WARNING MC_IB_TC=-1 \
  "$info" -e loopback > "$tmp/known" 2>&1 || fail "mc_info -e loopback with the Mooncake knobs exited non-zero"
if grep -q 'unknown configuration variable' "$tmp/known"; then
  fail "a Mooncake knob is warned about as unknown"; grep 'unknown configuration' "$tmp/known" | sed 's/^/    /'
else
  pass "the Mooncake knobs are known"
fi
MC_LOG_LEVEL=Warning "$info" -c > "$tmp/c" 2>&1 || fail "MC_LOG_LEVEL=Warning refused"
expect "MC_LOG_LEVEL=Warning is warn" "$tmp/c" "^MC_LOG_LEVEL=warn$"
expect "MC_MAX_EP_PER_CTX defaults to 65536" "$tmp/c" "^MC_MAX_EP_PER_CTX=65536$"
expect "MC_IB_TC defaults to -1" "$tmp/c" "^MC_IB_TC=-1$"
expect "MC_HANDSHAKE_LISTEN_BACKLOG defaults to 128" "$tmp/c" "^MC_HANDSHAKE_LISTEN_BACKLOG=128$"
MC_LOG_LEVEL=loudest "$info" -c > "$tmp/badlog" 2>&1 && fail "MC_LOG_LEVEL=loudest accepted"
expect "MC_LOG_LEVEL=loudest named" "$tmp/badlog" "'loudest' for MC_LOG_LEVEL"
for bad in MC_IB_TC=256 MC_HANDSHAKE_LISTEN_BACKLOG=0 MC_WORKERS_PER_CTX=65 MC_FORCE_TCP=maybe \
           MC_INTRA_NVLINK=2 MC_NUM_COMP_CHANNELS_PER_CTX=0 MC_IB_PCI_RELAXED_ORDERING=on-ish; do
  env "$bad" "$info" -c > "$tmp/badc" 2>&1
  expect "bad value named: $bad" "$tmp/badc" "invalid value '${bad#*=}' for ${bad%%=*}"
done

MC_FORCE_TCP=y MC_TLS=sm timeout 60 "$info" -e loopback > "$tmp/ftcp" 2>&1 ||
  fail "MC_FORCE_TCP=y mc_info -e loopback exited non-zero"
expect "MC_FORCE_TCP=y: lane 0 is tcp" "$tmp/ftcp" "^  lane 0: tcp/[^ ]+ -> tcp/"
expect "MC_FORCE_TCP=y: others filtered naming it" "$tmp/ftcp" \
  "^  rejected sm/[^ ]+: filtered: filtered by MC_FORCE_TCP=y \(as MC_TLS=tcp\)"
expect "MC_FORCE_TCP=y wins over MC_TLS=sm, with a warning" "$tmp/ftcp" "MC_FORCE_TCP=y wins over MC_TLS=sm"
MC_FORCE_TCP=y MC_FORCE_HCA=y "$info" -e loopback > "$tmp/both" 2>&1 && fail "MC_FORCE_TCP and MC_FORCE_HCA accepted"
expect "MC_FORCE_TCP with MC_FORCE_HCA: both named" "$tmp/both" "MC_FORCE_TCP and MC_FORCE_HCA cannot both be set"
MC_FORCE_HCA=y MC_IB_DEVICES=mc_no_such_hca "$info" -e loopback > "$tmp/hca" 2>&1 &&
  fail "MC_FORCE_HCA=y without an RDMA device accepted"
expect "MC_FORCE_HCA=y without an RDMA device fails naming it" "$tmp/hca" \
  "MC_FORCE_HCA=y, but no RDMA device is usable"
# A soft provider library that does not load, or is not one, is named.
MC_IB_PROVIDER=soft MC_IB_SOFT_LIBRARY=/nonexistent/libmc_ib_soft.so "$info" -d > "$tmp/nosoft" 2>&1
MC_IB_PROVIDER=soft MC_IB_SOFT_LIBRARY=$build_dir/src/ucs/.libs/libmc_ucs.so "$info" -d \
  > "$tmp/notsoft" 2>&1
if [ -e "$build_dir/modules/libmc_uct_rc_verbs.so" ]; then
  expect "MC_IB_SOFT_LIBRARY that does not load: named with dlerror" "$tmp/nosoft" \
    "MC_IB_SOFT_LIBRARY=/nonexistent/libmc_ib_soft.so\) does not load: .*No such file"
  expect "MC_IB_SOFT_LIBRARY that is not the soft provider: named" "$tmp/notsoft" \
    "libmc_ucs.so has no mc_ib_soft_verbs_ops"
fi
fabric=info-check-$$
if MC_FORCE_HCA=y MC_IB_PROVIDER=soft MC_IB_SOFT_FABRIC=$fabric timeout 60 "$info" -e loopback > "$tmp/soft" 2>&1; then
  expect "MC_FORCE_HCA=y on the soft provider: lane 0 is rc" "$tmp/soft" "^  lane 0: rc_(verbs|mlx5)/mcsoft"
  MC_IB_PCI_RELAXED_ORDERING=y MC_IB_PROVIDER=soft MC_IB_SOFT_FABRIC=$fabric "$info" -d > "$tmp/ro" 2>&1
  expect "MC_IB_PCI_RELAXED_ORDERING=y: mc_info -d says on" "$tmp/ro" "PCIe relaxed ordering: on for host memory"
  MC_IB_PROVIDER=soft MC_IB_SOFT_FABRIC=$fabric "$info" -d > "$tmp/ro0" 2>&1
  expect "MC_IB_PCI_RELAXED_ORDERING unset: mc_info -d says off" "$tmp/ro0" \
    "PCIe relaxed ordering: off \(MC_IB_PCI_RELAXED_ORDERING=n\)"
elif grep -q "no RDMA device is usable" "$tmp/soft"; then
  echo "skip: no rc transport in this build (MC_FORCE_HCA on the soft provider)"
else
  fail "MC_FORCE_HCA=y on the soft provider"; sed 's/^/    /' "$tmp/soft"
fi
rm -f "/dev/shm/mc-ibsoft-$fabric"

echo "$failures failure(s)"
[ $failures -eq 0 ]

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

echo "$failures failure(s)"
[ $failures -eq 0 ]

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs mc_perftest in loopback (-l) and client/server mode over self, tcp and
# sm at a few sizes with small iteration counts, the UCP tests over tcp, sm
# and UCP's default selection, the Transfer Engine tests (te_write, te_read,
# te_lat: a target and an initiator process) over tcp and sm, one initiator to
# three targets with MC_MAX_EP_PER_CTX=1 (evictions with work in flight) and
# two initiators to one target (--target_offset), also started with
# Mooncake's transfer_engine_bench command line (--protocol=tcp, and =rdma
# --device_name on the soft RDMA provider when rc is built, --report_unit,
# --nic_priority_matrix, refused values); checks that every run exits 0
# and prints sane numbers (CSV: the iteration count asked for, positive and
# bounded latency, bandwidth = size x message rate, latency = 1 / rate), and
# that bad command lines, a server that never comes and a peer that dies end
# in a bounded time with the right exit status.
#
#   test/integration/perftest_check.sh <build-dir>
#   PERFTEST_TLS="self sm" test/integration/perftest_check.sh build   # a subset
set -uo pipefail

build_dir=${1:?usage: $0 <build-dir>}
perftest=$build_dir/src/tools/perf/mc_perftest
# The soft verbs provider (a test library, built by make check) for the
# rc checks on it.
export MC_IB_SOFT_LIBRARY=${MC_IB_SOFT_LIBRARY:-$build_dir/test/gtest/.libs/libmc_ib_soft.so}
[ -x "$perftest" ] || { echo "no mc_perftest in $build_dir (build it first)"; exit 1; }
tls=${PERFTEST_TLS:-self tcp sm}
limit=60                          # seconds any one run may take
. "$(dirname "$0")/free_port.sh"     # free_port: a control port for each client/server run
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; jobs -p | xargs -r kill 2>/dev/null' EXIT

failures=0
passes=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok:   $*"; passes=$((passes + 1)); }

# Checks the CSV of one run: header, then iterations,pct_lat,avg_lat,
# overall_lat,avg_bw,overall_bw,avg_mr,overall_mr.
check_csv() {  # <file> <iterations> <message size> <pingpong: 1|0>
  awk -F, -v n="$2" -v size="$3" -v pp="$4" '
    NR == 1 {
      if ($0 !~ /^iterations,[0-9.]+_percentile_lat,avg_lat,overall_lat,avg_bw,overall_bw,avg_mr,overall_mr$/) {
        print "bad CSV header: " $0; exit 1
      }
      next
    }
    /^#/ { next }
    {
      rows++
      if (NF != 8) { print "bad CSV row: " $0; exit 1 }
      if ($1 != n) { print "iterations " $1 ", expected " n; exit 1 }
      lat = $4; bw = $6; mr = $8
      if (!(lat > 0 && lat < 100000)) { print "overall latency " lat " usec is not sane"; exit 1 }
      # bandwidth (MB = 2^20 B) is size x rate, up to the printed rounding
      # (a slow run of small messages prints 0.00).
      want = size * mr / 1048576
      if (!(mr > 0) || !(bw > 0 || want < 0.005)) {
        print "bandwidth " bw " / message rate " mr " not positive"; exit 1
      }
      if ((bw - want) > 0.006 + 0.02 * want || (want - bw) > 0.006 + 0.02 * want) {
        print "bandwidth " bw " MB/s does not match " size " B x " mr " msg/s"; exit 1
      }
      # latency is the time per iteration (half of it for ping-pong).
      per = 1e6 / mr / (pp ? 2 : 1)
      if ((lat - per) > 0.002 + 0.03 * per || (per - lat) > 0.002 + 0.03 * per) {
        print "latency " lat " usec does not match the rate " mr " msg/s"; exit 1
      }
    }
    END { if (rows != 1) { print rows + 0 " result rows, expected 1"; exit 1 } }
  ' "$1"
}

pingpong() { case $1 in *_lat) echo 1 ;; *) echo 0 ;; esac; }

# run_loopback <tl> <test> <size> <iters> [options...]
run_loopback() {
  local tl=$1 test=$2 size=$3 iters=$4; shift 4
  local out=$tmp/out.csv what="loopback $tl $test -s $size $*" bytes=$(( ${size//,/+} ))
  local rc=0
  timeout $limit "$perftest" -l -x "$tl" -t "$test" -s "$size" -n "$iters" -w 10 -v \
    --timeout 20 "$@" > "$out" 2> "$tmp/err" || rc=$?
  if [ $rc -ne 0 ]; then
    fail "$what: exit status $rc"; sed 's/^/      /' "$tmp/err" "$out" | tail -5; return
  fi
  if ! why=$(check_csv "$out" "$iters" "$bytes" "$(pingpong "$test")"); then
    fail "$what: $why"; return
  fi
  pass "$what: $(tail -1 "$out")"
}

# run_pair <tl> <test> <size> <iters> [options...]: a server process and a client.
run_pair() {
  local tl=$1 test=$2 size=$3 iters=$4; shift 4
  local out=$tmp/out.csv what="client/server $tl $test -s $size $*" bytes=$(( ${size//,/+} ))
  port=$(free_port) || exit 1
  timeout $limit "$perftest" -x "$tl" -p $port --timeout 20 > "$tmp/server" 2>&1 &
  local server=$!
  local rc=0
  timeout $limit "$perftest" 127.0.0.1 -p $port -x "$tl" -t "$test" -s "$size" -n "$iters" \
    -w 10 -v --timeout 20 "$@" > "$out" 2> "$tmp/err" || rc=$?
  wait $server; local src=$?
  if [ $rc -ne 0 ] || [ $src -ne 0 ]; then
    fail "$what: client exit $rc, server exit $src"
    sed 's/^/      /' "$tmp/err" "$out" "$tmp/server" | tail -6; return
  fi
  if ! why=$(check_csv "$out" "$iters" "$bytes" "$(pingpong "$test")"); then
    fail "$what: $why"; return
  fi
  pass "$what: $(tail -1 "$out")"
}

for tl in $tls; do
  run_loopback "$tl" am_lat 8 2000
  run_loopback "$tl" am_lat 1024 1000 -D bcopy
  run_loopback "$tl" put_lat 64 2000
  run_loopback "$tl" put_lat 4096 500 -D zcopy
  run_loopback "$tl" am_bw 8 5000
  run_loopback "$tl" am_bw 4096 2000 -D bcopy
  run_loopback "$tl" am_bw 1000,24 2000 -D zcopy -O 4
  run_loopback "$tl" put_bw 65536 500 -D zcopy -O 8
  run_loopback "$tl" put_bw 1048576 100 -D zcopy
  run_loopback "$tl" get 4096 1000
  run_loopback "$tl" get_bw 262144,262144 100 -D zcopy -O 4
  run_loopback "$tl" put_bw 65536 200 -D zcopy --alloc heap
  run_loopback "$tl" put_bw 65536 200 -D zcopy --alloc pages
  run_loopback "$tl" put_lat 8 1000 --alloc md
  # self reaches only its own iface: it has no client/server mode.
  [ "$tl" = self ] && continue
  run_pair "$tl" am_lat 8 2000
  run_pair "$tl" put_lat 64 2000
  run_pair "$tl" am_bw 4096 2000 -D bcopy
  run_pair "$tl" put_bw 1048576 100 -D zcopy -O 4
  run_pair "$tl" get 65536 200 -D zcopy
done

# run_ucp <tls|default> <loopback|pair> <test> <size> <iters> [options...]:
# a UCP test over the transports -x names (MC_TLS), or UCP's own selection.
run_ucp() {
  local tl=$1 mode=$2 test=$3 size=$4 iters=$5; shift 5
  local out=$tmp/out.csv what="ucp $mode $tl $test -s $size $*" bytes=$(( ${size//,/+} ))
  local xopt=() rc=0 src=0 server=
  [ "$tl" = default ] || xopt=(-x "$tl")
  if [ "$mode" = loopback ]; then
    timeout $limit "$perftest" -l "${xopt[@]}" -t "$test" -s "$size" -n "$iters" -w 10 -v \
      --timeout 20 "$@" > "$out" 2> "$tmp/err" || rc=$?
  else
    port=$(free_port) || exit 1
    timeout $limit "$perftest" -p $port --timeout 20 > "$tmp/server" 2>&1 &
    server=$!
    timeout $limit "$perftest" 127.0.0.1 -p $port "${xopt[@]}" -t "$test" -s "$size" \
      -n "$iters" -w 10 -v --timeout 20 "$@" > "$out" 2> "$tmp/err" || rc=$?
    wait $server || src=$?
  fi
  if [ $rc -ne 0 ] || [ $src -ne 0 ]; then
    fail "$what: exit status $rc (server $src)"
    sed 's/^/      /' "$tmp/err" "$out" | tail -6; return
  fi
  if ! why=$(check_csv "$out" "$iters" "$bytes" "$(pingpong "$test")"); then
    fail "$what: $why"; return
  fi
  pass "$what: $(tail -1 "$out")"
}

for tl in ${PERFTEST_UCP_TLS:-tcp sm default}; do
  run_ucp "$tl" loopback ucp_put_lat 64 2000
  run_ucp "$tl" loopback ucp_am_lat 64 2000
  run_ucp "$tl" loopback ucp_put_bw 65536 300 -O 4
  run_ucp "$tl" loopback ucp_get 64 1000
  run_ucp "$tl" loopback ucp_get 1048576 50 -O 2
  run_ucp "$tl" loopback ucp_am_bw 4096 1000 -O 8
  run_ucp "$tl" loopback ucp_am_bw 1048576 50
  run_ucp "$tl" pair ucp_put_lat 64 2000
  run_ucp "$tl" pair ucp_am_lat 1024 1000
  run_ucp "$tl" pair ucp_put_bw 4194304 30
  run_ucp "$tl" pair ucp_get 65536 200 -O 4
  run_ucp "$tl" pair ucp_am_bw 65536 200 -O 4
done

# run_te <MC_TLS|default> <te_write|te_read> <block_size> [warm-up batches
# [--alloc=heap]]: a Transfer Engine target process and an initiator for 1 s
# (P2PHANDSHAKE), both with that --alloc; the initiator's result line: a
# passed data check, bandwidth = block x request rate, request rate =
# batches x batch / seconds, its warm-up (--warmup_batches, default 1) said
# and timed, or 0 ms when there was none, and its memory: --alloc's (pages
# by default), huge-page advised with heap where the kernel has THP.
# start_te_target <what> <test> [VAR=value...] [-- flags...]: a Transfer
# Engine target process in the background, with those flags; sets $target
# (its pid) and $seg (its segment), or fails <what> and returns 1. start_target_cmd <what> <env and command
# line...> does the same for any command line.
start_te_target() {
  local what=$1 test=$2 vars=()
  shift 2
  while [ $# -gt 0 ] && [ "$1" != -- ]; do vars+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  start_target_cmd "$what" "${vars[@]}" "$perftest" -t "$test" --local_server_name=127.0.0.1 \
    --buffer_size=16m --duration 1 "$@"
}

start_target_cmd() {
  local what=$1
  shift
  seg=
  # Emptied before the target starts: the background child's redirection may
  # come after the first read below, which would find the previous target's line.
  : > "$tmp/target"
  env "$@" > "$tmp/target" 2>&1 &
  target=$!
  for _ in $(seq 200); do
    seg=$(sed -n 's/^target: segment \([^,]*\),.*/\1/p' "$tmp/target")
    [ -n "$seg" ] && return 0
    kill -0 $target 2>/dev/null || break
    sleep 0.1
  done
  fail "$what: the target printed no segment"; sed 's/^/      /' "$tmp/target" | tail -5
  kill $target 2>/dev/null; wait $target 2>/dev/null
  return 1
}

run_te() {
  local tl=$1 test=$2 block=$3 warm=${4:-} alloc=${5:-} what="te $1 $2 --block_size $3"
  local out=$tmp/out.te envs=() args=() rc=0 trc=0 huge=0
  [ "$tl" = default ] || envs=("MC_TLS=$tl")
  [ -n "$warm" ] && { args=(--warmup_batches "$warm"); what+=" --warmup_batches $warm"; }
  [ -n "$alloc" ] && what+=" $alloc"
  [ "$alloc" = --alloc=heap ] && ! grep -q '\[never\]' /sys/kernel/mm/transparent_hugepage/enabled \
    2>/dev/null && [ -e /sys/kernel/mm/transparent_hugepage/hpage_pmd_size ] && huge=1
  start_te_target "$what" "$test" "${envs[@]}" -- $alloc || return
  env "${envs[@]}" timeout $limit "$perftest" -t "$test" --segment_id="$seg" \
    --local_server_name=127.0.0.1 --threads 2 --batch_size 32 --block_size "$block" \
    --duration 1 "${args[@]}" $alloc > "$out" 2> "$tmp/err" || rc=$?
  kill -TERM $target 2>/dev/null; wait $target || trc=$?
  if [ $rc -ne 0 ] || [ $trc -ne 0 ]; then
    fail "$what: initiator exit $rc, target exit $trc"
    sed 's/^/      /' "$tmp/err" "$out" "$tmp/target" | tail -6; return
  fi
  if ! why=$(awk -v block="$block" -v warm="${warm:-1}" -v alloc="${alloc#--alloc=}" -v huge=$huge '
      /^result test=te_setup / {
        for (i = 2; i <= NF; i++) { split($i, kv, "="); s[kv[1]] = kv[2] }
        setups++
      }
      /^result test=te_endpoints / {
        for (i = 2; i <= NF; i++) { split($i, kv, "="); e[kv[1]] = kv[2] }
        stores++
      }
      /^result test=te_(write|read) / {
        rows++
        for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
        if (v["check"] != "passed") { print "data check " v["check"]; exit 1 }
        if (v["batch"] != 32 || v["threads"] != 2) { print "batch/threads not as asked"; exit 1 }
        if (!(v["batches"] > 0 && v["seconds"] >= 1)) { print "no batches in " v["seconds"] " s"; exit 1 }
        rate = v["batches"] * v["batch"] / v["seconds"]
        if ((v["req_per_s"] - rate) > 1 + 0.01 * rate || (rate - v["req_per_s"]) > 1 + 0.01 * rate) {
          print "request rate " v["req_per_s"] " does not match " v["batches"] " batches"; exit 1
        }
        want = rate * block / 1048576
        if ((v["bw_MBps"] - want) > 0.01 + 0.01 * want || (want - v["bw_MBps"]) > 0.01 + 0.01 * want) {
          print "bandwidth " v["bw_MBps"] " MB/s does not match " block " B x " rate " req/s"; exit 1
        }
        if (warm > 0 ? !(v["warmup_ms"] > 0) : v["warmup_ms"] != "0.0") {
          print "warmup_ms=" v["warmup_ms"] " after " warm " warm-up batches"; exit 1
        }
        if (v["alloc"] != (alloc == "" ? "pages" : alloc) || v["huge"] != huge) {
          print "alloc=" v["alloc"] " huge=" v["huge"] ", expected " (alloc == "" ? "pages" : alloc) " and " huge; exit 1
        }
      }
      /^  warm-up      / { if ($2 == warm) warmup_said = 1 }
      # The lanes that carried it (getSegmentPaths): one of them with bytes.
      /^  transport    / { if ($0 ~ / -> / && $0 ~ /carries, [1-9][0-9]* B\)/) lanes = 1 }
      END {
        if (rows != 1) { print rows + 0 " result lines, expected 1"; exit 1 }
        if (!lanes) { print "no transport line naming a lane that carried bytes"; exit 1 }
        if (!warmup_said) { print "no warm-up line saying " warm " batches per thread"; exit 1 }
        # The set-up of the one segment: each step timed, VmRSS read.
        if (setups != 1 || s["segments"] != 1) { print "no te_setup line for one segment"; exit 1 }
        if (!(s["open_p50_us"] > 0 && s["first_p50_us"] > 0 && s["steady_p50_us"] > 0 && s["rss_kib"] > 0)) {
          print "te_setup: a step not timed or no VmRSS"; exit 1
        }
        # The endpoint store: one segment, one endpoint, open, nothing evicted.
        if (stores != 1) { print stores + 0 " te_endpoints lines, expected 1"; exit 1 }
        if (e["opened"] != 1 || e["evicted"] != 0 || e["removed"] != 0 || e["cached"] != 1) {
          print "te_endpoints: opened " e["opened"] ", evicted " e["evicted"] ", removed " e["removed"] ", cached " e["cached"] " for one segment"; exit 1
        }
      }
    ' "$out"); then
    fail "$what: $why"; return
  fi
  pass "$what: $(grep '^result test=te_' "$out" | tr '\n' ' ')"
}

# run_te_notify <MC_TLS>: te_write --notify: after the run, pairs of a plain
# and a notified batch; the plain, notified and extra latency lines with
# their percentiles (ordered: min <= p10 <= p50 <= p90 <= p99 <= max), and a
# result line whose figures are those lines' p50s; the target took every
# notification.
run_te_notify() {
  local tl=$1 what="te $1 te_write --notify" out=$tmp/out.notify rc=0 trc=0
  start_te_target "$what" te_write "MC_TLS=$tl" || return
  env "MC_TLS=$tl" timeout $limit "$perftest" -t te_write --segment_id="$seg" \
    --local_server_name=127.0.0.1 --threads 1 --batch_size 4 --block_size 65536 \
    --duration 1 --notify --notify_rounds 50 > "$out" 2> "$tmp/err" || rc=$?
  kill -TERM $target 2>/dev/null; wait $target || trc=$?
  if [ $rc -ne 0 ] || [ $trc -ne 0 ]; then
    fail "$what: initiator exit $rc, target exit $trc"
    sed 's/^/      /' "$tmp/err" "$out" "$tmp/target" | tail -6; return
  fi
  if ! grep -q '^target: 50 notifications taken$' "$tmp/target"; then
    fail "$what: the target did not take 50 notifications"; sed 's/^/      /' "$tmp/target" | tail -3
    return
  fi
  if ! why=$(awk '
      /^    (plain|notified|extra) +p50 / {
        name = $1; p50[name] = $3
        line = $0; gsub(/[(),]/, " ", line); n = split(line, f, " ")
        # f: name p50 V us min V p10 V p90 V p99 V max V
        if (!(f[6] <= f[8] && f[8] <= f[3] && f[3] <= f[10] && f[10] <= f[12] && f[12] <= f[14])) {
          print name " percentiles out of order: " $0; exit 1
        }
        seen++
      }
      /^result test=notify / {
        for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
        res++
      }
      END {
        if (seen != 3 || res != 1) { print seen + 0 " latency lines, " res + 0 " notify results"; exit 1 }
        if (v["rounds"] != 50) { print "rounds " v["rounds"]; exit 1 }
        if (v["plain_p50_us"] != p50["plain"] || v["notified_p50_us"] != p50["notified"] ||
            v["extra_p50_us"] != p50["extra"]) { print "result line does not match the p50s"; exit 1 }
        if (!(v["plain_p50_us"] > 0 && v["notified_p50_us"] > 0)) { print "zero latency"; exit 1 }
      }' "$out"); then
    fail "$what: $why"; sed 's/^/      /' "$out" | tail -8; return
  fi
  pass "$what: $(grep '^result test=notify' "$out")"
}

for tl in ${PERFTEST_TE_TLS:-tcp sm}; do
  run_te "$tl" te_write 65536
  run_te "$tl" te_read 65536 0
  run_te "$tl" te_write 65536 1 --alloc=heap
  run_te_notify "$tl"
done
# te_fan_evict: one initiator to three targets over tcp (--segment_id a,b,c)
# with MC_MAX_EP_PER_CTX=1, so that every block of a batch to another target
# than the last evicts an endpoint with work in flight: the run and its data
# check (blocks to all three) pass, the set-up line names three segments,
# each target served its descriptor once (one handshake per openSegment
# under P2PHANDSHAKE), and the initiator evicted endpoints with operations
# in flight. Then two initiators at once to one target, apart by
# --target_offset: both data checks pass.
te_fan_evict() {
  local what="te tcp te_write to 3 targets, MC_MAX_EP_PER_CTX=1" out=$tmp/out.fan rc=0
  local pids=() segs="" i s
  for i in 0 1 2; do
    : > "$tmp/target.$i"
    MC_TLS=tcp MC_LOG_LEVEL=debug timeout $limit "$perftest" -t te_write \
      --local_server_name=127.0.0.1 --buffer_size=1m > "$tmp/target.$i" 2>&1 &
    pids+=($!)
  done
  for i in 0 1 2; do
    s=""
    for _ in $(seq 200); do
      s=$(sed -n 's/^target: segment \([^,]*\),.*/\1/p' "$tmp/target.$i"); [ -n "$s" ] && break
      sleep 0.1
    done
    segs+=${segs:+,}$s
  done
  MC_TLS=tcp MC_MAX_EP_PER_CTX=1 MC_LOG_LEVEL=debug timeout $limit "$perftest" -t te_write \
    --segment_id="$segs" --local_server_name=127.0.0.1 --threads 1 --batch_size 12 \
    --block_size 65536 --duration 1 > "$out" 2> "$tmp/err" || rc=$?
  kill -TERM "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null
  local served=""
  for i in 0 1 2; do served+=" $(grep -c 'rpc listener: served the descriptor' "$tmp/target.$i")"; done
  local busy; busy=$(grep 'endpoint store: evicting' "$tmp/err" | grep -vc '(0 operations')
  if [ $rc -ne 0 ]; then
    fail "$what: initiator exit $rc"; sed 's/^/      /' "$out" "$tmp/err" | tail -6
  elif ! grep -q '^result test=te_write .* check=passed' "$out"; then
    fail "$what: no passed data check"; sed 's/^/      /' "$out" | tail -4
  elif ! grep -q '^result test=te_setup segments=3 ' "$out"; then
    fail "$what: no set-up line for 3 segments"; grep '^result' "$out" | sed 's/^/      /'
  elif [ "$served" != " 1 1 1" ]; then
    fail "$what: the targets served their descriptors$served times, expected 1 each"
  elif [ "$busy" -lt 1 ]; then
    fail "$what: no endpoint evicted with operations in flight"
  else
    pass "$what: data check passed, $busy evictions with work in flight, one handshake per target"
  fi
  what="te tcp te_write, two initiators to one target, --target_offset"
  start_target_cmd "$what" MC_TLS=tcp "$perftest" -t te_write --local_server_name=127.0.0.1 \
    --buffer_size=2m --duration 1 || return
  local ipids=() bad=""
  for i in 0 1; do
    MC_TLS=tcp timeout $limit "$perftest" -t te_write --segment_id="$seg" \
      --local_server_name=127.0.0.1 --threads 1 --batch_size 16 --block_size 65536 --duration 1 \
      --target_offset=$((i * 1048576)) > "$tmp/out.in.$i" 2>&1 &
    ipids+=($!)
  done
  for i in 0 1; do wait "${ipids[$i]}" || bad+=" initiator $i exit $?"; done
  kill -TERM $target 2>/dev/null; wait $target 2>/dev/null
  for i in 0 1; do
    grep -q '^result test=te_write .* check=passed' "$tmp/out.in.$i" || bad+=" initiator $i: no passed check"
  done
  if [ -n "$bad" ]; then fail "$what:$bad"; tail -n 3 "$tmp/out.in.0" "$tmp/out.in.1" | sed 's/^/      /'
  else pass "$what: both data checks passed"; fi
}
te_fan_evict

# te_lat over tcp and sm: one result line per size (8 B, 4 KiB, 64 KiB),
# each with as many samples as asked, percentiles in order (0 < p50 <= p99
# <= p99.9), a passed data check, and the lanes named (transport line).
run_te_lat() {
  local tl=$1 op=$2 what="te_lat $1 --operation=$2" out=$tmp/out.lat rc=0 trc=0
  start_te_target "$what" te_lat "MC_TLS=$tl" || return
  MC_TLS=$tl timeout $limit "$perftest" -t te_lat --segment_id="$seg" \
    --local_server_name=127.0.0.1 --operation="$op" --iterations=200 > "$out" 2> "$tmp/err" || rc=$?
  kill -TERM $target 2>/dev/null; wait $target || trc=$?
  if [ $rc -ne 0 ] || [ $trc -ne 0 ]; then
    fail "$what: initiator exit $rc, target exit $trc"
    sed 's/^/      /' "$tmp/err" "$out" | tail -6; return
  fi
  if ! why=$(awk -v op="$op" '
      /^result test=te_lat / {
        for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
        if (v["op"] != op) { print "op " v["op"]; exit 1 }
        if (v["check"] != "passed") { print "data check " v["check"]; exit 1 }
        if (v["iters"] != 200) { print v["iters"] " samples, 200 asked"; exit 1 }
        if (!(v["p50_us"] > 0 && v["p50_us"] <= v["p99_us"] && v["p99_us"] <= v["p999_us"])) {
          print "percentiles out of order: " $0; exit 1
        }
        seen[v["block"]] = 1
      }
      /^  transport    / && /->/ { lanes = 1 }
      END {
        if (!seen[8] || !seen[4096] || !seen[65536]) { print "not every size has a result line"; exit 1 }
        if (!lanes) { print "no transport line naming the lanes"; exit 1 }
      }' "$out"); then
    fail "$what: $why"; sed 's/^/      /' "$out" | tail -8; return
  fi
  pass "$what: $(grep '^result ' "$out" | sed 's/.*block=\([0-9]*\).* p50_us=\([0-9.]*\).*/\1 B p50 \2 us/' | tr '\n' ' ')"
}
for tl in ${PERFTEST_TE_TLS:-tcp sm}; do
  run_te_lat "$tl" write
  run_te_lat "$tl" read
done

# --footprint: put_bw and get cycle through it (the summary says so) and
# still pass their data check; a latency test refuses it.
for t in put_bw get; do
  port=$(free_port) || exit 1
  timeout $limit "$perftest" -p $port --timeout 20 > "$tmp/server" 2>&1 &
  server=$!
  rc=0
  timeout $limit "$perftest" 127.0.0.1 -p $port -x tcp -d lo -t $t -s 65536 -n 300 -w 10 \
    -D zcopy -O 8 --footprint 4m --timeout 20 > "$tmp/fp" 2>&1 || rc=$?
  wait $server; src=$?
  if [ $rc -eq 0 ] && [ $src -eq 0 ] && grep -q '^  footprint    4194304 B per side: 64 messages' "$tmp/fp" &&
     grep -q 'data check   passed' "$tmp/fp"; then
    pass "tcp $t --footprint 4m: $(grep '^  bandwidth' "$tmp/fp")"
  else
    fail "tcp $t --footprint 4m: exit $rc (server $src)"; sed 's/^/      /' "$tmp/fp" | tail -6
  fi
done
run_ucp tcp pair ucp_put_bw 65536 300 -O 4 --footprint 2m
run_ucp tcp pair ucp_get 65536 300 -O 4 --footprint 2m
timeout 10 "$perftest" -l -x self -t am_lat --footprint 1m > /dev/null 2> "$tmp/err"; rc=$?
if [ $rc -eq 2 ] && grep -q -- '--footprint applies to' "$tmp/err"; then
  pass "--footprint refused for am_lat: $(head -1 "$tmp/err")"
else
  fail "--footprint refused for am_lat: exit $rc"
fi
if timeout 30 "$perftest" --limits -s 65536 --footprint 8m > "$tmp/lim" 2>&1 &&
   grep -Eq 'memcpy, 65536-byte copies over 8388608 B \(cold\): +[0-9.]+ MB/s' "$tmp/lim"; then
  pass "--limits --footprint: $(grep cold "$tmp/lim" | tr -s ' ')"
else
  fail "--limits --footprint"; sed 's/^/      /' "$tmp/lim" | tail -4
fi
# The kernel's floor for one transfer of the size (its round trip) and
# for a ping-pong of the size: positive times; neither at 8 B, whose
# ping-pong line is both already.
if grep -Eq 'round trip, 65536 B out, 8 B back: +[0-9]*[1-9][0-9.]* usec' "$tmp/lim" &&
   grep -Eq 'ping-pong, 65536 B, busy-polling: +[0-9]*[1-9][0-9.]* usec' "$tmp/lim" &&
   timeout 30 "$perftest" --limits > "$tmp/lim8" 2>&1 && grep -q 'ping-pong, 8 B' "$tmp/lim8" &&
   [ "$(grep -c 'ping-pong, ' "$tmp/lim8")" = 1 ] && ! grep -q 'B out, 8 B back' "$tmp/lim8"; then
  pass "--limits -s 65536: $(grep -E 'B out|ping-pong, 65536' "$tmp/lim" | tr -s ' ' | tr '\n' ';')"
else
  fail "--limits: the round trip and ping-pong of the size"
  sed 's/^/      /' "$tmp/lim" "$tmp/lim8" | tail -10
fi
# A latency test beside the limits: against the kernel's ping-pong of its
# own size, not of 8 B.
if timeout 30 "$perftest" -l -x self -t am_lat -s 4096 -D bcopy -n 2000 --limits > "$tmp/limlat" 2>&1 &&
   grep -Eq 'vs limits +latency [0-9.]+ usec vs kernel TCP ping-pong of 4096 B [0-9]*[1-9][0-9.]* usec' \
     "$tmp/limlat"; then
  pass "am_lat -s 4096 --limits: $(grep 'vs limits' "$tmp/limlat" | tr -s ' ')"
else
  fail "am_lat -s 4096 --limits: the ping-pong of its size"; sed 's/^/      /' "$tmp/limlat" | tail -6
fi
# The kernel's fan-in ceiling: 4 streams into one thread, a positive rate.
if timeout 30 "$perftest" --limits --senders 4 -s 65536 --footprint 8m > "$tmp/lim" 2>&1 &&
   grep -Eq '4 streams into one thread, 65536-byte writes: +[0-9]*[1-9][0-9.]* MB/s' "$tmp/lim"; then
  pass "--limits --senders 4: $(grep streams "$tmp/lim" | tr -s ' ')"
else
  fail "--limits --senders 4"; sed 's/^/      /' "$tmp/lim" | tail -4
fi
timeout 10 "$perftest" --senders 4 > /dev/null 2> "$tmp/err"; rc=$?
if [ $rc -eq 2 ] && grep -q -- '--senders is a part of --limits' "$tmp/err"; then
  pass "--senders without --limits refused: $(head -1 "$tmp/err")"
else
  fail "--senders without --limits refused: exit $rc"
fi

# A stopped target: the initiator waits for its tasks' deadline
# (MC_TRANSFER_TIMEOUT) at next to no CPU, where it used to spin a core, then
# exits non-zero naming the timed-out task. Its CPU time is read from
# /proc/PID/stat over 2 s of the wait.
te_stopped_target() {
  local what="te tcp te_write, target stopped" init rc=0 c0 c1 hz ticks
  start_te_target "$what" te_write MC_TLS=tcp || return
  MC_TLS=tcp MC_TRANSFER_TIMEOUT=6s "$perftest" -t te_write --segment_id="$seg" \
    --local_server_name=127.0.0.1 --threads 1 --batch_size 32 --block_size 65536 --duration 30 \
    > "$tmp/out.stop" 2> "$tmp/err.stop" &
  init=$!
  sleep 1
  kill -STOP $target
  sleep 1
  c0=$(awk '{ print $14 + $15 }' /proc/$init/stat 2>/dev/null)
  sleep 2
  c1=$(awk '{ print $14 + $15 }' /proc/$init/stat 2>/dev/null)
  for _ in $(seq $limit); do kill -0 $init 2>/dev/null || break; sleep 1; done
  kill -KILL $init 2>/dev/null
  wait $init || rc=$?
  kill -KILL $target 2>/dev/null; wait $target 2>/dev/null
  hz=$(getconf CLK_TCK)
  if [ -z "$c0" ] || [ -z "$c1" ]; then
    fail "$what: the initiator exited before the wait (exit $rc)"
    sed 's/^/      /' "$tmp/err.stop" | tail -5; return
  fi
  ticks=$((c1 - c0))
  if [ $rc -eq 0 ] || [ $rc -eq 137 ] || ! grep -q 'ended TIMEOUT' "$tmp/err.stop"; then
    fail "$what: initiator exit $rc, expected a timed-out task"
    sed 's/^/      /' "$tmp/err.stop" | tail -5
  elif [ $ticks -ge $hz ]; then
    fail "$what: the initiator used $ticks of $((2 * hz)) clock ticks while it waited"
  else
    pass "$what: $ticks of $((2 * hz)) clock ticks of CPU while waiting, then exit $rc"
  fi
}
te_stopped_target

# Mooncake's transfer_engine_bench command line, gflags forms and all (no
# -t): a target with --mode=target and an initiator with --segment_id, both
# --protocol=tcp though MC_TLS asks for sm, so the lanes are tcp's; the
# 'Test completed' line in --report_unit=MB (10^6 B) with 3 decimals matches
# the MB/s (2^20 B) of the result line; the target's RPC listener has the
# backlog MC_HANDSHAKE_LISTEN_BACKLOG asks for (ss's Send-Q of a listening
# socket); the flags mc has no meaning for say so once on stderr (the
# document's spelling --auto-discovery included).
te_mooncake_cli() {
  local what="te mooncake command line" out=$tmp/out.mc rc=0 trc=0 port backlog
  start_target_cmd "$what" MC_TLS=sm MC_HANDSHAKE_LISTEN_BACKLOG=7 "$perftest" --mode=target \
    --local_server_name=127.0.0.1 --protocol=tcp --buffer_size=16m --duration=1 \
    --auto-discovery --backend=tent || return
  port=${seg##*:}
  if command -v ss > /dev/null; then
    backlog=$(ss -Hltn "sport = :$port" | awk '{ print $3; exit }')
    if [ "$backlog" = 7 ]; then
      pass "MC_HANDSHAKE_LISTEN_BACKLOG=7: the RPC listener on port $port has backlog 7"
    else
      fail "MC_HANDSHAKE_LISTEN_BACKLOG=7: ss says backlog '${backlog}' on port $port"
    fi
  fi
  MC_TLS=sm timeout $limit "$perftest" --segment_id="$seg" -local_server_name=127.0.0.1 \
    --protocol tcp --operation=write -threads=2 --batch_size 32 --block_size=65536 \
    --duration=1 --report_unit=MB --report_precision=3 --noinit_mem --nouse_vram \
    > "$out" 2> "$tmp/err" || rc=$?
  kill -TERM $target 2>/dev/null; wait $target || trc=$?
  if [ $rc -ne 0 ] || [ $trc -ne 0 ]; then
    fail "$what: initiator exit $rc, target exit $trc"
    sed 's/^/      /' "$tmp/err" "$out" "$tmp/target" | tail -8; return
  fi
  if ! why=$(awk '
      /^Test completed: duration [0-9.]+, batch count [0-9]+, throughput [0-9]+\.[0-9][0-9][0-9] MB\/s$/ {
        mb = $9; done++
      }
      /^  transport    / { if ($0 ~ /sm\// || $0 !~ /tcp\/[^ ]+ -> tcp\//) { print "lanes: " $0; exit 1 } }
      /^result test=te_write / {
        for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
        if (v["test"] != "te_write" || v["check"] != "passed") { print "result " $0; exit 1 }
        mib = v["bw_MBps"]
      }
      END {
        if (done != 1) { print "no Test completed line in MB"; exit 1 }
        want = mib * 1048576 / 1e6
        if ((mb - want) > 0.01 + 0.01 * want || (want - mb) > 0.01 + 0.01 * want) {
          print mb " MB/s (10^6) does not match " mib " MB/s (2^20)"; exit 1
        }
      }' "$out"); then
    fail "$what: $why"; sed 's/^/      /' "$out" | tail -8; return
  fi
  pass "$what: $(grep '^Test completed' "$out"); $(grep '^  transport' "$out" | sed 's/^ *//')"
  if [ "$(grep -c -- '--auto_discovery: mc always discovers' "$tmp/target")" = 1 ] &&
     grep -q -- '--backend=tent: mc has one engine' "$tmp/target"; then
    pass "$what: --auto_discovery and --backend=tent answered once on stderr"
  else
    fail "$what: no note on --auto_discovery / --backend"; sed 's/^/      /' "$tmp/target" | tail -5
  fi
}
te_mooncake_cli

# --protocol=rdma --device_name=mcsoft1 on the soft RDMA provider (when the
# rc transports are built): the lanes are rc ones on that device only.
te_mooncake_rdma() {
  local what="te mooncake --protocol=rdma --device_name=mcsoft1" out=$tmp/out.rdma rc=0 trc=0
  local soft=(MC_IB_PROVIDER=soft MC_IB_SOFT_FABRIC=perftest-check-$$)
  env "${soft[@]}" "$build_dir/src/tools/info/mc_info" -d > "$tmp/soft.d" 2>&1
  rm -f "/dev/shm/mc-ibsoft-perftest-check-$$"
  if ! grep -q 'on mcsoft1' "$tmp/soft.d"; then
    echo "skip: $what (no rc transport in this build)"; return
  fi
  start_target_cmd "$what" "${soft[@]}" "$perftest" --mode=target --local_server_name=127.0.0.1 \
    --protocol=rdma --device_name=mcsoft1 --buffer_size=16m --duration=1 || return
  env "${soft[@]}" timeout $limit "$perftest" --segment_id="$seg" --local_server_name=127.0.0.1 \
    --protocol=rdma --device_name=mcsoft1 --threads=1 --batch_size=8 --duration=1 \
    > "$out" 2> "$tmp/err" || rc=$?
  kill -TERM $target 2>/dev/null; wait $target || trc=$?
  rm -f "/dev/shm/mc-ibsoft-perftest-check-$$"
  if [ $rc -ne 0 ] || [ $trc -ne 0 ]; then
    fail "$what: initiator exit $rc, target exit $trc"
    sed 's/^/      /' "$tmp/err" "$out" "$tmp/target" | tail -8; return
  fi
  if grep -Eq '^  transport    rc_(verbs|mlx5)/mcsoft1:1 -> rc_(verbs|mlx5)/mcsoft1:1 \(carries' "$out" &&
     ! grep '^  transport' "$out" | grep -Eq 'tcp/|sm/|mcsoft0' && grep -q 'check=passed' "$out"; then
    pass "$what: $(grep '^  transport' "$out" | sed 's/^ *//')"
  else
    fail "$what: lanes not rc on mcsoft1"; sed 's/^/      /' "$out" | tail -6
  fi
}
te_mooncake_rdma

# --nic_priority_matrix: Mooncake's JSON file becomes the engine's matrix
# (a secondary-only entry, which discovery never makes; its musa:0 entry is
# left out with a note), as the target's info log of its buffer says.
te_mooncake_matrix() {
  local what="te mooncake --nic_priority_matrix" dev
  dev=$(ls /sys/class/net | grep -vx lo | head -1)
  [ -n "$dev" ] || { echo "skip: $what (no netdev but lo)"; return; }
  echo "{\"cpu:0\": [[], [\"$dev\"]], \"musa:0\": [[\"$dev\"], []]}" > "$tmp/matrix-ok.json"
  start_target_cmd "$what" MC_LOG_LEVEL=info "$perftest" --mode=target \
    --local_server_name=127.0.0.1 --nic_priority_matrix="$tmp/matrix-ok.json" --buffer_size=1m || return
  kill -TERM $target 2>/dev/null; wait $target 2>/dev/null
  if grep -q "at cpu:0: preferred devices none, secondary $dev$" "$tmp/target" &&
     grep -q "location 'musa:0' left out" "$tmp/target"; then
    pass "$what: cpu:0 has secondary $dev, musa:0 left out with a note"
  else
    fail "$what"; sed 's/^/      /' "$tmp/target" | tail -6
  fi
}
te_mooncake_matrix

# Bad Transfer Engine command lines: exit status 2 and a message naming the
# flag.
echo '{"cpu:0": "mlx5_0"}' > "$tmp/matrix.json"
# Each case: the command line, then after '|' what the message must name.
while IFS='|' read -r args word; do
  # shellcheck disable=SC2086
  timeout 10 "$perftest" $args < /dev/null > /dev/null 2> "$tmp/err"; rc=$?
  if [ $rc -eq 2 ] && grep -q -- "mc_perftest: .*$word" "$tmp/err"; then
    pass "usage error '$args': $(head -1 "$tmp/err")"
  else
    fail "usage error '$args': exit $rc, $(head -1 "$tmp/err")"
  fi
done <<EOF_CASES
-t te_write --batch_size 0|--batch_size
-t te_read --mode initiator|--segment_id
-t te_bogus|te_bogus
-t te_lat --segment_id=127.0.0.1:1 --iterations=0|--iterations
-t te_write --operation=copy|--operation
--mode=target --report_unit=GiBs|--report_unit 'GiBs'
--mode=target --protocol=nvlink|--protocol 'nvlink': mc has no nvlink transport
--mode=target --protocol=carrier|--protocol 'carrier'
--mode=master|--mode 'master'
--mode=target --use_vram=maybe|--use_vram
--mode=target --gpu_id=-5|--gpu_id
--mode=target --backend=fast|--backend 'fast'
--mode=target --nic_priority_matrix=$tmp/none.json|--nic_priority_matrix
--mode=target --nic_priority_matrix=$tmp/matrix.json|--nic_priority_matrix
--mode=target --noprotocol|--noprotocol
--mode=target --report_precision=99|--report_precision
-t te_write --warmup_batches=some|--warmup_batches
-t te_write --alloc=thp|--alloc
--mode=target --bogus_flag=1|--bogus_flag
EOF_CASES

# The UCP summary names the lanes and protocol that carried the test.
if timeout $limit "$perftest" -l -t ucp_put_bw -s 1m -n 20 -w 2 -I > "$tmp/table" 2>&1 &&
   grep -Eq '^  transport .*put [a-z-]+ on lanes? [0-9]+ \(' "$tmp/table" &&
   grep -q 'ucp          .*lanes' "$tmp/table"; then
  pass "ucp table names its lanes: $(grep '^  transport' "$tmp/table")"
else
  fail "ucp table names its lanes"; sed 's/^/      /' "$tmp/table" | tail -8
fi

# Human-readable output: the table, the summary and a passed data check.
first_tl=${tls%% *}
if timeout $limit "$perftest" -l -x "$first_tl" -t am_lat -n 1000 -w 10 > "$tmp/table" 2>&1 &&
   grep -q '^Final: ' "$tmp/table" && grep -q 'MB = 2^20 B' "$tmp/table" &&
   grep -q 'data check   passed' "$tmp/table" && grep -q 'p99.9' "$tmp/table"; then
  pass "table output"
else
  fail "table output"; sed 's/^/      /' "$tmp/table" | tail -8
fi

# Bad command lines: a clear message and exit status 2.
for args in "-Z" "-t no_such_test -x self -l" "-l -x self -t am_lat -s 0" "-l -x self" \
            "-l -x self -t am_lat -D bogus" "127.0.0.1 -l -x self -t am_lat" "-l -t am_lat" \
            "-l -x self -t put_bw --alloc thp"; do
  # shellcheck disable=SC2086
  timeout 10 "$perftest" $args > /dev/null 2> "$tmp/err"; rc=$?
  if [ $rc -eq 2 ] && grep -q 'mc_perftest: ' "$tmp/err"; then
    pass "usage error '$args': $(head -1 "$tmp/err")"
  else
    fail "usage error '$args': exit $rc"
  fi
done
timeout 10 "$perftest" -h > "$tmp/help" 2>&1 && grep -q -- '--limits' "$tmp/help" &&
  pass "-h" || fail "-h"

# A server that never comes: a non-zero exit within the timeout.
port=$(free_port) || exit 1
start=$SECONDS
timeout $limit "$perftest" 127.0.0.1 -p $port -x sm -t am_lat --timeout 3 > /dev/null 2>&1; rc=$?
if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $((SECONDS - start)) -le 10 ]; then
  pass "no server: exit $rc after $((SECONDS - start)) s"
else
  fail "no server: exit $rc after $((SECONDS - start)) s"
fi

# A peer that dies in the middle of a test: the survivor exits non-zero soon.
for tl in $tls; do
  [ "$tl" = self ] && continue
  port=$(free_port) || exit 1
  "$perftest" -x "$tl" -p $port --timeout 10 > /dev/null 2>&1 &
  server=$!
  timeout $limit "$perftest" 127.0.0.1 -p $port -x "$tl" -t am_lat -n 1000000000 -w 0 \
    --timeout 10 > /dev/null 2>&1 &
  client=$!
  sleep 2
  kill -9 $server 2>/dev/null; wait $server 2>/dev/null
  start=$SECONDS
  wait $client; rc=$?
  if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $((SECONDS - start)) -le 15 ]; then
    pass "$tl server killed: the client exits $rc after $((SECONDS - start)) s"
  else
    fail "$tl server killed: the client exits $rc after $((SECONDS - start)) s"
  fi
done

echo "perftest_check: $passes passed, $failures failed"
[ $failures -eq 0 ]

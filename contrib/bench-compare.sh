#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Side-by-side benchmark: mc_perftest against ucx_perftest (and iperf3, and
# Mooncake's transfer_engine_bench when found) on the same transport class,
# client and server as two processes on this host, alternating rounds
# (A B A B ...), medians. Classes:
#   tcp       UCT tcp over lo                 vs UCX -x tcp -d lo
#   sm        mc sm on its mem_alloc memory   vs UCX best of posix, sysv
#   cma       mc sm on registered heap (CMA)  vs UCX cma
#   ucp       UCP, default selection          vs UCX UCP, default UCX_TLS
#   ucp_tcp   UCP over tcp (-x tcp): am latency, put bandwidth
#   ucp_get   UCP get over tcp: 8 B and 4 KiB latency, bandwidth from 64 KiB
#             (both vs UCX UCP with UCX_TLS=tcp)
#   te        the Transfer Engine: te_write / te_read, forced tcp and the
#             default selection, vs Mooncake's transfer_engine_bench over tcp
#             (--mooncake-bench PATH), at --te-blocks, batch --te-batch,
#             --te-threads; next to the ceilings of the same run (UCT over
#             tcp and CMA with the same buffer footprint, cold memcpy, kernel
#             TCP, iperf3) and te_lat next to UCP put latency, every mc run
#             on the same kind of pages (--te-alloc); see
#             contrib/bench-compare-te.sh
#   te_scale  how the Transfer Engine's cost grows (not run by default): a
#             block x batch x threads sweep, one initiator to N targets and N
#             initiators to one target (throughput, set-up time, memory and
#             metadata operations per segment), the endpoint store at its
#             limit (MC_MAX_EP_PER_CTX); see contrib/bench-compare-te-scale.sh
# Latency is the median of a run's half round trips (both tools' 50th
# percentile column), bandwidth the run's overall MB/s (MB = 2^20 B); each
# figure is the median over the rounds. The output ends with one line per
# comparison:
#   cmp=<name> size=<bytes> metric=<lat_us|bw_MBps> mc=<v> peer=<v> ratio=<v>
#
#   contrib/bench-compare.sh [--build DIR] [--rounds N] [--classes "tcp sm ..."]
#       [--sizes "8 4096 ..."] [--quick] [--plot FILE.png] [--mooncake-bench PATH]
#       [--no-pin] [--out DIR] [--report-only] [--te-blocks "4096 ..."]
#       [--te-threads "1 2"] [--te-batch N] [--te-duration S] [--te-alloc pages|heap]
#       [--scale-blocks "4096 ..."] [--scale-batches "1 ..."] [--scale-threads "1 2"]
#       [--scale-n "1 2 ..."] [--scale-evict-n N] [--scale-caps "0 4 ..."]
#       [--scale-metadata p2p|http] [--scale-fan-sel default|tcp]
#       [--scale-ops "write read"] [--scale-sels "default tcp"]
# --report-only: no new runs; the table, lines and plot from what --out DIR
# holds (the runs of an earlier, perhaps interrupted, invocation).
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build}
rounds=3
classes="tcp sm cma ucp ucp_tcp ucp_get te"
sizes="8 4096 65536 1048576 4194304"
plot=""
mooncake=""
pin=yes
quick=no
out=""
report_only=no

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --classes) classes=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --plot) plot=$2; shift 2 ;;
    --mooncake-bench) mooncake=$2; shift 2 ;;
    --no-pin) pin=no; shift ;;
    --quick) quick=yes; rounds=1; shift ;;
    --out) out=$2; shift 2 ;;
    --report-only) report_only=yes; shift ;;
    --te-blocks) TE_BLOCKS=$2; shift 2 ;;
    --te-threads) TE_THREADS=$2; shift 2 ;;
    --te-batch) TE_BATCH=$2; shift 2 ;;
    --te-duration) TE_DURATION=$2; shift 2 ;;
    --te-alloc) TE_ALLOC=$2; shift 2 ;;
    --scale-blocks) TS_BLOCKS=$2; shift 2 ;;
    --scale-batches) TS_BATCHES=$2; shift 2 ;;
    --scale-threads) TS_THREADS=$2; shift 2 ;;
    --scale-n) TS_NS=$2; shift 2 ;;
    --scale-evict-n) TS_EVICT_N=$2; shift 2 ;;
    --scale-caps) TS_CAPS=$2; shift 2 ;;
    --scale-metadata) TS_METADATA=$2; shift 2 ;;
    --scale-fan-sel) TS_FAN_SEL=$2; shift 2 ;;
    --scale-ops) TS_OPS=$2; shift 2 ;;
    --scale-sels) TS_SELS=$2; shift 2 ;;
    -h|--help) usage 0 ;;
    *) echo "bench-compare: unknown option '$1'" >&2; usage 2 ;;
  esac
done

mc=$build/src/tools/perf/mc_perftest
[ -x "$mc" ] || { echo "bench-compare: no mc_perftest in $build (build it, or give --build)" >&2; exit 1; }
[ -n "$out" ] || out=$(mktemp -d /tmp/bench-compare.XXXXXX)
mkdir -p "$out"

# The peers (ucx_perftest, iperf3) and gnuplot come from Debian packages,
# installed by install-deps.sh --bench when missing.
"$(dirname "$0")/install-deps.sh" --bench > "$out/install-deps.log" 2>&1 ||
  { echo "bench-compare: contrib/install-deps.sh --bench failed (see $out/install-deps.log)"; exit 1; }
command -v ucx_perftest > /dev/null || { echo "bench-compare: no ucx_perftest after install-deps.sh --bench"; exit 1; }

. "$(dirname "$0")/../test/integration/free_port.sh"   # free_port: a control port per run
. "$(dirname "$0")/bench-compare-te.sh"   # the te class
. "$(dirname "$0")/bench-compare-te-scale.sh"   # the te_scale class
cpu_c=() cpu_s=() server_args=()  # server_args: options of the server side only (run_tool)
[ "$pin" = yes ] && [ "$(nproc)" -ge 2 ] && { cpu_c=(-c 0); cpu_s=(-c 1); }

# The final result row of a CSV report (-v): both tools print the same columns.
final_row() { grep -E '^ *[0-9]+,' "$1" | tail -1 | tr -d ' '; }

# run_tool <mc|ucx> <metric> <env> <args...>: one client/server run; prints
# the figure (lat: the 50th percentile column; bw: overall MB/s) or NA.
run_tool() {
  local tool=$1 metric=$2 env=$3; shift 3
  local bin=$mc extra=(--timeout 30) rc=0
  [ "$tool" = ucx ] && { bin=ucx_perftest; extra=(); }
  port=$(free_port) || exit 1
  env $env timeout 90 "$bin" -p $port "${cpu_s[@]}" "${extra[@]}" "${server_args[@]}" \
    > "$out/server.log" 2>&1 &
  local server=$!
  if [ "$tool" = ucx ]; then  # ucx_perftest's client does not retry: wait for the listener
    for _ in $(seq 50); do ss -Hltn "sport = :$port" 2>/dev/null | grep -q . && break; sleep 0.05; done
  fi
  env $env timeout 90 "$bin" 127.0.0.1 -p $port "${cpu_c[@]}" "${extra[@]}" -v "$@" \
    > "$out/client.log" 2>&1 || rc=$?
  wait $server 2>/dev/null
  local row
  row=$(final_row "$out/client.log")
  if [ $rc -ne 0 ] || [ -z "$row" ]; then
    { echo "--- $tool $env $* (exit $rc)"; tail -3 "$out/client.log"; } >> "$out/failures.log"
    echo NA; return
  fi
  echo "$row" | awk -F, -v m="$metric" '{ print (m == "lat" ? $2 : $6) }'
}

median() { tr ' ' '\n' | grep -v '^NA$' | grep . | sort -g | awk '{ v[NR] = $1 }
  END { if (NR == 0) print "NA"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# Iterations for a size: a run of ~0.1-1 s here (ucx_perftest's tcp
# ping-pong stalls for milliseconds now and then on a loaded 2-CPU machine).
# Shared memory (sm, ucp) moves small messages 20-100 times faster than tcp:
# 100x more of them, or a run would last well under a millisecond and
# measure its own start.
iters() {  # <lat|bw> <size> [slow|fast]
  local k=$1 s=$2 n
  if [ "$k" = lat ]; then
    if [ "$s" -le 4096 ]; then n=2000; elif [ "$s" -le 65536 ]; then n=500
    elif [ "$s" -le 1048576 ]; then n=100; else n=40; fi
  else
    if [ "$s" -le 4096 ]; then n=10000
    elif [ "$s" -le 65536 ]; then n=2000; elif [ "$s" -le 1048576 ]; then n=200; else n=60; fi
  fi
  [ "$3" = fast ] && [ "$s" -le 4096 ] && n=$((n * 100))
  # UCX's UCP RMA over tcp moves 30-700 MB/s here: fewer large operations,
  # but at least 50 (a 4 MiB run of 12 measured mc's start-up, not its rate).
  [ "$3" = slow ] && [ "$s" -ge 65536 ] && n=$((n / 5 > 50 ? n / 5 : (n < 50 ? n : 50)))
  [ "$quick" = yes ] && n=$((n / 10 > 10 ? n / 10 : 10))
  echo "-n $n -w $((n / 10 > 2 ? n / 10 : 2))"
}

# What each class runs at each size: "<test> <mc args> | <peer args>".
# UCT tests use the same test and, where both offer it, the same layout.
spec() {  # <class> <lat|bw> <size>
  local c=$1 k=$2 s=$3
  case $c.$k in
    tcp.lat) if [ "$s" -le 4096 ]; then echo "am_lat|-x tcp -d lo -D $([ "$s" -le 8 ] && echo short || echo bcopy)|same"
             else echo "put_lat|-x tcp -d lo -D zcopy|same"; fi ;;
    tcp.bw)  if [ "$s" -le 4096 ]; then echo "am_bw|-x tcp -d lo -D $([ "$s" -le 8 ] && echo short || echo bcopy)|same"
             else echo "put_bw|-x tcp -d lo -D zcopy|same"; fi ;;
    sm.lat)  if [ "$s" -le 4096 ]; then echo "am_lat|-x sm -D $([ "$s" -le 64 ] && echo short || echo bcopy) --alloc md|-D $([ "$s" -le 64 ] && echo short || echo bcopy)"
             else echo "put_lat|-x sm -D zcopy --alloc md|-D short"; fi ;;
    sm.bw)   if [ "$s" -le 4096 ]; then echo "am_bw|-x sm -D $([ "$s" -le 64 ] && echo short || echo bcopy) --alloc md|-D $([ "$s" -le 64 ] && echo short || echo bcopy)"
             else echo "put_bw|-x sm -D zcopy --alloc md|-D bcopy"; fi ;;
    cma.lat) echo "put_lat|-x sm -D zcopy --alloc heap|-x cma -d memory -D zcopy" ;;
    cma.bw)  echo "put_bw|-x sm -D zcopy --alloc heap|-x cma -d memory -D zcopy" ;;
    ucp.lat) echo "ucp_put_lat||" ;;
    ucp.bw)  echo "ucp_put_bw||" ;;
    ucp_tcp.lat) echo "ucp_am_lat|-x tcp|" ;;
    ucp_tcp.bw)  echo "ucp_put_bw|-x tcp|" ;;
    ucp_get.lat) [ "$s" -le 4096 ] && echo "ucp_get|-x tcp|" ;;
    ucp_get.bw)  [ "$s" -ge 65536 ] && echo "ucp_get|-x tcp|" ;;
  esac
}

# The peer variants of a class: "<label>:<env>:<transport args, comma
# separated>" (added to the peer args of spec); the best one counts.
peers() {  # <class>
  case $1 in
    tcp) echo "ucx-tcp::" ;;
    sm) echo "ucx-posix::-x,posix,-d,memory ucx-sysv::-x,sysv,-d,memory" ;;
    cma) echo "ucx-cma::" ;;
    ucp) echo "ucx-ucp::" ;;
    ucp_tcp|ucp_get) echo "ucx-ucp-tcp:UCX_TLS=tcp,self:" ;;
  esac
}

results=$out/results.txt
if [ "$report_only" = no ]; then
  : > "$results"
  : > "$out/failures.log"
  rm -f "$out/limits.txt" "$out/iperf3.txt" "$out/peers.txt"
elif [ ! -s "$results" ] && [ ! -s "$out/te.txt" ] && [ ! -s "$out/ts_sweep.txt" ] &&
     [ ! -s "$out/ts_fanout.txt" ]; then
  echo "bench-compare: --report-only: no results in $out" >&2; exit 1
fi
start=$SECONDS
echo "bench-compare: $(date -u '+%F %T UTC'), $(nproc) CPUs, $(uname -r), rounds $rounds, output in $out"
echo "  mc:  $mc"
echo "  ucx: $(command -v ucx_perftest) ($(ucx_info -v 2>/dev/null | sed -n 's/^# Version //p'))"

# One comparison row: rounds of mc then each peer variant, alternating.
compare() {  # <class> <lat|bw> <size>
  local c=$1 k=$2 s=$3 line test mc_args peer_args
  line=$(spec "$c" "$k" "$s")
  [ -n "$line" ] || return 0
  test=${line%%|*}; line=${line#*|}; mc_args=${line%%|*}; peer_args=${line#*|}
  [ "$peer_args" = same ] && peer_args=$mc_args
  local pace=""
  case $c in ucp_*) pace=slow ;; sm | ucp) pace=fast ;; esac
  local it; it=$(iters "$k" "$s" "$pace")
  # UCX's ucp_get over tcp takes ~1 ms per operation here.
  [ "$test" = ucp_get ] && [ "$s" -le 1048576 ] && it="-n 500 -w 20"
  local mc_vals="" variants; variants=$(peers "$c")
  declare -A pv=()
  for ((r = 1; r <= rounds; r++)); do
    # shellcheck disable=SC2086
    mc_vals+=" $(run_tool mc "$k" "" -t "$test" -s "$s" $it $mc_args)"
    for v in $variants; do
      local label=${v%%:*} rest=${v#*:}; local env=${rest%%:*} vargs=${rest#*:}
      vargs=${vargs//,/ }
      # shellcheck disable=SC2086
      pv[$label]+=" $(run_tool ucx "$k" "$env" -t "$test" -s "$s" $it $vargs $peer_args)"
    done
  done
  local mc_med best="NA" best_label="" med
  mc_med=$(echo "$mc_vals" | median)
  for v in $variants; do
    local label=${v%%:*}
    med=$(echo "${pv[$label]}" | median)
    echo "$c $k $s $label $med${pv[$label]}" >> "$out/peers.txt"
    [ "$med" = NA ] && continue
    if [ "$best" = NA ] || awk -v a="$med" -v b="$best" -v k="$k" 'BEGIN { exit !((k == "lat") ? a < b : a > b) }'; then
      best=$med; best_label=$label
    fi
  done
  echo "$c $k $s $test $mc_med $best ${best_label:-none}" >> "$results"
  printf '  %-8s %-3s %8s  %-12s mc %10s  %-12s %10s   (%ds)\n' "$c" "$k" "$s" "$test" "$mc_med" \
    "${best_label:-peer}" "$best" $((SECONDS - start))
}

[ -n "$mooncake" ] || mooncake=$(command -v transfer_engine_bench || true)
if [ "$report_only" = no ]; then
  for c in $classes; do
    if [ "$c" = te ]; then
      [ "$quick" = yes ] && TE_DURATION=${TE_DURATION:-1}
      run_te_class
      continue
    fi
    if [ "$c" = te_scale ]; then
      [ "$quick" = yes ] && TE_DURATION=${TE_DURATION:-1} && te_duration=$TE_DURATION
      run_te_scale_class
      continue
    fi
    for s in $sizes; do
      compare "$c" lat "$s"
      compare "$c" bw "$s"
    done
  done
fi

# Machine limits at each size (memcpy, kernel TCP, TCP ping-pong), and
# iperf3's TCP throughput over 127.0.0.1 as a second opinion.
[ -s "$out/limits.txt" ] || for s in $sizes; do
  "$mc" --limits -s "$s" -v 2>/dev/null | awk -v s="$s" -F: '
    /memcpy/ { split($2, a, " "); m = a[1] } /one stream/ { split($2, a, " "); t = a[1] }
    /ping-pong/ { split($2, a, " "); l = a[1] } END { print s, m, t, l }' >> "$out/limits.txt"
  # iperf3 writes at most 1 MiB at a time.
  if command -v iperf3 > /dev/null && [ "$s" -ge 65536 ] && [ "$s" -le 1048576 ]; then
    port=$(free_port) || exit 1
    timeout 20 iperf3 -s -1 -p $port > /dev/null 2>&1 &
    iperf_server=$!
    sleep 0.3
    bw=$(timeout 15 iperf3 -c 127.0.0.1 -p $port -t 2 -l "$s" -J 2>/dev/null |
         awk -F: '/"bits_per_second"/ { v = $2 } END { gsub(/[ ,]/, "", v); if (v != "") printf "%.2f", v / 8 / 1048576 }')
    kill $iperf_server 2>/dev/null; wait $iperf_server 2>/dev/null
    [ -n "$bw" ] && echo "$s $bw" >> "$out/iperf3.txt"
  fi
done

limit_of() {  # <class> <lat|bw> <size> <mc value>: fraction of the machine's limit
  awk -v c="$1" -v k="$2" -v s="$3" -v v="$4" '
    $1 == s { mem = $2; tcp = $3; lat = $4 }
    END {
      if (v == "NA" || v <= 0) { print "-"; exit }
      net = (c == "tcp" || c ~ /^ucp_/)
      if (k == "bw") printf "%.0f%% of %s", 100 * v / (net ? tcp : mem), net ? "kernel TCP" : "memcpy"
      else if (net && s <= 8) printf "%.0f%% of TCP ping-pong", 100 * lat / v
      else print "-"
    }' "$out/limits.txt"
}

echo
echo "Results: lat = median half round trip in usec (lower is better), bw = MB/s with MB = 2^20 B"
echo "(higher is better); ratio = mc / peer; medians of $rounds alternating rounds."
printf '%-8s %-4s %9s %-12s %12s %12s %-12s %7s  %s\n' class kind size test mc peer "(peer)" ratio "mc vs machine limit"
parsable=()
while read -r c k s test mcv peerv label; do
  ratio=$(awk -v a="$mcv" -v b="$peerv" 'BEGIN { if (a == "NA" || b == "NA" || b <= 0) print "NA"; else printf "%.2f", a / b }')
  printf '%-8s %-4s %9s %-12s %12s %12s %-12s %7s  %s\n' "$c" "$k" "$s" "$test" "$mcv" "$peerv" "$label" "$ratio" \
    "$(limit_of "$c" "$k" "$s" "$mcv")"
  parsable+=("cmp=${c}_${test} size=$s metric=$([ "$k" = lat ] && echo lat_us || echo bw_MBps) mc=$mcv peer=$peerv ratio=$ratio")
done < "$results"

# mc's own comparisons: UCP over UCT on tcp, and iperf3 against mc tcp.
value() { awk -v c="$1" -v k="$2" -v s="$3" '$1 == c && $2 == k && $3 == s { print $5 }' "$results"; }
if [ -f "$out/iperf3.txt" ]; then
  while read -r s bw; do
    v=$(value tcp bw "$s"); [ -n "$v" ] || continue
    parsable+=("cmp=tcp_put_bw_vs_iperf3 size=$s metric=bw_MBps mc=$v peer=$bw ratio=$(awk -v a="$v" -v b="$bw" 'BEGIN { printf "%.2f", (a == "NA") ? 0 : a / b }')")
  done < "$out/iperf3.txt"
fi
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { print (a == "NA" || b == "NA" || b <= 0) ? "NA" : sprintf("%.2f", a / b) }'; }
for s in $sizes; do
  u=$(value tcp bw "$s")
  for what in ucp_tcp:ucp_put_bw ucp_get:ucp_get; do
    p=$(value "${what%%:*}" bw "$s")
    [ -n "$u" ] && [ -n "$p" ] && parsable+=("cmp=mc_${what#*:}_vs_uct_tcp size=$s metric=bw_MBps mc=$p peer=$u ratio=$(ratio "$p" "$u")")
  done
done
u=$(value tcp lat 8); for what in ucp_tcp:ucp_am_lat ucp_get:ucp_get; do
  p=$(value "${what%%:*}" lat 8)
  [ -n "$u" ] && [ -n "$p" ] && parsable+=("cmp=mc_${what#*:}_vs_uct_tcp_am_lat size=8 metric=lat_us mc=$p peer=$u ratio=$(ratio "$p" "$u")")
done

# The Transfer Engine rows (the te and te_scale classes).
report_te_class
report_te_scale_class

# The plot: bandwidth and latency against size, one line per tool and class.
if [ -n "$plot" ]; then
  mkdir -p "$out/plot"
  rm -f "$out"/plot/*.dat
  while read -r c k s test mcv peerv label; do
    [ "$mcv" != NA ] && echo "$s $mcv" >> "$out/plot/$k.mc-$c.dat"
    [ "$peerv" != NA ] && echo "$s $peerv" >> "$out/plot/$k.ucx-$c.dat"
  done < "$results"
  plot_te_class "$out/plot"
  plot_te_scale_class "$out/plot"
  # One panel per kind that has lines: bandwidth, latency, te, and te_scale's
  # sweep, fan, setup, mem; at most three panels a row.
  kinds=""
  for k in bw lat te tsweep tfan tsetup tmem; do
    [ -n "$(ls "$out"/plot/$k.*.dat 2>/dev/null)" ] && kinds+=" $k"
  done
  panels=$(echo $kinds | wc -w)
  cols=$((panels < 3 ? panels : 3)); prow=$(((panels + cols - 1) / cols))
  {
    echo "set terminal pngcairo size $((700 * cols)),$((560 * prow)) font ',10'"
    echo "set output '$plot'"
    echo "set multiplot layout $prow,$cols title 'mc\\_perftest vs ucx\\_perftest and Mooncake transfer\\_engine\\_bench, $(nproc) CPUs, $(date -u +%F), medians of $rounds rounds'"
    echo "set logscale xy; set grid; set key left top; set xlabel 'message size (bytes)'"
    for k in $kinds; do
      if [ $k = bw ]; then echo "set ylabel 'bandwidth (MB/s, MB = 2^20 B)'; set key left top"
      elif [ $k = te ]; then echo "set xlabel 'block size (bytes)'; set ylabel 'Transfer Engine, batch $te_batch, 1 thread (MB/s, MB = 2^20 B)'; set key left top"
      elif [ $k = lat ]; then echo "set ylabel 'latency (usec, median half round trip)'; set key left top"
      else plot_labels_te_scale $k; echo "set key left top"; fi
      printf "plot "
      sep=""
      for f in "$out"/plot/$k.*.dat; do
        [ -f "$f" ] || continue
        name=$(basename "$f" .dat); name=${name#$k.}
        dash=$([ "${name%%-*}" = mc ] && echo 1 || echo 2)
        case $name in uct-*) dash=3 ;; esac
        printf "%s'%s' using 1:2 with linespoints dt %s lw 2 title '%s'" "$sep" "$f" "$dash" "${name//_/\\_}"
        sep=", "
      done
      echo
    done
    echo "unset multiplot"
  } > "$out/plot.gp"
  if gnuplot "$out/plot.gp" 2> "$out/gnuplot.log"; then echo "plot: $plot"; else echo "plot failed: $(head -3 "$out/gnuplot.log")"; fi
fi

[ -s "$out/failures.log" ] && echo "some runs failed (NA): see $out/failures.log"
echo "machine limits: $(awk '{ printf "%s B: memcpy %s, TCP %s MB/s; ", $1, $2, $3 } END { printf "TCP ping-pong %s usec", $4 }' "$out/limits.txt")"
echo "total time: $((SECONDS - start)) s"
echo
printf '%s\n' "${parsable[@]}"

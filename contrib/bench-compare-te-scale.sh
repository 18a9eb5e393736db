# SPDX-License-Identifier: Apache-2.0
# The te_scale class of contrib/bench-compare.sh (sourced by it): how the
# Transfer Engine's cost grows, with mc_perftest's te modes.
#   sweep     te_write / te_read throughput over --scale-blocks x
#             --scale-batches x --scale-threads (a cell whose batch x
#             threads x block passes TE_MAX_FOOTPRINT is skipped: "-")
#   fan-out   one initiator to N target processes (--segment_id a,b,...:
#             block i of each batch to target i mod N), N in --scale-n
#   fan-in    N initiator processes to one target (--target_offset keeps
#             their slots and data checks apart), started together
#             (both over --scale-fan-sel: default, UCP's selection, or tcp)
#   evict     fan-out to --scale-evict-n targets with MC_MAX_EP_PER_CTX
#             at each of --scale-caps (0: the default, 65536): what an
#             eviction costs; every run ends with its data check
# Each fan row gives the throughput (fan-in: the sum of the initiators'),
# the set-up per segment from the initiator's 'result test=te_setup' line
# (openSegment, the first transfer of one block, a second one), memory per
# endpoint as VmRSS deltas from /proc (fan-out: the initiator's, after its
# opens and first transfers; fan-in: the target's, at its peak while its N
# initiators run, above its VmRSS before they start), and the metadata
# operations per openSegment. Fan-in over tcp also gives the kernel's
# ceiling for its shape: N TCP streams of block-sized writes, each from a
# thread writing blocking, into one thread that reads them all through
# epoll into a buffer of the target's size (mc_perftest --limits
# --senders N --footprint). Metadata operations: under P2PHANDSHAKE (the default) the
# descriptors the targets' RPC listeners served (MC_LOG_LEVEL=debug lines
# 'rpc listener: served the descriptor'), with --scale-metadata http also
# mc_metadata_server's GETs of the targets' keys (its debug lines), per
# openSegment.
# MB/s with MB = 2^20 B. Rounds alternate over the whole class (every row
# once, then again): each row gives its median and its range. An empty
# list (--scale-blocks "", --scale-n "", --scale-caps "") skips that part;
# --quick runs a subset. Results: docs/performance.md, "How cost grows".
# Uses from bench-compare.sh and bench-compare-te.sh: $mc, $out, $rounds,
# $quick, median, start_bg, stop_bg, te_throughput, mc_segment_of, ratio2,
# run_mc_te, te_duration, te_max_footprint, free_port.

ts_blocks=${TS_BLOCKS-"4096 65536 1048576 4194304 16777216 67108864"}
ts_batches=${TS_BATCHES:-"1 16 128 1024"}
ts_threads=${TS_THREADS:-"1 2"}
ts_ops=${TS_OPS:-"write read"}
ts_sels=${TS_SELS:-"default tcp"}
ts_ns=${TS_NS-"1 2 4 8 16"}
ts_evict_n=${TS_EVICT_N:-8}
ts_caps=${TS_CAPS-"0 4 2 1"}
ts_metadata=${TS_METADATA:-p2p}
# The fan rows: one block size, batch and thread, one operation.
ts_fan_block=${TS_FAN_BLOCK:-65536}
ts_fan_batch=${TS_FAN_BATCH:-128}
ts_fan_op=${TS_FAN_OP:-write}
# The fan rows' transport: default (UCP's selection) or tcp (--protocol=tcp).
ts_fan_sel=${TS_FAN_SEL:-default}
if [ "$quick" = yes ]; then
  ts_blocks=${TS_BLOCKS-"4096 1048576 16777216"}
  ts_batches=${TS_BATCHES:-"1 128"}
  ts_threads=${TS_THREADS:-1}
  ts_ops=${TS_OPS:-write}
  ts_sels=${TS_SELS:-default}
  ts_ns=${TS_NS-"1 4 16"}
  ts_caps=${TS_CAPS-"0 2"}
fi

# The range of a list of numbers: "min-max", or NA.
ts_range() { tr ' ' '\n' | grep -v '^NA$' | grep . | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 }
  END { if (NR == 0) print "NA"; else printf "%s-%s", lo, hi }'; }

# The value of key <k> in the first 'result test=<t> ' line of a log.
ts_field() {  # <log> <test> <key>
  sed -n "s/^result test=$2 .* $3=\([^ ]*\).*/\1/p" "$1" | head -1
}

ts_rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }

# The pid of the mc_perftest under a `timeout` started by start_bg.
ts_child() { cat "/proc/$1/task/$1/children" 2>/dev/null | awk '{ print $1 }'; }

# ts_metadata_start: with --scale-metadata http, an mc_metadata_server with
# debug logging; sets ts_meta (the --metadata_server URL) and ts_meta_pid.
ts_meta="P2PHANDSHAKE" ts_meta_pid="" ts_meta_log=""
ts_metadata_start() {
  [ "$ts_metadata" = http ] || return 0
  local port; port=$(free_port) || return 1
  ts_meta_log=$out/ts_metadata_server.log
  MC_LOG_LEVEL=debug "$build/src/tools/metadata/mc_metadata_server" --port "$port" \
    > "$ts_meta_log" 2>&1 &
  ts_meta_pid=$!
  ts_meta="http://127.0.0.1:$port/metadata"
  for _ in $(seq 50); do
    ss -Hltn "sport = :$port" 2>/dev/null | grep -q . && return 0
    sleep 0.1
  done
  echo "  te_scale: mc_metadata_server did not listen on $port" >&2
  return 1
}
ts_metadata_stop() {
  [ -n "$ts_meta_pid" ] || return 0
  kill -TERM "$ts_meta_pid" 2>/dev/null; wait "$ts_meta_pid" 2>/dev/null; ts_meta_pid=""
}
# The key GETs of the targets' descriptors (ram/ and rpc_meta/ keys of
# ts-target-* names) the metadata server has answered: an openSegment over
# a metadata server reads both, then asks the owner (the handshake). A
# target's own refresher reads its keys too, every
# MC_METADATA_REFRESH_INTERVAL, which a run may catch.
ts_meta_ops() {
  local n=0
  [ -n "$ts_meta_log" ] && n=$(grep -c 'metadata server: GET [^ ]*/ts-target-' "$ts_meta_log")
  echo "${n:-0}"
}

# ts_targets <n> <buffer> [VAR=value...]: n targets with debug logging (their
# descriptors served are counted); sets ts_pids and ts_segs (comma list).
ts_seq=0
ts_targets() {
  local n=$1 buf=$2 i log seg; shift 2
  ts_pids=() ts_segs=""
  for ((i = 0; i < n; i++)); do
    log=$out/ts_target.$i.log
    ts_seq=$((ts_seq + 1))
    local name=127.0.0.1
    [ "$ts_metadata" = http ] && name=ts-target-$$-$ts_seq
    : > "$log"
    env MC_LOG_LEVEL=debug "$@" timeout $((te_duration + 120)) "$mc" -t "te_$ts_fan_op" \
      --mode=target --metadata_server="$ts_meta" --local_server_name="$name" \
      --buffer_size="$buf" --init_mem "${ts_proto[@]}" > "$log" 2>&1 &
    ts_pids+=($!)
  done
  for ((i = 0; i < n; i++)); do
    seg=$(mc_segment_of "$out/ts_target.$i.log" "${ts_pids[$i]}")
    [ -n "$seg" ] || { echo "--- te_scale target $i: no segment line"; tail -3 "$out/ts_target.$i.log"; } \
      >> "$out/failures.log"
    ts_segs+=${ts_segs:+,}$seg
  done
}

ts_targets_stop() {
  local p
  for p in "${ts_pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${ts_pids[@]}"; do wait "$p" 2>/dev/null; done
}

# Descriptors the targets' listeners served since they started.
ts_served() { cat "$out"/ts_target.*.log 2>/dev/null | grep -c 'rpc listener: served the descriptor'; }

# ts_initiator <log> <segments> [VAR=value...]: one initiator of the fan
# rows' shape (--scale-fan-* block, batch, op, one thread) to the targets;
# --target_offset and other flags from ts_iflags.
ts_iflags=() ts_iname=127.0.0.1
ts_initiator() {
  local log=$1 segs=$2; shift 2
  env "$@" timeout $((te_duration + 120)) "$mc" -t "te_$ts_fan_op" --metadata_server="$ts_meta" \
    --segment_id="$segs" --local_server_name="$ts_iname" --batch_size="$ts_fan_batch" \
    --block_size="$ts_fan_block" --threads=1 --duration="$te_duration" --report_unit=MiB \
    "${ts_proto[@]}" "${ts_iflags[@]}" > "$log" 2>&1
}

# The check word of a log: passed, or failed.
ts_check() { grep -q '^result test=te_[a-z]* .*check=passed' "$1" && echo passed || echo failed; }

# One fan-out row: prints "MiB/s open_p50 first_p50 steady_p50 KiB/segment
# ops/open check" (KiB per segment: the initiator's VmRSS growth over its
# opens and first transfers, divided by N).
ts_fanout() {  # <n> [VAR=value for the initiator...]
  local n=$1; shift
  local need=$((ts_fan_batch * ts_fan_block)) ilog=$out/ts_initiator.log m0
  rm -f "$out"/ts_target.*.log
  ts_targets "$n" "$need"
  m0=$(ts_meta_ops)
  ts_iflags=()
  ts_iname=127.0.0.1; [ "$ts_metadata" = http ] && ts_iname=ts-init-$$-$((ts_seq += 1))
  ts_initiator "$ilog" "$ts_segs" "$@"
  local m1; m1=$(ts_meta_ops)  # before the targets' exits read their keys
  ts_targets_stop
  local v; v=$(te_throughput "$ilog")
  [ -n "$v" ] || { echo "--- te_scale fan-out $n $*"; tail -3 "$ilog"; } >> "$out/failures.log"
  local kib; kib=$(awk -v a="$(ts_field "$ilog" te_setup rss_open_kib)" \
    -v b="$(ts_field "$ilog" te_setup rss_ep_kib)" -v n="$n" \
    'BEGIN { print (a == "" || b == "") ? "NA" : sprintf("%.1f", (a + b) / n) }')
  local ops; ops=$(awk -v s="$(ts_served)" -v m="$((m1 - m0))" -v n="$n" \
    'BEGIN { printf "%.2f", (s + m) / n }')
  echo "${v:-NA} $(ts_field "$ilog" te_setup open_p50_us) $(ts_field "$ilog" te_setup first_p50_us)" \
    "$(ts_field "$ilog" te_setup steady_p50_us) $kib $ops $(ts_check "$ilog")"
}

# One fan-in row: N initiators at once to one target; prints "MiB/s (sum)
# open_p50 first_p50 steady_p50 (medians over the initiators) KiB/endpoint
# (the target's peak VmRSS above its VmRSS before, over N) ops/open check
# (passed when every initiator's check passed)".
ts_fanin() {  # <n>
  local n=$1 need=$((ts_fan_batch * ts_fan_block)) i m0
  rm -f "$out"/ts_target.*.log "$out"/ts_initiator.*.log
  ts_targets 1 $((need * n))
  m0=$(ts_meta_ops)
  local tpid; tpid=$(ts_child "${ts_pids[0]}")
  local rss0; rss0=$(ts_rss "$tpid")
  local ipids=()
  for ((i = 0; i < n; i++)); do
    ts_iflags=(--target_offset=$((i * need)))
    ts_iname=127.0.0.1; [ "$ts_metadata" = http ] && ts_iname=ts-init-$$-$((ts_seq += 1))
    ts_initiator "$out/ts_initiator.$i.log" "$ts_segs" &
    ipids+=($!)
  done
  local peak=${rss0:-0} r
  while :; do
    local alive=0
    for p in "${ipids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive = 1 ] || break
    r=$(ts_rss "$tpid"); [ -n "$r" ] && [ "$r" -gt "$peak" ] && peak=$r
    sleep 0.1
  done
  for p in "${ipids[@]}"; do wait "$p" 2>/dev/null; done
  local m1; m1=$(ts_meta_ops)
  ts_targets_stop
  local sum="" opens="" firsts="" steadies="" check=passed v
  for ((i = 0; i < n; i++)); do
    local log=$out/ts_initiator.$i.log
    v=$(te_throughput "$log")
    [ -n "$v" ] || { echo "--- te_scale fan-in $n initiator $i"; tail -3 "$log"; } >> "$out/failures.log"
    sum+=" ${v:-NA}"
    opens+=" $(ts_field "$log" te_setup open_p50_us)"
    firsts+=" $(ts_field "$log" te_setup first_p50_us)"
    steadies+=" $(ts_field "$log" te_setup steady_p50_us)"
    [ "$(ts_check "$log")" = passed ] || check=failed
  done
  local total; total=$(echo "$sum" | tr ' ' '\n' | awk '$1 == "NA" { bad = 1 } $1 != "" { s += $1 }
    END { print bad ? "NA" : sprintf("%.2f", s) }')
  local kib; kib=$(awk -v a="$peak" -v b="${rss0:-}" -v n="$n" \
    'BEGIN { print (b == "") ? "NA" : sprintf("%.1f", (a - b) / n) }')
  local ops; ops=$(awk -v s="$(ts_served)" -v m="$((m1 - m0))" -v n="$n" \
    'BEGIN { printf "%.2f", (s + m) / n }')
  echo "$total $(echo "$opens" | median) $(echo "$firsts" | median) $(echo "$steadies" | median)" \
    "$kib $ops $check"
}

# The kernel's fan-in ceiling for N: MiB/s of N TCP streams into one thread
# (mc_perftest --limits --senders), or NA.
ts_kernel_fanin() {  # <n>
  local v
  v=$("$mc" --limits --senders "$1" -s "$ts_fan_block" --footprint $(($1 * ts_fan_batch * ts_fan_block)) \
    2>/dev/null | sed -n 's/.*streams\{0,1\} into one thread.*: *\([0-9.]*\) MB\/s.*/\1/p')
  echo "${v:-NA}"
}

# One sweep cell: MiB/s of run_mc_te (bench-compare-te.sh) or "-" when its
# footprint passes the limit.
ts_cell() {  # <sel> <op> <block> <batch> <threads>
  if [ $(($3 * $4 * $5)) -gt "$te_max_footprint" ]; then echo -; return; fi
  run_mc_te "$1" "$2" "$3" "$4" "$5"
}

# Appends one round's value of each row to its file: "<key...> v1 v2 ...".
ts_add() {  # <file> <key> <value>
  local f=$out/$1
  touch "$f"
  if grep -q "^$2 |" "$f"; then
    sed -i "s/^$2 |\(.*\)\$/$2 |\1 $3/" "$f"
  else
    echo "$2 | $3" >> "$f"
  fi
}

run_te_scale_class() {
  rm -f "$out"/ts_*.txt
  ts_proto=(); [ "$ts_fan_sel" = tcp ] && ts_proto=(--protocol=tcp)
  ts_metadata_start || return
  local r
  for ((r = 1; r <= rounds; r++)); do
    echo "  te_scale round $r of $rounds: $(uptime | sed 's/.*load/load/')" | tee -a "$out/ts_load.txt"
    for sel in $ts_sels; do for op in $ts_ops; do for th in $ts_threads; do
      for batch in $ts_batches; do for bs in $ts_blocks; do
        local v; v=$(ts_cell "$sel" "$op" "$bs" "$batch" "$th")
        ts_add ts_sweep.txt "$sel $op $th $batch $bs" "$v"
        printf '  te_scale sweep %-7s %-5s t%s batch %-4s %9s: %s MiB/s  (%ds)\n' "$sel" "$op" "$th" \
          "$batch" "$bs" "$v" $((SECONDS - start))
      done; done
    done; done; done
    for n in $ts_ns; do
      local row; row=$(ts_fanout "$n")
      ts_add ts_fanout.txt "$n" "$row"
      echo "  te_scale fan-out $n: $row  ($((SECONDS - start))s)"
      row=$(ts_fanin "$n")
      ts_add ts_fanin.txt "$n" "$row"
      echo "  te_scale fan-in  $n: $row  ($((SECONDS - start))s)"
      if [ "$ts_fan_sel" = tcp ]; then
        local k; k=$(ts_kernel_fanin "$n")
        ts_add ts_fanin_kernel.txt "$n" "$k"
        echo "  te_scale fan-in  $n, kernel TCP: $k MiB/s  ($((SECONDS - start))s)"
      fi
    done
    for cap in $ts_caps; do
      local env=(); [ "$cap" = 0 ] || env=(MC_MAX_EP_PER_CTX=$cap)
      local row; row=$(ts_fanout "$ts_evict_n" "${env[@]}")
      # The initiator's endpoint store counters (getEndpointStoreStats).
      local counters; counters=$(grep '^result test=te_endpoints ' "$out/ts_initiator.log")
      local opened evicted busy
      opened=$(echo "$counters" | sed -n 's/.* opened=\([0-9]*\).*/\1/p')
      evicted=$(echo "$counters" | sed -n 's/.* evicted=\([0-9]*\).*/\1/p')
      busy=$(echo "$counters" | sed -n 's/.* evicted_busy=\([0-9]*\).*/\1/p')
      opened=${opened:-NA} evicted=${evicted:-NA} busy=${busy:-NA}
      local batches secs
      batches=$(sed -n 's/^result test=te_[a-z]* .* batches=\([0-9]*\) .*/\1/p' "$out/ts_initiator.log")
      secs=$(sed -n 's/^result test=te_[a-z]* .* seconds=\([0-9.]*\) .*/\1/p' "$out/ts_initiator.log")
      ts_add ts_evict.txt "$cap" "$row $opened $evicted $busy ${batches:-NA} ${secs:-NA}"
      echo "  te_scale evict cap $cap, $ts_evict_n targets: $row, endpoints opened $opened, evicted $evicted" \
        "($busy with work in flight), batches ${batches:-NA}  ($((SECONDS - start))s)"
    done
  done
  ts_metadata_stop
}

# Field <k> (1-based) of every round of a row with <f> fields per round:
# "v1 v2 ...".
ts_fields() {  # <values> <f> <k>
  echo "$1" | awk -v f="$2" -v k="$3" '{ for (i = k; i <= NF; i += f) printf "%s ", $i }'
}
ts_medr() { local v="$1"; echo "$(echo "$v" | median) ($(echo "$v" | ts_range))"; }
ts_median_of() { echo "$1" | median; }
ts_checks() { echo "$1" | tr ' ' '\n' | grep . | sort -u | tr '\n' ' ' | sed 's/ $//'; }

# The te_scale tables and their parsable lines (appended to `parsable`).
report_te_scale_class() {
  [ -s "$out/ts_sweep.txt" ] || [ -s "$out/ts_fanout.txt" ] || return 0
  echo
  echo "Transfer Engine, how cost grows (te_scale): MB/s with MB = 2^20 B, median (range) of"
  echo "$rounds alternating rounds; load averages: $(sed 's/.*load average: //' "$out/ts_load.txt" 2>/dev/null | tr '\n' ';')"
  if [ -s "$out/ts_sweep.txt" ]; then
    echo "sweep: te_* throughput per block size ('-': batch x threads x block over $te_max_footprint B)"
    printf '%-8s %-5s %2s %5s' sel op th batch
    local bs; for bs in $ts_blocks; do printf ' %22s' "$bs"; done; echo
    local key
    for sel in $ts_sels; do for op in $ts_ops; do for th in $ts_threads; do for batch in $ts_batches; do
      printf '%-8s %-5s %2s %5s' "$sel" "$op" "$th" "$batch"
      for bs in $ts_blocks; do
        key="$sel $op $th $batch $bs"
        local vals; vals=$(sed -n "s/^$key | //p" "$out/ts_sweep.txt")
        if [ -z "$vals" ] || [ "${vals%% *}" = - ]; then printf ' %22s' -; continue; fi
        printf ' %22s' "$(ts_medr "$vals")"
        parsable+=("cmp=te_scale_sweep_${sel}_${op}_t${th}_b${batch} size=$bs metric=bw_MBps mc=$(ts_median_of "$vals") range=$(echo "$vals" | ts_range)")
      done
      echo
    done; done; done; done
  fi
  local kind
  for kind in fanout fanin; do
    [ -s "$out/ts_$kind.txt" ] || continue
    echo
    if [ $kind = fanout ]; then
      echo "fan-out: one initiator to N targets (te_$ts_fan_op, $ts_fan_sel selection, block $ts_fan_block, batch $ts_fan_batch, 1 thread;"
      echo "block i to target i mod N); KiB/seg: the initiator's VmRSS growth over its opens and first transfers / N"
    else
      echo "fan-in: N initiators to one target (the same shape each, started together; MB/s their sum);"
      echo "KiB/seg: the target's peak VmRSS while they run above its VmRSS before / N; set-up: medians over them"
    fi
    echo "set-up usec (p50 over the segments): open = openSegment, first = the first transfer of a block"
    echo "(the endpoint: creation, wire-up), second = the next one; ops/open: metadata operations per openSegment"
    local kfile=$out/ts_${kind}_kernel.txt
    [ -s "$kfile" ] && echo "kernel TCP: N streams of block-sized writes into one thread (mc_perftest --limits --senders N)"
    printf '%4s %24s %18s %18s %18s %16s %12s  %s' N MB/s open_us first_us second_us KiB/seg ops/open check
    [ -s "$kfile" ] && printf '  %24s %8s' "kernel TCP MB/s" mc/kernel
    echo
    while IFS='|' read -r n vals; do
      n=${n% }
      local tp op1 fi st kb ops ck
      tp=$(ts_fields "$vals" 7 1); op1=$(ts_fields "$vals" 7 2); fi=$(ts_fields "$vals" 7 3)
      st=$(ts_fields "$vals" 7 4); kb=$(ts_fields "$vals" 7 5); ops=$(ts_fields "$vals" 7 6); ck=$(ts_fields "$vals" 7 7)
      printf '%4s %24s %18s %18s %18s %16s %12s  %s' "$n" "$(ts_medr "$tp")" "$(ts_median_of "$op1")" \
        "$(ts_median_of "$fi")" "$(ts_median_of "$st")" "$(ts_median_of "$kb")" "$(ts_median_of "$ops")" "$(ts_checks "$ck")"
      local kern="" kmed=NA
      if [ -s "$kfile" ]; then
        kern=$(sed -n "s/^$n | //p" "$kfile"); kmed=$(ts_median_of "$kern")
        printf '  %24s %8s' "$(ts_medr "$kern")" "$(ratio2 "$(ts_median_of "$tp")" "$kmed")"
      fi
      echo
      parsable+=("cmp=te_scale_${kind} size=$ts_fan_block n=$n metric=bw_MBps mc=$(ts_median_of "$tp") range=$(echo "$tp" | ts_range) open_us=$(ts_median_of "$op1") first_us=$(ts_median_of "$fi") second_us=$(ts_median_of "$st") kib_per_segment=$(ts_median_of "$kb") ops_per_open=$(ts_median_of "$ops") check=$(ts_checks "$ck" | tr ' ' ,)${kern:+ kernel_tcp_MBps=$kmed}")
    done < "$out/ts_$kind.txt"
  done
  if [ -s "$out/ts_evict.txt" ]; then
    echo
    echo "endpoint store at its limit: fan-out to $ts_evict_n targets with MC_MAX_EP_PER_CTX = cap (0: 65536),"
    echo "the initiator's endpoint store counters (getEndpointStoreStats); per eviction: the batch time"
    echo "above cap 0's, times batches / evictions"
    printf '%5s %24s %9s %9s %9s %9s %14s  %s\n' cap MB/s batches opened evicted in-flight us/eviction check
    local base=""
    while IFS='|' read -r cap vals; do
      cap=${cap% }
      local tp ck opened ev busy bt sec
      tp=$(ts_fields "$vals" 12 1); ck=$(ts_fields "$vals" 12 7); opened=$(ts_fields "$vals" 12 8)
      ev=$(ts_fields "$vals" 12 9); busy=$(ts_fields "$vals" 12 10); bt=$(ts_fields "$vals" 12 11)
      sec=$(ts_fields "$vals" 12 12)
      local b s e per
      b=$(ts_median_of "$bt"); s=$(ts_median_of "$sec"); e=$(ts_median_of "$ev")
      local tpb; tpb=$(awk -v b="$b" -v s="$s" 'BEGIN { print (b == "NA" || b <= 0) ? "NA" : 1e6 * s / b }')
      [ "$cap" = 0 ] && base=$tpb
      per=$(awk -v t="$tpb" -v t0="$base" -v e="$e" -v b="$b" 'BEGIN {
        print (t == "NA" || t0 == "" || t0 == "NA" || e == "NA" || e <= 0) ? "-" : sprintf("%.1f", (t - t0) * b / e) }')
      printf '%5s %24s %9s %9s %9s %9s %14s  %s\n' "$cap" "$(ts_medr "$tp")" "$b" "$(ts_median_of "$opened")" \
        "$e" "$(ts_median_of "$busy")" "$per" "$(ts_checks "$ck")"
      parsable+=("cmp=te_scale_evict size=$ts_fan_block n=$ts_evict_n cap=$cap metric=bw_MBps mc=$(ts_median_of "$tp") range=$(echo "$tp" | ts_range) evictions=$e evicted_in_flight=$(ts_median_of "$busy") us_per_eviction=$per check=$(ts_checks "$ck" | tr ' ' ,)")
    done < "$out/ts_evict.txt"
  fi
}

# Plot data: sweep (MiB/s against block at one thread, one line per
# selection, op and batch), fan (MiB/s against N), setup (first transfer and
# openSegment usec against N), mem (KiB per segment against N).
plot_te_scale_class() {  # <dir>
  local dir=$1 key vals
  if [ -s "$out/ts_sweep.txt" ]; then
    while IFS='|' read -r key vals; do
      local k=($key)
      [ "${vals# }" = - ] || [ "${k[2]}" != 1 ] && continue  # one thread: 8 lines at most
      local m; m=$(echo "$vals" | median)
      [ "$m" = NA ] || echo "${k[4]} $m" >> "$dir/tsweep.te_${k[1]}-${k[0]}-t${k[2]}-b${k[3]}.dat"
    done < "$out/ts_sweep.txt"
  fi
  local kind
  for kind in fanout fanin; do
    [ -s "$out/ts_$kind.txt" ] || continue
    while IFS='|' read -r key vals; do
      key=${key% }
      local v
      v=$(ts_median_of "$(ts_fields "$vals" 7 1)"); [ "$v" = NA ] || echo "$key $v" >> "$dir/tfan.$kind.dat"
      if [ -s "$out/ts_${kind}_kernel.txt" ]; then
        v=$(ts_median_of "$(sed -n "s/^$key | //p" "$out/ts_${kind}_kernel.txt")")
        [ "$v" = NA ] || echo "$key $v" >> "$dir/tfan.$kind-kernel-tcp.dat"
      fi
      v=$(ts_median_of "$(ts_fields "$vals" 7 3)"); [ "$v" = NA ] || echo "$key $v" >> "$dir/tsetup.$kind-first.dat"
      v=$(ts_median_of "$(ts_fields "$vals" 7 2)"); [ "$v" = NA ] || echo "$key $v" >> "$dir/tsetup.$kind-open.dat"
      v=$(ts_median_of "$(ts_fields "$vals" 7 5)")
      awk -v v="$v" 'BEGIN { exit !(v != "NA" && v > 0) }' && echo "$key $v" >> "$dir/tmem.$kind.dat"
    done < "$out/ts_$kind.txt"
  done
  return 0
}

# The axes of a te_scale plot panel (for bench-compare.sh's plot).
plot_labels_te_scale() {  # <kind>
  case $1 in
    tsweep) echo "set xlabel 'block size (bytes)'; set ylabel 'te throughput (MB/s, MB = 2^20 B)'" ;;
    tfan) echo "set xlabel 'N (targets of one initiator, or initiators of one target)'; set ylabel 'throughput (MB/s, MB = 2^20 B)'" ;;
    tsetup) echo "set xlabel 'N'; set ylabel 'set-up per segment (usec, p50)'" ;;
    tmem) echo "set xlabel 'N'; set ylabel 'VmRSS per segment (KiB)'" ;;
  esac
}

# SPDX-License-Identifier: Apache-2.0
# The te class of contrib/bench-compare.sh (sourced by it): the Transfer
# Engine's te_write / te_read (MC_FORCE_TCP, and UCP's default selection)
# against Mooncake's transfer_engine_bench over tcp, alternating, with the
# ceilings of the same run next to them, like with like:
#   uct_tcp    UCT put_bw / get over tcp/lo, -D zcopy, cycling through a
#              buffer as large as the TE run's (--footprint batch x threads
#              x block), the transport mc_perftest -t te_* --protocol=tcp uses,
#              for about as long as a TE run (--te-duration)
#   uct_cma    the same over sm on registered heap memory (CMA), what UCP's
#              default selection uses between two processes of one host
# Both ceilings and both sides of every mc TE run take their buffers with
# the same --alloc (--te-alloc, TE_ALLOC): pages (default), the kernel's
# base pages, as Mooncake's bench's buffers; or heap, huge-page advised, as
# ucx_perftest's. Over CMA at 64 KiB the kind of page alone moved UCT's
# put_bw from 5725-8866 MB/s (base pages) to 12637-13724 (huge pages) on
# the 2-CPU VM: a ceiling on other pages than its run is not like with like.
#   memcpy     cold memcpy of a block over that footprint (mc_perftest --limits)
#   kernel     kernel TCP over 127.0.0.1, one stream of block-sized writes
#              (mc_perftest --limits), and iperf3 where it is installed
# and te_lat (one task, submit to COMPLETED) next to UCP put latency over the
# same transport and the same kind of memory (ucp_put_lat --alloc as the TE
# runs', a round trip: twice its half round trip) and, over tcp, the kernel's
# round trip of the same size, in alternating rounds (te_latency).
# mc_perftest's TE runs warm up one batch per thread before the clock
# (--warmup_batches 1, its default), as the UCT ceilings warm up (-w): a
# first touch of the target's pages cost the 2-CPU VM 1.5-4.4 s per GiB.
# Mooncake's bench has no warm-up; its first batch is in its figure.
# Every figure in MB/s is MB = 2^20 B, as the rest of bench-compare (both TE
# tools print in --report_unit=MiB).
# Uses from bench-compare.sh: $mc, $out, $rounds, $quick, $mooncake,
# free_port, median, run_tool, iters.

te_blocks=${TE_BLOCKS:-"4096 65536 1048576 16777216"}
te_threads=${TE_THREADS:-"1 2"}
te_batch=${TE_BATCH:-128}
te_ops=${TE_OPS:-"write read"}
te_duration=${TE_DURATION:-3}
# A row's batch x threads x block above this many bytes runs with a smaller
# batch (said in its row): Mooncake's default --buffer_size, and what two
# processes of each tool can hold beside other work on a small machine.
te_max_footprint=${TE_MAX_FOOTPRINT:-1073741824}
te_lat_sizes="8 4096 65536"
te_alloc=${TE_ALLOC:-pages}
case $te_alloc in
  pages | heap) ;;
  *) echo "bench-compare: --te-alloc '$te_alloc': expected pages or heap" >&2; exit 2 ;;
esac

# The batch of a row: te_batch, halved until batch x threads x block fits.
te_row_batch() {  # <block> <threads>
  local b=$te_batch
  while [ "$b" -gt 1 ] && [ $((b * $2 * $1)) -gt "$te_max_footprint" ]; do b=$((b / 2)); done
  echo "$b"
}

# start_bg <log> <command...>: starts a target; sets te_pid.
start_bg() {
  local log=$1; shift
  : > "$log"
  "$@" > "$log" 2>&1 &
  te_pid=$!
}

stop_bg() {
  kill -TERM "$te_pid" 2>/dev/null
  for _ in $(seq 50); do kill -0 "$te_pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$te_pid" 2>/dev/null
  wait "$te_pid" 2>/dev/null
}

# mc_segment_of <log> <pid>: the segment an mc_perftest target (pid, or the
# timeout around it) printed in its log, waiting up to 60 s while it runs;
# nothing when it printed none.
mc_segment_of() {
  local seg=""
  for _ in $(seq 600); do
    seg=$(sed -n 's/^target: segment \([^,]*\),.*/\1/p' "$1")
    [ -n "$seg" ] && break
    kill -0 "$2" 2>/dev/null || break
    sleep 0.1
  done
  echo "$seg"
}

# The throughput of an initiator's 'Test completed: ... throughput X MiB/s'
# line (both tools print it), or nothing.
te_throughput() { sed -n 's/^.*Test completed:.* throughput \([0-9.]*\) MiB\/s.*$/\1/p' "$1" | tail -1; }

# run_mooncake <op> <block> <batch> <threads>: one target/initiator pair of
# Mooncake's bench over tcp; prints MiB/s or NA. P2PHANDSHAKE takes a port
# of its own whatever --local_server_name says: the target's log names it.
run_mooncake() {
  local op=$1 bs=$2 batch=$3 th=$4 buf=$(($2 * $3 * $4)) seg="" ready=""
  local log=$out/te_mooncake_target.log ilog=$out/te_mooncake_initiator.log
  start_bg "$log" timeout $((te_duration + 60)) "$mooncake" --mode=target \
    --metadata_server=P2PHANDSHAKE --local_server_name=127.0.0.1 --protocol=tcp --buffer_size=$buf
  for _ in $(seq 300); do
    seg=$(sed -n 's/.*P2P handshake, listening on \([0-9.]*:[0-9]*\).*/\1/p' "$log" | tail -1)
    grep -q 'TcpTransport: listen on port' "$log" && ready=yes
    [ -n "$seg" ] && [ -n "$ready" ] && break
    kill -0 "$te_pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$seg" ] || [ -z "$ready" ]; then
    { echo "--- mooncake target $op $bs: no listening line"; tail -3 "$log"; } >> "$out/failures.log"
    stop_bg; echo NA; return
  fi
  sleep 1  # its listener takes a moment more (peers/README)
  timeout $((te_duration + 60)) "$mooncake" --mode=initiator --metadata_server=P2PHANDSHAKE \
    --local_server_name=127.0.0.1 --segment_id="$seg" --protocol=tcp --operation="$op" \
    --batch_size="$batch" --block_size="$bs" --threads="$th" --duration="$te_duration" \
    --buffer_size=$buf --report_unit=MiB > "$ilog" 2>&1
  stop_bg
  local v; v=$(te_throughput "$ilog")
  [ -n "$v" ] || { echo "--- mooncake initiator $op $bs"; tail -3 "$ilog"; } >> "$out/failures.log"
  echo "${v:-NA}"
}

# run_mc_te <tcp|default> <op> <block> <batch> <threads>: mc_perftest's
# target and initiator; prints MiB/s or NA. Its lanes go to te_lanes.txt.
run_mc_te() {
  local sel=$1 op=$2 bs=$3 batch=$4 th=$5 buf=$(($3 * $4 * $5)) seg=""
  local log=$out/te_mc_target.log ilog=$out/te_mc_initiator.log proto=()
  [ "$sel" = tcp ] && proto=(--protocol=tcp)
  proto+=(--alloc="$te_alloc")
  start_bg "$log" timeout $((te_duration + 60)) "$mc" -t "te_$op" --mode=target \
    --local_server_name=127.0.0.1 "${proto[@]}" --buffer_size=$buf
  seg=$(mc_segment_of "$log" "$te_pid")
  if [ -z "$seg" ]; then
    { echo "--- mc target $sel $op $bs: no segment line"; tail -3 "$log"; } >> "$out/failures.log"
    stop_bg; echo NA; return
  fi
  timeout $((te_duration + 60)) "$mc" -t "te_$op" --segment_id="$seg" \
    --local_server_name=127.0.0.1 "${proto[@]}" --batch_size="$batch" --block_size="$bs" \
    --threads="$th" --duration="$te_duration" --report_unit=MiB > "$ilog" 2>&1
  stop_bg
  local v; v=$(te_throughput "$ilog")
  [ -n "$v" ] || { echo "--- mc initiator $sel $op $bs"; tail -3 "$ilog"; } >> "$out/failures.log"
  echo "$sel $op $bs $th $(sed -n 's/^  transport    //p' "$ilog")" >> "$out/te_lanes.txt"
  echo "${v:-NA}"
}

# The ceiling rows of one TE row: UCT over tcp and over sm/CMA with the
# same footprint, iterations enough to go round it at least twice, after a
# warm-up of one whole round, as the TE runs warm up one batch per thread
# (the whole footprint): the first write to a page costs the VM far more
# than the next ones (UCT tcp put_bw at 1 MiB over 128 MiB of base pages:
# 1356-1412 MB/s with 25 warm-up iterations, 5734-6148 with 128).
# A ceiling then runs about as long as a TE run (te_duration), its count
# sized by a first, short run of the same test: the TE figure is an average
# over seconds, and a run of 0.1 s caught one of the VM loopback's two
# modes (UCT tcp put_bw at 64 KiB over 16 MiB, 6 alternating rounds: runs
# of 2000 messages, 0.1-0.17 s, read 1353-3462 MB/s; runs of 2.3-3.8 s
# read 1354-2199; docs/performance.md).
run_ceiling() {  # <uct tcp|cma> <op> <block> <footprint>
  local test=put_bw; [ "$2" = read ] && test=get
  local n; n=$(iters bw "$3" "")
  local count=${n#-n }; count=${count%% *}
  local slots=$(($4 / $3))
  [ "$count" -lt $((2 * slots)) ] && count=$((2 * slots))
  local warm=$((slots > 2 ? slots : 2))
  local args=(-x tcp -d lo --alloc "$te_alloc")
  [ "$1" = cma ] && args=(-x sm --alloc "$te_alloc")
  # Unpinned, as the TE runs are (both tools' targets and initiators).
  local keep_c=("${cpu_c[@]}") keep_s=("${cpu_s[@]}")
  cpu_c=() cpu_s=()
  local run=(mc bw "" -t "$test" -s "$3" -w "$warm" "${args[@]}" -D zcopy -O 16 --footprint "$4")
  local first v=NA
  first=$(run_tool "${run[@]}" -n "$count")
  if [ "$first" != NA ]; then
    count=$(awk -v r="$first" -v d="$te_duration" -v b="$3" -v c="$count" \
      'BEGIN { n = int(r * 1048576 * d / b); print (n > c) ? n : c }')
    v=$(run_tool "${run[@]}" -n "$count")
  fi
  cpu_c=("${keep_c[@]}") cpu_s=("${keep_s[@]}")
  echo "$v"
}

# round_column <file> <n>: column n of a file of rounds, one line.
round_column() { awk -v c="$2" '{ printf "%s ", $c }' "$1"; }

# round_trip <half round trip or NA>: twice it.
round_trip() { awk -v v="$1" 'BEGIN { print (v == "NA") ? "NA" : sprintf("%.3f", 2 * v) }'; }

# round_ratios "<a1 a2 ...>" "<b1 b2 ...>": the median of a_i / b_i.
round_ratios() {
  local a b r="" i
  read -ra a <<< "$1"
  read -ra b <<< "$2"
  for ((i = 0; i < ${#a[@]}; i++)); do r+=" $(ratio2 "${a[i]}" "${b[i]:-NA}")"; done
  echo "${r:-NA}" | median
}

# te_round <op> <block> <threads> <round>: one round of a row, its five
# figures (mooncake tcp default uct_tcp uct_cma) a line of the row's file.
te_round() {
  local op=$1 bs=$2 th=$3 batch; batch=$(te_row_batch "$bs" "$th")
  local fp=$((bs * batch * th)) mk=NA tcp def ut uc
  [ -n "$mooncake" ] && mk=$(run_mooncake "$op" "$bs" "$batch" "$th")
  tcp=$(run_mc_te tcp "$op" "$bs" "$batch" "$th")
  def=$(run_mc_te default "$op" "$bs" "$batch" "$th")
  ut=$(run_ceiling tcp "$op" "$bs" "$fp")
  uc=$(run_ceiling cma "$op" "$bs" "$fp")
  echo "$mk $tcp $def $ut $uc" >> "$out/te_row.$op.$bs.$th"
  printf '  te %-5s %9s t%s batch %-4s round %s/%s mc-tcp %9s  mc-default %9s  mooncake %9s  uct-tcp %9s  uct-cma %9s  (%ds)\n' \
    "$op" "$bs" "$th" "$batch" "$4" "$rounds" "$tcp" "$def" "$mk" "$ut" "$uc" $((SECONDS - start))
}

# te_row <op> <block> <threads>: the row's medians and ratios from its rounds.
te_row() {
  local op=$1 bs=$2 th=$3 batch; batch=$(te_row_batch "$bs" "$th")
  local f=$out/te_row.$op.$bs.$th mk tcp def ut uc
  mk=$(round_column "$f" 1) tcp=$(round_column "$f" 2) def=$(round_column "$f" 3)
  ut=$(round_column "$f" 4) uc=$(round_column "$f" 5)
  # The ratios are the median of each round's own: a round's runs are
  # seconds apart, while two columns' medians can come from different modes
  # of this VM's loopback (te_latency).
  echo "$op $bs $th $batch $(echo "$tcp" | median) $(echo "$def" | median) $(echo "$mk" | median) \
$(echo "$ut" | median) $(echo "$uc" | median) $(round_ratios "$tcp" "$mk") $(round_ratios "$tcp" "$ut") \
$(round_ratios "$def" "$uc")" >> "$out/te.txt"
  echo "$op $bs $th $batch mooncake: $mk| tcp: $tcp| default: $def| uct_tcp: $ut| uct_cma: $uc" \
    >> "$out/te_rounds.txt"
  rm -f "$f"
}

# Machine limits at each TE block over the footprint of its largest row:
# memcpy hot and cold, kernel TCP; iperf3 up to 1 MiB writes.
te_limits() {
  for bs in $te_blocks; do
    local th_max=0 th
    for th in $te_threads; do [ "$th" -gt "$th_max" ] && th_max=$th; done
    local fp=$((bs * $(te_row_batch "$bs" "$th_max") * th_max))
    local ip=NA
    "$mc" --limits -s "$bs" --footprint "$fp" 2>/dev/null | awk -v s="$bs" -v fp="$fp" -F: '
      /memcpy/ && /cold/ { split($2, a, " "); c = a[1]; next } /memcpy/ { split($2, a, " "); m = a[1] }
      /one stream/ { split($2, a, " "); t = a[1] } END { printf "%s %s %s %s %s", s, fp, m, c, t }' \
      > "$out/te_limits.row"
    if command -v iperf3 > /dev/null && [ "$bs" -le 1048576 ]; then
      port=$(free_port) || exit 1
      timeout 20 iperf3 -s -1 -p "$port" > /dev/null 2>&1 &
      local srv=$!
      sleep 0.3
      ip=$(timeout 15 iperf3 -c 127.0.0.1 -p "$port" -t 2 -l "$bs" -J 2>/dev/null |
           awk -F: '/"bits_per_second"/ { v = $2 } END { gsub(/[ ,]/, "", v); if (v != "") printf "%.2f", v / 8 / 1048576; else print "NA" }')
      kill "$srv" 2>/dev/null; wait "$srv" 2>/dev/null
    fi
    echo "$(cat "$out/te_limits.row") ${ip:-NA}" >> "$out/te_limits.txt"
  done
  rm -f "$out/te_limits.row"
}

# te_lat next to UCP put latency over the same transport, per size: p50,
# p99, p99.9 of mc_perftest -t te_lat, and ucp_put_lat's median half round
# trip x 2 (a write completes when the put is acknowledged: a round trip),
# with tcp's sockets served in the test threads' progress (UCX's way, the
# default) and on an event-loop thread (--async thread: the engine's way,
# so a target that never calls the engine is served). Over tcp, also the
# kernel's own round trip of the size out and 8 B back (mc_perftest
# --limits): this VM's loopback TCP runs in modes that change within
# seconds (its 64 KiB round trip about 22 us in one, 52 in the other), so
# the tools alternate in $rounds rounds, each round's te/ucp ratio is taken
# inside the round, and the row shows the medians.
te_latency() {
  local n=2000; [ "$quick" = yes ] && n=300
  for sel in tcp default; do
    local proto=() x=()
    [ "$sel" = tcp ] && { proto=(--protocol=tcp); x=(-x tcp); }
    for op in write read; do
      local r
      rm -f "$out"/te_lat_round.*
      for ((r = 1; r <= rounds; r++)); do
        local log=$out/te_mc_target.log ilog=$out/te_lat.log seg=""
        start_bg "$log" timeout 300 "$mc" -t te_lat --mode=target --local_server_name=127.0.0.1 \
          "${proto[@]}" --alloc="$te_alloc" --buffer_size=1m
        seg=$(mc_segment_of "$log" "$te_pid")
        timeout 300 "$mc" -t te_lat --segment_id="$seg" --local_server_name=127.0.0.1 "${proto[@]}" \
          --alloc="$te_alloc" --operation="$op" --iterations=$n > "$ilog" 2>&1
        stop_bg
        for s in $te_lat_sizes; do
          local row p50 p99 p999 ucp thr kern=NA
          row=$(grep "^result test=te_lat op=$op block=$s " "$ilog")
          p50=$(echo "$row" | sed -n 's/.* p50_us=\([0-9.]*\).*/\1/p')
          p99=$(echo "$row" | sed -n 's/.* p99_us=\([0-9.]*\).*/\1/p')
          p999=$(echo "$row" | sed -n 's/.* p999_us=\([0-9.]*\).*/\1/p')
          # Registered user memory, as the engine's (sm moves it by CMA).
          ucp=$(round_trip "$(run_tool mc lat "" -t ucp_put_lat -s "$s" -n $n -w 100 \
            --alloc "$te_alloc" "${x[@]}")")
          server_args=(--async thread)
          thr=$(round_trip "$(run_tool mc lat "" -t ucp_put_lat -s "$s" -n $n -w 100 \
            --alloc "$te_alloc" "${x[@]}" --async thread)")
          server_args=()
          if [ "$sel" = tcp ]; then
            kern=$("$mc" --limits -s "$s" 2>/dev/null | awk -F: '
              /ping-pong, 8 B/ { split($2, a, " "); h = a[1] } /round trip, [0-9]+ B out, 8 B back/ { split($2, a, " "); t = a[1] }
              END { if (t != "") print t; else if (h != "") printf "%.3f\n", 2 * h; else print "NA" }')
          fi
          echo "${p50:-NA} ${p99:-NA} ${p999:-NA} $ucp $thr ${kern:-NA}" >> "$out/te_lat_round.$s"
        done
      done
      for s in $te_lat_sizes; do
        local f=$out/te_lat_round.$s col=() c
        for c in 1 2 3 4 5 6; do
          col+=("$(round_column "$f" $c | median |
            awk '{ print ($1 == "NA") ? "NA" : sprintf("%.3f", $1) }')")
        done
        echo "$sel $op $s ${col[*]} $(round_ratios "$(round_column "$f" 1)" "$(round_column "$f" 4)")" \
          "$(round_ratios "$(round_column "$f" 1)" "$(round_column "$f" 5)")" >> "$out/te_lat.txt"
        echo "$sel $op $s rounds (p50 p99 p99.9 ucp-rtt ucp-thr kernel): $(tr '\n' '|' < "$f")" \
          >> "$out/te_rounds.txt"
      done
      rm -f "$out"/te_lat_round.*
    done
  done
}

run_te_class() {
  rm -f "$out/te.txt" "$out/te_rounds.txt" "$out/te_lanes.txt" "$out/te_limits.txt" "$out/te_lat.txt"
  [ -n "$mooncake" ] && [ ! -x "$mooncake" ] && { echo "  te: $mooncake is not executable: no Mooncake rows"; mooncake=""; }
  [ -n "$mooncake" ] || echo "  te: no Mooncake bench (give --mooncake-bench PATH): its column reads NA"
  rm -f "$out"/te_row.*
  # Round after round of every row, not a row's rounds back to back: this
  # VM's loopback changes mode for seconds to minutes, and a row whose
  # rounds all fell in one slow spell read 0.74 of UCT where 8 pairs by
  # hand read 0.64-1.21, median 1.01 (docs/performance.md).
  local r op bs th
  for ((r = 1; r <= rounds; r++)); do
    for op in $te_ops; do
      for bs in $te_blocks; do
        for th in $te_threads; do te_round "$op" "$bs" "$th" "$r"; done
      done
    done
  done
  for op in $te_ops; do
    for bs in $te_blocks; do
      for th in $te_threads; do te_row "$op" "$bs" "$th"; done
    done
  done
  te_limits
  te_latency
}

fmt2() { awk -v v="$1" 'BEGIN { print (v == "NA" || v == "") ? "NA" : sprintf("%.2f", v) }'; }
ratio2() { awk -v a="$1" -v b="$2" 'BEGIN { print (a == "NA" || b == "NA" || a == "" || b == "" || b <= 0) ? "NA" : sprintf("%.2f", a / b) }'; }

# The te tables and their parsable lines (appended to the array `parsable`).
report_te_class() {
  [ -s "$out/te.txt" ] || return 0
  echo
  echo "Transfer Engine, batch x block per thread, MB/s with MB = 2^20 B, medians of $rounds alternating rounds;"
  echo "uct-tcp / uct-cma: UCT put_bw (write) or get (read) -D zcopy -O 16 over the same footprint,"
  echo "  each run about --te-duration ($te_duration s) long, as the TE runs (its count from a short run first);"
  echo "every mc run, TE and UCT, on --alloc $te_alloc buffers ($([ "$te_alloc" = heap ] && echo "huge-page advised" || echo "base pages, as Mooncake's bench's"));"
  echo "cold memcpy and kernel TCP (one stream of block-sized writes) from mc_perftest --limits;"
  echo "mc runs one warm-up batch per thread before its clock (--warmup_batches), as the UCT rows warm up;"
  echo "Mooncake's bench has none: its first batch, which touches the target's pages, is timed."
  echo "tcp/mk, tcp/uct, def/cma: the median of each round's own ratio; def/cold: of the medians."
  printf '%-5s %9s %2s %5s %10s %10s %10s %6s %10s %10s %10s %10s %6s %6s %6s\n' op block th batch \
    mc-tcp mc-default mooncake tcp/mk uct-tcp uct-cma memcpy-cold kernel-tcp tcp/uct def/cma def/cold
  while read -r op bs th batch tcp def mk ut uc rmk rut ruc; do
    local cold ktcp
    # Rows of an older run have no per-round ratios: the medians' then.
    [ -n "$rmk" ] || { rmk=$(ratio2 "$tcp" "$mk"); rut=$(ratio2 "$tcp" "$ut"); ruc=$(ratio2 "$def" "$uc"); }
    rmk=$(fmt2 "$rmk") rut=$(fmt2 "$rut") ruc=$(fmt2 "$ruc")
    cold=$(awk -v s="$bs" '$1 == s { print $4 }' "$out/te_limits.txt" 2>/dev/null)
    ktcp=$(awk -v s="$bs" '$1 == s { print $5 }' "$out/te_limits.txt" 2>/dev/null)
    printf '%-5s %9s %2s %5s %10s %10s %10s %6s %10s %10s %10s %10s %6s %6s %6s\n' "$op" "$bs" "$th" "$batch" \
      "$tcp" "$def" "$mk" "$rmk" "$ut" "$uc" "${cold:-NA}" "${ktcp:-NA}" \
      "$rut" "$ruc" "$(ratio2 "$def" "$cold")"
    parsable+=("cmp=te_${op}_tcp_t${th} size=$bs metric=bw_MBps mc=$tcp peer=$mk ratio=$rmk batch=$batch peer_tool=mooncake_tcp")
    parsable+=("cmp=te_${op}_default_t${th} size=$bs metric=bw_MBps mc=$def peer=$mk ratio=$(ratio2 "$def" "$mk") batch=$batch peer_tool=mooncake_tcp")
    parsable+=("cmp=te_${op}_tcp_vs_uct_tcp_t${th} size=$bs metric=bw_MBps mc=$tcp peer=$ut ratio=$rut batch=$batch")
    parsable+=("cmp=te_${op}_default_vs_uct_cma_t${th} size=$bs metric=bw_MBps mc=$def peer=$uc ratio=$ruc batch=$batch")
    parsable+=("cmp=te_${op}_default_vs_memcpy_cold_t${th} size=$bs metric=bw_MBps mc=$def peer=${cold:-NA} ratio=$(ratio2 "$def" "$cold") batch=$batch")
    parsable+=("cmp=te_${op}_mooncake_vs_kernel_tcp_t${th} size=$bs metric=bw_MBps mc=$mk peer=${ktcp:-NA} ratio=$(ratio2 "$mk" "$ktcp") batch=$batch")
  done < "$out/te.txt"
  if [ -s "$out/te_limits.txt" ]; then
    echo "limits (MB/s, MB = 2^20 B): $(awk '{ printf "%s B over %s B: memcpy %s hot, %s cold, kernel TCP %s, iperf3 %s; ", $1, $2, $3, $4, $5, $6 }' "$out/te_limits.txt")"
  fi
  if [ -s "$out/te_lanes.txt" ]; then
    echo "lanes (getSegmentPaths after each run, the last of each selection and op):"
    for sel in tcp default; do for op in write read; do
      awk -v s="$sel" -v o="$op" '$1 == s && $2 == o { l = $0 } END { if (l != "") print "  " l }' "$out/te_lanes.txt"
    done; done
  fi
  if [ -s "$out/te_lat.txt" ]; then
    echo
    echo "te_lat: one task per batch, usec from submitTransfer to COMPLETED; ucp-rtt: 2 x ucp_put_lat's median"
    echo "half round trip over the same transport (ucp-thr: with --async thread, sockets served by an"
    echo "event-loop thread as in the engine); kernel: TCP round trip of the size out and 8 B back"
    echo "(mc_perftest --limits); over = te p50 - ucp-rtt (the engine's own cost); each figure is the"
    echo "median over $rounds alternating rounds, the ratios the median of each round's own"
    printf '%-8s %-5s %6s %9s %9s %9s %9s %9s %9s %9s %6s %6s\n' sel op size p50 p99 p99.9 ucp-rtt ucp-thr kernel over p50/ucp p50/thr
    while read -r sel op s p50 p99 p999 ucp thr kern rucp rthr; do
      [ -n "$rucp" ] || { rucp=$(ratio2 "$p50" "$ucp"); rthr=$(ratio2 "$p50" "$thr"); }  # an older run's
      rucp=$(fmt2 "$rucp") rthr=$(fmt2 "$rthr") kern=${kern:-NA}
      local over; over=$(awk -v a="$p50" -v b="$ucp" 'BEGIN { print (a == "NA" || b == "NA") ? "NA" : sprintf("%.3f", a - b) }')
      printf '%-8s %-5s %6s %9s %9s %9s %9s %9s %9s %9s %6s %6s\n' "$sel" "$op" "$s" "$p50" "$p99" "$p999" "$ucp" "$thr" "$kern" "$over" "$rucp" "$rthr"
      parsable+=("cmp=te_lat_${op}_${sel} size=$s metric=lat_us mc=$p50 peer=$ucp ratio=$rucp p99=$p99 p999=$p999 peer_tool=ucp_put_rtt peer_thread=$thr kernel_rtt=$kern")
    done < "$out/te_lat.txt"
  fi
}

# Plot data of the te rows, one thread: MiB/s against block size, per tool.
plot_te_class() {  # <dir>
  [ -s "$out/te.txt" ] || return 0
  while read -r op bs th batch tcp def mk ut uc; do
    [ "$th" = 1 ] || continue
    [ "$tcp" != NA ] && echo "$bs $tcp" >> "$1/te.mc-te_${op}-tcp.dat"
    [ "$def" != NA ] && echo "$bs $def" >> "$1/te.mc-te_${op}-default.dat"
    [ "$mk" != NA ] && echo "$bs $mk" >> "$1/te.mooncake-${op}-tcp.dat"
    [ "$ut" != NA ] && echo "$bs $ut" >> "$1/te.uct-${op}-tcp-footprint.dat"
    [ "$uc" != NA ] && echo "$bs $uc" >> "$1/te.uct-${op}-cma-footprint.dat"
  done < "$out/te.txt"
}

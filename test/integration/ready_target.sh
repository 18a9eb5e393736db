# SPDX-License-Identifier: Apache-2.0
# start_ready_target WHAT CMD...: starts a benchmark target (mc.bench,
# te_bench) that serves until its standard input closes and prints
# "READY segment=<name> ..." once it does. Its input is a fifo held open on
# fd 3, its output goes to $tmp/target.out and .err; sets target_pid and
# segment, or prints both outputs and "FAIL: WHAT target did not start" and
# exits 1. Sourced by the bindings' checks; needs $tmp.
start_ready_target() {
  local what=$1
  shift
  mkfifo "$tmp/target.in"
  "$@" < "$tmp/target.in" > "$tmp/target.out" 2> "$tmp/target.err" &
  target_pid=$!
  exec 3> "$tmp/target.in"
  for _ in $(seq 600); do
    grep -q '^READY' "$tmp/target.out" 2>/dev/null && break
    kill -0 "$target_pid" 2>/dev/null || break
    sleep 0.05
  done
  segment=$(sed -n 's/^READY segment=\([^ ]*\).*/\1/p' "$tmp/target.out")
  [ -n "$segment" ] || {
    cat "$tmp/target.out" "$tmp/target.err"
    echo "FAIL: $what target did not start"
    exit 1
  }
}

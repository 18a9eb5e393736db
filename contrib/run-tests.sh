#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs dependencies, builds mc and every test, runs them all, and ends
# with one line: "summary: N passed, N failed, N skipped".
#   BUILD_DIR=dir CONFIGURE_FLAGS="--enable-asan --enable-ubsan" contrib/run-tests.sh [--unit|--build-only] [gtest args]
# --unit runs only the unit tests (mc_gtest); --build-only builds what the
# same command would run, and runs nothing (CI builds a later stage's tree
# so while an earlier stage's tests run).
#   BUILD_SUBDIRS="src/ucs ... test/gtest": build only these directories of
#     the build tree (make check TESTS= in each, in order)
#   UNIT_PROGRAM=mc_gtest_threads: the unit-test program that is built, in
#     place of make check's mc_gtest, when BUILD_SUBDIRS names test/gtest,
#     and run
#   UNIT_SHARDS=N: the unit tests run as N processes at once, each a gtest
#     shard (default 2; 1 runs them in one process)
#   SANITIZER_LOG_DIR=dir: the sanitizers' log_path directory (set by the
#     caller in ASAN_/UBSAN_/TSAN_OPTIONS); a report that appears there fails
#     the unit tests or the check that was running, whichever process wrote it
# A program that a check calls and that is not installed fails that check,
# named (see command_not_found_handle below).
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${BUILD_DIR:-$top/build}
unit_only=no
build_only=no
case ${1:-} in
  --unit) unit_only=yes; shift ;;
  --build-only) build_only=yes; shift ;;
esac
shards=${UNIT_SHARDS:-2}
[[ $shards =~ ^[1-9][0-9]*$ ]] || { echo "UNIT_SHARDS=$shards: not a number of processes"; exit 1; }
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT

"$top/contrib/install-deps.sh" || exit 1

# Builds the tests and their helper modules without running them through
# automake's harness, so their output is shown here. Before the handler
# below: configure and a make that regenerates the build files probe for
# programs that may be absent (cygpath, print), which is no missing program.
unit_program=${UNIT_PROGRAM:-mc_gtest}
for d in ${BUILD_SUBDIRS:-.}; do
  unit_build=()
  if [ "$unit_program" != mc_gtest ] && [ "$d" = test/gtest ]; then
    unit_build=("check_PROGRAMS=$unit_program")
  fi
  "$top/contrib/build.sh" -C "$d" check TESTS= "${unit_build[@]}" ||
    { echo "summary: 0 passed, 1 failed (build)"; exit 1; }
done
[ "$build_only" = no ] || exit 0

# Bash runs command_not_found_handle for a program it cannot find; exported,
# it runs in every bash script the checks start (also inside network
# namespaces) and records the name, so the check fails naming it even when
# its script ignored the exit status. Not an MC_ name: mc warns about every
# MC_ variable it does not know, in every process the tests start.
export RUN_TESTS_MISSING_PROGRAMS=$results/missing-programs
command_not_found_handle() {
  echo "$1" >> "$RUN_TESTS_MISSING_PROGRAMS"
  echo "${0##*/}: $1: command not found; contrib/install-deps.sh installs no package that provides it" >&2
  return 127
}
export -f command_not_found_handle

# A check that runs a test framework of its own (pytest) appends a line
# "<framework> <passed> <failed> <skipped>" to this file; its counts join
# the summary's, besides the check's own result.
export RUN_TESTS_COUNTS=$results/counts

# The checks that build against an installed mc share one make install of
# the build (test/integration/staged_install.sh), made by the first of them.
export RUN_TESTS_STAGING=$results/staging

passed=0; failed=0; skipped=0

# Prints the sanitizer reports written since the last call and moves them
# aside; true when there was one.
sanitizer_reports() {
  local dir=${SANITIZER_LOG_DIR:-} f found=1
  [ -n "$dir" ] || return 1
  for f in "$dir"/*; do
    [ -f "$f" ] || continue
    echo "sanitizer report $f:"
    cat "$f"
    mkdir -p "$dir/seen" && mv "$f" "$dir/seen/"
    found=0
  done
  return $found
}

# Counts one gtest XML report into the totals.
count_gtest() {
  local xml=$1 t f e s
  t=$(grep -o -m1 'tests="[0-9]*"' "$xml" | grep -o '[0-9]*')
  f=$(grep -o -m1 'failures="[0-9]*"' "$xml" | grep -o '[0-9]*')
  e=$(grep -o -m1 'errors="[0-9]*"' "$xml" | grep -o '[0-9]*')
  s=$(grep -c 'result="skipped"' "$xml")
  failed=$((failed + f + e))
  skipped=$((skipped + s))
  passed=$((passed + t - f - e - s))
}

# The CPU time, in clock ticks, of the processes this shell has waited for:
# cutime + cstime, fields 16 and 17 of /proc/$$/stat ($$ is this shell also
# in a subshell, whose own children would not count), counted after the
# command name in parentheses, field 2, which may hold spaces.
children_ticks() {
  local stat f
  stat=$(< /proc/$$/stat)
  read -r -a f <<< "${stat##*) }"
  echo $((f[13] + f[14]))
}
clock_tck=$(getconf CLK_TCK)

# The unit tests wait more than they compute (leases that expire, deadlines,
# services restarted: 78 s of CPU in 167 s of a release build's run on 2
# cores), so they run as gtest shards, that many processes at once, each
# test in one of them. The first shard's output shows as it runs, the
# others' after it.
echo
echo "=== unit tests ($unit_program, $shards shards at once) ==="
unit_start=$SECONDS
unit_ticks=$(children_ticks)
# unit_shard I [gtest args]: runs shard I.
unit_shard() {
  local i=$1
  shift
  GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i \
    "$build_dir/test/gtest/$unit_program" --gtest_output="xml:$results/gtest-$i.xml" "$@"
}
unit_shard 0 "$@" &
pids=($!)
for ((i = 1; i < shards; i++)); do
  unit_shard "$i" "$@" > "$results/gtest-$i.log" 2>&1 &
  pids+=($!)
done
for ((i = 0; i < shards; i++)); do
  rc=0
  wait "${pids[$i]}" || rc=$?
  if [ $i -gt 0 ]; then
    echo
    echo "=== unit tests, shard $((i + 1)) of $shards ==="
    cat "$results/gtest-$i.log"
  fi
  before=$failed
  if [ -f "$results/gtest-$i.xml" ]; then
    count_gtest "$results/gtest-$i.xml"
  else
    echo "$unit_program, shard $((i + 1)) of $shards, produced no report (exit $rc)"
    failed=$((failed + 1))
  fi
  [ $rc -ne 0 ] && [ $failed -eq $before ] && failed=$((failed + 1))
done
echo "=== unit tests: $((SECONDS - unit_start)) s, $((($(children_ticks) - unit_ticks) / clock_tck)) s of CPU ==="
sanitizer_reports && failed=$((failed + 1))

# Prints the programs found missing since the last call and forgets them;
# true when there was one.
missing_programs() {
  [ -s "$RUN_TESTS_MISSING_PROGRAMS" ] || return 1
  echo "$(sort -u "$RUN_TESTS_MISSING_PROGRAMS" | tr '\n' ' ')"
  rm -f "$RUN_TESTS_MISSING_PROGRAMS"
}

# Runs one named check script; it passes when it exits 0, is skipped (and
# says so) when it exits 77, and fails otherwise.
run_check() {
  local name=$1; shift
  echo
  echo "=== $name ==="
  local start=$SECONDS ticks0
  ticks0=$(children_ticks)
  rm -f "$RUN_TESTS_COUNTS"
  "$@"
  local rc=$? ticks took missing fw p f s
  ticks=$(( $(children_ticks) - ticks0 ))
  took="$((SECONDS - start)) s, $((ticks / clock_tck)) s of CPU"
  if [ -s "$RUN_TESTS_COUNTS" ]; then
    while read -r fw p f s; do
      passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
      took+="; $fw: $p passed, $f failed, $s skipped"
    done < "$RUN_TESTS_COUNTS"
  fi
  if sanitizer_reports; then
    echo "--- $name: FAILED (sanitizer report, exit $rc; $took)"
    failed=$((failed + 1))
  elif missing=$(missing_programs); then
    echo "--- $name: FAILED (called programs that are not installed: ${missing% }; exit $rc; $took)"
    failed=$((failed + 1))
  elif [ $rc -eq 0 ]; then
    echo "--- $name: passed ($took)"
    passed=$((passed + 1))
  elif [ $rc -eq 77 ]; then
    echo "--- $name: SKIPPED ($took)"
    skipped=$((skipped + 1))
  else
    echo "--- $name: FAILED ($took)"
    failed=$((failed + 1))
  fi
}

# Each program of install-deps.sh's table (but the --bench ones) is found.
programs_installed() {
  local prog pkg rest bad=0
  while read -r prog pkg rest; do
    case $prog in ''|'#'*) continue ;; esac
    case $rest in *--bench*|*--fresh-check*|*--deb*) continue ;; esac
    if ! command -v "$prog" > /dev/null; then
      echo "missing: $prog (package $pkg, run by $rest) is not in PATH"
      bad=1
    fi
  done < <("$top/contrib/install-deps.sh" --programs)
  [ $bad -eq 0 ] && echo "every program of contrib/install-deps.sh --programs is in PATH"
  return $bad
}

if [ "$unit_only" = no ]; then
  run_check "the programs the tests call, from contrib/install-deps.sh's packages" \
    programs_installed
  run_check "docs/configuration.md reference matches the tables" \
    "$top/contrib/gen-config-doc.sh" --check "$build_dir"
  run_check "docs: README's and docs/ links resolve, every page linked, docs/architecture.md's paths exist, nothing refers outside the tree" \
    "$top/test/integration/docs_check.sh" "$top"
  run_check "make install: headers, libraries, modules, pkg-config, and a program built against them" \
    "$top/test/integration/install_check.sh" "$build_dir"
  run_check "the installed API: an embedder of the installed headers alone, UCP's inside not installed, no API symbol gone (test/integration/abi/)" \
    "$top/test/integration/abi_check.sh" "$build_dir"
  run_check "man pages: made from --help, rendered, every option on them; --version" \
    "$top/test/integration/man_check.sh" "$build_dir"
  run_check "examples/uct_hello_world over self, tcp and sm" \
    env UCT_HELLO_WORLD="$build_dir/examples/uct_hello_world" "$top/examples/run_uct_hello_world.sh"
  run_check "mc_perftest in loopback and client/server modes over self, tcp and sm" \
    "$top/test/integration/perftest_check.sh" "$build_dir"
  run_check "examples/ucp_client_server over tcp, sm and the default selection" \
    env UCP_CLIENT_SERVER="$build_dir/examples/ucp_client_server" "$top/examples/run_ucp_client_server.sh"
  run_check "examples/transfer_engine_example and the C example: two processes over tcp and sm" \
    env TE_EXAMPLE="$build_dir/examples/transfer_engine_example" \
    TE_C_EXAMPLE="$build_dir/examples/transfer_engine_c_example" "$top/examples/run_transfer_engine.sh"
  run_check "the UCP C API: valid C11 header, a C program moving data" \
    "$top/test/integration/c_api_check.sh" "$build_dir"
  run_check "the Go binding (bindings/go): go vet, go test over two processes, the P2P store example" \
    "$top/test/integration/go_check.sh" "$build_dir"
  run_check "the Rust bindings (bindings/rust): cargo test over two processes, te_bench" \
    "$top/test/integration/rust_check.sh" "$build_dir"
  run_check "the Python package (bindings/python): pytest over two processes, the installed package, mc.bench" \
    "$top/test/integration/python_check.sh" "$build_dir"
  run_check "Mooncake's C and C++ APIs: installed <mooncake/transfer_engine_c.h> and <mooncake/transfer_engine.h>, -ltransfer_engine, two processes over P2PHANDSHAKE, etcd, Redis" \
    "$top/test/integration/mooncake_c_api_check.sh" "$build_dir"
  run_check "mc_info -e / -p: lanes, rejections with reasons, protocol tables" \
    "$top/test/integration/info_check.sh" "$build_dir"
  run_check "mc_info -d / -m: cuda_copy (or why there is no GPU) and nvmeof" \
    "$top/test/integration/gpu_storage_info_check.sh" "$build_dir"
  run_check "vendor plugin: out-of-tree template against an installed mc, mc_uct_check, UCP over it, ABI refusal" \
    "$top/test/integration/plugin_check.sh" "$build_dir"
  run_check "Transfer Engine under real faults: 2 namespaces, 2 rails; link down, loss, SIGSTOP, SIGKILL, restart" \
    "$top/test/integration/netns_faults.sh" "$build_dir"
  run_check "Transfer Engine with its metadata server (etcd, redis, http) killed and restarted, across 3 namespaces" \
    "$top/test/integration/netns_metadata_faults.sh" "$build_dir"
fi

echo
echo "summary: $passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer targets (clang, --enable-fuzz, in build-fuzz/) and runs
# each for FUZZ_TIME seconds (default 30) on a copy of its committed seed
# corpus (test/fuzz/corpus/<target>/). A crash stops the run: the input is
# kept in build-fuzz/artifacts/ and printed as hex; turn it into a unit test.
#   contrib/fuzz.sh [--seeds] [--build] [target...]
#     --seeds   regenerate the committed seed corpus from real objects first
#     --build   build the targets and run nothing (CI builds them so while
#               an earlier stage's tests run)
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD_DIR:-$top/build-fuzz}
time_per_target=${FUZZ_TIME:-30}
seeds=no
build_only=no
targets=()
for arg in "$@"; do
  case $arg in
    --seeds) seeds=yes ;;
    --build) build_only=yes ;;
    -h|--help) sed -n '3,10p' "$0"; exit 0 ;;
    *) targets+=("$arg") ;;
  esac
done

command -v clang++ >/dev/null || { echo "fuzz: clang++ not found (contrib/install-deps.sh installs it)"; exit 1; }
# Only what the targets link and load: the libraries, the self/tcp/sm
# modules (fuzz_rkey unpacks through them) and test/fuzz.
build_fuzz() {
  CC=clang CXX=clang++ BUILD_DIR=$build CONFIGURE_FLAGS="--enable-fuzz CXXFLAGS=-g1 CFLAGS=-g1" "$top/contrib/build.sh" -C src/ucs
  local jobs=${JOBS:-$(nproc)}
  make -j"$jobs" -C "$build/src/uct" libmc_uct.la
  for d in src/uct/self src/uct/tcp src/uct/sm src/ucp; do make -j"$jobs" -C "$build/$d"; done
  make -j"$jobs" -C "$build/src/ucp/metadata" libmc_metadata.la
  make -j"$jobs" -C "$build/src/ucp/te" libmc_te.la
  make -j"$jobs" -C "$build/test/fuzz"
}
echo "fuzz: building in $build (clang, --enable-fuzz; log: $build.log)"
build_fuzz >"$build.log" 2>&1 || { tail -40 "$build.log"; echo "fuzz: build failed (log: $build.log)"; exit 1; }
[ "$build_only" = no ] || exit 0
export MC_MODULE_DIR=$build/modules MC_LOG_LEVEL=fatal
corpus=$top/test/fuzz/corpus
if [ "$seeds" = yes ]; then
  "$build/test/fuzz/make_seeds" "$corpus"
fi
if [ ${#targets[@]} -eq 0 ]; then
  targets=($(cd "$build/test/fuzz" && ls fuzz_* | grep -v '\.o$' | sort))
fi

mkdir -p "$build/artifacts"
failed=0
for t in "${targets[@]}"; do
  work=$(mktemp -d)
  [ -d "$corpus/$t" ] && cp -r "$corpus/$t/." "$work/"
  echo "fuzz: $t for ${time_per_target}s on $(ls "$work" | wc -l) seeds"
  if "$build/test/fuzz/$t" -max_total_time="$time_per_target" -rss_limit_mb=2048 -timeout=10 \
       -print_final_stats=1 -artifact_prefix="$build/artifacts/$t-" "$work" >"$build/artifacts/$t.log" 2>&1; then
    grep -E "stat::number_of_executed_units|stat::new_units_added" "$build/artifacts/$t.log" |
      tr '\n' ' ' | sed "s/^/fuzz: $t ok: /;s/$/\n/"
  else
    failed=$((failed + 1))
    tail -30 "$build/artifacts/$t.log"
    for a in "$build/artifacts/$t-"*; do
      [ -f "$a" ] && { echo "fuzz: $t crashed on $a:"; od -An -tx1 "$a" | head -8; }
    done
  fi
  rm -rf "$work"
done
echo "fuzz: ${#targets[@]} targets, $failed failed"
[ "$failed" -eq 0 ]

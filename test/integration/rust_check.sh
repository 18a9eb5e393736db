#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the Rust bindings (bindings/rust: mc-te-sys and mc-te) against a
# build tree with Debian's cargo and rustc, offline, and runs their tests
# (layouts against the header; two processes over P2PHANDSHAKE, etcd and
# redis; threads sharing an engine; bad inputs; a peer killed mid-transfer;
# notifications between two processes;
# the doc example's build), the two-process and notification tests again
# against an installed mc (test/integration/bindings_install.sh), and the
# te_bench example
# between two processes.
# mc-te-sys's build script asks pkg-config for mc-te: here the uninstalled
# variant that test/integration/bindings_pc.sh writes for the build tree.
# In an ASan build with the sanitizer runtimes preloaded; skipped (77) in a
# TSan build.
#   test/integration/rust_check.sh <build-dir>
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
build_dir=$(cd "${1:?usage: rust_check.sh BUILD_DIR}" && pwd)

# A sanitizer build: under ASan (and UBSan), the test binaries and te_bench
# run with the sanitizer runtimes preloaded (a cargo runner), since rustc
# links them last, and are linked leaving the libraries' references to the
# runtimes to that preload; a TSan build is skipped (77).
san=$(sed -n 's/^BASE_LDFLAGS = //p' "$build_dir/Makefile")
run=()
case $san in
  *-fsanitize=*thread*)
    echo "SKIP: $build_dir is a TSan build; the Rust bindings are tested in plain and ASan builds"
    exit 77 ;;
  *-fsanitize=*address*)
    preload=$(gcc -print-file-name=libasan.so)
    case $san in *-fsanitize=*undefined*) preload+=":$(gcc -print-file-name=libubsan.so)" ;; esac
    run=(env "LD_PRELOAD=$preload")
    export RUSTFLAGS="-C link-arg=-Wl,--allow-shlib-undefined"
    export CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER="env LD_PRELOAD=$preload"
    echo "sanitizer build: test binaries run with LD_PRELOAD=$preload" ;;
esac
# Debian's cargo and rustc (packages cargo, rustc), not a rustup toolchain
# that may come first in PATH: the code is written for Debian 12's rustc
# 1.63. Without /usr/bin/cargo, the first in PATH.
cargo=/usr/bin/cargo
[ -x "$cargo" ] || cargo=$(command -v cargo)
rustc=/usr/bin/rustc
[ -x "$rustc" ] || rustc=$(command -v rustc)
rustdoc=$(dirname "$rustc")/rustdoc
export RUSTC=$rustc RUSTDOC=$rustdoc
echo "cargo: $cargo, $("$cargo" --version); rustc: $rustc, $("$rustc" --version)"

out=$build_dir/bindings/rust
# A cargo home of its own: no registry, no configuration from ~/.cargo.
export CARGO_HOME=$out/cargo-home CARGO_TARGET_DIR=$out/target CARGO_NET_OFFLINE=true
export PKG_CONFIG_PATH=$build_dir/bindings/pkgconfig
mkdir -p "$CARGO_HOME"
"$top/test/integration/bindings_pc.sh" "$build_dir" "$PKG_CONFIG_PATH"
echo "pkg-config mc-te: $(pkg-config --cflags --libs mc-te)"

cd "$top/bindings/rust"
"$cargo" build --offline --locked --all-targets
# The API reference (doc comments), with broken links as errors.
RUSTDOCFLAGS="-D warnings" "$cargo" doc --offline --locked --no-deps -q
# mc logs every retry of the killed-peer test: the log keeps them, the
# output shows them only when cargo test fails.
cargo_rc=0
"$cargo" test --offline --locked > "$out/test.log" 2>&1 || cargo_rc=$?
# Its counts (every "test result:" line) go to the test command's summary.
if [ -n "${RUN_TESTS_COUNTS:-}" ]; then
  sed -n 's/^test result: [a-zA-Z]*\. \([0-9]*\) passed; \([0-9]*\) failed; \([0-9]*\) ignored.*/\1 \2 \3/p' "$out/test.log" |
    awk '{p += $1; f += $2; s += $3} END {print "cargo-test", p + 0, f + 0, s + 0}' >> "$RUN_TESTS_COUNTS"
fi
if [ $cargo_rc -eq 0 ]; then
  grep -v '^[IWE][0-9]\{8\} ' "$out/test.log"
else
  cat "$out/test.log"
  echo "FAIL: cargo test (log: $out/test.log)"
  exit 1
fi
echo "PASS: cargo test"

# Against an installed mc (bindings_install.sh),
# in a target directory of its own: the two-process test. LD_LIBRARY_PATH
# also for the link: the linker looks for libmc_te's own dependencies there
# (an mc installed for real is in the linker's default directories).
installed=$(mktemp -d)
root=$("$top/test/integration/bindings_install.sh" "$build_dir" "$installed")
PKG_CONFIG=$installed/pkg-config PKG_CONFIG_PATH=$root/lib/pkgconfig LD_LIBRARY_PATH=$root/lib \
  CARGO_TARGET_DIR=$out/target-installed \
  "$cargo" test --offline --locked --test two_process two_processes_p2p > "$out/test-installed.log" 2>&1 ||
  { cat "$out/test-installed.log"; rm -rf "$installed"; echo "FAIL: cargo test against $root"; exit 1; }
PKG_CONFIG=$installed/pkg-config PKG_CONFIG_PATH=$root/lib/pkgconfig LD_LIBRARY_PATH=$root/lib \
  CARGO_TARGET_DIR=$out/target-installed \
  "$cargo" test --offline --locked --test notify >> "$out/test-installed.log" 2>&1 ||
  { cat "$out/test-installed.log"; rm -rf "$installed"; echo "FAIL: cargo test --test notify against $root"; exit 1; }
grep -v '^[IWE][0-9]\{8\} ' "$out/test-installed.log" | grep -E '^test |test result'
rm -rf "$installed"
echo "PASS: cargo test against an installed mc (pkg-config mc-te of $root)"

bench=$CARGO_TARGET_DIR/debug/examples/te_bench
"${run[@]}" "$bench" --help > "$out/te_bench-help.txt"
head -n 1 "$out/te_bench-help.txt"
# A target and an initiator, reads then writes, for a second each.
tmp=$(mktemp -d)
target_pid=
cleanup() {
  exec 3>&- 2>/dev/null || true
  [ -n "$target_pid" ] && kill "$target_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
# shellcheck source=ready_target.sh
source "$top/test/integration/ready_target.sh"
start_ready_target te_bench "${run[@]}" "$bench" --mode target --buffer-size 16m
for op in read write; do
  "${run[@]}" "$bench" --mode initiator --segment "$segment" --operation "$op" --threads 2 \
    --batch-size 16 --block-size 64k --duration 1 2> "$tmp/initiator.err" | tee "$tmp/initiator.out" ||
    { cat "$tmp/initiator.err"; echo "FAIL: te_bench initiator ($op)"; exit 1; }
  grep -q 'GB/s' "$tmp/initiator.out" || { echo "FAIL: te_bench reported no bandwidth"; exit 1; }
done
if "${run[@]}" "$bench" --mode initiator --segment "$segment" --threads 64 --batch-size 16 --block-size 1m \
  --duration 1 2> "$tmp/initiator.err"; then
  echo "FAIL: te_bench accepted more than the target's buffer"; exit 1
fi
echo "too large: $(grep te_bench: "$tmp/initiator.err")"
exec 3>&-
wait "$target_pid" || { cat "$tmp/target.err"; echo "FAIL: te_bench target exited $?"; exit 1; }
target_pid=
echo "PASS: te_bench between two processes"
echo "PASS: the Rust bindings build against $build_dir and their tests pass"

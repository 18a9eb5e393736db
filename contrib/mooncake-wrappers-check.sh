#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds Mooncake's own wrappers of its C API, unchanged, against mc's
# installed <mooncake/transfer_engine_c.h> and libtransfer_engine, and runs
# what of them needs no hardware. Nothing of Mooncake is kept or committed:
# the checkout is read where it lies, its files are copied to a temporary
# directory with mc's header where theirs would be.
#   contrib/mooncake-wrappers-check.sh [--build DIR] MOONCAKE_CHECKOUT
#
# - Go (mooncake-p2p-store/src/p2pstore): the package as a whole needs the
#   etcd client module (go.etcd.io/etcd/client/v3), which an offline
#   toolchain cannot fetch: tried, and reported. Its cgo file over the C API
#   (transfer_engine.go, with error.go) is then built unchanged on its own,
#   and a test of this script drives its methods: two engines over
#   P2PHANDSHAKE, a write and a read checked byte for byte, an out-of-bounds
#   write that ends STATUS_FAILED. P2P Store ships no test of its own.
# - Rust (mooncake-transfer-engine/rust): cargo builds it offline when its
#   crates (thiserror 2, bindgen 0.70 and its dev-dependencies) are in the
#   local registry and rustc is at least 1.77 (std::mem::offset_of!); then
#   `cargo test --lib` and the minimal_smoke test (MC_RUST_TE_RUN_INTEGRATION=1,
#   P2PHANDSHAKE) run. Otherwise that is reported, and two checks stand in:
#   every C function the crate calls is declared in mc's header and exported
#   by libtransfer_engine.so; and, with Debian's bindgen, the crate's
#   types.rs compiles against bindings of mc's header (its size and
#   alignment assertions of transfer_request, buffer_entry, transfer_status).
# Prints PASS / FAIL / SKIP lines with the reason and ends with
# "N passed, N failed"; exits 1 when something failed.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build}
usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    -h | --help) usage 0 ;;
    -*) echo "unknown option $1" >&2; usage 2 >&2 ;;
    *) break ;;
  esac
done
[ $# -eq 1 ] || usage 2 >&2
mooncake=$(cd "$1" && pwd) || exit 2
p2p=$mooncake/mooncake-p2p-store/src/p2pstore
crate=$mooncake/mooncake-transfer-engine/rust
[ -f "$p2p/transfer_engine.go" ] || { echo "no $p2p/transfer_engine.go: not a Mooncake checkout" >&2; exit 2; }
[ -f "$build/Makefile" ] || { echo "no mc build in $build (contrib/build.sh)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
pass() { echo "PASS: $*"; passed=$((passed + 1)); }
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
skip() { echo "SKIP: $*"; }

make -C "$build" install DESTDIR="$work/dest" > "$work/install.log" 2>&1 ||
  { tail -20 "$work/install.log"; exit 1; }
prefix=$(sed -n 's/^prefix=//p' "$build/mc-ucs.pc")
root=$work/dest$prefix
header=$root/include/mooncake/transfer_engine_c.h
lib=$root/lib/libtransfer_engine.so
export LD_LIBRARY_PATH=$root/lib MC_TLS=tcp MC_NET_DEVICES=lo MC_TRANSFER_TIMEOUT=60s
# Debian's toolchains, not a user's (rustup, a newer go) first on PATH.
go=/usr/bin/go cargo=/usr/bin/cargo rustc=/usr/bin/rustc

# Mooncake's tree as their relative #include expects it, with mc's header.
layout() {
  local dir=$work/tree
  mkdir -p "$dir/mooncake-p2p-store/src/p2pstore" "$dir/mooncake-transfer-engine/include"
  ln -sf "$header" "$dir/mooncake-transfer-engine/include/transfer_engine_c.h"
  echo "$dir"
}

check_go() {
  if [ ! -x $go ]; then skip "Go: no $go"; return; fi
  local tree pkg
  tree=$(layout)
  pkg=$tree/mooncake-p2p-store/src/p2pstore
  cp "$p2p"/*.go "$p2p/go.mod" "$pkg/"
  [ -f "$p2p/go.sum" ] && cp "$p2p/go.sum" "$pkg/"
  export GOPATH=$work/gopath GOCACHE=$work/gocache GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local
  export CGO_LDFLAGS="-L$root/lib -ltransfer_engine -Wl,-rpath,$root/lib"
  if (cd "$pkg" && $go build ./... > "$work/go-full.log" 2>&1); then
    pass "Go: P2P Store builds whole against mc"
  else
    skip "Go: P2P Store as a whole does not build with $($go version | cut -d' ' -f3) offline (its go.mod's go version, its etcd client module; its C API part below):"
    sed 's/^/    /' "$work/go-full.log" | head -5
  fi
  # The cgo part alone, unchanged, in a module of its own.
  rm -f "$pkg"/*.go "$pkg/go.mod" "$pkg/go.sum"
  cp "$p2p/transfer_engine.go" "$p2p/error.go" "$pkg/"
  printf 'module p2pstore\n\ngo 1.19\n' > "$pkg/go.mod"
  cat > "$pkg/mc_check_test.go" <<'EOF'
package p2pstore

// mc's check of P2P Store's transfer_engine.go (not Mooncake's code): two
// engines over P2PHANDSHAKE through its methods.

import (
	"bytes"
	"syscall"
	"testing"
	"unsafe"
)

func engine(t *testing.T) (*TransferEngine, string) {
	e, err := NewTransferEngine("P2PHANDSHAKE", "127.0.0.1", "127.0.0.1", 0)
	if err != nil {
		t.Fatalf("NewTransferEngine: %v", err)
	}
	if err := e.installTransport("tcp", ""); err != nil {
		t.Fatalf("installTransport(tcp): %v", err)
	}
	name, err := e.GetLocalIpAndPort()
	if err != nil || name == "" {
		t.Fatalf("GetLocalIpAndPort: %q %v", name, err)
	}
	return e, name
}

func wait(t *testing.T, e *TransferEngine, b BatchID, task int) int {
	for {
		s, _, err := e.getTransferStatus(b, task)
		if err != nil {
			t.Fatalf("getTransferStatus: %v", err)
		}
		if s != STATUS_WAITING && s != STATUS_PENDING {
			return s
		}
	}
}

func TestTwoEnginesWriteReadAndOutOfBounds(t *testing.T) {
	target, name := engine(t)
	defer target.Close()
	initiator, _ := engine(t)
	defer initiator.Close()
	// Outside the Go heap, as P2P Store's registered buffers are: cgo
	// refuses a C struct holding a Go pointer.
	const n = 1 << 20
	mapped := func() []byte {
		b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
		if err != nil {
			t.Fatalf("mmap: %v", err)
		}
		t.Cleanup(func() { syscall.Munmap(b) })
		return b
	}
	remote, local, back := mapped(), mapped(), mapped()
	for i := range local {
		local[i] = byte(i*131 + i>>8)
	}
	ra := uintptr(unsafe.Pointer(&remote[0]))
	if err := target.registerLocalMemory(ra, n, "cpu:0"); err != nil {
		t.Fatal(err)
	}
	la, ba := uintptr(unsafe.Pointer(&local[0])), uintptr(unsafe.Pointer(&back[0]))
	if err := initiator.registerLocalMemory(la, n, "cpu:0"); err != nil {
		t.Fatal(err)
	}
	if err := initiator.registerLocalMemory(ba, n, "cpu:0"); err != nil {
		t.Fatal(err)
	}
	seg, err := initiator.openSegment(name, true)
	if err != nil {
		t.Fatalf("openSegment(%s): %v", name, err)
	}
	if again, _ := initiator.openSegment(name, false); again != seg {
		t.Fatalf("openSegment without cache: %d, not %d", again, seg)
	}
	b, err := initiator.allocateBatchID(4)
	if err != nil {
		t.Fatal(err)
	}
	reqs := []TransferRequest{
		{OPCODE_WRITE, uint64(la), seg, uint64(ra), n},
	}
	if err := initiator.submitTransfer(b, reqs); err != nil {
		t.Fatal(err)
	}
	if s := wait(t, initiator, b, 0); s != STATUS_COMPLETED {
		t.Fatalf("write ended %d", s)
	}
	if !bytes.Equal(remote, local) {
		t.Fatal("the target's memory differs from what was written")
	}
	if err := initiator.submitTransfer(b, []TransferRequest{{OPCODE_READ, uint64(ba), seg, uint64(ra), n}}); err != nil {
		t.Fatal(err)
	}
	if s := wait(t, initiator, b, 1); s != STATUS_COMPLETED || !bytes.Equal(back, local) {
		t.Fatalf("read back ended %d or differs", s)
	}
	if err := initiator.submitTransfer(b, []TransferRequest{{OPCODE_WRITE, uint64(la), seg, uint64(ra) + n - 8, 64}}); err != nil {
		t.Fatal(err)
	}
	if s := wait(t, initiator, b, 2); s != STATUS_FAILED {
		t.Fatalf("out-of-bounds write ended %d, not STATUS_FAILED", s)
	}
	if err := initiator.freeBatchID(b); err != nil {
		t.Fatal(err)
	}
	if err := initiator.syncSegmentCache(); err != nil {
		t.Fatal(err)
	}
	if err := initiator.closeSegment(seg); err != nil {
		t.Fatal(err)
	}
	if err := initiator.uninstallTransport("tcp"); err == nil {
		t.Fatal("uninstallTransport of a running engine succeeded")
	}
	for _, a := range []uintptr{la, ba} {
		if err := initiator.unregisterLocalMemory(a); err != nil {
			t.Fatal(err)
		}
	}
	if err := target.unregisterLocalMemory(ra); err != nil {
		t.Fatal(err)
	}
}
EOF
  if (cd "$pkg" && $go test -c -o "$work/p2pstore.test" . > "$work/go-build.log" 2>&1); then
    pass "Go: P2P Store's transfer_engine.go (unchanged) builds against mc's header and links -ltransfer_engine"
  else
    fail "Go: P2P Store's transfer_engine.go does not build against mc"
    sed 's/^/    /' "$work/go-build.log" | tail -20
    return
  fi
  if (cd "$pkg" && "$work/p2pstore.test" -test.v > "$work/go-test.log" 2>&1); then
    pass "Go: its methods move data between two engines; an out-of-bounds write ends STATUS_FAILED"
  else
    fail "Go: the test of its methods"
    grep -v '^[IWE][0-9]' "$work/go-test.log" | tail -20 | sed 's/^/    /'
  fi
}

# The C functions the crate calls (ffi::name( in its sources).
crate_functions() {
  grep -ohE 'ffi::[a-zA-Z_]+\(' "$crate"/src/*.rs | sed 's/^ffi:://; s/($//' | sort -u
}

# The field names of `pub struct NAME {` in a Rust file, space-separated.
struct_fields() {
  awk -v name="$2" '
    $0 ~ "^pub struct " name " \\{" { on = 1; next }
    on && /^}/ { exit }
    on && /^ *pub [a-z_]+:/ { sub(/^ *pub /, ""); sub(/:.*/, ""); printf "%s ", $0 }
  ' "$1"
}

check_rust() {
  if [ ! -f "$crate/Cargo.toml" ]; then skip "Rust: no crate at $crate"; return; fi
  local f missing=""
  for f in $(crate_functions); do
    grep -qE "\\b$f\\(" "$header" && nm -D --defined-only "$lib" | grep -qE " T $f\$" || missing="$missing $f"
  done
  if [ -z "$missing" ]; then
    pass "Rust: the $(crate_functions | wc -l) C functions the crate calls are declared in mc's header and exported by libtransfer_engine.so"
  else
    fail "Rust: the crate calls what mc lacks:$missing"
  fi
  local tree=$work/rust
  mkdir -p "$tree"
  cp -r "$crate" "$tree/rust"
  if [ -x $cargo ] && (cd "$tree/rust" && CARGO_HOME=$work/cargo MOONCAKE_TE_INCLUDE_DIR=$root/include/mooncake \
      MOONCAKE_TE_LIB_DIR=$root/lib $cargo test --offline --lib > "$work/cargo.log" 2>&1); then
    pass "Rust: cargo test --lib"
    if (cd "$tree/rust" && CARGO_HOME=$work/cargo MOONCAKE_TE_INCLUDE_DIR=$root/include/mooncake \
        MOONCAKE_TE_LIB_DIR=$root/lib MC_RUST_TE_RUN_INTEGRATION=1 MC_METADATA_SERVER=P2PHANDSHAKE \
        $cargo test --offline --test minimal_smoke > "$work/smoke.log" 2>&1); then
      pass "Rust: minimal_smoke over P2PHANDSHAKE"
    else
      fail "Rust: minimal_smoke"; tail -20 "$work/smoke.log" | sed 's/^/    /'
    fi
  else
    local why=
    [ -x $cargo ] || why="no $cargo"
    [ -n "$why" ] || why=$(grep -m1 -A3 -E '^error' "$work/cargo.log" | grep -v '^$' | tr '\n' ' ')
    skip "Rust: $($cargo --version 2>/dev/null) cannot build the crate: $why(it needs thiserror 2, bindgen 0.70 and its dev-dependencies from a registry, and rustc >= 1.77 for offset_of!; here: $($rustc --version 2>/dev/null || echo 'no rustc'))"
  fi
  # Its types.rs against bindings of mc's header.
  if ! command -v bindgen > /dev/null; then
    skip "Rust: types.rs layout check: no bindgen (Debian package bindgen)"
    return
  fi
  if ! bindgen "$header" -o "$tree/bindings.rs" > "$work/bindgen.log" 2>&1; then
    fail "Rust: bindgen cannot read mc's header"; sed 's/^/    /' "$work/bindgen.log" | tail -5
    return
  fi
  cat > "$tree/lib.rs" <<EOF
#![allow(dead_code, non_camel_case_types, non_upper_case_globals, non_snake_case)]
mod ffi {
    include!("$tree/bindings.rs");
}
#[path = "$crate/src/types.rs"]
mod types;
EOF
  # The crate's #[repr(C)] mirrors pass their slices to C as the C structs:
  # the same fields in the same order, not only the same size.
  local pair c r cf rf bad=""
  for pair in transfer_request:TransferRequest buffer_entry:BufferEntry \
    transfer_status:TransferStatus; do
    c=${pair%%:*} r=${pair##*:}
    cf=$(struct_fields "$tree/bindings.rs" "$c")
    rf=$(struct_fields "$crate/src/types.rs" "$r")
    [ -n "$cf" ] && [ "$cf" = "$rf" ] || bad="$bad $c($cf) vs $r($rf)"
  done
  if [ -z "$bad" ]; then
    pass "Rust: transfer_request, buffer_entry and transfer_status have the fields of the crate's mirrors, in order"
  else
    fail "Rust: the crate's #[repr(C)] mirrors differ from mc's structs:$bad"
  fi
  if $rustc --edition 2021 --crate-type lib -o "$tree/libtypes.rlib" "$tree/lib.rs" > "$work/rustc.log" 2>&1; then
    pass "Rust: the crate's types.rs (size and alignment assertions) compiles against bindings of mc's header"
  else
    fail "Rust: the crate's types.rs against mc's header"; grep -m5 -E '^error' "$work/rustc.log" | sed 's/^/    /'
  fi
}

check_go
check_rust
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

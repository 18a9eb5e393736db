#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Checks that the UCP C API header (src/ucp/api/ucp_c.h, installed as
# mc/ucp/api/ucp_c.h and reachable as <mc/ucp_c.h>) is valid C11 on its
# own, and, given a build tree, that a C program links against libmc_ucp
# and moves data over self with it.
#
#   test/integration/c_api_check.sh              # header only
#   test/integration/c_api_check.sh <build-dir>  # also link and run
set -euo pipefail

src=$(cd "$(dirname "$0")/../../src" && pwd)
build_dir=${1:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The installed layout: <includedir>/mc/ucp/api/ucp_c.h, and the short name
# <includedir>/mc/ucp_c.h that forwards to it.
mkdir -p "$tmp/include/mc"
ln -s "$src/ucp" "$tmp/include/mc/ucp"
ln -s "$src/ucp/include/mc/ucp_c.h" "$tmp/include/mc/ucp_c.h"

cat > "$tmp/app.c" <<'SRC'
#include <mc/ucp_c.h>

#include <stdio.h>
#include <string.h>

static int fail(const char* what, mc_ucp_status_t s) {
  fprintf(stderr, "%s: %s\n", what, mc_ucp_status_string(s));
  return 1;
}

/* Waits for a started operation; returns its final status. */
static mc_ucp_status_t finish(mc_ucp_status_t s, mc_ucp_request_t* req) {
  if (s != MC_UCP_INPROGRESS) return s;
  s = mc_ucp_request_wait(req);
  mc_ucp_request_free(req);
  return s;
}

int main(void) {
  const char* names[] = {"MC_TLS"};
  const char* values[] = {"self"};
  mc_ucp_context_t* ctx = NULL;
  mc_ucp_worker_t* worker = NULL;
  mc_ucp_ep_t* ep = NULL;
  mc_ucp_mem_t* memh = NULL;
  mc_ucp_rkey_t* rkey = NULL;
  mc_ucp_request_t* req = NULL;
  void* buf = NULL;
  size_t len = 0;
  char target[64] = {0};
  char msg[64] = "hello from C";
  mc_ucp_status_t s;

  if ((s = mc_ucp_context_create(names, values, 1, &ctx)) != MC_UCP_OK) return fail("context", s);
  if ((s = mc_ucp_worker_create(ctx, &worker)) != MC_UCP_OK) return fail("worker", s);
  if ((s = mc_ucp_worker_address(worker, &buf, &len)) != MC_UCP_OK) return fail("address", s);
  s = mc_ucp_ep_create(worker, buf, len, &ep);
  mc_ucp_worker_address_release(buf);
  if (s != MC_UCP_OK) return fail("ep", s);
  if ((s = mc_ucp_mem_map(ctx, target, sizeof(target), &memh)) != MC_UCP_OK) return fail("map", s);
  if ((s = mc_ucp_rkey_pack(memh, &buf, &len)) != MC_UCP_OK) return fail("rkey_pack", s);
  s = mc_ucp_ep_rkey_unpack(ep, buf, len, &rkey);
  mc_ucp_rkey_buffer_release(buf);
  if (s != MC_UCP_OK) return fail("rkey_unpack", s);
  s = mc_ucp_put_nbx(ep, msg, sizeof(msg), (uint64_t)(uintptr_t)target, rkey, NULL, &req);
  if ((s = finish(s, req)) != MC_UCP_OK) return fail("put", s);
  s = mc_ucp_ep_flush(ep, NULL, &req);
  if ((s = finish(s, req)) != MC_UCP_OK) return fail("flush", s);
  if (memcmp(target, msg, sizeof(msg)) != 0) return fail("data", MC_UCP_ERR_BAD_DATA);
  mc_ucp_rkey_destroy(rkey);
  mc_ucp_mem_unmap(memh);
  mc_ucp_ep_destroy(ep);
  mc_ucp_worker_destroy(worker);
  mc_ucp_context_destroy(ctx);
  printf("c api: put over self ok\n");
  return 0;
}
SRC

gcc -std=c11 -Wall -Wextra -Werror -pedantic -fsyntax-only -I"$tmp/include" "$tmp/app.c"
gcc -std=c11 -Wall -Werror -fsyntax-only -I"$src" -x c - <<'SRC'
#include "ucp/api/ucp_c.h"
int main(void) { return mc_ucp_status_string(MC_UCP_OK) == 0; }
SRC
# The old installed path keeps working.
gcc -std=c11 -Wall -Werror -pedantic -fsyntax-only -I"$tmp/include" -x c - <<'SRC'
#include <mc/ucp/api/ucp_c.h>
int main(void) { return mc_ucp_worker_event_fd(0) != -1; }
SRC
echo "PASS: ucp_c.h is valid C11"

[ -n "$build_dir" ] || exit 0
lib=$build_dir/src/ucp/.libs
[ -e "$lib/libmc_ucp.so" ] || { echo "FAIL: no libmc_ucp.so in $lib (build first)"; exit 1; }
# In a sanitizer build the libraries need the sanitizer runtime loaded
# first: the programs built here get the build's -fsanitize flags.
san_flags=$(sed -n 's/^BASE_LDFLAGS = //p' "$build_dir/Makefile")
# shellcheck disable=SC2086
gcc -std=c11 -Wall -Werror $san_flags -I"$tmp/include" "$tmp/app.c" -o "$tmp/app" -L"$lib" -lmc_ucp \
  -Wl,-rpath,"$lib:$build_dir/src/uct/.libs:$build_dir/src/ucs/.libs"
"$tmp/app"
echo "PASS: a C program moves data with libmc_ucp"

/* SPDX-License-Identifier: Apache-2.0 */
/* An application of the installed C API (<mc/ucp_c.h>): forks; the child
 * serves a registered buffer and an active-message handler, the parent puts
 * 1 MiB into it, gets it back, and sends "done"; the child checks the bytes.
 * Addresses and the rkey travel over a pipe. Exit 0 when every step worked. */
#define _POSIX_C_SOURCE 200809L
#include <mc/ucp_c.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SIZE (1u << 20)

static unsigned char pattern(size_t i) {
  return (unsigned char)(i * 31 + (i >> 11) + 1);
}

static int write_blob(int fd, const void* p, uint64_t n) {
  return write(fd, &n, sizeof(n)) == (ssize_t)sizeof(n) && write(fd, p, n) == (ssize_t)n;
}

static void* read_blob(int fd, uint64_t* n) {
  void* p;
  size_t got = 0;
  if (read(fd, n, sizeof(*n)) != (ssize_t)sizeof(*n) || *n > (1u << 20)) return NULL;
  p = malloc(*n ? *n : 1);
  while (p && got < *n) {
    ssize_t r = read(fd, (char*)p + got, *n - got);
    if (r <= 0) {
      free(p);
      return NULL;
    }
    got += (size_t)r;
  }
  return p;
}

static mc_ucp_status_t finish(mc_ucp_worker_t* w, mc_ucp_status_t s, mc_ucp_request_t* req) {
  (void)w;
  if (s != MC_UCP_INPROGRESS) return s;
  s = mc_ucp_request_wait(req);
  mc_ucp_request_free(req);
  return s;
}

static int done_flag = 0;
static void on_done(void* arg, const void* data, size_t length) {
  (void)arg;
  done_flag = length == 4 && memcmp(data, "done", 4) == 0 ? 1 : -1;
}

static int server(int out) {
  mc_ucp_context_t* ctx = NULL;
  mc_ucp_worker_t* w = NULL;
  mc_ucp_mem_t* memh = NULL;
  unsigned char* buf = calloc(1, SIZE);
  void* blob = NULL;
  size_t len = 0, i;
  uint64_t addr = (uint64_t)(uintptr_t)buf;
  if (!buf || mc_ucp_context_create(NULL, NULL, 0, &ctx) != MC_UCP_OK) return 2;
  if (mc_ucp_worker_create(ctx, &w) != MC_UCP_OK) return 3;
  if (mc_ucp_mem_map(ctx, buf, SIZE, &memh) != MC_UCP_OK) return 4;
  mc_ucp_worker_set_am_handler(w, 1, on_done, NULL);
  if (mc_ucp_worker_address(w, &blob, &len) != MC_UCP_OK || !write_blob(out, blob, len)) return 5;
  mc_ucp_worker_address_release(blob);
  if (mc_ucp_rkey_pack(memh, &blob, &len) != MC_UCP_OK || !write_blob(out, blob, len)) return 6;
  mc_ucp_rkey_buffer_release(blob);
  if (write(out, &addr, sizeof(addr)) != (ssize_t)sizeof(addr)) return 7;
  while (done_flag == 0) {
    mc_ucp_worker_progress(w);
    if (mc_ucp_worker_arm(w) == MC_UCP_OK) mc_ucp_worker_wait(w, 100);
  }
  for (i = 0; i < SIZE; ++i) {
    if (buf[i] != pattern(i)) return 8;
  }
  mc_ucp_mem_unmap(memh);
  mc_ucp_worker_destroy(w);
  mc_ucp_context_destroy(ctx);
  free(buf);
  return done_flag == 1 ? 0 : 9;
}

static int client(int in) {
  mc_ucp_context_t* ctx = NULL;
  mc_ucp_worker_t* w = NULL;
  mc_ucp_ep_t* ep = NULL;
  mc_ucp_rkey_t* rkey = NULL;
  mc_ucp_request_t* req = NULL;
  unsigned char* src = malloc(SIZE);
  unsigned char* back = calloc(1, SIZE);
  uint64_t alen = 0, klen = 0, addr = 0;
  void* address = read_blob(in, &alen);
  void* packed = read_blob(in, &klen);
  size_t i;
  mc_ucp_status_t s;
  if (!src || !back || !address || !packed || read(in, &addr, 8) != 8) return 20;
  for (i = 0; i < SIZE; ++i) src[i] = pattern(i);
  if (mc_ucp_context_create(NULL, NULL, 0, &ctx) != MC_UCP_OK) return 21;
  if (mc_ucp_worker_create(ctx, &w) != MC_UCP_OK) return 22;
  if (mc_ucp_ep_create(w, address, alen, &ep) != MC_UCP_OK) return 23;
  if (mc_ucp_ep_rkey_unpack(ep, packed, klen, &rkey) != MC_UCP_OK) return 24;
  s = mc_ucp_put_nbx(ep, src, SIZE, addr, rkey, NULL, &req);
  if (finish(w, s, req) != MC_UCP_OK) return 25;
  s = mc_ucp_ep_flush(ep, NULL, &req);
  if (finish(w, s, req) != MC_UCP_OK) return 26;
  s = mc_ucp_get_nbx(ep, back, SIZE, addr, rkey, NULL, &req);
  if (finish(w, s, req) != MC_UCP_OK || memcmp(src, back, SIZE) != 0) return 27;
  s = mc_ucp_am_send_nbx(ep, 1, "done", 4, NULL, &req);
  if (finish(w, s, req) != MC_UCP_OK) return 28;
  s = mc_ucp_ep_flush(ep, NULL, &req);
  if (finish(w, s, req) != MC_UCP_OK) return 29;
  mc_ucp_rkey_destroy(rkey);
  mc_ucp_ep_destroy(ep);
  mc_ucp_worker_destroy(w);
  mc_ucp_context_destroy(ctx);
  free(address);
  free(packed);
  free(src);
  free(back);
  return 0;
}

int main(void) {
  int fds[2], st = 0, rc;
  pid_t pid;
  if (pipe(fds) != 0) return 1;
  pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    close(fds[0]);
    _exit(server(fds[1]));
  }
  close(fds[1]);
  rc = client(fds[0]);
  if (rc != 0) {
    fprintf(stderr, "c client failed at step %d\n", rc);
    kill(pid, SIGKILL);
  }
  waitpid(pid, &st, 0);
  if (rc == 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
    fprintf(stderr, "c server failed: status %d\n", st);
    return 1;
  }
  if (rc == 0) printf("c api: two processes put, get and am over the installed headers\n");
  return rc;
}

/* SPDX-License-Identifier: Apache-2.0 */
/* A program written against Mooncake's C API (<mooncake/transfer_engine_c.h>,
 * -ltransfer_engine), run by mooncake_c_api_check.sh as two processes:
 *   mooncake_c_app target <metadata> <name>
 *     prints "READY segment=<s> addr=<a> len=<n>", then checks its buffer
 *     against the seed of each "written" notification ("NOTIFY ok seed=S"),
 *     and exits at "done": 0 when every check passed.
 *   mooncake_c_app initiator <metadata> <name> <segment> <addr> <len> <seed>
 *     warms the segment up, writes with a notification, reads back, checks
 *     the NIC load, writes out of bounds (FAILED), checks bad arguments and
 *     the functions mc does not offer, then sends "done".
 * APP_HOST, when set, is the ip_or_host_name both give createTransferEngine
 * (default 127.0.0.1): an IPv6 address or a host name. */
#define _POSIX_C_SOURCE 200809L
#include <mooncake/transfer_engine_c.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LEN (1u << 20)

static int failures = 0;

#define CHECK(cond)                                          \
  do {                                                       \
    if (!(cond)) {                                           \
      fprintf(stderr, "FAIL line %d: %s\n", __LINE__, #cond); \
      ++failures;                                            \
    }                                                        \
  } while (0)

static unsigned char pattern(unsigned seed, size_t i) {
  return (unsigned char)((i * 131u + seed * 7u) ^ (i >> 8));
}

static void pause_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Polls task 0 of the batch until it leaves WAITING / PENDING. */
static int wait_task(transfer_engine_t e, batch_id_t b, size_t task) {
  struct transfer_status st;
  for (;;) {
    if (getTransferStatus(e, b, task, &st) != 0) return -1;
    if (st.status != STATUS_WAITING && st.status != STATUS_PENDING) return st.status;
    pause_ms(1);
  }
}

static const char *app_host(void) {
  const char *h = getenv("APP_HOST");
  return h != NULL && h[0] != '\0' ? h : "127.0.0.1";
}

static int run_target(const char *conn, const char *name) {
  transfer_engine_t e = createTransferEngine(conn, name, app_host(), 0, 1);
  if (e == NULL) return 2;
  unsigned char *buf = calloc(1, LEN);
  if (registerLocalMemory(e, buf, LEN, "cpu:0", 1) != 0) return 2;
  char seg[128];
  if (strcmp(conn, "P2PHANDSHAKE") == 0) {
    /* The listener's ip:port; with APP_HOST, the segment named by it. */
    char ipp[128];
    if (getLocalIpAndPort(e, ipp, sizeof(ipp)) != 0) return 2;
    const char *port = strrchr(ipp, ':');
    const char *h = getenv("APP_HOST");
    if (h == NULL || h[0] == '\0' || port == NULL) {
      snprintf(seg, sizeof(seg), "%s", ipp);
    } else {
      snprintf(seg, sizeof(seg), strchr(h, ':') ? "[%s]%s" : "%s%s", h, port);
    }
  } else {
    snprintf(seg, sizeof(seg), "%s", name);
  }
  printf("READY segment=%s addr=%llu len=%u\n", seg, (unsigned long long)(uintptr_t)buf, LEN);
  fflush(stdout);
  int done = 0, bad = 0, seen = 0;
  while (!done) {
    int n = 0;
    notify_msg_t *m = getNotifsFromEngine(e, &n);
    if (m == NULL) return 2;
    for (int i = 0; i < n; ++i) {
      if (strcmp(m[i].name, "written") == 0) {
        unsigned seed = 0;
        if (sscanf(m[i].msg, "seed=%u", &seed) != 1) ++bad;
        size_t off = 0;
        while (off < LEN && buf[off] == pattern(seed, off)) ++off;
        printf("NOTIFY %s seed=%u%s\n", off == LEN ? "ok" : "bad", seed, off == LEN ? "" : " (mismatch)");
        if (off != LEN) ++bad;
        ++seen;
      } else if (strcmp(m[i].name, "done") == 0) {
        done = 1;
      }
    }
    freeNotifsMsgBuf(m, n);
    fflush(stdout);
    if (!done) pause_ms(1);
  }
  unregisterLocalMemory(e, buf);
  destroyTransferEngine(e);
  free(buf);
  return bad == 0 && seen == 1 ? 0 : 1;
}

static void check_bad_arguments(transfer_engine_t e, segment_id_t seg) {
  int dummy = 0;
  transfer_engine_t forged = &dummy;
  struct transfer_status st;
  struct transfer_request r = {OPCODE_WRITE, &dummy, seg, 0, sizeof(dummy)};
  notify_msg_t none = {NULL, NULL};
  int n = 7;
  CHECK(createTransferEngine(NULL, "x", NULL, 0, 1) == NULL);
  CHECK(createTransferEngine("P2PHANDSHAKE", NULL, NULL, 0, 1) == NULL);
  CHECK(createTransferEngine("P2PHANDSHAKE", "127.0.0.1", NULL, 70000, 1) == NULL);
  CHECK(openSegment(NULL, "x") < 0);
  CHECK(openSegment(forged, "x") < 0);
  CHECK(openSegment(e, NULL) < 0);
  CHECK(registerLocalMemory(forged, &dummy, sizeof(dummy), NULL, 1) < 0);
  CHECK(allocateBatchID(NULL, 1) == INVALID_BATCH);
  CHECK(getTransferStatus(e, 12345, 0, &st) < 0);
  CHECK(getTransferStatus(forged, 12345, 0, &st) < 0);
  batch_id_t b = allocateBatchID(e, 4);
  CHECK(b != INVALID_BATCH);
  CHECK(getTransferStatus(e, b, 0, NULL) < 0);
  CHECK(submitTransfer(e, b, NULL, 1) < 0);
  r.opcode = 7;
  CHECK(submitTransfer(e, b, &r, 1) == -4);
  CHECK(getTransferStatus(e, b, 0, &st) < 0); /* nothing was queued */
  CHECK(freeBatchID(e, b) == 0);
  CHECK(freeBatchID(e, b) < 0);
  CHECK(getNotifsFromEngine(e, NULL) == NULL);
  CHECK(getNotifsFromEngine(forged, &n) == NULL && n < 0);
  CHECK(freeNotifsMsgBuf(NULL, 0) == 0);
  CHECK(freeNotifsMsgBuf(NULL, 2) < 0);
  CHECK(genNotifyInEngine(e, 999, none) < 0);
  CHECK(genNotifyInEngine(e, UINT64_MAX, none) < 0);
  CHECK(closeSegment(e, 999) < 0);
  CHECK(getLocalIpAndPort(e, (char *)&dummy, 2) < 0);
  CHECK(getLocalIpAndPort(e, NULL, 64) < 0);
  CHECK(registerLocalMemoryBatch(e, NULL, 2, NULL) < 0);
  CHECK(unregisterLocalMemoryBatch(e, NULL, 2) < 0);
  CHECK(unregisterLocalMemory(e, &dummy) < 0);
  /* What mc does not offer answers its documented code. */
  CHECK(installTransport(e, "nvlink", NULL) == NULL);
  CHECK(installTransport(e, "cxl", NULL) == NULL);
  CHECK(installTransport(e, "tcp", NULL) != NULL);
  CHECK(installTransport(e, "nvmeof", NULL) != NULL);
  CHECK(installTransport(NULL, "tcp", NULL) == NULL);
  CHECK(uninstallTransport(e, "tcp") == -8);
  CHECK(removeLocalSegment(e, "x") == -8);
  CHECK(removeLocalSegment(forged, "x") == -4);
  CHECK(syncSegmentCache(e) == 0);
  CHECK(warmupEfaSegment(e, NULL) == -4);
  CHECK(warmupEfaSegment(e, "127.0.0.1:1") < 0); /* nothing listens there */
  CHECK(warmupEfaSegment(forged, "x") == -4);
  size_t count = 0;
  CHECK(getNicLoadStats(e, NULL, NULL) == -4);
  CHECK(getNicLoadStats(e, NULL, &count) == 0 && count > 0); /* how many, none copied */
  CHECK(getNicLoadStats(forged, NULL, &count) == -4);
  char small[8];
  CHECK(showLinks(e, small, sizeof(small), 0) == -15 && strlen(small) == 7);
  CHECK(showLinks(e, NULL, 64, 0) == -4);
  CHECK(showLinks(forged, small, sizeof(small), 1) == -4);
  CHECK(discoverTopology(forged) == -4);
  enableGracefulShutdown(forged); /* logged, nothing else */
  CHECK(syncSegmentCache(forged) < 0);
  destroyTransferEngine(NULL);
  destroyTransferEngine(forged);
}

/* installTransport before the engine starts (auto_discover 0). */
static void check_install_before_start(const char *conn, const char *name) {
  char other[128];
  snprintf(other, sizeof(other), "%s-second", name);
  transfer_engine_t e = createTransferEngine(conn, other, app_host(), 0, 0);
  CHECK(e != NULL);
  if (e == NULL) return;
  CHECK(installTransport(e, "rdma", NULL) != NULL);
  CHECK(uninstallTransport(e, "rdma") == 0);
  CHECK(uninstallTransport(e, "rdma") == -11);
  CHECK(installTransport(e, "nvlink", NULL) == NULL);
  CHECK(installTransport(e, "tcp", NULL) != NULL);
  char ipp[64];
  CHECK(getLocalIpAndPort(e, ipp, sizeof(ipp)) == 0); /* starts it, with tcp alone */
  CHECK(installTransport(e, "tcp", NULL) != NULL);
  CHECK(installTransport(e, "rdma", NULL) == NULL); /* not opened at start */
  CHECK(uninstallTransport(e, "tcp") == -8);
  destroyTransferEngine(e);
}

static int run_initiator(const char *conn, const char *name, const char *segname, uint64_t addr, size_t len,
                         unsigned seed) {
  transfer_engine_t e = createTransferEngine(conn, name, app_host(), 0, 0);
  if (e == NULL) return 2;
  CHECK(discoverTopology(e) == 0);
  CHECK(installTransport(e, "tcp", NULL) != NULL);
  unsigned char *src = malloc(len), *back = calloc(1, len);
  for (size_t i = 0; i < len; ++i) src[i] = pattern(seed, i);
  buffer_entry_t bufs[2] = {{src, len}, {back, len}};
  CHECK(registerLocalMemoryBatch(e, bufs, 2, "cpu:0") == 0);
  /* Connected ahead of the first transfer; then opening gives its handle. */
  CHECK(warmupEfaSegment(e, segname) == 0);
  CHECK(warmupEfaSegment(e, segname) == 0); /* idempotent */
  segment_id_t seg = openSegment(e, segname);
  CHECK(seg > LOCAL_SEGMENT);
  CHECK(openSegmentNoCache(e, segname) == seg);

  /* A write with its notification; the target checks its memory on arrival. */
  batch_id_t b = allocateBatchID(e, 4);
  char msg[32];
  snprintf(msg, sizeof(msg), "seed=%u", seed);
  notify_msg_t note = {"written", msg};
  struct transfer_request w = {OPCODE_WRITE, src, seg, addr, len};
  CHECK(submitTransferWithNotify(e, b, &w, 1, note) == 0);
  CHECK(wait_task(e, b, 0) == STATUS_COMPLETED);
  struct transfer_status st;
  CHECK(getTransferStatus(e, b, 0, &st) == 0 && st.transferred_bytes == len);
  CHECK(freeBatchID(e, b) == 0);

  /* Read it back. */
  b = allocateBatchID(e, 4);
  struct transfer_request r = {OPCODE_READ, back, seg, addr, len};
  CHECK(submitTransfer(e, b, &r, 1) == 0);
  CHECK(wait_task(e, b, 0) == STATUS_COMPLETED);
  CHECK(memcmp(src, back, len) == 0);

  /* The NIC load: every byte of the ended tasks arrived; the write and the
   * read show in some device's bandwidth within the next 10 ms windows. */
  nic_load_stat_t stats[32];
  size_t n_stats = 0;
  double bw = 0;
  for (int i = 0; i < 10000 && bw <= 0; ++i) {
    n_stats = 32;
    CHECK(getNicLoadStats(e, stats, &n_stats) == 0);
    for (size_t k = 0; k < n_stats && k < 32; ++k) {
      CHECK(stats[k].inflight_bytes == 0);
      if (stats[k].ewma_bandwidth_bps > bw) bw = stats[k].ewma_bandwidth_bps;
    }
    if (bw <= 0) pause_ms(1);
  }
  CHECK(n_stats > 0 && bw > 0);
  char links[65536];
  CHECK(showLinks(e, links, sizeof(links), 1) == 0 && strstr(links, "\"devices\":[{\"name\":") != NULL);
  CHECK(showLinks(e, links, sizeof(links), 0) == 0 && strstr(links, "priority matrix: ") != NULL);

  /* Past the end of the target's buffer: FAILED, as in Mooncake. */
  struct transfer_request oob = {OPCODE_WRITE, src, seg, addr + len - 8, 64};
  CHECK(submitTransfer(e, b, &oob, 1) == 0);
  const int s = wait_task(e, b, 1);
  printf("out-of-bounds write ended %s\n", s == STATUS_FAILED ? "FAILED" : s == STATUS_INVALID ? "INVALID" : "otherwise");
  CHECK(s == STATUS_FAILED);
  /* A segment that is not open stays INVALID (invalid parameters). */
  struct transfer_request unknown = {OPCODE_WRITE, src, seg + 100, addr, 64};
  CHECK(submitTransfer(e, b, &unknown, 1) == 0);
  CHECK(wait_task(e, b, 2) == STATUS_INVALID);
  CHECK(freeBatchID(e, b) == 0);

  /* LOCAL_SEGMENT: this engine's own memory. */
  memset(back, 0, len);
  b = allocateBatchID(e, 1);
  struct transfer_request l = {OPCODE_WRITE, src, LOCAL_SEGMENT, (uint64_t)(uintptr_t)back, 4096};
  CHECK(submitTransfer(e, b, &l, 1) == 0);
  CHECK(wait_task(e, b, 0) == STATUS_COMPLETED);
  CHECK(memcmp(src, back, 4096) == 0);
  CHECK(freeBatchID(e, b) == 0);

  check_bad_arguments(e, seg);
  check_install_before_start(conn, name);

  notify_msg_t done = {"done", NULL};
  CHECK(genNotifyInEngine(e, (uint64_t)seg, done) == 0);
  CHECK(closeSegment(e, seg) == 0);
  void *addrs[2] = {src, back};
  CHECK(unregisterLocalMemoryBatch(e, addrs, 2) == 0);
  destroyTransferEngine(e);
  free(src);
  free(back);
  printf("initiator: %d failures\n", failures);
  return failures == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc == 4 && strcmp(argv[1], "target") == 0) return run_target(argv[2], argv[3]);
  if (argc == 8 && strcmp(argv[1], "initiator") == 0) {
    return run_initiator(argv[2], argv[3], argv[4], strtoull(argv[5], NULL, 10),
                         (size_t)strtoull(argv[6], NULL, 10), (unsigned)atoi(argv[7]));
  }
  fprintf(stderr, "usage: %s target <metadata> <name> | initiator <metadata> <name> <segment> "
                  "<addr> <len> <seed>\n", argv[0]);
  return 2;
}

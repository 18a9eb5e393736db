/* SPDX-License-Identifier: Apache-2.0 */
/* The Transfer Engine's C API between two processes: the same roles and
 * READY line as transfer_engine_example, so either can serve the other.
 *
 *   target:     transfer_engine_c_example target CONN LOCAL [SIZE [SEED]]
 *   initiator:  transfer_engine_c_example initiator CONN LOCAL SEGMENT [SEED]
 * The initiator READs the target's buffer and checks the pattern, WRITEs its
 * own, READs it back and checks, then restores the target's pattern. */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <mc/transfer_engine_c.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BLOCK (64u * 1024u)

static uint8_t pattern(unsigned seed, size_t i) {
  return (uint8_t)((seed * 131u + i * 7u + (i >> 8)) & 0xffu);
}

/* Moves the whole buffer in BLOCK-sized tasks of one batch; 0 when every task completed. */
static int transfer(mc_te_t* te, mc_te_segment_id_t seg, uint64_t remote, uint8_t* local,
                    size_t length, int opcode) {
  size_t n = (length + BLOCK - 1) / BLOCK, i;
  mc_te_request_t* reqs = calloc(n, sizeof(*reqs));
  mc_te_batch_id_t batch = mc_te_allocate_batch_id(te, n);
  int rc = 0;
  if (reqs == NULL || batch == MC_TE_INVALID_BATCH_ID) return 1;
  for (i = 0; i < n; ++i) {
    size_t off = i * BLOCK;
    reqs[i].opcode = opcode;
    reqs[i].source = local + off;
    reqs[i].target_id = seg;
    reqs[i].target_offset = remote + off;
    reqs[i].length = length - off < BLOCK ? length - off : BLOCK;
  }
  if (mc_te_submit_transfer(te, batch, reqs, n) != 0) rc = 1;
  for (i = 0; rc == 0 && i < n; ++i) {
    mc_te_transfer_status_t st;
    struct timespec pause = {0, 50000};
    do {
      if (mc_te_get_transfer_status(te, batch, i, &st) != 0) rc = 1;
      if (st.status == MC_TE_WAITING || st.status == MC_TE_PENDING) nanosleep(&pause, NULL);
    } while (rc == 0 && (st.status == MC_TE_WAITING || st.status == MC_TE_PENDING));
    if (rc == 0 && st.status != MC_TE_COMPLETED) {
      fprintf(stderr, "task %zu ended %s\n", i, mc_te_task_status_name(st.status));
      rc = 1;
    }
  }
  if (rc == 0 && mc_te_free_batch_id(te, batch) != 0) rc = 1;
  free(reqs);
  return rc;
}

static int check(const uint8_t* buf, size_t length, unsigned seed, const char* what) {
  size_t i;
  for (i = 0; i < length; ++i) {
    if (buf[i] != pattern(seed, i)) {
      fprintf(stderr, "%s: byte %zu is %u, expected %u\n", what, i, buf[i], pattern(seed, i));
      return 1;
    }
  }
  return 0;
}

static int run_target(mc_te_t* te, const char* conn, const char* local, size_t size,
                      unsigned seed) {
  uint8_t* buf = malloc(size);
  char name[128];
  sigset_t set;
  int sig = 0;
  size_t i;
  if (buf == NULL) return 1;
  for (i = 0; i < size; ++i) buf[i] = pattern(seed, i);
  if (mc_te_register_local_memory(te, buf, size, "*", 1) != 0) return 1;
  if (strcmp(conn, "P2PHANDSHAKE") == 0) {
    if (mc_te_get_local_ip_and_port(te, name, sizeof(name)) != 0) return 1;
  } else {
    snprintf(name, sizeof(name), "%s", local);
  }
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  printf("READY segment=%s addr=0x%" PRIxPTR " length=%zu\n", name, (uintptr_t)buf, size);
  fflush(stdout);
  sigwait(&set, &sig);
  if (mc_te_unregister_local_memory(te, buf) != 0) return 1;
  free(buf);
  return 0;
}

static int run_initiator(mc_te_t* te, const char* segment, unsigned seed) {
  mc_te_segment_id_t seg = mc_te_open_segment(te, segment);
  mc_te_buffer_info_t info;
  size_t count = 0, length;
  uint8_t* local;
  if (seg < 0 || mc_te_get_segment_buffers(te, seg, &info, 1, &count) != 0 || count == 0) return 1;
  printf("segment %s: buffer at 0x%" PRIx64 ", %" PRIu64 " bytes, %s\n", segment, info.addr,
         info.length, info.location);
  length = (size_t)info.length;
  local = calloc(1, length);
  if (local == NULL || mc_te_register_local_memory(te, local, length, "*", 1) != 0) return 1;
  if (transfer(te, seg, info.addr, local, length, MC_TE_READ) ||
      check(local, length, seed, "read")) {
    return 1;
  }
  for (size_t i = 0; i < length; ++i) local[i] = pattern(seed + 100, i);
  if (transfer(te, seg, info.addr, local, length, MC_TE_WRITE)) return 1;
  memset(local, 0, length);
  if (transfer(te, seg, info.addr, local, length, MC_TE_READ) ||
      check(local, length, seed + 100, "write/read back")) {
    return 1;
  }
  for (size_t i = 0; i < length; ++i) local[i] = pattern(seed, i);
  if (transfer(te, seg, info.addr, local, length, MC_TE_WRITE)) return 1;
  /* The lanes the priority matrices chose, and what each carried: the four
   * transfers of the whole buffer. */
  mc_te_path_info_t paths[8];
  uint64_t carried = 0;
  if (mc_te_get_segment_paths(te, seg, local, info.addr, paths, 8, &count) != 0) return 1;
  for (size_t i = 0; i < count && i < 8; ++i) {
    printf("path %s -> %s: rank %d, %s, %" PRIu64 " bytes\n", paths[i].local_device,
           paths[i].remote_device, paths[i].rank, paths[i].carries ? "carries" : "stand-by",
           paths[i].bytes);
    carried += paths[i].bytes;
  }
  if (carried != 4 * (uint64_t)length) {
    fprintf(stderr, "the lanes report %" PRIu64 " bytes, not %zu\n", carried, 4 * length);
    return 1;
  }
  if (mc_te_unregister_local_memory(te, local) != 0 || mc_te_close_segment(te, seg) != 0) return 1;
  free(local);
  printf("initiator: read, write, read back of %zu bytes verified\n", length);
  return 0;
}

int main(int argc, char** argv) {
  mc_te_t* te;
  int rc;
  if (argc < 4 || (strcmp(argv[1], "target") != 0 && strcmp(argv[1], "initiator") != 0) ||
      (strcmp(argv[1], "initiator") == 0 && argc < 5)) {
    fprintf(stderr,
            "usage: %s target CONN LOCAL [SIZE [SEED]]\n"
            "       %s initiator CONN LOCAL SEGMENT [SEED]\n",
            argv[0], argv[0]);
    return 2;
  }
  if (strcmp(argv[1], "target") == 0) {
    /* Blocked before the engine starts its threads, so that they inherit
     * the mask and the signal reaches sigwait() in run_target(). */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
  }
  te = mc_te_create();
  if (te == NULL || mc_te_init(te, argv[2], argv[3]) != 0) {
    fprintf(stderr, "mc_te_init(%s, %s) failed\n", argv[2], argv[3]);
    return 1;
  }
  if (strcmp(argv[1], "target") == 0) {
    size_t size = argc > 4 ? strtoull(argv[4], NULL, 10) : (size_t)1 << 20;
    rc = run_target(te, argv[2], argv[3], size, argc > 5 ? (unsigned)atoi(argv[5]) : 7u);
  } else {
    rc = run_initiator(te, argv[4], argc > 5 ? (unsigned)atoi(argv[5]) : 7u);
  }
  mc_te_destroy(te);
  printf("%s: %s\n", argv[1], rc == 0 ? "PASS" : "FAIL");
  return rc;
}

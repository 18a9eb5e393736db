/* SPDX-License-Identifier: Apache-2.0 */
/* The C API of the Transfer Engine (installed as <mc/transfer_engine_c.h>):
 * an opaque handle over mc::TransferEngine and mc_te_* functions with the
 * same operations and return conventions (0 / negative). Valid C11 and C++;
 * no exception crosses it. Thread safety: as mc::TransferEngine (any thread). */
#ifndef MC_TRANSFER_ENGINE_C_H
#define MC_TRANSFER_ENGINE_C_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// An engine; made by mc_te_create().
typedef struct mc_te mc_te_t;
typedef int32_t mc_te_segment_id_t;
typedef uint64_t mc_te_batch_id_t;

/// What mc_te_allocate_batch_id() returns on failure.
#define MC_TE_INVALID_BATCH_ID UINT64_MAX

/// Opcodes of mc_te_request_t (values of TransferRequest::OpCode).
enum { MC_TE_READ = 0, MC_TE_WRITE = 1 };

/// Task states (values of mc::TaskStatus).
typedef enum mc_te_task_status {
  MC_TE_WAITING = 0,
  MC_TE_PENDING = 1,
  MC_TE_INVALID = 2,
  MC_TE_CANCELED = 3,
  MC_TE_COMPLETED = 4,
  MC_TE_TIMEOUT = 5,
  MC_TE_FAILED = 6
} mc_te_task_status_t;

/// The state's name, "MC_TE_COMPLETED" for MC_TE_COMPLETED; "unknown" out of range.
static inline const char* mc_te_task_status_name(mc_te_task_status_t s) {
  static const char* const names[] = {"MC_TE_WAITING",   "MC_TE_PENDING", "MC_TE_INVALID",
                                      "MC_TE_CANCELED",  "MC_TE_COMPLETED", "MC_TE_TIMEOUT",
                                      "MC_TE_FAILED"};
  return (int)s >= 0 && (int)s <= 6 ? names[s] : "unknown";
}

typedef struct mc_te_request {
  int opcode;                    ///< MC_TE_READ: remote -> source; MC_TE_WRITE: source -> remote
  void* source;                  ///< local buffer
  mc_te_segment_id_t target_id;  ///< from mc_te_open_segment()
  uint64_t target_offset;        ///< the remote virtual address
  size_t length;
} mc_te_request_t;

typedef struct mc_te_transfer_status {
  mc_te_task_status_t status;
  size_t transferred;  ///< a lower bound of the bytes that arrived
} mc_te_transfer_status_t;

typedef struct mc_te_buffer_info {
  char location[32];  ///< "cpu:0"; cut to 31 characters
  uint64_t addr;
  uint64_t length;
} mc_te_buffer_info_t;

/// A lane of the endpoint to a segment (mc_te_get_segment_paths).
typedef struct mc_te_path_info {
  char local_device[64];   ///< "tcp/eth0"; cut to 63 characters
  char remote_device[64];  ///< at the segment's owner
  int rank;                ///< 0 (both devices preferred) .. 4
  int carries;             ///< 1: takes the slices of such a transfer now
  int healthy;             ///< 0 once the lane failed
  uint64_t bytes;          ///< payload of writes and reads posted on it so far
} mc_te_path_info_t;

/// A new engine, not yet initialised; NULL when out of memory.
mc_te_t* mc_te_create(void);
/// Destroys the engine (removing its metadata); NULL is ignored.
void mc_te_destroy(mc_te_t* engine);

/// TransferEngine::init: see mc/transfer_engine.h for the connection strings.
int mc_te_init(mc_te_t* engine, const char* metadata_conn_string, const char* local_server_name);
/// TransferEngine::registerLocalMemory; `location` NULL means "*".
int mc_te_register_local_memory(mc_te_t* engine, void* addr, size_t size, const char* location,
                                int remote_accessible);
int mc_te_unregister_local_memory(mc_te_t* engine, void* addr);
/// A segment handle (>= 0), or a negative value.
mc_te_segment_id_t mc_te_open_segment(mc_te_t* engine, const char* segment_name);
int mc_te_close_segment(mc_te_t* engine, mc_te_segment_id_t segment_id);
/// Writes up to `max` buffers of an opened segment into `out` and their
/// total count into `*count` (which may exceed max). 0 or negative.
int mc_te_get_segment_buffers(mc_te_t* engine, mc_te_segment_id_t segment_id,
                              mc_te_buffer_info_t* out, size_t max, size_t* count);
/// The endpoint's lanes, best first for a transfer between the local buffer
/// holding `local_addr` and the segment's buffer holding `remote_addr` (see
/// TransferEngine::getSegmentPaths); `*count` is the number of lanes, of
/// which the first `max` are written. 0 lanes before the first transfer.
int mc_te_get_segment_paths(mc_te_t* engine, mc_te_segment_id_t segment_id,
                            const void* local_addr, uint64_t remote_addr,
                            mc_te_path_info_t* out, size_t max, size_t* count);

mc_te_batch_id_t mc_te_allocate_batch_id(mc_te_t* engine, size_t batch_size);
int mc_te_submit_transfer(mc_te_t* engine, mc_te_batch_id_t batch_id,
                          const mc_te_request_t* entries, size_t count);
int mc_te_get_transfer_status(mc_te_t* engine, mc_te_batch_id_t batch_id, size_t task_id,
                              mc_te_transfer_status_t* status);
int mc_te_free_batch_id(mc_te_t* engine, mc_te_batch_id_t batch_id);

/// Copies "ip:port" of the RPC listener into `buf` (NUL-terminated); 0, or
/// negative when `len` is too small or the engine is not initialised.
int mc_te_get_local_ip_and_port(mc_te_t* engine, char* buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* MC_TRANSFER_ENGINE_C_H */

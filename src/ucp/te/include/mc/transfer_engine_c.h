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

/* Exported from libmc_te, which hides what is not API. */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
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

/// A notification to send (mc::NotifyDesc): byte ranges, not C strings, so
/// that embedded NULs arrive as written. A NULL pointer with length 0 is an
/// empty string.
typedef struct mc_te_notify_desc {
  const char* name;
  size_t name_len;
  const char* notify_msg;
  size_t notify_msg_len;
} mc_te_notify_desc_t;

/// A notification taken (mc::ReceivedNotify). Each string is malloc'd,
/// holds its length's bytes and one NUL after them; mc_te_free_notifies
/// frees them and the array.
typedef struct mc_te_received_notify {
  char* sender;  ///< the segment that sent it, as proved by the engine
  size_t sender_len;
  char* name;
  size_t name_len;
  char* notify_msg;
  size_t notify_msg_len;
} mc_te_received_notify_t;

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

/// TransferEngine::submitTransferWithNotify: the entries (all to one open
/// segment), then `notify` to that segment once every task of the batch
/// COMPLETED; dropped when one did not (mc_te_get_batch_notify_status then
/// returns -7). 0, or negative with nothing queued: -4 (entries to several
/// segments, or none), -12 (the batch's previous notification is not yet
/// resolved), -15 (name and msg exceed MC_NOTIFY_MAX_SIZE).
int mc_te_submit_transfer_with_notify(mc_te_t* engine, mc_te_batch_id_t batch_id,
                                      const mc_te_request_t* entries, size_t count,
                                      const mc_te_notify_desc_t* notify);
/// The batch's notification: 1 pending, 0 taken by the target, negative:
/// why not (-7 a task did not complete, -2 the target's queue was full, and
/// the codes of mc_te_send_notify_by_name); -11 without one.
int mc_te_get_batch_notify_status(mc_te_t* engine, mc_te_batch_id_t batch_id);
/// TransferEngine::sendNotifyByName: returns once the target took it (0),
/// or negative: -15 too large (MC_NOTIFY_MAX_SIZE, here or at the target),
/// -2 the target's queue is full (MC_NOTIFY_QUEUE_LENGTH), -18 refused
/// (MC_AUTH_TOKEN, or the sender's identity not proved), -3 / -6 no answer
/// within MC_HANDSHAKE_TIMEOUT, -11 unknown name. Notifications of one
/// engine are taken in the order sent, each exactly once.
int mc_te_send_notify_by_name(mc_te_t* engine, const char* segment_name,
                              const mc_te_notify_desc_t* notify);
/// The same to an opened segment; -11 for an unknown handle.
int mc_te_send_notify_by_id(mc_te_t* engine, mc_te_segment_id_t segment_id,
                            const mc_te_notify_desc_t* notify);
/// Hands over every notification taken so far, oldest first: `*out` gets a
/// malloc'd array of `*count` of them (NULL when 0), to be freed with
/// mc_te_free_notifies. 0, or negative (-9 out of memory: what the engine
/// handed over is then lost).
int mc_te_get_notifies(mc_te_t* engine, mc_te_received_notify_t** out, size_t* count);
/// Frees what mc_te_get_notifies handed over; NULL is ignored.
void mc_te_free_notifies(mc_te_received_notify_t* notifies, size_t count);

/// Copies "ip:port" of the RPC listener into `buf` (NUL-terminated); 0, or
/// negative when `len` is too small or the engine is not initialised.
int mc_te_get_local_ip_and_port(mc_te_t* engine, char* buf, size_t len);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif /* MC_TRANSFER_ENGINE_C_H */

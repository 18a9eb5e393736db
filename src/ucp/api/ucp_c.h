/* SPDX-License-Identifier: Apache-2.0 */
/* The C API of UCP (installed as mc/ucp/api/ucp_c.h, and included as
 * <mc/ucp_c.h> through a forwarding header): opaque handles and
 * mc_ucp_* functions over the C++ classes, so any language can embed mc.
 * Valid C11 and C++; no exception crosses it. */
#ifndef MC_UCP_API_UCP_C_H
#define MC_UCP_API_UCP_C_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Exported from libmc_ucp, which hides what is not API. */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/// Outcome of a call; the same values as mc::ucs::Status. MC_UCP_OK and
/// MC_UCP_INPROGRESS are not errors; every negative value is.
typedef enum mc_ucp_status {
  MC_UCP_OK = 0,                       ///< success
  MC_UCP_INPROGRESS = 1,               ///< started; a request reports completion
  MC_UCP_ERR_NO_RESOURCE = -2,         ///< out of credits or buffers: progress, retry
  MC_UCP_ERR_UNREACHABLE = -3,         ///< no transport reaches the peer
  MC_UCP_ERR_INVALID_PARAM = -4,       ///< a bad argument (null handle, garbage input)
  MC_UCP_ERR_IO_ERROR = -5,            ///< a system call or device failed
  MC_UCP_ERR_TIMEOUT = -6,             ///< a deadline passed
  MC_UCP_ERR_CANCELED = -7,            ///< canceled by the user or by a close
  MC_UCP_ERR_UNSUPPORTED = -8,         ///< the operation is not offered here
  MC_UCP_ERR_NO_MEMORY = -9,           ///< an allocation failed
  MC_UCP_ERR_NO_DEVICE = -10,          ///< no device of the requested kind
  MC_UCP_ERR_NO_ELEM = -11,            ///< the key, entry or name is not known
  MC_UCP_ERR_BUSY = -12,               ///< the resource is in use
  MC_UCP_ERR_CONNECTION_RESET = -13,   ///< the peer went away
  MC_UCP_ERR_EXISTS = -14,             ///< already present
  MC_UCP_ERR_MESSAGE_TRUNCATED = -15,  ///< a buffer was too small for the data
  MC_UCP_ERR_VERSION_MISMATCH = -16,   ///< an ABI or wire version differs
  MC_UCP_ERR_BAD_DATA = -17,           ///< malformed, truncated or forged input
  MC_UCP_ERR_REJECTED = -18            ///< the peer refused the request
} mc_ucp_status_t;

/// The root object: configuration, memory domains, resources.
typedef struct mc_ucp_context mc_ucp_context_t;
/// A progress engine with its ifaces and address.
typedef struct mc_ucp_worker mc_ucp_worker_t;
/// A connection to one remote worker.
typedef struct mc_ucp_ep mc_ucp_ep_t;
/// A registration of local memory.
typedef struct mc_ucp_mem mc_ucp_mem_t;
/// A peer's remote key unpacked for one endpoint.
typedef struct mc_ucp_rkey mc_ucp_rkey_t;
/// A non-blocking operation in flight.
typedef struct mc_ucp_request mc_ucp_request_t;

/// Called once when an operation completes, with its final status and the
/// user_data of its mc_ucp_request_param_t. Runs inside
/// mc_ucp_worker_progress() (or a test/wait), or inside the call that
/// started the operation when it completes at once.
typedef void (*mc_ucp_send_cb_t)(mc_ucp_status_t status, void* user_data);

/// Receives an active message: `length` bytes at `data`, valid only during
/// the call. Runs inside mc_ucp_worker_progress() of the receiving worker.
typedef void (*mc_ucp_am_cb_t)(void* arg, const void* data, size_t length);

/// Optional arguments of the non-blocking operations; a null pointer means
/// all defaults. Zero-initialise and set what is needed.
typedef struct mc_ucp_request_param {
  mc_ucp_send_cb_t callback;  ///< may be null
  void* user_data;            ///< passed to callback
  const mc_ucp_mem_t* memh;   ///< registration covering the local buffer, or null
  int64_t timeout_ms;         ///< >0: deadline for this request; 0: MC_TRANSFER_TIMEOUT; <0: none
} mc_ucp_request_param_t;

/// How mc_ucp_ep_close_nbx() ends an endpoint.
typedef enum mc_ucp_close_mode {
  MC_UCP_CLOSE_FLUSH = 0,  ///< complete every operation first
  MC_UCP_CLOSE_FORCE = 1   ///< cancel what is in flight at once
} mc_ucp_close_mode_t;

/// Human-readable text of `status`, e.g. "no resource"; "unknown status"
/// for a value outside the enum. Never null; static storage.
/// Thread safety: any thread.
const char* mc_ucp_status_string(mc_ucp_status_t status);

/// Creates a context. The configuration is read from the environment and
/// config files; `count` overrides (`names[i]` = `values[i]`, full names such
/// as "MC_TLS", or without the "MC_" prefix) take precedence. `names` and
/// `values` may be null when `count` is 0.
/// Returns MC_UCP_OK and sets *context_p, MC_UCP_ERR_INVALID_PARAM for a
/// null context_p, a null name/value or an invalid knob value,
/// MC_UCP_ERR_IO_ERROR for an unreadable config file.
/// Thread safety: any thread; the context is immutable and may be shared
/// read-only by every thread.
mc_ucp_status_t mc_ucp_context_create(const char* const* names, const char* const* values,
                                      size_t count, mc_ucp_context_t** context_p);

/// Destroys a context (null: no-op). Every worker and memory handle made
/// from it must be destroyed first. Thread safety: no other call may use it.
void mc_ucp_context_destroy(mc_ucp_context_t* context);

/// Creates a worker of `context`. Returns MC_UCP_ERR_INVALID_PARAM for a
/// null argument, MC_UCP_ERR_NO_DEVICE when no iface opened.
/// Thread safety: any thread. With MC_THREAD_MODE=single (the default) a
/// worker and everything made from it (its endpoints, rkeys and requests)
/// must then be used by one thread at a time; with MC_THREAD_MODE=multi any
/// thread may call them (a worker mutex serialises the calls).
mc_ucp_status_t mc_ucp_worker_create(mc_ucp_context_t* context, mc_ucp_worker_t** worker_p);

/// Destroys a worker (null: no-op) after its endpoints were destroyed;
/// requests still held become unusable except for mc_ucp_request_free().
/// Thread safety: as the worker.
void mc_ucp_worker_destroy(mc_ucp_worker_t* worker);

/// Progresses every iface and request of `worker`; returns the number of
/// events handled (0 for a null worker). Thread safety: as the worker.
unsigned mc_ucp_worker_progress(mc_ucp_worker_t* worker);

/// Blocking progress (see Worker::wait() in worker.h): an epoll fd that
/// becomes readable when an iface with an event fd (tcp) has work after
/// mc_ucp_worker_arm(), or after mc_ucp_worker_signal(); -1 for a null
/// worker. Ifaces without one (sm, self) are polled every MC_POLL_INTERVAL
/// by mc_ucp_worker_wait() instead. Thread safety: any thread.
int mc_ucp_worker_event_fd(mc_ucp_worker_t* worker);

/// Arms the worker's event fds. MC_UCP_ERR_BUSY when there is work now
/// (progress and arm again), MC_UCP_OK when a sleep may begin,
/// MC_UCP_ERR_INVALID_PARAM for a null worker. Thread safety: as the worker.
mc_ucp_status_t mc_ucp_worker_arm(mc_ucp_worker_t* worker);

/// Sleeps until the worker may have work (an event, a signal, or the poll
/// interval while an iface has no event fd or a request is in progress):
/// MC_UCP_OK; MC_UCP_ERR_TIMEOUT when `timeout_ms` (< 0: none) passed first.
/// Does not progress: call mc_ucp_worker_progress() after it. Thread safety:
/// as the worker, except that it never holds the multi-mode worker lock
/// while asleep.
mc_ucp_status_t mc_ucp_worker_wait(mc_ucp_worker_t* worker, int64_t timeout_ms);

/// Wakes a mc_ucp_worker_wait() in another thread (null: no-op).
/// Thread safety: any thread.
void mc_ucp_worker_signal(mc_ucp_worker_t* worker);

/// Packs the worker's address into a malloc'd buffer (*address_p,
/// *length_p), to be released with mc_ucp_worker_address_release() and sent
/// to peers out of band. Returns MC_UCP_ERR_INVALID_PARAM for a null
/// argument, MC_UCP_ERR_NO_MEMORY. Thread safety: as the worker.
mc_ucp_status_t mc_ucp_worker_address(mc_ucp_worker_t* worker, void** address_p, size_t* length_p);

/// Frees a buffer of mc_ucp_worker_address() (null: no-op). Thread safety:
/// any thread.
void mc_ucp_worker_address_release(void* address);

/// Sets the handler of active-message id `id` of `worker` (a null callback
/// removes it). Returns MC_UCP_ERR_INVALID_PARAM for a null worker.
/// Thread safety: as the worker.
mc_ucp_status_t mc_ucp_worker_set_am_handler(mc_ucp_worker_t* worker, uint16_t id,
                                             mc_ucp_am_cb_t callback, void* arg);

/// Starts a flush of every operation of `worker` (see "Requests" below for
/// the returned status and *request_p). Thread safety: as the worker.
mc_ucp_status_t mc_ucp_worker_flush(mc_ucp_worker_t* worker, const mc_ucp_request_param_t* param,
                                    mc_ucp_request_t** request_p);

/// Creates an endpoint to the worker whose packed address is
/// (`address`, `length`). Returns MC_UCP_ERR_INVALID_PARAM for a null
/// argument or an address that does not unpack, MC_UCP_ERR_UNREACHABLE when
/// no transport reaches the peer. Thread safety: as the worker.
mc_ucp_status_t mc_ucp_ep_create(mc_ucp_worker_t* worker, const void* address, size_t length,
                                 mc_ucp_ep_t** ep_p);

/// Starts closing `ep` (flush or force); afterwards the endpoint accepts no
/// operation and is only fit for mc_ucp_ep_destroy(). Statuses as for
/// operations. Thread safety: as the worker.
mc_ucp_status_t mc_ucp_ep_close_nbx(mc_ucp_ep_t* ep, mc_ucp_close_mode_t mode,
                                    const mc_ucp_request_param_t* param,
                                    mc_ucp_request_t** request_p);

/// Destroys `ep` (null: no-op), canceling its requests in progress (they
/// complete with MC_UCP_ERR_CANCELED). Its rkeys must be destroyed first.
/// Thread safety: as the worker.
void mc_ucp_ep_destroy(mc_ucp_ep_t* ep);

/// Starts a flush of `ep`: completes when every operation started before it
/// has completed, remotely for puts. Thread safety: as the worker.
mc_ucp_status_t mc_ucp_ep_flush(mc_ucp_ep_t* ep, const mc_ucp_request_param_t* param,
                                mc_ucp_request_t** request_p);

/// Registers [address, address + length) of host memory with every memory
/// domain that can. Returns MC_UCP_ERR_INVALID_PARAM for a null or empty
/// range, MC_UCP_ERR_UNSUPPORTED when no memory domain registered it.
/// Thread safety: any thread; the handle is immutable.
mc_ucp_status_t mc_ucp_mem_map(mc_ucp_context_t* context, void* address, size_t length,
                               mc_ucp_mem_t** memh_p);

/// Deregisters (null: no-op). Thread safety: no other call may use it.
void mc_ucp_mem_unmap(mc_ucp_mem_t* memh);

/// Packs the remote key of `memh` into a malloc'd buffer (*rkey_p,
/// *length_p), released with mc_ucp_rkey_buffer_release(). Returns
/// MC_UCP_ERR_INVALID_PARAM for a null argument, MC_UCP_ERR_UNSUPPORTED when
/// the registration allows no remote access. Thread safety: any thread.
mc_ucp_status_t mc_ucp_rkey_pack(const mc_ucp_mem_t* memh, void** rkey_p, size_t* length_p);

/// Frees a buffer of mc_ucp_rkey_pack() (null: no-op). Thread safety: any
/// thread.
void mc_ucp_rkey_buffer_release(void* rkey_buffer);

/// Unpacks a peer's packed rkey for the lanes of `ep`. Returns
/// MC_UCP_ERR_INVALID_PARAM for a null argument or malformed input,
/// MC_UCP_ERR_UNREACHABLE when no lane's memory domain has a key in it.
/// Thread safety: as the endpoint's worker.
mc_ucp_status_t mc_ucp_ep_rkey_unpack(mc_ucp_ep_t* ep, const void* rkey_buffer, size_t length,
                                      mc_ucp_rkey_t** rkey_p);

/// Destroys an unpacked rkey (null: no-op), before its endpoint.
void mc_ucp_rkey_destroy(mc_ucp_rkey_t* rkey);

/* Requests. Every operation below (and the flushes and close above) returns
 * MC_UCP_OK when it completed at once (*request_p is set to null, the
 * callback, if any, has run), MC_UCP_INPROGRESS when a request was started
 * (*request_p is set; free it with mc_ucp_request_free()), or an error
 * (*request_p is null; MC_UCP_ERR_INVALID_PARAM for a null handle or
 * request_p). */

/// Writes `length` bytes from `buffer` to `remote_addr` of the peer's memory
/// described by `rkey`; completes when `buffer` may be reused (remote
/// completion needs a flush). MC_UCP_ERR_INVALID_PARAM also when the range
/// lies outside the rkey's registration. Thread safety: as the worker.
mc_ucp_status_t mc_ucp_put_nbx(mc_ucp_ep_t* ep, const void* buffer, size_t length,
                               uint64_t remote_addr, const mc_ucp_rkey_t* rkey,
                               const mc_ucp_request_param_t* param, mc_ucp_request_t** request_p);

/// Reads `length` bytes at `remote_addr` into `buffer`; completes when they
/// are there. Statuses as mc_ucp_put_nbx(). Thread safety: as the worker.
mc_ucp_status_t mc_ucp_get_nbx(mc_ucp_ep_t* ep, void* buffer, size_t length, uint64_t remote_addr,
                               const mc_ucp_rkey_t* rkey, const mc_ucp_request_param_t* param,
                               mc_ucp_request_t** request_p);

/// Sends `length` bytes to the peer's handler `id`; completes when `buffer`
/// may be reused. MC_UCP_ERR_UNSUPPORTED when no lane carries active
/// messages. Thread safety: as the worker.
mc_ucp_status_t mc_ucp_am_send_nbx(mc_ucp_ep_t* ep, uint16_t id, const void* buffer, size_t length,
                                   const mc_ucp_request_param_t* param,
                                   mc_ucp_request_t** request_p);

/// Progresses the request's worker once; returns MC_UCP_INPROGRESS or the
/// final status (MC_UCP_ERR_INVALID_PARAM for null). Thread safety: as the
/// worker.
mc_ucp_status_t mc_ucp_request_test(mc_ucp_request_t* request);

/// Progresses the request's worker until the request completes (bounded by
/// its deadline unless infinite); returns its final status. Only this
/// worker is progressed: a peer in the same thread needs mc_ucp_request_test()
/// in a loop instead. Thread safety: as the worker.
mc_ucp_status_t mc_ucp_request_wait(mc_ucp_request_t* request);

/// Completes the request with MC_UCP_ERR_CANCELED if it is still in
/// progress (null: no-op). Thread safety: as the worker.
void mc_ucp_request_cancel(mc_ucp_request_t* request);

/// Releases the handle (null: no-op). An operation still in progress goes
/// on in the background; its callback still runs. Thread safety: as the
/// worker.
void mc_ucp_request_free(mc_ucp_request_t* request);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // MC_UCP_API_UCP_C_H

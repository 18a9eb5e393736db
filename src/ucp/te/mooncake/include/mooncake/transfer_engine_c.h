/* SPDX-License-Identifier: Apache-2.0 */
/* Mooncake's C API of the Transfer Engine over mc's engine: the names, macro
 * values, typedefs and struct layouts of Mooncake's public header, so that a
 * program written against it builds with -ltransfer_engine unchanged.
 * Installed as <mooncake/transfer_engine_c.h>. Valid C11 and C++.
 *
 * Conventions: 0 on success, a negative mc status on failure (the cause is
 * logged): -4 a bad argument (NULL pointer, a handle that createTransferEngine
 * did not return or that was destroyed), -8 what mc does not offer (each such
 * function says why), -11 unknown segment or batch. Strings passed in are
 * not kept after the call returns. Any thread may call any function. */
#ifndef TRANSFER_ENGINE_C
#define TRANSFER_ENGINE_C

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Mooncake defines these types as macros; so does this header. */
#define segment_handle_t int32_t
#define segment_id_t int32_t
#define batch_id_t uint64_t
/** The engine's own segment: opened by createTransferEngine, always 0. */
#define LOCAL_SEGMENT (0)
/** What allocateBatchID returns on failure. */
#define INVALID_BATCH UINT64_MAX

#define OPCODE_READ (0)  /**< remote -> source */
#define OPCODE_WRITE (1) /**< source -> remote */

struct transfer_request {
  int opcode;             /**< OPCODE_READ or OPCODE_WRITE */
  void *source;           /**< local buffer, best registered */
  segment_id_t target_id; /**< from openSegment, or LOCAL_SEGMENT */
  uint64_t target_offset; /**< the remote virtual address (file segments: offset) */
  uint64_t length;
};
typedef struct transfer_request transfer_request_t;

/** A notification: two NUL-terminated strings (NULL reads as ""). */
struct notify_msg {
  char *name;
  char *msg;
};
typedef struct notify_msg notify_msg_t;

/* Task states: the values of mc's TaskStatus. */
#define STATUS_WAITING (0)
#define STATUS_PENDING (1)
#define STATUS_INVALID (2)
#define STATUS_CANCELED (3)
#define STATUS_COMPLETED (4)
#define STATUS_TIMEOUT (5)
#define STATUS_FAILED (6)

struct transfer_status {
  int status;                 /**< STATUS_* */
  uint64_t transferred_bytes; /**< a lower bound of the bytes that arrived */
};
typedef struct transfer_status transfer_status_t;

/** Declared for layout compatibility; no function of this header takes it. */
struct segment_desc {
  int type; /* RDMA / NVMeoF */
  union {
    struct {
      void *addr;
      uint64_t size;
      const char *location;
    } rdma;
    struct {
      const char *file_path;
      const char *subsystem_name;
      const char *proto;
      const char *ip;
      uint64_t port;
    } nvmeof;
  } desc_;
};
typedef struct segment_desc segment_desc_t;

struct buffer_entry {
  void *addr;
  size_t length;
};
typedef struct buffer_entry buffer_entry_t;

typedef void *transfer_engine_t;
typedef void *transport_t;

/** An engine, initialised (mc's TransferEngine::init in Mooncake's form):
 * `metadata_conn_string` "P2PHANDSHAKE", "etcd://host:port", "host:port"
 * (etcd, as in Mooncake), "redis://host:port", "http://host:port/metadata";
 * the segment is named `local_server_name` (P2PHANDSHAKE: "ip:port" of the
 * RPC listener, see getLocalIpAndPort); peers reach it at `ip_or_host_name`
 * (NULL or "": local_server_name's host) on `rpc_port` (0: the first free
 * port of [MC_MIN_RPC_PORT, MC_MAX_RPC_PORT]). `auto_discover` nonzero opens
 * every transport MC_TLS allows now; 0 waits for installTransport and opens
 * the installed ones at the first call that needs the engine (any function
 * but installTransport and uninstallTransport). NULL on failure. */
transfer_engine_t createTransferEngine(const char *metadata_conn_string,
                                       const char *local_server_name,
                                       const char *ip_or_host_name, uint64_t rpc_port,
                                       int auto_discover);

/** Reads this machine's topology now (NUMA nodes, NICs, GPUs: ucs/topo, with
 * MC_TOPO_SYSFS_ROOT and MC_TOPO_PRIORITY_MATRIX) and logs what it found: 0,
 * or the discovery's negative status (logged). mc's engine discovers the
 * topology itself when it starts and keeps it: this call checks and reports
 * it, it does not change the matrix of a started engine. */
int discoverTopology(transfer_engine_t engine);

/** "ip:port" of the RPC listener into buf_out (NUL-terminated; "[ip]:port"
 * for IPv6); -4 when buf_len is too small. */
int getLocalIpAndPort(transfer_engine_t engine, char *buf_out, size_t buf_len);

/** "tcp", "rdma" (mc's rc_verbs and rc_mlx5) or "nvmeof". Before the engine
 * starts (auto_discover 0) this adds the protocol to the transports it will
 * open; after, it answers whether the engine opened it. A non-NULL token, or
 * NULL (logged): "nvlink" (mc has no NVLink transport), an unknown name, or
 * a protocol the started engine did not open (set MC_TLS, or install before
 * the first other call). `args` (Mooncake: the NIC priority matrix) is not
 * read: mc takes it from MC_TOPO_PRIORITY_MATRIX or discovers it. */
transport_t installTransport(transfer_engine_t engine, const char *proto, void **args);

/** Before the engine starts: removes an installed protocol (0; -11 when it
 * was not installed). After: -8, mc cannot close a transport of a running
 * engine. */
int uninstallTransport(transfer_engine_t engine, const char *proto);

/** A segment handle (>= 0) or a negative value. mc reads the segment's
 * descriptor at every open, so openSegmentNoCache is the same call. */
segment_id_t openSegment(transfer_engine_t engine, const char *segment_name);
segment_id_t openSegmentNoCache(transfer_engine_t engine, const char *segment_name);

/** Forgets the segment; fails while tasks to it are unfinished. */
int closeSegment(transfer_engine_t engine, segment_id_t segment_id);

/** Connects ahead of the first transfer to `segment_name` on whatever
 * transport reaches it (mc has no EFA transport; Mooncake's call does this
 * for EFA alone): opens the segment (the handle openSegment gives) and its
 * endpoint, and returns once every lane answered a flush, within
 * MC_HANDSHAKE_TIMEOUT: 0, or negative (logged). Idempotent. */
int warmupEfaSegment(transfer_engine_t engine, const char *segment_name);

/** -8: mc publishes the engine's segment for the engine's lifetime and
 * removes it in destroyTransferEngine. */
int removeLocalSegment(transfer_engine_t engine, const char *segment_name);

/** Removes the engine's metadata and frees it; NULL or an unknown handle is
 * logged and ignored. */
void destroyTransferEngine(transfer_engine_t engine);

/** `location` "cpu:N", "cuda:N", or NULL / "*" to detect it. */
int registerLocalMemory(transfer_engine_t engine, void *addr, size_t length,
                        const char *location, int remote_accessible);
int unregisterLocalMemory(transfer_engine_t engine, void *addr);
int registerLocalMemoryBatch(transfer_engine_t engine, buffer_entry_t *buffer_list,
                             size_t buffer_len, const char *location);
int unregisterLocalMemoryBatch(transfer_engine_t engine, void **addr_list, size_t addr_len);

/** A batch of up to batch_size tasks, or INVALID_BATCH. */
batch_id_t allocateBatchID(transfer_engine_t engine, size_t batch_size);

/** Queues the entries as the batch's next tasks and returns (0); nothing is
 * queued on failure (-4 a bad opcode). An entry whose remote range is outside
 * the buffers the segment's owner registered ends FAILED, as in Mooncake (mc
 * finds it at submit, and logs it; mc's own API reports it INVALID with the
 * error -18); one with an empty local range or a segment not open INVALID. */
int submitTransfer(transfer_engine_t engine, batch_id_t batch_id, struct transfer_request *entries,
                   size_t count);

/** submitTransfer, then `notify_msg` to the entries' segment (all entries to
 * one open segment, else -4) once every task COMPLETED: the target takes it
 * after the written bytes are in its memory. Dropped when a task did not
 * complete. */
int submitTransferWithNotify(transfer_engine_t engine, batch_id_t batch_id,
                             struct transfer_request *entries, size_t count,
                             notify_msg_t notify_msg);

/** Every notification taken since the last call, oldest first: a malloc'd
 * array (non-NULL, also for none) of *size of them, each string malloc'd and
 * cut at its first NUL; free it with freeNotifsMsgBuf. NULL with *size set
 * to a negative value on failure. */
notify_msg_t *getNotifsFromEngine(transfer_engine_t engine, int *size);

/** Frees what getNotifsFromEngine returned; 0 (NULL with size 0 too). */
int freeNotifsMsgBuf(notify_msg_t *msg, int size);

/** Sends a notification to the opened segment `target_id` and returns once
 * the target took it (0), or negative (mc's sendNotifyByID). */
int genNotifyInEngine(transfer_engine_t engine, uint64_t target_id, notify_msg_t notify_msg);

int getTransferStatus(transfer_engine_t engine, batch_id_t batch_id, size_t task_id,
                      struct transfer_status *status);

/** Fails while any task of the batch is WAITING or PENDING. */
int freeBatchID(transfer_engine_t engine, batch_id_t batch_id);

/** 0: mc keeps no segment cache to sync; the next openSegment reads the
 * current descriptor. */
int syncSegmentCache(transfer_engine_t engine);

/** The load of one local device. */
struct nic_load_stat {
  char device_name[64];      /**< "tcp/eth0", "rc_verbs/mlx5_0:1" (cut to 63 bytes) */
  uint64_t inflight_bytes;   /**< posted on the device and not yet completed */
  double ewma_bandwidth_bps; /**< bytes per second completed: a moving average
                                  over the 10 ms windows it was busy; 0 before */
};
typedef struct nic_load_stat nic_load_stat_t;

/** Every local device the engine opened: up to *count of them into stats,
 * and *count set to how many there are (call again with more room when it
 * grew): 0, -4 for a NULL argument. */
int getNicLoadStats(transfer_engine_t engine, nic_load_stat_t *stats, size_t *count);

/** Logs, at warning level, that mc installs no SIGTERM / SIGINT handler: a
 * library does not take the process's signals. destroyTransferEngine removes
 * the engine's metadata; call it on the way out of your own handler. */
void enableGracefulShutdown(transfer_engine_t engine);

/** The engine's local devices with their load, and the NIC priority matrix
 * it uses, as text (json 0) or a JSON object {"devices": [...],
 * "priority_matrix": {...}} (json nonzero), NUL-terminated in buf_out: 0;
 * -15 when it did not fit (what fits is written); -4 for a NULL buffer or a
 * buf_len of 0. */
int showLinks(transfer_engine_t engine, char *buf_out, size_t buf_len, int json);

#ifdef __cplusplus
}
#endif

#endif /* TRANSFER_ENGINE_C */

// SPDX-License-Identifier: Apache-2.0
// The Transfer Engine: the batch transfer API of the Mooncake Transfer Engine
// over UCP. Code written against that document ports by changing the include
// and the namespace. Installed as <mc/transfer_engine.h>; pkg-config mc-te.
//
//   mc::TransferEngine engine;
//   engine.init("P2PHANDSHAKE", "127.0.0.1");          // or http://, etcd://, redis://
//   engine.registerLocalMemory(buf, len, "cpu:0");
//   mc::SegmentHandle peer = engine.openSegment("10.0.0.2:15123");
//   mc::BatchID b = engine.allocateBatchID(16);
//   engine.submitTransfer(b, {{mc::TransferRequest::WRITE, buf, peer, remote_addr, len}});
//   mc::TransferStatus s; engine.getTransferStatus(b, 0, s);   // until COMPLETED
//   engine.freeBatchID(b);
//
// Notifications (Mooncake's NotifyDesc): submitTransferWithNotify sends one
// after the batch's WRITEs are visible at the target; sendNotifyByName /
// sendNotifyByID send one at once; the target's getNotifies takes them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

// Exported from libmc_te, which hides what is not API.
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

namespace mc {

/// A segment opened by openSegment(); >= 0 when valid.
using SegmentID = int32_t;
using SegmentHandle = SegmentID;
/// A batch made by allocateBatchID(); never 0 when valid.
using BatchID = uint64_t;

/// The BatchID allocateBatchID() returns on failure.
inline constexpr BatchID kInvalidBatchID = UINT64_MAX;

/// One transfer of a batch.
struct TransferRequest {
  enum OpCode { READ, WRITE };
  OpCode opcode;           ///< READ: remote -> source; WRITE: source -> remote
  void* source;            ///< local buffer (best registered with registerLocalMemory)
  SegmentID target_id;     ///< from openSegment()
  uint64_t target_offset;  ///< RAM segments: the remote virtual address; file
                           ///< segments: the offset in the files laid end to end
  size_t length;
};

/// State of one task of a batch. A task ends in exactly one of COMPLETED,
/// FAILED, TIMEOUT (or INVALID, decided at submit time, before anything moves).
enum TaskStatus { WAITING, PENDING, INVALID, CANCELED, COMPLETED, TIMEOUT, FAILED };

/// The state's name, "COMPLETED" for COMPLETED; "unknown" for a value out of range.
inline const char* task_status_name(TaskStatus s) {
  constexpr const char* kNames[] = {"WAITING",   "PENDING", "INVALID", "CANCELED",
                                    "COMPLETED", "TIMEOUT", "FAILED"};
  return s >= WAITING && s <= FAILED ? kNames[s] : "unknown";
}

struct TransferStatus {
  TaskStatus s;
  size_t transferred;  ///< a lower bound of the bytes that arrived
  /// Why a task ended INVALID, FAILED or TIMEOUT (0 otherwise): mc's negative
  /// status. INVALID: InvalidParam (-4) an unknown opcode or an empty local
  /// range, NoElem (-11) a segment not open, Rejected (-18) a remote range
  /// outside every buffer the segment's owner registered (Mooncake's API
  /// reports that one FAILED, as a remote failure), InvalidParam for a
  /// range a file segment cannot take; FAILED: the transport's last error
  /// (Canceled, -7, when the engine stopped); TIMEOUT: -6.
  int error = 0;
};

/// The load of one local device (Mooncake's NicLoadStats).
struct NicLoadStat {
  std::string device_name;  ///< transport/device: "tcp/eth0", "rc_verbs/mlx5_0:1"
  uint64_t inflight_bytes;  ///< posted on its lanes and not yet completed, now
  /// Bytes per second that completed on its lanes: a moving average (weight
  /// 1/8) over the 10 ms windows in which it had bytes in flight or completed
  /// some; 0 until then. Idle windows leave it as it was.
  double ewma_bandwidth_bps;
};

/// One registration of a batch call.
struct BufferEntry {
  void* addr;
  size_t length;
};

/// A buffer of an opened segment, as its owner published it. A file
/// (nvmeof) segment lists its files in order: location "nvmeof", addr the
/// file's start in the segment's offset space, path the file used here.
struct SegmentBufferInfo {
  std::string location;  ///< "cpu:0", "cuda:1"; "nvmeof" for a file
  uint64_t addr;         ///< remote virtual address (files: offset): target_offset of a transfer
  uint64_t length;
  std::string path;  ///< files: the path this host reads and writes; empty for memory
};

/// A lane of the endpoint to an opened segment, as getSegmentPaths ranks it
/// for memory at one local and one remote location.
struct SegmentPathInfo {
  std::string local_device;   ///< transport/device here: "tcp/eth0"
  std::string remote_device;  ///< transport/device at the segment's owner
  /// 0 (both devices preferred) .. 4 (neither listed); with
  /// MC_ENABLE_DEST_DEVICE_AFFINITY 2 x that, + 1 when the two device names differ
  int rank;
  bool carries;    ///< takes the slices of such a transfer now (every healthy path:
                   ///< MC_PATH_ROUNDROBIN)
  bool healthy;    ///< false once the lane failed
  uint64_t bytes;  ///< payload of writes and reads posted on it so far
};

/// What the endpoint store did since init (mc's own, diagnostics): one
/// endpoint per segment in a cache of MC_MAX_EP_PER_CTX.
struct EndpointStoreStats {
  uint64_t opened = 0;        ///< endpoints made and cached
  uint64_t evicted = 0;       ///< taken out to make room for another segment's
  uint64_t evicted_busy = 0;  ///< of those, with operations in flight (they drain, then close)
  uint64_t removed = 0;       ///< taken out otherwise: failed, stale, segment closed or replaced
  uint64_t cached = 0;        ///< open now (getEndpointCount)
  uint64_t draining = 0;      ///< out of the cache, operations still in flight
};

/// A notification: two byte strings, delivered byte for byte (embedded NULs
/// included). Together at most MC_NOTIFY_MAX_SIZE bytes.
struct NotifyDesc {
  std::string name;
  std::string notify_msg;
};

/// A notification this engine took, with the segment that sent it (mc's
/// own): `sender` is the sender engine's segment name as proved by the
/// engine (the sender received a key sent to that segment's published RPC
/// address), never a field the sender wrote into the message.
struct ReceivedNotify {
  std::string sender;
  NotifyDesc notify;
};

/// Thread safety: every method may be called from any thread concurrently.
/// Return conventions as the Mooncake document: 0 on success and a negative
/// value on failure (the cause is logged); openSegment returns a negative
/// SegmentHandle and allocateBatchID kInvalidBatchID on failure.
class TransferEngine {
 public:
  TransferEngine();
  /// Stops the progress thread and the RPC listener, frees every batch and
  /// endpoint, and removes this engine's keys from the metadata store.
  ~TransferEngine();
  TransferEngine(const TransferEngine&) = delete;
  TransferEngine& operator=(const TransferEngine&) = delete;

  /// Connects to the metadata service (`metadata_conn_string`: "P2PHANDSHAKE",
  /// "http://host:port/metadata", "etcd://host:2379", "host:2379",
  /// "redis://[:password@]host:6379[/db]"), creates the UCP context and
  /// worker, starts the progress thread and the RPC listener, and publishes
  /// this engine's segment. `local_server_name` is "host[:port]": the host
  /// (or IP) peers reach this engine at, and optionally the RPC port (else
  /// the first free one of [MC_MIN_RPC_PORT, MC_MAX_RPC_PORT]). The segment
  /// is named `local_server_name`, or getLocalIpAndPort() under P2PHANDSHAKE.
  /// Returns -1 when called twice, a negative value on any failure.
  int init(const std::string& metadata_conn_string, const std::string& local_server_name);
  /// Mooncake's form: the segment (in a store also its rpc_meta key) is
  /// named `local_server_name`, and peers reach this engine at
  /// `ip_or_host_name` (empty: local_server_name's host part) on `rpc_port`
  /// (0: the first free one of [MC_MIN_RPC_PORT, MC_MAX_RPC_PORT]). Under
  /// P2PHANDSHAKE the segment is still named getLocalIpAndPort(). Returns as
  /// the two-argument init.
  int init(const std::string& metadata_conn_string, const std::string& local_server_name,
           const std::string& ip_or_host_name, uint16_t rpc_port);
  /// Sets a knob ("MC_TLS", "tcp") for this engine only, over the process's
  /// environment and config files, as read by init (the UCP context's and
  /// the engine's tables; the metadata knobs stay the process's). 0; Busy
  /// (-12) after init, InvalidParam (-4) for a name not starting with MC_.
  int setConfig(const std::string& name, const std::string& value);
  /// The transports whose devices init opened ("rc_verbs", "sm", "tcp"),
  /// sorted, each once; empty before init.
  std::vector<std::string> getTransports() const;

  /// Registers [addr, addr + size) into this engine's segment. `location`:
  /// "cpu:N", "cuda:N", or "*" to detect the NUMA node of the pages (a
  /// warning, and cpu:0, when that fails). `remote_accessible`: published to
  /// peers (with its packed rkey); otherwise only usable as a local source.
  /// Fails for an overlap with a registered buffer or an unknown location.
  int registerLocalMemory(void* addr, size_t size, const std::string& location = "*",
                          bool remote_accessible = true);
  /// Registers several buffers with one publication of the segment; stops at
  /// the first failure (the earlier ones stay registered).
  int registerLocalMemoryBatch(const std::vector<BufferEntry>& buffers,
                               const std::string& location = "*");
  /// Removes the buffer registered at exactly `addr`. Tasks in flight from it
  /// must have ended; fails for an unknown address.
  int unregisterLocalMemory(void* addr);
  int unregisterLocalMemoryBatch(const std::vector<void*>& addrs);

  /// Finds a segment by name (P2PHANDSHAKE: "ip:port" of the owner's RPC
  /// listener, asked directly; other backends: the store's ram/<name>, else
  /// nvmeof/<name>, a file segment) and returns its handle; the same name
  /// opened twice gives the same handle. The endpoint is opened at the first
  /// transfer. A file segment's files are opened here, each at the path its
  /// local_path_map gives for this engine's local_server_name (then its host
  /// part), or its file_path when this engine is the segment's server_name;
  /// a file without one fails the open. READ and WRITE then move data between
  /// local host memory and the files through the nvmeof transport of this
  /// process (target_offset: the offset in the files laid end to end).
  /// Negative on failure.
  SegmentHandle openSegment(const std::string& segment_name);
  /// Forgets the segment: fails while tasks to it are unfinished.
  int closeSegment(SegmentHandle segment_id);
  /// The buffers the owner of an opened segment published; -1 for an
  /// unknown handle.
  int getSegmentBuffers(SegmentHandle segment_id, std::vector<SegmentBufferInfo>& buffers);
  /// The lanes of the endpoint to an opened segment, best first for a
  /// transfer between the registered local buffer holding `local_addr` and
  /// the segment's buffer holding `remote_addr` (their locations pick the
  /// devices from both priority matrices; a null or 0 address, or one in no
  /// buffer: no preference on that side), with the bytes each lane carried
  /// so far. Empty until the first transfer opens the endpoint; -1 for an
  /// unknown handle.
  int getSegmentPaths(SegmentHandle segment_id, std::vector<SegmentPathInfo>& paths,
                      const void* local_addr = nullptr, uint64_t remote_addr = 0);

  /// A batch of up to `batch_size` tasks; kInvalidBatchID on failure.
  BatchID allocateBatchID(size_t batch_size);
  /// Queues `entries` as the batch's next tasks and returns at once (0).
  /// Fails, queuing nothing, when they would exceed the batch size, or the
  /// batch is unknown. An entry whose segment is not open, whose remote range
  /// is outside every remote-accessible buffer of the segment, or whose
  /// length is 0 becomes an INVALID task; the others proceed.
  int submitTransfer(BatchID batch_id, const std::vector<TransferRequest>& entries);
  /// The state of task `task_id` (its index in submission order).
  int getTransferStatus(BatchID batch_id, size_t task_id, TransferStatus& status);
  /// The state of every task submitted so far, in order.
  int getBatchTransferStatus(BatchID batch_id, std::vector<TransferStatus>& status);
  /// Frees the batch; fails while any of its tasks is WAITING or PENDING.
  /// A notification of the batch not yet delivered is still delivered.
  int freeBatchID(BatchID batch_id);

  /// submitTransfer, and a notification to the entries' segment (every
  /// entry must target the same open RAM segment: else InvalidParam, -4,
  /// nothing queued) sent once every task of the batch has ended, only if
  /// they all COMPLETED: a WRITE completes when it is visible in the
  /// target's memory, so the target takes the notification after the data.
  /// When a task ends otherwise (FAILED, TIMEOUT, INVALID) the notification
  /// is dropped, not sent, and getBatchNotifyStatus says Canceled (-7).
  /// Busy (-12) while the batch's previous notification is unresolved;
  /// MessageTruncated (-15) past MC_NOTIFY_MAX_SIZE, before anything is
  /// queued.
  int submitTransferWithNotify(BatchID batch_id, const std::vector<TransferRequest>& entries,
                               const NotifyDesc& notify);
  /// The batch's notification (mc's own): 1 while its tasks run or it is
  /// being delivered, 0 once the target took it, else the negative reason
  /// (as sendNotifyByName, or Canceled: a task did not complete). NoElem
  /// (-11) for an unknown batch or one without a notification.
  int getBatchNotifyStatus(BatchID batch_id);
  /// Sends a notification to the segment of that name (its RPC listener: the
  /// name under P2PHANDSHAKE, its rpc_meta key in a store; it need not be
  /// open) and returns once the target took it: 0. Exactly once and in
  /// order: notifications of one engine are taken in the order they were
  /// sent (sendNotify* calls and batches whose tasks ended), each once.
  /// Errors (logged): MessageTruncated (-15, past MC_NOTIFY_MAX_SIZE here
  /// or at the target), NoResource (-2, the target's MC_NOTIFY_QUEUE_LENGTH
  /// queue is full), Rejected (-18, MC_AUTH_TOKEN mismatch or the sender's
  /// identity not proved), Unreachable (-3) / Timeout (-6) when the target
  /// did not answer within MC_HANDSHAKE_TIMEOUT, NoElem (-11) when the name
  /// is not known. Blocks for one round trip (two the first time).
  int sendNotifyByName(const std::string& segment_name, const NotifyDesc& notify);
  /// The same to an opened segment; NoElem for an unknown handle.
  int sendNotifyByID(SegmentHandle segment_id, const NotifyDesc& notify);
  /// Moves every notification taken so far into `notifies` (replacing its
  /// contents), oldest first; 0.
  int getNotifies(std::vector<NotifyDesc>& notifies);
  /// The same, with the segment that sent each (mc's own).
  int getNotifies(std::vector<ReceivedNotify>& notifies);

  /// Connects ahead of the first transfer to an opened segment (Mooncake's
  /// warmupEfaSegment, on whatever transport reaches it): opens the endpoint
  /// and waits, up to MC_HANDSHAKE_TIMEOUT, until a flush of every lane
  /// completed, so that each lane's connection is up. 0 (also when it was
  /// already open, and for a file segment, whose files openSegment opened);
  /// NoElem (-11) for an unknown handle, else the endpoint's error (logged).
  int warmupSegment(SegmentHandle segment_id);
  /// The load of every local device this engine opened, in the worker's
  /// order; 0, or -1 before init.
  int getNicLoadStats(std::vector<NicLoadStat>& stats) const;

  /// "ip:port" of this engine's RPC listener; empty before init().
  std::string getLocalIpAndPort() const;
  /// Endpoints open now (diagnostics; at most MC_MAX_EP_PER_CTX).
  size_t getEndpointCount() const;
  /// The endpoint store's counters (mc's own): 0, or -1 before init().
  int getEndpointStoreStats(EndpointStoreStats& stats) const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace mc

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

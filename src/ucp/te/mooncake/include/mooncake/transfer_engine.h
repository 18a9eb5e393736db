// SPDX-License-Identifier: Apache-2.0
// Mooncake's C++ Transfer Engine interface over mc's engine: namespace
// mooncake, class TransferEngine with Mooncake's names, defaults and types
// (Transport::TransferRequest, TransferStatus{s, transferred_bytes},
// TransferStatusEnum, BufferEntry, TransferMetadata::NotifyDesc, Status).
// Installed as <mooncake/transfer_engine.h>; link with -ltransfer_engine.
// C++17. Written from Mooncake's documented interface; a subset of it: the
// calls of the Transfer Engine document and its notifications.
//
// Conventions: `int` returns are 0 or mc's negative status (logged); a
// Status is ok() or carries that code and why. Any thread may call any
// method. What differs from Mooncake is said at each declaration.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mooncake {

/// What Mooncake returns from submitTransfer, getTransferStatus and
/// freeBatchID: OK, or a code (mc's negative status) and a message.
class Status {
 public:
  Status() = default;
  static Status OK() { return Status(); }
  static Status InvalidArgument(std::string msg) { return Status(-4, std::move(msg)); }
  static Status NotImplemented(std::string msg) { return Status(-8, std::move(msg)); }
  /// mc's status `code` (0: OK) with `msg`.
  static Status FromCode(int code, std::string msg) { return Status(code, std::move(msg)); }

  bool ok() const { return code_ == 0; }
  int code() const { return code_; }
  const std::string& message() const { return msg_; }
  /// "OK", or "error <code>: <message>".
  std::string ToString() const {
    return ok() ? "OK" : "error " + std::to_string(code_) + ": " + msg_;
  }

 private:
  Status(int code, std::string msg) : code_(code), msg_(std::move(msg)) {}
  int code_ = 0;
  std::string msg_;
};

struct TransferMetadata {
  /// A notification: two byte strings.
  struct NotifyDesc {
    std::string name;
    std::string notify_msg;
  };
};

/// The types of Mooncake's Transport; installTransport returns one per
/// protocol (a token here: mc's transports are not Transport objects).
class Transport {
 public:
  using SegmentID = uint64_t;
  using SegmentHandle = SegmentID;
  using BatchID = uint64_t;
  using NotifyDesc = TransferMetadata::NotifyDesc;

  struct TransferRequest {
    enum OpCode { READ, WRITE };
    OpCode opcode;
    void* source;
    SegmentID target_id;
    uint64_t target_offset;
    size_t length;
    int advise_retry_cnt = 0;  ///< not read: mc retries MC_RETRY_CNT times
  };

  enum TransferStatusEnum { WAITING, PENDING, INVALID, CANCELED, COMPLETED, TIMEOUT, FAILED };

  struct TransferStatus {
    TransferStatusEnum s;
    size_t transferred_bytes;
  };

  struct BufferEntry {
    void* addr;
    size_t length;
  };

  /// One local device's load (getNicLoadStats).
  struct NicLoadStats {
    std::string device_name;         ///< "tcp/eth0", "rc_verbs/mlx5_0:1"
    uint64_t inflight_bytes{0};      ///< posted on it and not yet completed
    double ewma_bandwidth_bps{0.0};  ///< bytes/s completed, averaged over its busy 10 ms windows
  };

  explicit Transport(const char* name) : name_(name) {}
  /// "tcp", "rdma" or "nvmeof".
  const char* getName() const { return name_; }

 private:
  const char* name_;
};

using TransferRequest = Transport::TransferRequest;
using TransferStatus = Transport::TransferStatus;
using TransferStatusEnum = Transport::TransferStatusEnum;
using SegmentHandle = Transport::SegmentHandle;
using SegmentID = Transport::SegmentID;
using BatchID = Transport::BatchID;
using BufferEntry = Transport::BufferEntry;
using NicLoadStats = Transport::NicLoadStats;
const static BatchID INVALID_BATCH_ID = UINT64_MAX;
/// registerLocalMemory's default location: detect it.
const static char* const kWildcardLocation = "*";

class TransferEngine {
 public:
  /// `auto_discover`: init opens every transport MC_TLS allows; false: the
  /// engine starts at the first call after init and the installTransport
  /// calls, with the installed protocols only (tcp, rdma, nvmeof).
  explicit TransferEngine(bool auto_discover = true);
  ~TransferEngine();
  TransferEngine(const TransferEngine&) = delete;
  TransferEngine& operator=(const TransferEngine&) = delete;

  /// Mooncake's init: the segment named `local_server_name` (P2PHANDSHAKE:
  /// getLocalIpAndPort()), reached at `ip_or_host_name` (empty: the host of
  /// local_server_name) on `rpc_port` (0: a free port of [MC_MIN_RPC_PORT,
  /// MC_MAX_RPC_PORT]). 0, or negative.
  int init(const std::string& metadata_conn_string, const std::string& local_server_name,
           const std::string& ip_or_host_name = "", uint64_t rpc_port = 12345);
  /// Stops the engine (removing its metadata); init may not be called again.
  int freeEngine();

  /// As the C API's installTransport: nullptr (logged) for nvlink, an unknown
  /// name, or a protocol a started engine did not open. `args` is not read.
  Transport* installTransport(const std::string& proto, void** args);
  /// 0 before the engine starts; -8 after (a running transport stays).
  int uninstallTransport(const std::string& proto);

  std::string getLocalIpAndPort();
  /// The RPC listener's port; negative before init.
  int getRpcPort();

  /// A handle, or (SegmentHandle)-1 cast from mc's negative status.
  SegmentHandle openSegment(const std::string& segment_name);
  int closeSegment(SegmentHandle handle);
  /// -8: the segment lives as long as the engine.
  int removeLocalSegment(const std::string& segment_name);

  /// `update_metadata` false is refused (-8): mc publishes every registration.
  int registerLocalMemory(void* addr, size_t length,
                          const std::string& location = kWildcardLocation,
                          bool remote_accessible = true, bool update_metadata = true);
  int unregisterLocalMemory(void* addr, bool update_metadata = true);
  int registerLocalMemoryBatch(const std::vector<BufferEntry>& buffer_list,
                               const std::string& location);
  int unregisterLocalMemoryBatch(const std::vector<void*>& addr_list);

  BatchID allocateBatchID(size_t batch_size);
  Status freeBatchID(BatchID batch_id);
  Status submitTransfer(BatchID batch_id, const std::vector<TransferRequest>& entries);
  /// The notification reaches the target after every task COMPLETED (the
  /// written bytes are then in its memory); dropped when one did not.
  Status submitTransferWithNotify(BatchID batch_id, const std::vector<TransferRequest>& entries,
                                  TransferMetadata::NotifyDesc notify_msg);
  /// Moves the notifications taken so far into `notifies`, oldest first.
  int getNotifies(std::vector<TransferMetadata::NotifyDesc>& notifies);
  int sendNotifyByID(SegmentID target_id, TransferMetadata::NotifyDesc notify_msg);
  int sendNotifyByName(std::string remote_agent, TransferMetadata::NotifyDesc notify_msg);

  Status getTransferStatus(BatchID batch_id, size_t task_id, TransferStatus& status);
  /// The batch as one: COMPLETED when every task did (bytes summed), else
  /// the first task that ended otherwise, else WAITING / PENDING.
  Status getBatchTransferStatus(BatchID batch_id, TransferStatus& status);

  /// 0: mc keeps no segment cache; openSegment reads the descriptor.
  int syncSegmentCache(const std::string& segment_name = "");

  /// Every local device the engine opened, with its load (the C API's
  /// getNicLoadStats).
  Status getNicLoadStats(std::vector<NicLoadStats>& stats) const;
  /// Logs that mc installs no signal handler (see the C API's
  /// enableGracefulShutdown).
  void enableGracefulShutdown();
  /// The local devices with their load and the NIC priority matrix, as text
  /// or JSON (the C API's showLinks); empty when the engine did not start.
  std::string showLinks(bool json = false) const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace mooncake

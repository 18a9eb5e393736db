// SPDX-License-Identifier: Apache-2.0
// TransferEngine::Impl: the state behind mc::TransferEngine. engine.cc has
// init, registration, publication and segments; engine_transfer.cc the
// batches, the progress thread and the task state machine; engine_notify.cc
// the notifications (over te::Notifier).
//
// Threads: the caller's threads (the API; submitTransfer posts its tasks
// itself when none is queued, and a status call on an unfinished task
// progresses the worker once), the progress thread (drives the UCP worker,
// posts queued tasks, completes them, and in progress mode serves tcp's
// sockets, sleeping on them when idle; naps while a caller polls), the RPC
// listener's thread (serves the descriptor and notifications), the
// Notifier's sending and keyer threads, the metadata refresher
// (engine_refresh.cc: puts this engine's keys again when the store lost
// them), and the metadata backend's own. Each is named (mc_te_progress,
// mc_te_rpc, ...: docs/transfer-engine.md).
// Lock order: publish_mu_ -> mu_ -> the Notifier's lock. mu_ guards every
// member below it and every UCP call (UCP is single-threaded per worker); it
// is never held across a network round trip (handshake, metadata store,
// notification), which publish_mu_ and open_mu_ serialise instead. UCP
// completion callbacks run with mu_ held; the Notifier's callbacks take mu_
// on its sending thread, holding none of its locks.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "mc/transfer_engine.h"
#include "ucp/api/ucp.h"
#include "ucp/metadata/descriptors.h"
#include "ucp/metadata/store.h"
#include "ucp/te/endpoint_store.h"
#include "ucp/te/notifier.h"
#include "ucp/te/rpc_server.h"
#include "ucp/te/te_config.h"
#include "ucs/topo/topo.h"

namespace mc {

using ucs::Result;
using ucs::Status;

/// A buffer of this engine's segment.
struct LocalBuffer {
  void* addr = nullptr;
  size_t length = 0;
  std::string location;
  bool remote_accessible = true;
  std::unique_ptr<ucp::MemHandle> memh;
  std::vector<uint8_t> rkey;  ///< packed; empty when not remote-accessible
  size_t inflight = 0;        ///< tasks from or to it not yet ended
};

/// One file of an opened file (nvmeof) segment, opened with the worker's
/// file transport (engine_file.cc).
struct FileBuffer {
  std::string path;          ///< the path used on this host (local_path_map or file_path)
  uint64_t offset = 0;       ///< where it starts in the segment's offset space
  uint64_t length = 0;       ///< from the descriptor
  uint64_t file_length = 0;  ///< the file's size when it was opened
  bool writable = false;     ///< opened for writing (false: a read-only file here)
  std::unique_ptr<ucp::File> file;
};

/// An opened remote segment: a RAM segment (`desc`) or, when `file` is set,
/// a file segment (`file_desc` and `files`), moved by the nvmeof transport
/// of this process.
struct RemoteSegment {
  std::string name;
  metadata::SegmentDesc desc;
  bool file = false;
  metadata::FileSegmentDesc file_desc;
  std::vector<FileBuffer> files;
  uint64_t file_bytes = 0;  ///< bytes moved by completed file tasks
  size_t inflight = 0;      ///< its tasks not yet ended
  /// Device preference by (local location, remote buffer location), made on
  /// first use (engine_paths.cc).
  std::map<std::pair<std::string, std::string>, ucp::RailPreference> rails;
  /// The entry of `rails` found last, for its local location and buffer.
  const ucp::RailPreference* last_rails = nullptr;
  std::string last_rails_local;
  size_t last_rails_index = 0;
};

struct Batch;

struct Task {
  Batch* batch = nullptr;
  TransferRequest req{};
  TaskStatus status = WAITING;
  size_t transferred = 0;
  size_t buffer_index = 0;       ///< of the remote segment's buffers
  LocalBuffer* local = nullptr;  ///< registration covering req.source, or null
  uint64_t deadline_ns = 0;
  uint64_t not_before_ns = 0;  ///< retry back-off
  unsigned attempts = 0;       ///< failed postings so far
  int outstanding = 0;         ///< UCP callbacks still to come for this posting
  Status first_error = Status::Ok;
  /// Why it ended INVALID, FAILED or TIMEOUT (TransferStatus::error).
  Status end_error = Status::Ok;
  te::EndpointStore::Entry entry;  ///< the endpoint carrying it while PENDING
  std::vector<std::shared_ptr<ucp::Request>> requests;
  /// File tasks: the type of the local memory (Worker::file_io's).
  uct::MemType file_mem = uct::MemType::Host;
};

/// The notification of a batch (submitTransferWithNotify).
struct BatchNotify {
  std::string target;  ///< the segment's name
  NotifyDesc desc;
  bool waiting = true;  ///< for the batch's tasks to end
  int status = 1;       ///< getBatchNotifyStatus: 1, 0 or the negative reason
};

struct Batch {
  BatchID id = 0;
  size_t capacity = 0;
  std::vector<std::unique_ptr<Task>> tasks;
  size_t unfinished = 0;
  std::optional<BatchNotify> notify;
};

class TransferEngine::Impl {
 public:
  Impl() = default;
  ~Impl();

  int init(const std::string& conn, const std::string& local_server_name);
  /// The segment named `local_server_name`, reached at `host` (and `port`, 0:
  /// the first free one of the range) under any backend.
  int init_at(const std::string& conn, const std::string& local_server_name,
              const std::string& host, uint16_t port);
  /// A knob for this engine only (TransferEngine::setConfig); before init.
  int set_config(const std::string& name, const std::string& value);
  /// The transports whose devices this engine opened, each once, sorted.
  std::vector<std::string> transports() const;
  int register_memory(const std::vector<BufferEntry>& buffers, const std::string& location,
                      bool remote_accessible);
  int unregister_memory(const std::vector<void*>& addrs);
  SegmentHandle open_segment(const std::string& name);
  int close_segment(SegmentHandle id);
  int segment_buffers(SegmentHandle id, std::vector<SegmentBufferInfo>& out);
  int segment_paths(SegmentHandle id, const void* local_addr, uint64_t remote_addr,
                    std::vector<SegmentPathInfo>& out);

  BatchID allocate_batch(size_t batch_size);
  int submit(BatchID id, const std::vector<TransferRequest>& entries);
  int status(BatchID id, size_t task_id, TransferStatus& out);
  int batch_status(BatchID id, std::vector<TransferStatus>& out);
  int free_batch(BatchID id);

  std::string ip_port() const;
  size_t endpoint_count() const;
  int endpoint_store_stats(EndpointStoreStats& out) const;

  // engine_load.cc
  int warmup(SegmentHandle id);
  int nic_load(std::vector<NicLoadStat>& out) const;

  // engine_notify.cc
  int submit_with_notify(BatchID id, const std::vector<TransferRequest>& entries,
                         const NotifyDesc& notify);
  int batch_notify_status(BatchID id);
  int send_notify(const std::string& segment, const NotifyDesc& notify);
  int send_notify_to(SegmentHandle id, const NotifyDesc& notify);
  int get_notifies(std::vector<te::TakenNotify>& out);

 private:
  // engine.cc
  Status parse_server_name(const std::string& local_server_name);
  int init_started(const std::string& conn);
  Status start_ucp();
  Status publish();
  Result<std::string> describe(const std::string& name, std::string* error);
  bool p2p_alias(const std::string& name) const;
  metadata::SegmentDesc local_desc_locked() const;
  Result<metadata::SegmentDesc> fetch_segment(const std::string& name, std::string* file_json);
  Result<metadata::SegmentDesc> checked_with_owner(const std::string& name,
                                                   const metadata::SegmentDesc& stored);
  void shutdown();

  // engine_paths.cc
  void load_topology(const ucs::config::Sources& sources, ucp::ContextConfig* ucp_config);
  ucp::RailPreference rail_preference(const std::string& local, const std::string& remote,
                                      const metadata::PriorityMatrix& remote_matrix) const;
  const ucp::RailPreference* rails_locked(RemoteSegment& seg, const Task& task);
  void log_path_locked(te::EpEntry& entry, const RemoteSegment& seg, const Task& task,
                       const ucp::RailPreference* rails);
  void log_location_choice(const LocalBuffer& buf) const;

  // engine_file.cc
  Result<std::unique_ptr<RemoteSegment>> make_file_segment(const std::string& name,
                                                           const std::string& json);
  Result<std::string> local_file_path(const std::string& segment,
                                      const metadata::FileSegmentDesc& desc, size_t index) const;
  bool validate_file_locked(const TransferRequest& req, const RemoteSegment& seg, Task* task,
                            std::string* why);
  void post_file_task_locked(Task* task, RemoteSegment& seg);
  void on_file_done_locked(Task* task, Status status);
  void drain_file_ops_locked(std::unique_lock<std::mutex>& lock);

  // engine_refresh.cc: publication, who owns the segment name, the refresher
  Status claim_keys();
  Status keep_key_locked(const std::string& key, const std::string& value, bool* was_absent);
  bool ours_locked(const std::string& key, const std::string& value) const;
  bool owner_answers(const std::string& rpc_value);
  std::string owner_of(const std::optional<std::string>& rpc_value) const;
  void lose_name_locked(const std::string& key);
  void remove_own_keys();
  void start_refresher();
  void stop_refresher();
  void refresh_loop();
  void refresh_once();

  // engine_notify.cc
  Status start_notifier();
  Result<std::pair<std::string, uint16_t>> rpc_address(const std::string& segment,
                                                       std::string* error);
  /// The batch's tasks all ended: posts its notification, or drops it.
  void batch_ended_locked(Batch& batch);

  // engine_load.cc
  /// Every 10 ms: the devices' in-flight bytes and bandwidth averages.
  void sample_load_locked(uint64_t now);
  /// Bytes in flight per local resource (the worker's order), and with
  /// `done` the bytes completed since the last call, per resource.
  std::vector<uint64_t> lane_load_locked(std::vector<uint64_t>* done) const;

  // engine_transfer.cc
  void progress_loop();
  /// Wakes the progress thread's wait (any thread, with or without mu_).
  void wake_progress();
  /// The progress thread's sleep: releases `lock` for up to `wait_ns`, until
  /// wake_progress(), or with `sockets` until the worker's event fd (tcp's
  /// sockets: a peer's operation to serve) has something for progress().
  void progress_wait(std::unique_lock<std::mutex>& lock, uint64_t wait_ns, bool sockets);
  /// One pass of the worker, the file iface and the queue; how many events.
  unsigned progress_once_locked(uint64_t now);
  /// A status call's pass, for an unfinished task (progress_once_locked);
  /// whether the caller should yield the CPU once it has dropped the lock.
  bool caller_progress_locked();
  unsigned post_pending_locked(uint64_t now);  ///< how many tasks it posted
  bool post_task_locked(Task* task, uint64_t now);
  void flush_writes_locked(uint64_t now);
  Result<te::EndpointStore::Entry> endpoint_locked(int32_t segment);
  Result<const ucp::Rkey*> rkey_locked(te::EpEntry& entry, const RemoteSegment& seg, size_t index);
  void on_op_done_locked(Task* task, Status status);
  void fail_posting_locked(Task* task, Status status, uint64_t now);
  void finish_locked(Task* task, TaskStatus status);
  /// A task as new: a spare one, or a fresh one.
  std::unique_ptr<Task> new_task_locked();
  int submit_locked(Batch& batch, const std::vector<TransferRequest>& entries);
  /// The registered buffer holding the byte at `addr`, or null.
  LocalBuffer* buffer_at_locked(const void* addr) const;
  bool validate_locked(const TransferRequest& req, Task* task);

  // Set by init() before any thread starts; read-only after.
  std::string conn_;
  std::string server_name_;  ///< local_server_name as given
  std::string host_;         ///< its host part (no port)
  std::string segment_name_;
  std::string ip_;
  uint16_t requested_port_ = 0;
  std::map<std::string, std::string> config_overrides_;  ///< set_config, before init
  std::string key_prefix_ = "mooncake";
  std::chrono::milliseconds refresh_interval_{0};  ///< MC_METADATA_REFRESH_INTERVAL; 0: none
  te::TeConfig config_;
  uint64_t generation_ = 0;
  uint64_t retry_cnt_ = 9;
  uint64_t transfer_timeout_ns_ = 0;
  metadata::PriorityMatrix priority_matrix_;
  std::vector<metadata::DeviceDesc> devices_;
  std::unique_ptr<metadata::Store> store_;
  std::unique_ptr<te::Notifier> notifier_;  ///< before rpc_, which calls it
  std::unique_ptr<te::RpcServer> rpc_;
  std::atomic<bool> initialized_{false};

  std::mutex publish_mu_;  ///< serialises metadata publication (before mu_); guards:
  std::map<std::string, std::string> published_;  ///< key -> the value this engine put last
  bool name_lost_ = false;  ///< another engine published the segment name since
  std::mutex open_mu_;      ///< serialises segment lookups (before mu_)

  std::mutex refresh_mu_;  ///< guards refresh_stop_ (taken alone)
  std::condition_variable refresh_cv_;
  bool refresh_stop_ = false;
  std::thread refresh_thread_;
  bool store_down_ = false;  ///< refresher thread only: an outage was logged

  mutable std::mutex mu_;
  /// eventfd: new work for the progress thread (wake_progress()); made by
  /// init() before the thread starts, closed by the destructor.
  int wake_fd_ = -1;
  bool stop_ = false;
  std::unique_ptr<ucp::Context> context_;
  std::unique_ptr<ucp::Worker> worker_;
  std::map<uintptr_t, std::unique_ptr<LocalBuffer>> buffers_;  ///< by address
  std::map<SegmentID, std::unique_ptr<RemoteSegment>> segments_;
  SegmentID next_segment_ = 0;
  std::map<BatchID, std::unique_ptr<Batch>> batches_;
  BatchID next_batch_ = 1;
  /// Tasks of freed batches, reset, for the next submissions: a new task
  /// cost an allocation for itself and two for its requests' vector (the
  /// put's request, then the flush's). At most kSpareTasks are kept.
  std::vector<std::unique_ptr<Task>> spare_tasks_;
  static constexpr size_t kSpareTasks = 4096;
  std::deque<Task*> pending_;                 ///< WAITING tasks to post
  size_t inflight_ = 0;                       ///< tasks PENDING in UCP
  uint64_t last_post_ns_ = 0;                 ///< when submit() last posted tasks itself
  uint64_t caller_poll_ns_ = 0;               ///< when a caller's status pass or post last ended
  uint64_t caller_poll_gap_ns_ = UINT64_MAX;  ///< and the caller's pause before that status call
  uint64_t caller_events_ns_ = 0;             ///< when a caller's status pass last found events
  bool naps_for_caller_ = false;              ///< the progress thread waits because a caller polls
  /// Writes whose put is posted and whose flush is not, by endpoint, and
  /// those endpoints in posting order (post_pending_locked flushes them).
  std::map<const te::EpEntry*, std::vector<Task*>> unflushed_;
  std::vector<te::EndpointStore::Entry> unflushed_entries_;
  std::unique_ptr<te::EndpointStore> endpoints_;
  size_t file_inflight_ = 0;  ///< file tasks PENDING (also counted in inflight_)
  /// Per local resource (the worker's order): the bandwidth average of
  /// NicLoadStat, and whether it has one yet (sample_load_locked).
  std::vector<std::pair<double, bool>> load_ewma_;
  uint64_t load_sampled_ns_ = 0;
  bool load_busy_ = false;             ///< the last sample saw bytes in flight or completed
  uint64_t load_posts_ = 0;            ///< tasks posted on endpoints so far
  uint64_t load_posts_seen_ = 0;       ///< load_posts_ at the last sample
  std::condition_variable warmup_cv_;  ///< a warm-up flush completed (with mu_)
  std::thread progress_thread_;
};

}  // namespace mc

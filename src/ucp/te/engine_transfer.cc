// SPDX-License-Identifier: Apache-2.0
// TransferEngine::Impl: batches, the progress thread and the task state
// machine (see engine.h for the threads and the lock order).
//
// A task: WAITING (queued) -> PENDING (posted to UCP) -> COMPLETED, or on a
// failed posting back to WAITING for another attempt on a fresh endpoint
// (up to MC_RETRY_CNT), then FAILED; TIMEOUT once MC_TRANSFER_TIMEOUT has
// passed since submission. INVALID is decided at submit and never moves.
// finish_locked() is the one place a task ends, so it ends exactly once.
// Tasks to file segments are posted by engine_file.cc instead (never
// retried: an error ends them FAILED).
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "ucp/te/engine.h"
#include "ucp/te/location.h"
#include "ucs/log/log.h"
#include "ucs/sys/sys.h"

namespace mc {
namespace {

/// Status calls that progressed the worker less than this ago and less
/// than this apart: a caller polls (one that sleeps between its polls does
/// not stand in for the progress thread, whose passes keep UCP's queued
/// fragments moving).
constexpr uint64_t kCallerPollNs = 100'000;
/// Meanwhile the progress thread looks this often (a caller that stops
/// polling leaves what it has in flight to the thread at most this late).
constexpr uint64_t kCallerNapNs = 1'000'000;
/// The longest sleep of the progress thread when it watches the sockets and
/// every iface wakes it through the worker's event fd (tcp alone): what is
/// left to look for without a wake-up is request deadlines and the load
/// sample. Otherwise it looks every millisecond at most (sm is polled).
constexpr uint64_t kEventDrivenWaitNs = 10'000'000;
/// A caller whose status calls have found nothing to progress for this long
/// since its last completion or submission yields the CPU after each such
/// call (caller_progress_locked).
constexpr uint64_t kCallerYieldAfterNs = 50'000;

}  // namespace

BatchID TransferEngine::Impl::allocate_batch(size_t batch_size) {
  if (!initialized_ || !worker_ || batch_size == 0) {
    MC_LOG(error) << "transfer engine: allocateBatchID(" << batch_size
                  << "): " << (batch_size == 0 ? "size 0" : "engine not initialised");
    return kInvalidBatchID;
  }
  auto batch = std::make_unique<Batch>();
  batch->capacity = batch_size;
  batch->tasks.reserve(std::min<size_t>(batch_size, 4096));
  std::lock_guard<std::mutex> lock(mu_);
  const BatchID id = next_batch_++;
  batch->id = id;
  batches_[id] = std::move(batch);
  return id;
}

LocalBuffer* TransferEngine::Impl::buffer_at_locked(const void* addr) const {
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  auto next = buffers_.upper_bound(a);
  if (next == buffers_.begin()) return nullptr;
  --next;
  return a - next->first < next->second->length ? next->second.get() : nullptr;
}

bool TransferEngine::Impl::validate_locked(const TransferRequest& req, Task* task) {
  auto seg = segments_.find(req.target_id);
  const char* why = nullptr;
  std::string file_why;
  task->end_error = Status::InvalidParam;
  if (req.opcode != TransferRequest::READ && req.opcode != TransferRequest::WRITE) {
    why = "unknown opcode";
  } else if (req.length == 0 || req.source == nullptr) {
    why = "empty local range";
  } else if (seg == segments_.end()) {
    why = "segment not open";
    task->end_error = Status::NoElem;
  } else if (seg->second->file) {
    if (validate_file_locked(req, *seg->second, task, &file_why)) {
      task->end_error = Status::Ok;
      return true;
    }
    why = file_why.c_str();
  } else {
    const auto& bufs = seg->second->desc.buffers;
    for (size_t i = 0; i < bufs.size(); ++i) {
      const auto& b = bufs[i];
      if (req.target_offset >= b.addr && req.length <= b.length &&
          req.target_offset - b.addr <= b.length - req.length) {
        task->buffer_index = i;
        task->end_error = Status::Ok;
        return true;
      }
    }
    why = "remote range outside every registered buffer of the segment";
    task->end_error = Status::Rejected;  // the owner's registrations refuse it
  }
  MC_LOG(error) << "transfer engine: invalid task (segment " << req.target_id << ", offset 0x"
                << std::hex << req.target_offset << std::dec << ", " << req.length
                << " bytes): " << why;
  return false;
}

int TransferEngine::Impl::submit(BatchID id, const std::vector<TransferRequest>& entries) {
  int rc = 0;
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = batches_.find(id);
    if (it == batches_.end()) {
      MC_LOG(error) << "transfer engine: submitTransfer: unknown batch " << id;
      return static_cast<int>(Status::NoElem);
    }
    const bool idle = pending_.empty();
    rc = submit_locked(*it->second, entries);
    // Nothing queued before these: post them from this thread now, not one
    // thread hop later (the progress thread completes them; it polls, as
    // the post counts as activity). A queue already waiting (back-off) is
    // left to the progress thread, in order.
    if (rc == 0 && idle && !stop_ && !pending_.empty()) {
      last_post_ns_ = ucs::monotonic_ns();
      post_pending_locked(last_post_ns_);
      // A caller's gap between its polls runs from here, not from its last
      // poll of the batch before: the submission's own cost (long under a
      // sanitizer) is no pause of the caller's.
      caller_poll_ns_ = ucs::monotonic_ns();
    }
    // The progress thread is woken for what is queued, and for what is in
    // flight unless it naps because a caller polls (that caller completes
    // it; the thread looks again within kCallerNapNs in any case). A task
    // that completed here (sm's copies) leaves it nothing to do.
    wake = rc == 0 && (!pending_.empty() || (inflight_ > 0 && !naps_for_caller_));
  }
  if (wake) wake_progress();
  return rc;
}

int TransferEngine::Impl::submit_locked(Batch& batch, const std::vector<TransferRequest>& entries) {
  const uint64_t now = ucs::monotonic_ns();
  if (entries.size() > batch.capacity - batch.tasks.size()) {
    MC_LOG(error) << "transfer engine: submitTransfer: " << entries.size() << " tasks exceed batch "
                  << batch.id << " (" << batch.tasks.size() << " of " << batch.capacity << " used)";
    return static_cast<int>(Status::NoResource);
  }
  const size_t queued = pending_.size();
  for (const TransferRequest& req : entries) {
    std::unique_ptr<Task> task = new_task_locked();
    task->req = req;
    task->batch = &batch;
    task->deadline_ns =
        transfer_timeout_ns_ == UINT64_MAX ? UINT64_MAX : now + transfer_timeout_ns_;
    if (!validate_locked(req, task.get())) {
      task->status = INVALID;
    } else {
      LocalBuffer* b = buffer_at_locked(req.source);
      if (b && b->memh->contains(req.source, req.length)) task->local = b;
      if (task->local) task->local->inflight++;
      segments_[req.target_id]->inflight++;
      batch.unfinished++;
      pending_.push_back(task.get());
    }
    batch.tasks.push_back(std::move(task));
  }
  // The batch's tasks are posted grouped by segment (in their order within
  // each): a batch that interleaves more segments than MC_MAX_EP_PER_CTX
  // endpoints then evicts at most one endpoint per segment, not one per task
  // (a new endpoint and its wire-up each). Task indexes are unchanged.
  const auto by_segment = [](const Task* a, const Task* b) {
    return a->req.target_id < b->req.target_id;
  };
  if (!std::is_sorted(pending_.begin() + queued, pending_.end(), by_segment))
    std::stable_sort(pending_.begin() + queued, pending_.end(), by_segment);
  return 0;
}

int TransferEngine::Impl::status(BatchID id, size_t task_id, TransferStatus& out) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = batches_.find(id);
  if (it == batches_.end() || task_id >= it->second->tasks.size()) {
    MC_LOG(error) << "transfer engine: getTransferStatus: "
                  << (it == batches_.end() ? "unknown batch " + std::to_string(id)
                                           : "no task " + std::to_string(task_id));
    return static_cast<int>(Status::NoElem);
  }
  const Task& t = *it->second->tasks[task_id];
  const bool yield = (t.status == WAITING || t.status == PENDING) && caller_progress_locked();
  out.s = t.status;
  out.transferred = t.transferred;
  out.error = static_cast<int>(t.end_error);
  lock.unlock();
  if (yield) std::this_thread::yield();
  return 0;
}

int TransferEngine::Impl::batch_status(BatchID id, std::vector<TransferStatus>& out) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = batches_.find(id);
  if (it == batches_.end()) return static_cast<int>(Status::NoElem);
  const bool yield = it->second->unfinished != 0 && caller_progress_locked();
  out.clear();
  for (const auto& t : it->second->tasks) {
    out.push_back({t->status, t->transferred, static_cast<int>(t->end_error)});
  }
  lock.unlock();
  if (yield) std::this_thread::yield();
  return 0;
}

int TransferEngine::Impl::free_batch(BatchID id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = batches_.find(id);
  if (it == batches_.end()) {
    MC_LOG(error) << "transfer engine: freeBatchID: unknown batch " << id;
    return static_cast<int>(Status::NoElem);
  }
  if (it->second->unfinished != 0) {
    MC_LOG(error) << "transfer engine: freeBatchID: batch " << id << " has "
                  << it->second->unfinished << " unfinished tasks";
    return static_cast<int>(Status::Busy);
  }
  for (std::unique_ptr<Task>& task : it->second->tasks) {
    if (spare_tasks_.size() >= kSpareTasks) break;
    // Every field as new but the requests' vector, which keeps its room.
    std::vector<std::shared_ptr<ucp::Request>> requests = std::move(task->requests);
    requests.clear();
    *task = Task{};
    task->requests = std::move(requests);
    spare_tasks_.push_back(std::move(task));
  }
  batches_.erase(it);
  return 0;
}

std::unique_ptr<Task> TransferEngine::Impl::new_task_locked() {
  if (spare_tasks_.empty()) return std::make_unique<Task>();
  std::unique_ptr<Task> task = std::move(spare_tasks_.back());
  spare_tasks_.pop_back();
  return task;
}

void TransferEngine::Impl::finish_locked(Task* task, TaskStatus status) {
  task->status = status;
  if (status == TIMEOUT) {
    task->end_error = Status::Timeout;
  } else if (status == FAILED && task->end_error == Status::Ok) {
    task->end_error = stop_ ? Status::Canceled : Status::IoError;
  }
  task->transferred = status == COMPLETED ? task->req.length : 0;
  task->entry.reset();
  task->requests.clear();
  if (task->local) task->local->inflight--;
  auto seg = segments_.find(task->req.target_id);
  if (seg != segments_.end()) seg->second->inflight--;
  Batch& batch = *task->batch;
  if (--batch.unfinished == 0 && batch.notify && batch.notify->waiting) batch_ended_locked(batch);
}

Result<te::EndpointStore::Entry> TransferEngine::Impl::endpoint_locked(int32_t segment) {
  const RemoteSegment& seg = *segments_.at(segment);
  te::EndpointStore::Entry e = endpoints_->get(segment);
  if (e && !e->failed && e->generation == seg.desc.generation) return e;
  if (e) endpoints_->remove(segment);
  Result<std::unique_ptr<ucp::Endpoint>> ep = worker_->ep_create(seg.desc.worker_address);
  if (!ep.ok()) {
    MC_LOG(warn) << "transfer engine: cannot open an endpoint to segment '" << seg.name
                 << "': " << ep.status();
    return ep.status();
  }
  e = std::make_shared<te::EpEntry>();
  e->segment = segment;
  e->generation = seg.desc.generation;
  e->ep = std::move(*ep);
  e->rkeys.resize(seg.desc.buffers.size());
  MC_LOG(debug) << "transfer engine: endpoint to segment '" << seg.name << "' opened";
  endpoints_->insert(segment, e);
  return e;
}

Result<const ucp::Rkey*> TransferEngine::Impl::rkey_locked(te::EpEntry& entry,
                                                           const RemoteSegment& seg, size_t index) {
  if (index >= entry.rkeys.size()) entry.rkeys.resize(seg.desc.buffers.size());
  if (!entry.rkeys[index]) {
    MC_ASSIGN_OR_RETURN(entry.rkeys[index], entry.ep->rkey_unpack(seg.desc.buffers[index].rkey));
  }
  return entry.rkeys[index].get();
}

void TransferEngine::Impl::on_op_done_locked(Task* task, Status status) {
  if (task->entry && task->entry->inflight > 0) task->entry->inflight--;
  if (status != Status::Ok && task->first_error == Status::Ok) task->first_error = status;
  if (--task->outstanding > 0) return;
  inflight_--;
  if (stop_) {
    finish_locked(task, FAILED);
  } else if (task->first_error == Status::Ok) {
    finish_locked(task, COMPLETED);
  } else {
    fail_posting_locked(task, task->first_error, ucs::monotonic_ns());
  }
}

void TransferEngine::Impl::fail_posting_locked(Task* task, Status status, uint64_t now) {
  if (task->entry) task->entry->failed = true;  // the next attempt opens a fresh one
  task->entry.reset();
  task->requests.clear();
  task->attempts++;
  auto it = segments_.find(task->req.target_id);
  const std::string segment = "segment '" + (it != segments_.end() ? it->second->name : "?") +
                              "' (handle " + std::to_string(task->req.target_id) + ")";
  if (status == Status::Timeout || now >= task->deadline_ns) {
    MC_LOG(warn) << "transfer engine: task to " << segment << " timed out after " << task->attempts
                 << " attempts (" << status << ")";
    finish_locked(task, TIMEOUT);
  } else if (task->attempts > retry_cnt_) {
    MC_LOG(error) << "transfer engine: task to " << segment << " failed after " << task->attempts
                  << " attempts: " << status;
    task->end_error = status;
    finish_locked(task, FAILED);
  } else {
    MC_LOG(debug) << "transfer engine: task to " << segment << " attempt " << task->attempts
                  << " failed (" << status << "); retrying";
    task->status = WAITING;
    task->first_error = Status::Ok;
    // Back-off: 1 ms doubling, at most 64 ms.
    task->not_before_ns = now + (1000000ULL << std::min<unsigned>(task->attempts - 1, 6));
    pending_.push_back(task);
  }
}

// Posts one task. Returns false when the task went back to the queue to wait
// for its back-off.
bool TransferEngine::Impl::post_task_locked(Task* task, uint64_t now) {
  if (now >= task->deadline_ns) {
    finish_locked(task, TIMEOUT);
    return true;
  }
  if (now < task->not_before_ns) {
    pending_.push_back(task);
    return false;
  }
  if (RemoteSegment& seg = *segments_.at(task->req.target_id); seg.file) {
    post_file_task_locked(task, seg);
    return true;
  }
  Result<te::EndpointStore::Entry> entry = endpoint_locked(task->req.target_id);
  if (!entry.ok()) {
    fail_posting_locked(task, entry.status(), now);
    return true;
  }
  Result<const ucp::Rkey*> rkey =
      rkey_locked(**entry, *segments_.at(task->req.target_id), task->buffer_index);
  if (!rkey.ok()) {
    task->entry = *entry;
    fail_posting_locked(task, rkey.status(), now);
    return true;
  }
  task->entry = *entry;
  task->status = PENDING;
  task->first_error = Status::Ok;
  ucp::RequestParams params;
  params.memh = task->local ? task->local->memh.get() : nullptr;
  // GPU memory: UCP stages it through host memory when no lane reaches it.
  if (task->local && te::location_is_gpu(task->local->location)) {
    params.mem_type = uct::MemType::Cuda;
  }
  RemoteSegment& seg = *segments_.at(task->req.target_id);
  params.rails = rails_locked(seg, *task);
  log_path_locked(**entry, seg, *task, params.rails);
  if (task->deadline_ns != UINT64_MAX) {
    params.timeout = std::chrono::nanoseconds(task->deadline_ns - now);
  }
  params.callback = [this, task](Status s) { on_op_done_locked(task, s); };
  // A write is complete when it is remote: a flush of its endpoint follows
  // the put, one for every write posted to it in this pass
  // (flush_writes_locked), and the task ends with the second callback.
  const bool write = task->req.opcode == TransferRequest::WRITE;
  ucp::Endpoint& ep = *(*entry)->ep;
  task->outstanding = write ? 2 : 1;
  (*entry)->inflight += task->outstanding;
  inflight_++;
  load_posts_++;
  Result<std::shared_ptr<ucp::Request>> req =
      write
          ? ep.put_nbx(task->req.source, task->req.length, task->req.target_offset, **rkey, params)
          : ep.get_nbx(task->req.source, task->req.length, task->req.target_offset, **rkey, params);
  if (!req.ok()) {
    // No callback comes for an operation that did not start.
    const int missing = task->outstanding;
    for (int i = 0; i < missing; ++i) on_op_done_locked(task, req.status());
    return true;
  }
  task->requests.push_back(*req);
  if (write) {
    std::vector<Task*>& group = unflushed_[entry->get()];
    if (group.empty()) unflushed_entries_.push_back(*entry);
    group.push_back(task);
  }
  return true;
}

// One flush per endpoint for the writes posted to it since the last call:
// it completes once every one of their puts is remote, and calls each of
// them back (a flush per write cost a flush of every lane per task).
void TransferEngine::Impl::flush_writes_locked(uint64_t now) {
  for (const te::EndpointStore::Entry& entry : unflushed_entries_) {
    auto it = unflushed_.find(entry.get());
    if (it == unflushed_.end()) continue;
    auto tasks = std::make_shared<std::vector<Task*>>(std::move(it->second));
    unflushed_.erase(it);
    ucp::RequestParams fp;
    uint64_t deadline = UINT64_MAX;
    for (const Task* t : *tasks) deadline = std::min(deadline, t->deadline_ns);
    if (deadline != UINT64_MAX)
      fp.timeout = std::chrono::nanoseconds(deadline > now ? deadline - now : 0);
    fp.callback = [this, tasks](Status s) {
      for (Task* t : *tasks) on_op_done_locked(t, s);
    };
    Result<std::shared_ptr<ucp::Request>> flush = entry->ep->flush(fp);
    if (!flush.ok()) {
      for (Task* t : *tasks) on_op_done_locked(t, flush.status());
      continue;
    }
    for (Task* t : *tasks) {
      if (t->status == PENDING) t->requests.push_back(*flush);
    }
  }
  unflushed_entries_.clear();
}

unsigned TransferEngine::Impl::post_pending_locked(uint64_t now) {
  // Each queued task once per pass; retried ones go to the back.
  unsigned posted = 0;
  for (size_t n = pending_.size(); n > 0 && !pending_.empty(); --n) {
    Task* task = pending_.front();
    pending_.pop_front();
    posted += post_task_locked(task, now) ? 1 : 0;
  }
  if (!unflushed_entries_.empty()) flush_writes_locked(now);
  return posted;
}

unsigned TransferEngine::Impl::progress_once_locked(uint64_t now) {
  unsigned events = worker_->progress();
  // A task posted counts as an event: its completion is polled for, not
  // slept through (a sleep held one task's completion for up to 1 ms).
  events += post_pending_locked(now);
  endpoints_->reap();  // endpoints out of the store whose last operation just ended
  return events;
}

// A caller that polls a task's status drives its completion itself, as a
// UCP application does: the completion reaches it with no hop through the
// progress thread, which sleeps meanwhile instead of spinning beside it
// (two threads of the initiator polling, on a machine with few CPUs, kept
// the threads that serve the transports waiting for one: te_lat over tcp
// took 41-62 us on the 2-CPU VM, and 30 us once callers drove progress).
// The gap is the caller's own, from the end of its last pass to this call:
// a pass that takes long (a sanitizer build, a large completion) does not
// make a caller that polls without pause look like one that does not.
//
// True when the caller should yield the CPU after its call: its passes have
// found nothing for kCallerYieldAfterNs since the last completion or
// submission. A caller that polls a long wait would otherwise keep a CPU
// from the threads that do the work, its target's among them when they
// share a host. With 16 initiator processes writing to one target over tcp
// on the 2-CPU VM, an initiator's first transfer took 38-56 ms without the
// yield and 10-14 ms with it (docs/performance.md). A short wait never
// yields (te_lat's round trip over tcp is 12-30 us), and a yield with
// nothing else to run returns at once.
bool TransferEngine::Impl::caller_progress_locked() {
  if (stop_) return false;
  const uint64_t now = ucs::monotonic_ns();
  caller_poll_gap_ns_ = now - caller_poll_ns_;
  if (progress_once_locked(now) > 0) caller_events_ns_ = now;
  caller_poll_ns_ = ucs::monotonic_ns();
  return caller_poll_ns_ - std::max(caller_events_ns_, last_post_ns_) > kCallerYieldAfterNs;
}

void TransferEngine::Impl::wake_progress() {
  const uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof(one));
}

void TransferEngine::Impl::progress_wait(std::unique_lock<std::mutex>& lock, uint64_t wait_ns,
                                         bool sockets) {
  // arm() under mu_, as every UCP call: Busy means progress() has work now.
  // The worker's event fd is readable only for armed ifaces with an event
  // fd (tcp in progress mode); the others are polled by the timeout, as
  // before. In thread mode tcp's loop thread serves the sockets itself.
  const bool watch = sockets && config_.async_mode == ucp::AsyncMode::Progress;
  if (watch && worker_->arm() == Status::Busy) return;
  lock.unlock();
  pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {watch ? worker_->event_fd() : -1, POLLIN, 0}};
  const timespec ts{static_cast<time_t>(wait_ns / 1000000000),
                    static_cast<long>(wait_ns % 1000000000)};
  (void)::ppoll(fds, 2, &ts, nullptr);
  if (fds[0].revents & POLLIN) {
    uint64_t count = 0;
    (void)!::read(wake_fd_, &count, sizeof(count));
  }
  lock.lock();
  if (watch) worker_->woken();
}

void TransferEngine::Impl::progress_loop() {
  ucs::set_thread_name("mc_te_progress");
  std::unique_lock<std::mutex> lock(mu_);
  load_sampled_ns_ = ucs::monotonic_ns();
  uint64_t last_events_ns = 0, last_work_ns = 0;
  const bool serves_sockets = config_.async_mode == ucp::AsyncMode::Progress;
  while (!stop_) {
    unsigned events = progress_once_locked(ucs::monotonic_ns());
    sample_load_locked(ucs::monotonic_ns());
    const uint64_t now = ucs::monotonic_ns();
    if (events > 0) last_events_ns = last_work_ns = now;
    last_events_ns = std::max(last_events_ns, last_post_ns_);  // posted by submit()
    // Busy: tasks of ours queued or in flight, or, when this thread serves
    // the sockets (progress mode), its own passes found work in the last
    // 200 us: a peer's stream of puts is served by polling, not a wake-up
    // per message (a caller's posts that completed at once do not count).
    const bool busy =
        inflight_ > 0 || !pending_.empty() || (serves_sockets && now - last_work_ns < 200000);
    // With work in flight that was posted or completed something in the last
    // 200 us, poll on, yielding to the other threads (tcp's event loop in
    // thread mode): a sleep held every completion until it ended. Otherwise
    // sleep until new work (or, progress mode, a socket with data), briefly
    // when something is in flight, longer the longer nothing completed (a
    // sixteenth of that quiet time, 50 us to 1 ms: a stopped peer costs
    // next to no CPU until the tasks' deadline); the worker is still
    // progressed every millisecond for the transports' target-side service.
    // When the sockets wake this thread and nothing else needs polling
    // (Worker::event_driven: tcp alone) and no task waits to be posted, it
    // sleeps until a socket or a submission wakes it, kEventDrivenWaitNs at
    // most: timed wake-ups, each a context switch, were most of what an
    // initiator of a tcp fan-in to a busy target spent (docs/performance.md).
    const uint64_t quiet_ns = now - last_events_ns;
    // A caller polls (kCallerPollNs): it progresses, and this thread naps
    // kCallerNapNs, which submit() does not cut short for tasks it posted
    // itself.
    const bool caller_polls =
        now - caller_poll_ns_ < kCallerPollNs && caller_poll_gap_ns_ < kCallerPollNs;
    if (!busy || quiet_ns > 200000 || caller_polls) {
      const bool event_driven = serves_sockets && pending_.empty() && worker_->event_driven();
      const uint64_t wait_ns = caller_polls   ? kCallerNapNs
                               : event_driven ? kEventDrivenWaitNs
                               : !busy        ? 1000000
                                              : std::clamp<uint64_t>(quiet_ns / 16, 50000, 1000000);
      naps_for_caller_ = caller_polls;
      // Napping beside a polling caller, the sockets are that caller's.
      progress_wait(lock, wait_ns, !caller_polls);
      naps_for_caller_ = false;
    } else {
      lock.unlock();
      std::this_thread::yield();
      lock.lock();
    }
  }
}

}  // namespace mc

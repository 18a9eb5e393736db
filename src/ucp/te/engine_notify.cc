// SPDX-License-Identifier: Apache-2.0
// TransferEngine::Impl: notifications (see notifier.h for the protocol and
// src/ucp/te/README.md for the guarantees).
//
// Why a batch's notification comes after its data: it is posted only once
// every task of the batch ended COMPLETED (batch_ended_locked, from
// finish_locked). A WRITE task completes with the callback of the flush
// that follows its put, which completes once the put is remote: the target
// acknowledged it (tcp), or its transport made it visible in the target's
// memory (sm, rc). The notification is then sent over another connection
// (the target's RPC listener), so the target takes it after those bytes are
// in its memory, whatever the transport of the data.
#include <algorithm>

#include "ucp/metadata/config.h"
#include "ucp/te/engine.h"
#include "ucp/te/handshake.h"
#include "ucs/log/log.h"

namespace mc {

Status TransferEngine::Impl::start_notifier() {
  te::Notifier::Params params;
  params.generation = generation_;
  params.token = config_.auth_token;
  params.max_size = config_.notify_max_size;
  params.queue_length = config_.notify_queue_length;
  params.frame_max_length = config_.handshake_max_length;
  params.timeout = config_.handshake_timeout;
  params.resolve = [this](const std::string& segment, std::string* error) {
    return rpc_address(segment, error);
  };
  notifier_ = std::make_unique<te::Notifier>(std::move(params));
  return Status::Ok;
}

// P2PHANDSHAKE: the segment name is the listener's ip:port; a store: the
// segment's rpc_meta key, which only its owner writes.
Result<std::pair<std::string, uint16_t>> TransferEngine::Impl::rpc_address(
    const std::string& segment, std::string* error) {
  if (!store_) {
    Result<std::pair<std::string, uint16_t>> hp = te::split_host_port(segment);
    if (!hp.ok()) *error = "P2PHANDSHAKE segment name is not ip:port";
    return hp.ok() ? hp : Result<std::pair<std::string, uint16_t>>(Status::NoElem);
  }
  const std::string key = metadata::rpc_meta_key(key_prefix_, segment);
  Result<std::string> value = store_->get(key);
  if (!value.ok()) {
    *error = value.status() == Status::NoElem ? key + " is absent: no live engine owns the name"
                                              : store_->last_error();
    return value.status();
  }
  Result<metadata::RpcMeta> meta = metadata::decode_rpc_meta(*value, error);
  if (!meta.ok()) return Status::BadData;
  return std::make_pair(meta->ip_or_host_name, meta->rpc_port);
}

int TransferEngine::Impl::submit_with_notify(BatchID id,
                                             const std::vector<TransferRequest>& entries,
                                             const NotifyDesc& notify) {
  if (!initialized_ || !notifier_) return static_cast<int>(Status::InvalidParam);
  if (Status s = notifier_->check(notify.name, notify.notify_msg); s != Status::Ok) {
    return static_cast<int>(s);
  }
  int rc = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = batches_.find(id);
    if (it == batches_.end()) {
      MC_LOG(error) << "transfer engine: submitTransferWithNotify: unknown batch " << id;
      return static_cast<int>(Status::NoElem);
    }
    Batch& batch = *it->second;
    const bool one_target =
        !entries.empty() && std::all_of(entries.begin(), entries.end(), [&](const auto& e) {
          return e.target_id == entries.front().target_id;
        });
    auto seg = one_target ? segments_.find(entries.front().target_id) : segments_.end();
    if (seg == segments_.end() || seg->second->file) {
      MC_LOG(error) << "transfer engine: submitTransferWithNotify: batch " << id << ": "
                    << (!one_target ? "the entries must all target one segment"
                                    : "their segment is not an open RAM segment");
      return static_cast<int>(Status::InvalidParam);
    }
    if (batch.notify && batch.notify->status == 1) {
      MC_LOG(error) << "transfer engine: submitTransferWithNotify: batch " << id
                    << " has a notification not yet delivered";
      return static_cast<int>(Status::Busy);
    }
    rc = submit_locked(batch, entries);
    if (rc != 0) return rc;
    batch.notify = BatchNotify{seg->second->name, notify};
    if (batch.unfinished == 0) batch_ended_locked(batch);
  }
  wake_progress();
  return 0;
}

void TransferEngine::Impl::batch_ended_locked(Batch& batch) {
  BatchNotify& n = *batch.notify;
  n.waiting = false;
  auto bad = std::find_if(batch.tasks.begin(), batch.tasks.end(),
                          [](const auto& t) { return t->status != COMPLETED; });
  if (bad != batch.tasks.end() || stop_) {
    n.status = static_cast<int>(Status::Canceled);
    if (bad != batch.tasks.end()) {
      MC_LOG(warn) << "transfer engine: notification of batch " << batch.id << " not sent: task "
                   << bad - batch.tasks.begin() << " ended " << task_status_name((*bad)->status);
    }
    return;
  }
  const BatchID id = batch.id;
  const bool posted =
      notifier_->post(n.target, n.desc.name, n.desc.notify_msg, [this, id](Status s) {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = batches_.find(id);
        if (it != batches_.end() && it->second->notify) {
          it->second->notify->status = static_cast<int>(s);
        }
      });
  if (!posted) n.status = static_cast<int>(Status::Canceled);
}

int TransferEngine::Impl::batch_notify_status(BatchID id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = batches_.find(id);
  if (it == batches_.end() || !it->second->notify) return static_cast<int>(Status::NoElem);
  return it->second->notify->status;
}

int TransferEngine::Impl::send_notify(const std::string& segment, const NotifyDesc& notify) {
  if (!initialized_ || !notifier_) return static_cast<int>(Status::InvalidParam);
  if (Status s = notifier_->check(notify.name, notify.notify_msg); s != Status::Ok) {
    return static_cast<int>(s);
  }
  return static_cast<int>(notifier_->send(segment, notify.name, notify.notify_msg));
}

int TransferEngine::Impl::send_notify_to(SegmentHandle id, const NotifyDesc& notify) {
  std::string name;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = segments_.find(id);
    if (it == segments_.end() || it->second->file) {
      MC_LOG(error) << "transfer engine: sendNotifyByID: " << id
                    << (it == segments_.end() ? " is not an open segment" : " is a file segment");
      return static_cast<int>(Status::NoElem);
    }
    name = it->second->name;
  }
  return send_notify(name, notify);
}

int TransferEngine::Impl::get_notifies(std::vector<te::TakenNotify>& out) {
  if (!initialized_ || !notifier_) return static_cast<int>(Status::InvalidParam);
  notifier_->take(&out);
  return 0;
}

}  // namespace mc

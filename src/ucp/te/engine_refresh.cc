// SPDX-License-Identifier: Apache-2.0
// TransferEngine::Impl: the metadata refresher, a thread that checks this
// engine's own keys in the store every MC_METADATA_REFRESH_INTERVAL and puts
// again those the store lost; it logs an outage once and the recovery once.
//
// Why here, in the engine, and not only in the stores: the engine knows its
// keys and their current values (the descriptor changes with every
// registration, and a publish() that failed during an outage left the store
// stale), and one check covers every backend and every way of losing keys:
// mc_metadata_server and redis without persistence restart empty, an etcd
// lease can expire while the engine cannot reach etcd, someone deletes a key.
// The stores keep their own lease machinery, which a lease needs anyway at a
// third of its TTL: the etcd store re-grants a lost lease and puts its leased
// keys again, the redis store sets its leased keys again with a fresh expiry,
// so with those backends the keys often come back before this check runs;
// then the check finds them in place and puts nothing.
#include "ucp/metadata/descriptors.h"
#include "ucp/te/engine.h"
#include "ucs/log/log.h"

namespace mc {

void TransferEngine::Impl::start_refresher() {
  if (!store_ || refresh_interval_.count() <= 0 || refresh_thread_.joinable()) return;
  refresh_thread_ = std::thread([this] { refresh_loop(); });
}

void TransferEngine::Impl::stop_refresher() {
  if (!refresh_thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> guard(refresh_mu_);
    refresh_stop_ = true;
  }
  refresh_cv_.notify_all();
  refresh_thread_.join();
}

void TransferEngine::Impl::refresh_loop() {
  std::unique_lock<std::mutex> guard(refresh_mu_);
  while (!refresh_stop_) {
    refresh_cv_.wait_for(guard, refresh_interval_, [this] { return refresh_stop_; });
    if (refresh_stop_) break;
    guard.unlock();
    refresh_once();
    guard.lock();
  }
}

void TransferEngine::Impl::refresh_once() {
  // publish_mu_ so that a publish() in progress and this check do not put
  // two versions of the descriptor in the wrong order.
  std::lock_guard<std::mutex> publish_lock(publish_mu_);
  std::vector<std::pair<std::string, std::string>> keys;
  keys.emplace_back(metadata::rpc_meta_key(key_prefix_, server_name_),
                    metadata::encode(metadata::RpcMeta{ip_, rpc_->port()}));
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!worker_) return;
    keys.emplace_back(metadata::ram_key(key_prefix_, segment_name_),
                      metadata::encode(local_desc_locked()));
  }
  size_t republished = 0;
  for (const auto& [key, value] : keys) {
    Result<std::string> got = store_->get(key);
    if (got.ok() && *got == value) continue;
    Status s = got.status();
    if (s == Status::Ok || s == Status::NoElem) s = store_->put(key, value, true);
    if (is_error(s)) {
      // The store logged the cause once; say once what it means here.
      if (!store_down_) {
        MC_LOG(warn) << "transfer engine: metadata store " << store_->url() << " is unreachable ("
                     << store_->last_error()
                     << "); transfers on open segments go on, opening new segments fails until "
                        "it is back; this engine's keys are put again when it answers (checked "
                        "every "
                     << refresh_interval_.count() << " ms)";
        store_down_ = true;
      }
      return;
    }
    ++republished;
  }
  if (store_down_) {
    MC_LOG(warn) << "transfer engine: metadata store " << store_->url()
                 << " is reachable again; re-published " << republished << " keys";
    store_down_ = false;
  } else if (republished > 0) {
    MC_LOG(warn) << "transfer engine: metadata store " << store_->url() << " had lost "
                 << republished
                 << " of this engine's keys (restarted empty, or a lease expired); re-published "
                 << republished << " keys";
  }
}

}  // namespace mc

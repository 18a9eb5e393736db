// SPDX-License-Identifier: Apache-2.0
// TransferEngine::Impl: who owns the segment name, publication, and the
// metadata refresher, a thread that checks this engine's own keys in the
// store every MC_METADATA_REFRESH_INTERVAL and puts again those the store
// lost; it logs an outage once and the recovery once.
//
// A segment name has one owner. init() takes its two keys (rpc_meta, then
// ram) with a compare-and-set that succeeds only while the key is absent
// (Store::put_if): a second engine with the same name is refused, naming the
// first one's address. Where the store has leases (etcd, redis) a present
// key is a live owner: its keys vanish within MC_ETCD_LEASE_TTL of its
// death, and only then may another engine take the name. Over http (no
// leases) a killed owner's keys stay, so a present key is taken over when
// the owner it names does not answer its RPC listener for the name. Every
// later write (publish(), the refresher) is a compare-and-set against the
// value this engine put last, and the exit removes a key only while it holds
// that value: an engine never overwrites nor deletes another's keys. One
// that finds its name taken (its lease expired while it was stopped, and
// another engine took the name) says so once and stops publishing.
//
// Why the refresher is here, in the engine, and not only in the stores: the
// engine knows its keys and their current values (the descriptor changes
// with every registration, and a publish() that failed during an outage left
// the store stale), and one check covers every backend and every way of
// losing keys: mc_metadata_server and redis without persistence restart
// empty, an etcd lease can expire while the engine cannot reach etcd,
// someone deletes a key. The stores keep their own lease machinery, which a
// lease needs anyway at a third of its TTL: the etcd store re-grants a lost
// lease and puts its leased keys again, the redis store sets its leased keys
// again with a fresh expiry, so with those backends the keys often come back
// before this check runs; then the check finds them in place and puts
// nothing.
#include <algorithm>

#include "ucp/metadata/descriptors.h"
#include "ucp/te/engine.h"
#include "ucp/te/handshake.h"
#include "ucs/log/log.h"
#include "ucs/sys/sys.h"

namespace mc {

std::string TransferEngine::Impl::owner_of(const std::optional<std::string>& rpc_value) const {
  if (!rpc_value) return "an engine whose rpc_meta key is gone";
  std::string error;
  Result<metadata::RpcMeta> meta = metadata::decode_rpc_meta(*rpc_value, &error);
  if (!meta.ok()) return "an unknown writer (its rpc_meta value does not decode: " + error + ")";
  return "the engine at " + meta->ip_or_host_name + ":" + std::to_string(meta->rpc_port);
}

bool TransferEngine::Impl::owner_answers(const std::string& rpc_value) {
  std::string error;
  Result<metadata::RpcMeta> meta = metadata::decode_rpc_meta(rpc_value, &error);
  if (!meta.ok()) return false;
  const auto timeout = std::min<std::chrono::nanoseconds>(config_.handshake_timeout,
                                                          std::chrono::seconds(2));
  Result<std::string> got =
      te::handshake_get_segment(meta->ip_or_host_name, meta->rpc_port, segment_name_,
                                config_.handshake_max_length, timeout, &error, config_.auth_token);
  // An engine that answers for the name (or refuses our token) is alive;
  // nothing there, or one that serves another name, is not its owner.
  return got.ok() || got.status() == Status::Rejected;
}

bool TransferEngine::Impl::ours_locked(const std::string& key, const std::string& value) const {
  auto it = published_.find(key);
  if (it != published_.end() && it->second == value) return true;
  // An older descriptor of this engine (same generation).
  if (key != metadata::ram_key(key_prefix_, segment_name_)) return false;
  std::string error;
  Result<metadata::SegmentDesc> desc = metadata::decode_segment(value, &error);
  return desc.ok() && desc->generation == generation_;
}

void TransferEngine::Impl::lose_name_locked(const std::string& key) {
  if (name_lost_) return;
  name_lost_ = true;
  Result<std::string> rpc = store_->get(metadata::rpc_meta_key(key_prefix_, server_name_));
  MC_LOG(error) << "transfer engine: segment name '" << segment_name_ << "' was taken by "
                << owner_of(rpc.ok() ? std::optional<std::string>(*rpc) : std::nullopt)
                << ": " << key << " in " << store_->url()
                << " holds that engine's value (this engine's lease expired while it could not "
                   "renew it, or the key was overwritten); this engine no longer publishes its "
                   "descriptor, and openSegment('"
                << segment_name_ << "') reaches the other engine. Give one of them another "
                << "local_server_name";
}

Status TransferEngine::Impl::keep_key_locked(const std::string& key, const std::string& value,
                                            bool* was_absent) {
  if (name_lost_) return Status::Exists;
  std::optional<std::string> found;
  auto it = published_.find(key);
  const std::optional<std::string> last =
      it != published_.end() ? std::optional<std::string>(it->second) : std::nullopt;
  Status s = store_->put_if(key, value, last, true, &found);
  if (s == Status::NoElem) {  // the store lost it: this engine's still
    if (was_absent) *was_absent = true;
    s = store_->put_if(key, value, std::nullopt, true, &found);
  }
  if (s == Status::Exists && found && ours_locked(key, *found)) {
    s = store_->put_if(key, value, found, true, &found);
  }
  if (s == Status::Exists) {
    lose_name_locked(key);
    return s;
  }
  if (s == Status::Ok) published_[key] = value;
  return s;
}

Status TransferEngine::Impl::claim_keys() {
  std::lock_guard<std::mutex> publish_lock(publish_mu_);
  const std::string rpc_key = metadata::rpc_meta_key(key_prefix_, server_name_);
  const std::string rpc_value = metadata::encode(metadata::RpcMeta{ip_, rpc_->port()});
  const std::string ram = metadata::ram_key(key_prefix_, segment_name_);
  std::string desc;
  {
    std::lock_guard<std::mutex> lock(mu_);
    desc = metadata::encode(local_desc_locked());
  }
  std::optional<std::string> other;
  Status s = store_->put_if(rpc_key, rpc_value, std::nullopt, true, &other);
  if (s == Status::Exists && other && !store_->has_leases() && !owner_answers(*other)) {
    MC_LOG(warn) << "transfer engine: segment name '" << segment_name_ << "': " << rpc_key
                 << " names " << owner_of(other) << ", which does not answer for it, and "
                 << store_->url()
                 << " has no leases to expire a dead owner's keys: taking the name over";
    s = store_->put_if(rpc_key, rpc_value, other, true, &other);
  }
  if (s == Status::Exists || s == Status::NoElem) {
    MC_LOG(error) << "transfer engine: segment name '" << segment_name_ << "' is taken: " << rpc_key
                  << " in " << store_->url() << " names " << owner_of(other)
                  << (store_->has_leases()
                          ? ", whose lease is live (its keys go within MC_ETCD_LEASE_TTL once "
                            "it stops)"
                          : ", which answers for it")
                  << ". Give this engine another local_server_name, or stop the other one";
    return Status::Exists;
  }
  if (s != Status::Ok) return s;
  published_[rpc_key] = rpc_value;
  // The name is this engine's now: a ram key still there is a dead owner's
  // (a live one holds the rpc_meta key), so it is replaced.
  s = store_->put_if(ram, desc, std::nullopt, true, &other);
  if (s == Status::Exists && other) {
    MC_LOG(info) << "transfer engine: " << ram << " held a previous owner's descriptor; replaced";
    s = store_->put_if(ram, desc, other, true, &other);
  }
  if (s == Status::Exists || s == Status::NoElem) {
    MC_LOG(error) << "transfer engine: " << ram << " in " << store_->url()
                  << " changed while this engine took it over; another engine with the name '"
                  << segment_name_ << "' is starting";
    return Status::Exists;
  }
  if (s == Status::Ok) published_[ram] = desc;
  return s;
}

void TransferEngine::Impl::remove_own_keys() {
  std::lock_guard<std::mutex> publish_lock(publish_mu_);
  for (const auto& [key, value] : published_) {
    // Best effort: an unreachable store is logged by the backend; leased
    // keys expire on their own. A key that holds another engine's value is
    // that engine's: left alone.
    if (store_->remove_if(key, value) == Status::Exists) {
      MC_LOG(info) << "transfer engine: " << key << " holds another engine's value; left there";
    }
  }
  published_.clear();
}

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
  ucs::set_thread_name("mc_te_refresh");
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
  if (name_lost_) return;
  std::vector<std::pair<std::string, std::string>> keys;
  keys.emplace_back(metadata::rpc_meta_key(key_prefix_, server_name_),
                    metadata::encode(metadata::RpcMeta{ip_, rpc_->port()}));
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!worker_) return;
    keys.emplace_back(metadata::ram_key(key_prefix_, segment_name_),
                      metadata::encode(local_desc_locked()));
  }
  size_t republished = 0, lost = 0;
  for (const auto& [key, value] : keys) {
    Result<std::string> got = store_->get(key);
    if (got.ok() && *got == value) continue;
    Status s = got.status();
    bool was_absent = s == Status::NoElem;
    if (s == Status::Ok || s == Status::NoElem) s = keep_key_locked(key, value, &was_absent);
    if (s == Status::Exists) return;  // lose_name_locked() said why
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
    if (was_absent) ++lost;
  }
  if (store_down_) {
    MC_LOG(warn) << "transfer engine: metadata store " << store_->url()
                 << " is reachable again; re-published " << republished << " keys";
    store_down_ = false;
  } else if (lost > 0) {
    MC_LOG(warn) << "transfer engine: metadata store " << store_->url() << " had lost " << lost
                 << " of this engine's keys (restarted empty, or a lease expired); re-published "
                 << lost << " keys";
  }
}

}  // namespace mc

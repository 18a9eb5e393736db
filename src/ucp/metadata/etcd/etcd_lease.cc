// SPDX-License-Identifier: Apache-2.0
// The etcd lease of leased keys: granted at the first leased put, kept alive
// every third of its TTL by a thread, re-granted (and its keys put again)
// when etcd lost it, e.g. after a long outage, as soon as the keep-alive or
// a leased put finds it gone; revoked by the destructor.
#include <chrono>

#include "ucp/metadata/etcd/etcd_store.h"
#include "ucs/log/log.h"
#include "ucs/sys/sys.h"

namespace mc::metadata::etcd {

int64_t EtcdStore::lease_id() const {
  std::lock_guard<std::mutex> guard(lease_lock_);
  return lease_id_;
}

Status EtcdStore::grant(int64_t* id, int64_t* ttl) {
  Value req = Value::object();
  req.set("TTL", static_cast<int64_t>(options_.lease_ttl.count()));
  Value response;
  MC_RETURN_IF_ERROR(call("/v3/lease/grant", req, &response));
  *id = int64_of(member(response, "ID"));
  *ttl = int64_of(member(response, "TTL"));
  if (*id == 0 || *ttl <= 0) {
    return fail(Status::IoError,
                conn_ + ": lease grant answered no lease: " + ucs::json::write(response));
  }
  return Status::Ok;
}

Status EtcdStore::ensure_lease(int64_t* id) {
  {
    std::lock_guard<std::mutex> guard(lease_lock_);
    if (lease_id_ != 0) {
      *id = lease_id_;
      return Status::Ok;
    }
  }
  int64_t granted = 0, ttl = 0;
  MC_RETURN_IF_ERROR(grant(&granted, &ttl));
  std::unique_lock<std::mutex> guard(lease_lock_);
  if (lease_id_ != 0) {  // another thread granted one meanwhile; this one expires unused
    *id = lease_id_;
    return Status::Ok;
  }
  lease_id_ = granted;
  lease_ttl_ = ttl;
  *id = granted;
  MC_LOG(debug) << "metadata: " << conn_ << ": lease " << granted << " granted, ttl " << ttl
                << " s";
  if (!keepalive_.joinable()) keepalive_ = std::thread([this] { keepalive_loop(); });
  return Status::Ok;
}

void EtcdStore::keepalive_loop() {
  ucs::set_thread_name("mc_etcd_lease");
  std::unique_lock<std::mutex> guard(lease_lock_);
  while (!stopping_) {
    const auto period = std::chrono::milliseconds(std::max<int64_t>(lease_ttl_ * 1000 / 3, 200));
    lease_cv_.wait_for(guard, period, [this] { return stopping_; });
    if (stopping_) break;
    guard.unlock();
    keepalive_once();
    guard.lock();
  }
}

void EtcdStore::keepalive_once() {
  int64_t id = 0;
  {
    std::lock_guard<std::mutex> guard(lease_lock_);
    id = lease_id_;
  }
  Value req = Value::object();
  req.set("ID", id);
  Value response;
  if (is_error(call("/v3/lease/keepalive", req, &response, true))) {
    std::lock_guard<std::mutex> guard(lease_lock_);
    if (!keepalive_failing_) {
      MC_LOG(warn) << "metadata: " << conn_ << ": lease " << id
                   << " keep-alive failed; retrying (leased keys expire if it keeps failing)";
    }
    keepalive_failing_ = true;
    return;
  }
  {
    std::lock_guard<std::mutex> guard(lease_lock_);
    keepalive_failing_ = false;
  }
  // A live lease answers {"result": {"ID": ..., "TTL": "<seconds left>"}};
  // a lost one has no TTL (or 0).
  if (int64_of(member(member(response, "result"), "TTL")) > 0) return;
  (void)replace_lease(id);
}

Status EtcdStore::replace_lease(int64_t lost) {
  // One thread replaces a lost lease; the others (a put that found it gone
  // while the keep-alive did too) wait for it and use the new one.
  std::lock_guard<std::mutex> replacing(replace_lock_);
  {
    std::lock_guard<std::mutex> guard(lease_lock_);
    if (lease_id_ != lost) return Status::Ok;
  }
  MC_LOG(warn) << "metadata: " << conn_ << ": lease " << lost
               << " was lost; granting a new one and putting the leased keys again";
  int64_t granted = 0, ttl = 0;
  MC_RETURN_IF_ERROR(grant(&granted, &ttl));
  std::map<std::string, std::string> keys;
  {
    std::lock_guard<std::mutex> guard(lease_lock_);
    lease_id_ = granted;
    lease_ttl_ = ttl;
    keys = leased_;
  }
  // Each key again on the new lease while it is absent (it went with the
  // lost lease) or still holds this store's value; one that another writer
  // set meanwhile is that writer's now, and is left alone.
  Status status = Status::Ok;
  for (const auto& [key, value] : keys) {
    Status s = txn_if(key, std::nullopt, &value, granted, nullptr);
    if (s == Status::Exists) s = txn_if(key, value, &value, granted, nullptr);
    if (s == Status::Exists || s == Status::NoElem) {
      MC_LOG(warn) << "metadata: " << conn_ << ": leased key \"" << key
                   << "\" now holds another writer's value; not put again by this store";
      std::lock_guard<std::mutex> guard(lease_lock_);
      leased_.erase(key);
      continue;
    }
    if (is_error(s)) status = s;
  }
  return status;
}

}  // namespace mc::metadata::etcd

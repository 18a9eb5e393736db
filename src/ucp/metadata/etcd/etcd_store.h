// SPDX-License-Identifier: Apache-2.0
// The etcd metadata backend: etcd v3 through its JSON gateway (etcd 3.4:
// /v3/kv/put, /v3/kv/range, /v3/kv/deleterange, /v3/kv/txn, /v3/lease/grant,
// /v3/lease/keepalive, /v3/lease/revoke), keys and values in base64.
// Compare-and-set is a transaction comparing the key's create revision (0:
// absent) or its value.
// Several endpoints fail over in order; leased keys hang on one lease that a
// thread keeps alive while the store lives.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ucp/metadata/store_base.h"
#include "ucs/datastruct/json.h"

namespace mc::metadata::etcd {

using ucs::json::Value;

/// The member `key` of `v`; a null value when absent or `v` is no object.
const Value& member(const Value& v, std::string_view key);
/// A string field; "" when absent or not a string.
std::string string_of(const Value& v);
/// An int64 field as the gateway writes it: a string of digits
/// ("7587869425216418827") or a number; 0 when absent or malformed.
int64_t int64_of(const Value& v);
/// Parses one gateway message within `max_size` bytes (each string too);
/// false with `*why` when it is not one JSON object.
bool parse_object(std::string_view text, size_t max_size, Value* out, std::string* why);

/// "etcd://h1:2379,h2" or "h1:2379,h2:2380" -> {"h1:2379", "h2:2379"} (the
/// default port is 2379). InvalidParam with `*error` on an empty or bad item.
Result<std::vector<std::string>> parse_endpoints(const std::string& conn, std::string* error);

class EtcdStore final : public StoreBase {
 public:
  /// Checks that one endpoint answers (within options.timeout).
  static Result<std::unique_ptr<EtcdStore>> open(const std::string& conn,
                                                 const StoreOptions& options, std::string* error);
  /// Stops the keep-alive thread and revokes the lease (its keys go too).
  ~EtcdStore() override;

  Result<std::string> get(const std::string& key) override;
  Status put(const std::string& key, const std::string& value, bool leased) override;
  Status remove(const std::string& key) override;
  Status put_if(const std::string& key, const std::string& value,
                const std::optional<std::string>& expected, bool leased,
                std::optional<std::string>* current) override;
  Status remove_if(const std::string& key, const std::string& expected) override;
  std::string url() const override { return conn_; }
  bool has_leases() const override { return options_.lease_ttl.count() > 0; }
  bool supports_watch() const override { return true; }
  /// Streams /v3/watch on a thread of its own; reconnects (to the next
  /// endpoint, from the next revision) when the stream breaks.
  Status watch(const std::string& key, WatchCallback callback) override;

  /// The lease of leased keys, 0 before the first leased put.
  int64_t lease_id() const;

 private:
  EtcdStore(std::string conn, std::vector<std::string> endpoints, const StoreOptions& options)
      : conn_(std::move(conn)), endpoints_(std::move(endpoints)), options_(options) {}

  // POSTs `request` to `path`, trying each endpoint from the last good one,
  // all within options_.timeout. On failure the error names every endpoint
  // tried and why; it is logged and kept unless `quiet`.
  Status call(const std::string& path, const Value& request, Value* response,
              bool quiet = false);
  Status put_raw(const std::string& key, const std::string& value, int64_t lease);
  // A put of `value` at `key` by `write` on the store's lease (when `leased`;
  // a lost lease replaced and the write made again), then `key` kept among
  // the leased keys or not.
  Status leased_write(const std::string& key, const std::string& value, bool leased,
                      const std::function<Status(int64_t lease)>& write);
  // One transaction: when `key` is absent (expected nullopt) or holds
  // `*expected`, puts `value` on `lease` (or deletes the key when `value` is
  // null). Ok when done; else NoElem or Exists with *current.
  Status txn_if(const std::string& key, const std::optional<std::string>& expected,
                const std::string* value, int64_t lease, std::optional<std::string>* current);
  // The value of a range answer's first kv; NoElem when there is none.
  Result<std::string> first_value(const Value& range, const std::string& key);
  // The largest gateway answer: a value of options_.max_value in base64,
  // and room for the rest.
  size_t max_answer() const { return options_.max_value / 3 * 4 + 65536; }
  // Grants the lease when there is none yet; starts the keep-alive thread.
  Status ensure_lease(int64_t* id);
  Status grant(int64_t* id, int64_t* ttl);
  void keepalive_loop();
  // One keep-alive; re-grants and re-puts the leased keys when etcd lost it.
  void keepalive_once();
  // Grants a new lease and puts every leased key again on it, unless another
  // thread replaced `lost` already.
  Status replace_lease(int64_t lost);
  void watch_loop(std::string key, WatchCallback callback);
  // One watch stream until it ends; `*revision` advances past each event.
  void watch_stream(const std::string& key, const WatchCallback& callback, int64_t* revision);

  const std::string conn_;
  const std::vector<std::string> endpoints_;  // "host:port"
  const StoreOptions options_;
  std::atomic<size_t> current_{0};  // the endpoint that answered last

  std::mutex replace_lock_;        // serialises replace_lease(); taken before lease_lock_
  mutable std::mutex lease_lock_;  // guards everything below
  std::condition_variable lease_cv_;
  int64_t lease_id_ = 0;
  int64_t lease_ttl_ = 0;                      // seconds, as granted
  std::map<std::string, std::string> leased_;  // re-put after a lost lease
  bool stopping_ = false;
  bool keepalive_failing_ = false;  // logged once per outage
  std::thread keepalive_;
  std::vector<std::thread> watchers_;
  std::atomic<bool> watch_stop_{false};  // read by curl's progress callback
};

}  // namespace mc::metadata::etcd

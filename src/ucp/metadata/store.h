// SPDX-License-Identifier: Apache-2.0
// The metadata store: a small key/value interface under the Transfer Engine.
// A connection string picks the backend:
//   P2PHANDSHAKE                      no server (the engine's RPC listener serves
//                                     its own descriptors; see te/)
//   http://host:port/metadata         GET/PUT/DELETE ?key=  (libcurl; module)
//   etcd://h1:2379[,h2:2379], h:2379  etcd v3 JSON gateway  (libcurl; module)
//   redis://[:password@]host:6379[/db]                       (hiredis; module)
// Backends that bring a third-party library are modules of kind "metadata"
// (libmc_metadata_<name>.so) exporting a StoreFactory through
// MC_METADATA_MODULE_DEFINE.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ucs/status/status.h"

namespace mc::ucs::config {
class Registry;
}

namespace mc::metadata {

using ucs::Result;
using ucs::Status;

/// Version of the Store/StoreFactory interface a metadata module implements.
/// 2: put_if() and remove_if(), StoreOptions::max_value and auth_token.
inline constexpr uint32_t kStoreApiVersion = 2;

/// Options every backend honours.
struct StoreOptions {
  /// Bound on one request to the server, connection included.
  std::chrono::milliseconds timeout{5000};
  /// Time-to-live of keys put with Store::put(..., leased = true): backends
  /// with leases keep them alive while the store lives, so a crashed
  /// engine's keys expire: etcd attaches them to a lease (re-granted, keys
  /// put again, when etcd lost it), redis sets them with this expiry and
  /// sets them again every third of it. 0: no lease. http has none.
  std::chrono::seconds lease_ttl{10};
  /// The largest value a get() returns, and the largest answer read from the
  /// server: a longer one fails with MessageTruncated, checked while reading
  /// where the backend allows (http, etcd) and before reading (redis).
  size_t max_value = size_t{16} << 20;
  /// When not empty, sent to an HTTP server as "Authorization: Bearer <token>"
  /// (mc_metadata_server --auth-token); etcd and redis have their own.
  std::string auth_token;
};

/// Called by watch() when `key` changes: its new value, or nullopt when it
/// was removed. Runs on a thread of the backend.
using WatchCallback = std::function<void(const std::string& key, const std::optional<std::string>& value)>;

/// Thread safety: every method may be called from any thread concurrently.
/// Every error is logged once with the URL and the cause (the same error
/// again before a request succeeds only at debug level), and the same text
/// is kept in last_error().
class Store {
 public:
  virtual ~Store() = default;
  /// The value of `key`; NoElem when it is absent; IoError / Timeout when the
  /// server cannot be reached or answered garbage (last_error() says which).
  virtual Result<std::string> get(const std::string& key) = 0;
  /// Sets `key`. `leased`: attach it to this store's lease where the backend
  /// has leases (the key disappears within lease_ttl when the process dies).
  virtual Status put(const std::string& key, const std::string& value, bool leased = false) = 0;
  /// Removes `key`; removing an absent key is Ok.
  virtual Status remove(const std::string& key) = 0;
  /// Compare-and-set, atomic on the server: sets `key` to `value` only while
  /// its value is `*expected`, or, when `expected` is nullopt, only while it
  /// is absent; `leased` as for put(). Ok when set. Exists when the key
  /// holds another value, NoElem when a value was expected and the key is
  /// absent; `*current` (when not null) then gets what was found. A leased
  /// key stays this store's only while its value is the one it put: the
  /// backend's lease keeping (etcd's re-put after a lost lease, redis's
  /// periodic SET) puts it again only while it is absent or unchanged, never
  /// over another writer's value.
  virtual Status put_if(const std::string& key, const std::string& value,
                        const std::optional<std::string>& expected, bool leased,
                        std::optional<std::string>* current) = 0;
  /// Removes `key` only while its value is `expected` (Ok when absent too);
  /// Exists, and nothing removed, when it holds another value.
  virtual Status remove_if(const std::string& key, const std::string& expected) = 0;
  /// Whether keys put with leased = true vanish within StoreOptions::lease_ttl
  /// of the writer's death (etcd, redis with a TTL; not http).
  virtual bool has_leases() const { return false; }
  /// Whether watch() is implemented.
  virtual bool supports_watch() const { return false; }
  /// Calls `callback` on every change of `key` until the store is destroyed.
  virtual Status watch(const std::string& key, WatchCallback callback) {
    (void)key;
    (void)callback;
    return Status::Unsupported;
  }
  /// The connection string, as given (no password).
  virtual std::string url() const = 0;
  /// Text of the last error, e.g. "http://127.0.0.1:1/metadata: connection refused".
  virtual std::string last_error() const = 0;
};

/// What a metadata module exports: makes a Store from a connection string.
class StoreFactory {
 public:
  virtual ~StoreFactory() = default;
  /// Backend name ("http", "etcd", "redis").
  virtual const char* name() const = 0;
  /// Whether this backend understands `conn` (by scheme or shape).
  virtual bool accepts(const std::string& conn) const = 0;
  /// Opens the store; checks the server once, within options.timeout. On
  /// failure `*error` names the URL and the cause.
  virtual Result<std::unique_ptr<Store>> open(const std::string& conn, const StoreOptions& options,
                                              std::string* error) = 0;
  /// Registers the backend's own knobs (e.g. MC_REDIS_PASSWORD) with
  /// `registry`; called once when the module is loaded.
  virtual void register_config(ucs::config::Registry& registry) { (void)registry; }
};

/// True for "P2PHANDSHAKE" (case-insensitive): no store, peers are asked directly.
bool is_p2p(const std::string& conn);

/// Loads the metadata modules (once) and opens the store for `conn` through
/// the first factory that accepts it. InvalidParam for a string no backend
/// understands, Unsupported when the backend's module is missing (with the
/// loader's reason in *error), else the factory's outcome.
Result<std::unique_ptr<Store>> open_store(const std::string& conn, const StoreOptions& options,
                                          std::string* error);

/// The backend a connection string names by its shape: "http", "etcd" (also
/// a bare host:port list), "redis", or "" when it names none (P2PHANDSHAKE
/// included).
std::string backend_of(const std::string& conn);

/// The factories of every metadata module that loaded (loads them once).
std::vector<StoreFactory*> load_store_factories();

}  // namespace mc::metadata

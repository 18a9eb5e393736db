// SPDX-License-Identifier: Apache-2.0
// The keys of mc_metadata_server: a value and a version per key, a bound on
// the total size, and the preconditions of conditional requests (ETags).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace mc::tools::metadata {

/// The entity tag of a precondition header: `*` or `"<version>"`.
struct EntityTag {
  bool any = false;      ///< `*`: matches any current value
  uint64_t version = 0;  ///< the version when not `any`
};

/// Parses `*` or a quoted decimal version (`"17"`). False on anything else:
/// weak tags (W/"17"), lists, unquoted numbers.
bool parse_entity_tag(std::string_view text, EntityTag* out);

/// `"<version>"`, the ETag header's value.
std::string entity_tag(uint64_t version);

/// A request's If-Match and If-None-Match.
struct Preconditions {
  std::optional<EntityTag> if_match;
  std::optional<EntityTag> if_none_match;
};

/// What an operation did.
enum class StoreResult {
  Ok,
  NotFound,            ///< get or remove of an absent key
  PreconditionFailed,  ///< If-Match or If-None-Match false: nothing done
  NotModified,         ///< get with an If-None-Match that matched
  Full,                ///< put beyond the total bound: nothing stored
};

/// The outcome and the key's state after the operation (the state that made
/// a precondition fail, for PreconditionFailed).
struct StoreAnswer {
  StoreResult result = StoreResult::Ok;
  std::shared_ptr<const std::string> value;  ///< null when the key is absent
  uint64_t version = 0;                      ///< the value's version when there is one
};

/// Thread-safe. Versions come from one counter of the store, advanced by
/// every put and remove, so a version is never given twice and a key removed
/// and put again has a new one. The counter starts at the wall-clock time in
/// microseconds, so versions of a restarted server do not repeat those that
/// clients may still hold.
class MetadataStore {
 public:
  /// `max_total` bounds the sum of the sizes of all keys and values.
  explicit MetadataStore(size_t max_total);

  /// Preconditions are checked as RFC 9110 section 13.2.2 orders them:
  /// If-Match first (absent key or other version: PreconditionFailed), then
  /// If-None-Match (matched: NotModified for get, PreconditionFailed for put
  /// and remove).
  StoreAnswer get(const std::string& key, const Preconditions& pre) const;
  StoreAnswer put(const std::string& key, std::string value, const Preconditions& pre);
  StoreAnswer remove(const std::string& key, const Preconditions& pre);

 private:
  struct Entry {
    std::shared_ptr<const std::string> value;
    uint64_t version = 0;
  };

  static StoreResult check(const Entry* entry, const Preconditions& pre, bool is_get);
  static StoreAnswer answer(StoreResult result, const Entry* entry);

  const size_t max_total_;
  mutable std::mutex lock_;  // guards entries_, total_ and last_version_
  std::map<std::string, Entry> entries_;
  size_t total_ = 0;
  uint64_t last_version_;
};

}  // namespace mc::tools::metadata

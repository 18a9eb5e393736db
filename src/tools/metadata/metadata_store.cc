// SPDX-License-Identifier: Apache-2.0
// mc_metadata_server's keys, their versions and the preconditions.
#include "tools/metadata/metadata_store.h"

#include <charconv>
#include <chrono>

namespace mc::tools::metadata {

namespace {

bool matches(const EntityTag& tag, uint64_t version) {
  return tag.any || tag.version == version;
}

}  // namespace

bool parse_entity_tag(std::string_view text, EntityTag* out) {
  if (text == "*") {
    *out = EntityTag{true, 0};
    return true;
  }
  if (text.size() < 3 || text.front() != '"' || text.back() != '"') return false;
  const std::string_view digits = text.substr(1, text.size() - 2);
  uint64_t version = 0;
  const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), version);
  if (r.ec != std::errc() || r.ptr != digits.data() + digits.size()) return false;
  *out = EntityTag{false, version};
  return true;
}

std::string entity_tag(uint64_t version) {
  return "\"" + std::to_string(version) + "\"";
}

MetadataStore::MetadataStore(size_t max_total)
    : max_total_(max_total),
      last_version_(static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                              std::chrono::system_clock::now().time_since_epoch())
                                              .count())) {}

StoreResult MetadataStore::check(const Entry* entry, const Preconditions& pre, bool is_get) {
  if (pre.if_match && (entry == nullptr || !matches(*pre.if_match, entry->version))) {
    return StoreResult::PreconditionFailed;
  }
  if (pre.if_none_match && entry != nullptr && matches(*pre.if_none_match, entry->version)) {
    return is_get ? StoreResult::NotModified : StoreResult::PreconditionFailed;
  }
  return StoreResult::Ok;
}

StoreAnswer MetadataStore::answer(StoreResult result, const Entry* entry) {
  StoreAnswer a;
  a.result = result;
  if (entry != nullptr) {
    a.value = entry->value;
    a.version = entry->version;
  }
  return a;
}

StoreAnswer MetadataStore::get(const std::string& key, const Preconditions& pre) const {
  std::lock_guard<std::mutex> guard(lock_);
  const auto it = entries_.find(key);
  const Entry* entry = it == entries_.end() ? nullptr : &it->second;
  StoreResult result = check(entry, pre, true);
  if (result == StoreResult::Ok && entry == nullptr) result = StoreResult::NotFound;
  return answer(result, entry);
}

StoreAnswer MetadataStore::put(const std::string& key, std::string value,
                               const Preconditions& pre) {
  std::lock_guard<std::mutex> guard(lock_);
  const auto it = entries_.find(key);
  Entry* entry = it == entries_.end() ? nullptr : &it->second;
  const StoreResult result = check(entry, pre, false);
  if (result != StoreResult::Ok) return answer(result, entry);
  const size_t old_size = entry == nullptr ? 0 : key.size() + entry->value->size();
  const size_t new_size = key.size() + value.size();
  // total_ - old_size + new_size > max_total_, without wrapping.
  if (new_size > max_total_ || total_ - old_size > max_total_ - new_size) {
    return answer(StoreResult::Full, entry);
  }
  if (entry == nullptr) entry = &entries_[key];
  entry->value = std::make_shared<const std::string>(std::move(value));
  entry->version = ++last_version_;
  total_ = total_ - old_size + new_size;
  return answer(StoreResult::Ok, entry);
}

StoreAnswer MetadataStore::remove(const std::string& key, const Preconditions& pre) {
  std::lock_guard<std::mutex> guard(lock_);
  const auto it = entries_.find(key);
  const Entry* entry = it == entries_.end() ? nullptr : &it->second;
  const StoreResult result = check(entry, pre, false);
  if (result != StoreResult::Ok) return answer(result, entry);
  if (entry == nullptr) return answer(StoreResult::NotFound, nullptr);
  total_ -= key.size() + entry->value->size();
  entries_.erase(it);
  ++last_version_;
  return answer(StoreResult::Ok, nullptr);
}

}  // namespace mc::tools::metadata

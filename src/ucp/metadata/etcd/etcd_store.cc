// SPDX-License-Identifier: Apache-2.0
// etcd requests: endpoint failover within one time bound, JSON in and out.
#include "ucp/metadata/etcd/etcd_store.h"

#include <charconv>
#include <chrono>

#include "ucp/metadata/curl_client.h"
#include "ucp/metadata/etcd/base64.h"
#include "ucs/config/parser.h"

namespace mc::metadata::etcd {

namespace {

constexpr const char* kDefaultPort = "2379";

// {"key": <key in base64>}, the start of most requests.
Value key_request(const std::string& key) {
  Value req = Value::object();
  req.set("key", base64_encode(key));
  return req;
}

std::string shorten(std::string s) {
  if (s.size() > 200) s = s.substr(0, 200) + "...";
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

}  // namespace

const Value& member(const Value& v, std::string_view key) {
  static const Value kNull;
  const Value* m = v.find(key);
  return m ? *m : kNull;
}

std::string string_of(const Value& v) {
  const std::string* s = v.as_string();
  return s ? *s : std::string();
}

int64_t int64_of(const Value& v) {
  if (std::optional<int64_t> i = v.as_int()) return *i;
  const std::string* s = v.as_string();
  if (!s) return 0;
  int64_t out = 0;
  const auto r = std::from_chars(s->data(), s->data() + s->size(), out);
  return r.ec == std::errc() && r.ptr == s->data() + s->size() ? out : 0;
}

bool parse_object(std::string_view text, size_t max_size, Value* out, std::string* why) {
  ucs::json::Limits limits;
  limits.max_size = max_size;
  limits.max_string = max_size;
  Result<Value> v = ucs::json::parse(text, why, limits);
  if (!v.ok()) return false;
  if (!v->is_object()) {
    *why = std::string("a JSON ") + ucs::json::type_name(v->type()) + ", not an object";
    return false;
  }
  *out = std::move(*v);
  return true;
}

Result<std::vector<std::string>> parse_endpoints(const std::string& conn, std::string* error) {
  std::string_view rest = ucs::config::trim(conn);
  if (ucs::config::to_lower(rest.substr(0, 7)) == "etcd://") rest.remove_prefix(7);
  std::vector<std::string> endpoints;
  for (const std::string& item : ucs::config::split_list(rest)) {
    if (item.empty() || item.find('/') != std::string::npos || item.front() == ':') {
      *error = "\"" + conn + "\": bad etcd endpoint \"" + item + "\" (expected host[:port])";
      return Status::InvalidParam;
    }
    endpoints.push_back(item.find(':') == std::string::npos ? item + ":" + kDefaultPort : item);
  }
  if (endpoints.empty()) {
    *error = "\"" + conn + "\": no etcd endpoint";
    return Status::InvalidParam;
  }
  return endpoints;
}

Result<std::unique_ptr<EtcdStore>> EtcdStore::open(const std::string& conn,
                                                   const StoreOptions& options,
                                                   std::string* error) {
  MC_ASSIGN_OR_RETURN(std::vector<std::string> endpoints, parse_endpoints(conn, error));
  std::unique_ptr<EtcdStore> store(new EtcdStore(conn, std::move(endpoints), options));
  // A range on an empty key range answers when etcd serves requests.
  Value probe = key_request(std::string(1, '\0'));
  probe.set("count_only", true);
  Value response;
  const Status s = store->call("/v3/kv/range", probe, &response);
  if (is_error(s)) {
    *error = store->last_error();
    return s;
  }
  return store;
}

EtcdStore::~EtcdStore() {
  int64_t lease = 0;
  {
    std::lock_guard<std::mutex> guard(lease_lock_);
    stopping_ = true;
    lease = lease_id_;
  }
  lease_cv_.notify_all();
  watch_stop_ = true;
  for (std::thread& t : watchers_) t.join();
  if (keepalive_.joinable()) keepalive_.join();
  if (lease != 0) {
    Value req = Value::object();
    req.set("ID", lease);
    Value response;
    (void)call("/v3/lease/revoke", req, &response, true);
  }
}

Status EtcdStore::call(const std::string& path, const Value& request, Value* response, bool quiet) {
  const std::string body = ucs::json::write(request);
  const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  const size_t first = current_.load();
  std::string causes;
  Status status = Status::IoError;
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    const size_t index = (first + i) % endpoints_.size();
    const std::string& ep = endpoints_[index];
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      status = Status::Timeout;
      causes += (causes.empty() ? "" : "; ") + std::string("etcd://") + ep +
                ": not tried, the time bound passed";
      break;
    }
    HttpReply reply;
    std::string error;
    // Values travel in base64 (4 bytes per 3) inside JSON.
    HttpRequestOptions bound;
    bound.max_body = max_answer();
    status = curl_request("POST", "http://" + ep + path, &body, "application/json", left,
                          "etcd://" + ep, &reply, &error, bound);
    if (status == Status::MessageTruncated) return quiet ? status : fail(status, error);
    if (status == Status::Timeout) {
      // Name the whole bound, not what was left of it for this endpoint.
      error =
          "etcd://" + ep + ": no answer within " + std::to_string(options_.timeout.count()) + " ms";
    }
    if (is_error(status)) {
      causes += (causes.empty() ? "" : "; ") + error;
      continue;
    }
    current_ = index;
    succeeded();
    std::string why;
    if (!parse_object(reply.body, max_answer(), response, &why)) {
      const std::string text = "etcd://" + ep + path + ": HTTP " + std::to_string(reply.code) +
                               ", not a JSON object (" + why + "): " + shorten(reply.body);
      return quiet ? Status::IoError : fail(Status::IoError, text);
    }
    if (reply.code != 200) {
      const std::string text = "etcd://" + ep + path + ": HTTP " + std::to_string(reply.code) +
                               ": " + shorten(member(*response, "message").is_string()
                                                  ? string_of(member(*response, "message"))
                                                  : reply.body);
      return quiet ? Status::IoError : fail(Status::IoError, text);
    }
    return Status::Ok;
  }
  // One endpoint: its error as it is ("etcd://h:p: connection refused").
  if (quiet) return status;
  return fail(status,
              endpoints_.size() == 1 ? causes : conn_ + ": no endpoint answered: " + causes);
}

Result<std::string> EtcdStore::get(const std::string& key) {
  Value response;
  MC_RETURN_IF_ERROR(call("/v3/kv/range", key_request(key), &response));
  return first_value(response, key);
}

Result<std::string> EtcdStore::first_value(const Value& response, const std::string& key) {
  const Value& kvs = member(response, "kvs");
  if (kvs.is_null() || (kvs.is_array() && kvs.size() == 0)) return Status::NoElem;
  if (!kvs.is_array() || !kvs.items()[0].is_object()) {
    return fail(Status::IoError, conn_ + ": range of key \"" + key + "\": malformed kvs");
  }
  // The gateway leaves out empty fields: no "value" is the empty value.
  const Value& value = member(kvs.items()[0], "value");
  if (value.is_null()) return std::string();
  std::string out, why;
  if (!value.is_string() || !base64_decode(*value.as_string(), &out, &why)) {
    return fail(Status::IoError, conn_ + ": range of key \"" + key + "\": malformed value: " +
                                     (value.is_string() ? why : "not a string"));
  }
  return out;
}

Status EtcdStore::put_raw(const std::string& key, const std::string& value, int64_t lease) {
  Value req = key_request(key);
  req.set("value", base64_encode(value));
  if (lease != 0) req.set("lease", lease);
  Value response;
  return call("/v3/kv/put", req, &response);
}

Status EtcdStore::leased_write(const std::string& key, const std::string& value, bool leased,
                               const std::function<Status(int64_t lease)>& write) {
  int64_t lease = 0;
  if (leased && options_.lease_ttl.count() > 0) MC_RETURN_IF_ERROR(ensure_lease(&lease));
  Status s = write(lease);
  if (is_error(s) && s != Status::Exists && s != Status::NoElem && lease != 0 &&
      last_error().find("lease not found") != std::string::npos) {
    // The lease expired while etcd could not be reached (or etcd lost it):
    // replace it now rather than at the next keep-alive, and write again.
    MC_RETURN_IF_ERROR(replace_lease(lease));
    lease = this->lease_id();
    s = write(lease);
  }
  MC_RETURN_IF_ERROR(s);
  std::lock_guard<std::mutex> guard(lease_lock_);
  if (lease != 0) {
    leased_[key] = value;
  } else {
    leased_.erase(key);
  }
  return Status::Ok;
}

Status EtcdStore::put(const std::string& key, const std::string& value, bool leased) {
  return leased_write(key, value, leased,
                      [&](int64_t lease) { return put_raw(key, value, lease); });
}

Status EtcdStore::txn_if(const std::string& key, const std::optional<std::string>& expected,
                         const std::string* value, int64_t lease,
                         std::optional<std::string>* current) {
  Value compare = key_request(key);
  compare.set("result", "EQUAL");
  if (expected) {
    compare.set("target", "VALUE");
    compare.set("value", base64_encode(*expected));
  } else {
    compare.set("target", "CREATE");
    compare.set("create_revision", "0");
  }
  Value op = Value::object();
  if (value != nullptr) {
    Value put = key_request(key);
    put.set("value", base64_encode(*value));
    if (lease != 0) put.set("lease", lease);
    op.set("request_put", std::move(put));
  } else {
    op.set("request_delete_range", key_request(key));
  }
  Value otherwise = Value::object();
  otherwise.set("request_range", key_request(key));
  Value req = Value::object();
  req.set("compare", Value::array()).push_back(std::move(compare));
  req.set("success", Value::array()).push_back(std::move(op));
  req.set("failure", Value::array()).push_back(std::move(otherwise));
  Value response;
  MC_RETURN_IF_ERROR(call("/v3/kv/txn", req, &response));
  if (member(response, "succeeded").as_bool().value_or(false)) return Status::Ok;
  // The gateway leaves out empty fields: no responses is an empty range.
  const Value& responses = member(response, "responses");
  const Value& first = responses.size() > 0 ? responses.items()[0] : responses;
  Result<std::string> now = first_value(member(first, "response_range"), key);
  if (!now.ok() && now.status() != Status::NoElem) return now.status();
  if (current) *current = now.ok() ? std::optional<std::string>(*now) : std::nullopt;
  return now.ok() ? Status::Exists : Status::NoElem;
}

Status EtcdStore::put_if(const std::string& key, const std::string& value,
                         const std::optional<std::string>& expected, bool leased,
                         std::optional<std::string>* current) {
  return leased_write(key, value, leased, [&](int64_t lease) {
    return txn_if(key, expected, &value, lease, current);
  });
}

Status EtcdStore::remove_if(const std::string& key, const std::string& expected) {
  const Status s = txn_if(key, expected, nullptr, 0, nullptr);
  if (s == Status::Exists) return s;
  if (s != Status::Ok && s != Status::NoElem) return s;
  std::lock_guard<std::mutex> guard(lease_lock_);
  leased_.erase(key);
  return Status::Ok;
}

Status EtcdStore::remove(const std::string& key) {
  Value response;
  MC_RETURN_IF_ERROR(call("/v3/kv/deleterange", key_request(key), &response));
  std::lock_guard<std::mutex> guard(lease_lock_);
  leased_.erase(key);
  return Status::Ok;
}

}  // namespace mc::metadata::etcd

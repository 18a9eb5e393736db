// SPDX-License-Identifier: Apache-2.0
// The http metadata backend (module libmc_metadata_http.so): GET, PUT and
// DELETE <url>?key=<percent-encoded key> against mc_metadata_server or
// Mooncake's HTTP metadata server. 404 means "no such key".
// Compare-and-set (put_if, remove_if) reads the key with its ETag and writes
// with If-Match, or creates with If-None-Match: *, which mc_metadata_server
// answers with 412 when the key changed meanwhile. A server that sends no
// ETag (Mooncake's) gets a plain write after the read: the comparison then
// holds but is not atomic, which is logged once.
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ucp/metadata/curl_client.h"
#include "ucp/metadata/module.h"
#include "ucp/metadata/store_base.h"

namespace mc::metadata {

namespace {

// Bodies of error answers are shown up to this many bytes.
constexpr size_t kShownBody = 200;

std::string short_body(const std::string& body) {
  std::string s = body.substr(0, kShownBody);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

class HttpStore final : public StoreBase {
 public:
  HttpStore(std::string url, const StoreOptions& options)
      : url_(std::move(url)), options_(options) {}

  Result<std::string> get(const std::string& key) override {
    HttpReply reply;
    MC_RETURN_IF_ERROR(read(key, &reply));
    return std::move(reply.body);
  }

  Status put(const std::string& key, const std::string& value, bool leased) override {
    (void)leased;  // no leases over plain HTTP
    HttpReply reply;
    MC_RETURN_IF_ERROR(request("PUT", key, &value, &reply));
    if (reply.code != 200 && reply.code != 201 && reply.code != 204) {
      return http_error("PUT", key, reply);
    }
    return Status::Ok;
  }

  Status remove(const std::string& key) override {
    HttpReply reply;
    MC_RETURN_IF_ERROR(request("DELETE", key, nullptr, &reply));
    if (reply.code == 404 || reply.code == 200 || reply.code == 204) return Status::Ok;
    return http_error("DELETE", key, reply);
  }

  Status put_if(const std::string& key, const std::string& value,
                const std::optional<std::string>& expected, bool leased,
                std::optional<std::string>* current) override {
    (void)leased;
    HttpReply found;
    Status s = read(key, &found);
    if (is_error(s) && s != Status::NoElem) return s;
    const bool present = s == Status::Ok;
    if (present != expected.has_value() || (present && found.body != *expected)) {
      if (current) *current = present ? std::optional<std::string>(found.body) : std::nullopt;
      return present ? Status::Exists : Status::NoElem;
    }
    HttpReply reply;
    MC_RETURN_IF_ERROR(request("PUT", key, &value, &reply, condition(present, found, key)));
    if (reply.code == 412) return changed(key, current);
    if (reply.code != 200 && reply.code != 201 && reply.code != 204) {
      return http_error("PUT", key, reply);
    }
    return Status::Ok;
  }

  Status remove_if(const std::string& key, const std::string& expected) override {
    HttpReply found;
    Status s = read(key, &found);
    if (s == Status::NoElem) return Status::Ok;
    MC_RETURN_IF_ERROR(s);
    if (found.body != expected) return Status::Exists;
    HttpReply reply;
    MC_RETURN_IF_ERROR(request("DELETE", key, nullptr, &reply, condition(true, found, key)));
    if (reply.code == 412) {
      std::optional<std::string> now;
      s = changed(key, &now);
      return s == Status::NoElem ? Status::Ok : s;
    }
    if (reply.code == 404 || reply.code == 200 || reply.code == 204) return Status::Ok;
    return http_error("DELETE", key, reply);
  }

  std::string url() const override { return url_; }

  // Any HTTP answer proves the server is there.
  Status probe(std::string* error) {
    HttpReply reply;
    const Status s = request("GET", "mc-probe", nullptr, &reply);
    if (is_error(s)) *error = last_error();
    return s;
  }

 private:
  // GET with the ETag: Ok with the value, NoElem when absent.
  Status read(const std::string& key, HttpReply* reply) {
    MC_RETURN_IF_ERROR(request("GET", key, nullptr, reply));
    if (reply->code == 404) return Status::NoElem;
    if (reply->code != 200) return http_error("GET", key, *reply);
    return Status::Ok;
  }

  // The precondition of a write after `found` was read: the key unchanged
  // (If-Match its ETag) or still absent (If-None-Match: *).
  std::vector<std::string> condition(bool present, const HttpReply& found, const std::string& key) {
    if (!present) return {"If-None-Match: *"};
    if (!found.etag.empty()) return {"If-Match: " + found.etag};
    if (!warned_no_etag_.exchange(true)) {
      MC_LOG(warn) << "metadata: " << url_ << ": GET of key \"" << key
                   << "\" answered no ETag: the server has no conditional requests, so a "
                      "compare-and-set of a key (who owns a segment name) is a read and then a "
                      "write, not atomic; mc_metadata_server has them";
    }
    return {};
  }

  // A 412: the key changed between the read and the write; what it is now.
  Status changed(const std::string& key, std::optional<std::string>* current) {
    HttpReply now;
    const Status s = read(key, &now);
    if (is_error(s) && s != Status::NoElem) return s;
    if (current) *current = s == Status::Ok ? std::optional<std::string>(now.body) : std::nullopt;
    return s == Status::Ok ? Status::Exists : Status::NoElem;
  }

  Status request(const char* method, const std::string& key, const std::string* body,
                 HttpReply* reply, std::vector<std::string> headers = {}) {
    const char sep = url_.find('?') == std::string::npos ? '?' : '&';
    const std::string full = url_ + sep + "key=" + url_escape(key);
    std::string error;
    HttpRequestOptions options;
    options.headers = std::move(headers);
    if (!options_.auth_token.empty()) {
      options.headers.push_back("Authorization: Bearer " + options_.auth_token);
    }
    options.max_body = options_.max_value;
    const Status s = curl_request(method, full, body, body ? "application/octet-stream" : nullptr,
                                  options_.timeout, url_, reply, &error, options);
    if (is_error(s)) return fail(s, error);
    succeeded();
    if (reply->code == 401 || reply->code == 403) {
      return fail(Status::Rejected, url_ + ": " + method + " key \"" + key + "\" answered HTTP " +
                                        std::to_string(reply->code) + " (" +
                                        (options_.auth_token.empty()
                                             ? "the server wants a token: MC_METADATA_AUTH_TOKEN"
                                             : "the server refused MC_METADATA_AUTH_TOKEN") +
                                        "): " + short_body(reply->body));
    }
    return Status::Ok;
  }

  Status http_error(const char* method, const std::string& key, const HttpReply& reply) {
    return fail(Status::IoError, url_ + ": " + method + " key \"" + key + "\" answered HTTP " +
                                     std::to_string(reply.code) + ": " + short_body(reply.body));
  }

  const std::string url_;
  const StoreOptions options_;
  std::atomic<bool> warned_no_etag_{false};
};

class HttpFactory final : public StoreFactory {
 public:
  HttpFactory() { curl_init_once(); }
  const char* name() const override { return "http"; }
  bool accepts(const std::string& conn) const override { return backend_of(conn) == "http"; }
  Result<std::unique_ptr<Store>> open(const std::string& conn, const StoreOptions& options,
                                      std::string* error) override {
    auto store = std::make_unique<HttpStore>(conn, options);
    std::string why;
    const Status s = store->probe(&why);
    if (is_error(s)) {
      if (error) *error = why;
      return s;
    }
    return std::unique_ptr<Store>(std::move(store));
  }
};

}  // namespace

}  // namespace mc::metadata

MC_METADATA_MODULE_DEFINE("http", "1.0", ::mc::metadata::HttpFactory)

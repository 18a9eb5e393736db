// SPDX-License-Identifier: Apache-2.0
// The http metadata backend (module libmc_metadata_http.so): GET, PUT and
// DELETE <url>?key=<percent-encoded key> against mc_metadata_server or
// Mooncake's HTTP metadata server. 404 means "no such key".
#include <memory>
#include <string>

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
    MC_RETURN_IF_ERROR(request("GET", key, nullptr, &reply));
    if (reply.code == 404) return Status::NoElem;
    if (reply.code != 200) return http_error("GET", key, reply);
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

  std::string url() const override { return url_; }

  // Any HTTP answer proves the server is there.
  Status probe(std::string* error) {
    HttpReply reply;
    const Status s = request("GET", "mc-probe", nullptr, &reply);
    if (is_error(s)) *error = last_error();
    return s;
  }

 private:
  Status request(const char* method, const std::string& key, const std::string* body,
                 HttpReply* reply) {
    const char sep = url_.find('?') == std::string::npos ? '?' : '&';
    const std::string full = url_ + sep + "key=" + url_escape(key);
    std::string error;
    const Status s = curl_request(method, full, body, body ? "application/octet-stream" : nullptr,
                                  options_.timeout, url_, reply, &error);
    if (is_error(s)) return fail(s, error);
    succeeded();
    return Status::Ok;
  }

  Status http_error(const char* method, const std::string& key, const HttpReply& reply) {
    return fail(Status::IoError, url_ + ": " + method + " key \"" + key + "\" answered HTTP " +
                                     std::to_string(reply.code) + ": " + short_body(reply.body));
  }

  const std::string url_;
  const StoreOptions options_;
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

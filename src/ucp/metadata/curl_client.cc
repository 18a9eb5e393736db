// SPDX-License-Identifier: Apache-2.0
// One bounded libcurl request (see curl_client.h). A fresh easy handle per
// request keeps the stores thread-safe without a handle pool.
#include "ucp/metadata/curl_client.h"

#include <curl/curl.h>

#include <cctype>
#include <memory>
#include <mutex>
#include <string_view>

#include "ucs/sys/sys.h"

namespace mc::metadata {

namespace {

// Where the body goes, and its bound; `over` once it was passed.
struct BodySink {
  std::string* body;
  size_t max;
  bool over = false;
};

size_t append_body(char* data, size_t size, size_t n, void* user) {
  auto* sink = static_cast<BodySink*>(user);
  if (sink->body->size() + size * n > sink->max) {
    sink->over = true;
    return 0;  // curl ends the transfer (CURLE_WRITE_ERROR)
  }
  sink->body->append(data, size * n);
  return size * n;
}

// Keeps the ETag header of the answer.
size_t read_header(char* data, size_t size, size_t n, void* user) {
  const std::string_view line(data, size * n);
  constexpr std::string_view kName = "etag:";
  if (line.size() > kName.size()) {
    bool match = true;
    for (size_t i = 0; i < kName.size() && match; ++i) {
      match = static_cast<char>(std::tolower(static_cast<unsigned char>(line[i]))) == kName[i];
    }
    if (match) {
      std::string_view v = line.substr(kName.size());
      while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
      while (!v.empty() && (v.back() == '\r' || v.back() == '\n' || v.back() == ' ')) {
        v.remove_suffix(1);
      }
      if (v.size() <= 256) *static_cast<std::string*>(user) = std::string(v);
    }
  }
  return size * n;
}

std::string lower_first(std::string s) {
  if (!s.empty() && s[0] >= 'A' && s[0] <= 'Z') s[0] = static_cast<char>(s[0] - 'A' + 'a');
  return s;
}

}  // namespace

void curl_init_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

std::string url_escape(const std::string& s) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~') {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xf]);
    }
  }
  return out;
}

ucs::Status curl_request(const std::string& method, const std::string& url, const std::string* body,
                         const char* content_type, std::chrono::milliseconds timeout,
                         const std::string& shown_url, HttpReply* reply, std::string* error,
                         const HttpRequestOptions& options) {
  curl_init_once();
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) {
    *error = shown_url + ": curl_easy_init failed";
    return ucs::Status::NoMemory;
  }
  CURL* h = curl.get();
  char errbuf[CURL_ERROR_SIZE] = {};
  const long ms = timeout.count() > 0 ? static_cast<long>(timeout.count()) : 1;
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, ms);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, ms);
  // Never through a proxy, and no proxy variables read per request: a
  // getenv on this thread would race with an application's setenv.
  curl_easy_setopt(h, CURLOPT_PROXY, "");
  curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  reply->body.clear();
  reply->etag.clear();
  BodySink sink{&reply->body, options.max_body};
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, read_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &reply->etag);
  curl_slist* headers = curl_slist_append(nullptr, "Expect:");
  if (content_type != nullptr) {
    headers = curl_slist_append(headers, (std::string("Content-Type: ") + content_type).c_str());
  }
  for (const std::string& header : options.headers) {
    headers = curl_slist_append(headers, header.c_str());
  }
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> header_guard(headers, curl_slist_free_all);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  if (method == "GET") {
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method.c_str());
  }
  if (body != nullptr) {
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body->data());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body->size()));
  }
  const CURLcode rc = curl_easy_perform(h);
  if (sink.over) {
    *error = shown_url + ": the answer is longer than " + std::to_string(options.max_body) +
             " bytes (MC_METADATA_MAX_VALUE); not read further";
    reply->body.clear();
    return ucs::Status::MessageTruncated;
  }
  if (rc != CURLE_OK) {
    long os_errno = 0;
    curl_easy_getinfo(h, CURLINFO_OS_ERRNO, &os_errno);
    std::string cause;
    if (rc == CURLE_OPERATION_TIMEDOUT) {
      cause = "no answer within " + std::to_string(ms) + " ms";
    } else if (os_errno != 0) {
      cause = lower_first(ucs::errno_string(static_cast<int>(os_errno)));
    } else {
      cause = lower_first(errbuf[0] != '\0' ? errbuf : curl_easy_strerror(rc));
    }
    if (errbuf[0] != '\0' && rc != CURLE_OPERATION_TIMEDOUT && os_errno != 0) {
      cause += std::string(" (") + errbuf + ")";
    }
    *error = shown_url + ": " + cause;
    return rc == CURLE_OPERATION_TIMEDOUT ? ucs::Status::Timeout : ucs::Status::IoError;
  }
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &reply->code);
  return ucs::Status::Ok;
}

}  // namespace mc::metadata

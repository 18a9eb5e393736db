// SPDX-License-Identifier: Apache-2.0
// Watching one etcd key: a /v3/watch stream read by libcurl on its own
// thread. The gateway writes one JSON message per line:
//   {"result":{"header":{"revision":"7"},"created":true}}
//   {"result":{"header":{...},"events":[{"kv":{"key":"..","value":"..","mod_revision":"8"}},
//                                       {"type":"DELETE","kv":{"key":"..","mod_revision":"9"}}]}}
// Watching starts at the revision after the one current when watch() was
// called, and a broken stream resumes after the last event seen, so no change
// is missed across reconnects (unless etcd compacted it away meanwhile).
#include <curl/curl.h>

#include <chrono>

#include "ucp/metadata/curl_client.h"
#include "ucp/metadata/etcd/base64.h"
#include "ucp/metadata/etcd/etcd_store.h"
#include "ucs/log/log.h"

namespace mc::metadata::etcd {

namespace {

struct StreamState {
  const std::string* key;
  const WatchCallback* callback;
  int64_t* revision;
  const std::atomic<bool>* stop;
  size_t max_message;  ///< bytes of one message (EtcdStore::max_answer)
  std::string buffer;
};

// One message of the stream: calls back for each event of the key.
void on_message(StreamState* st, const std::string& line) {
  Value msg;
  std::string why;
  if (!parse_object(line, st->max_message, &msg, &why)) {
    MC_LOG(warn) << "metadata: etcd watch of \"" << *st->key << "\": malformed message: " << why;
    return;
  }
  for (const Value& ev : member(member(msg, "result"), "events").items()) {
    const Value& kv = member(ev, "kv");
    std::string key, value;
    if (!base64_decode(string_of(member(kv, "key")), &key, &why) || key != *st->key) continue;
    *st->revision = std::max(*st->revision, int64_of(member(kv, "mod_revision")) + 1);
    if (string_of(member(ev, "type")) == "DELETE") {
      (*st->callback)(key, std::nullopt);
    } else if (base64_decode(string_of(member(kv, "value")), &value, &why)) {
      (*st->callback)(key, value);
    }
  }
}

size_t on_data(char* data, size_t size, size_t n, void* user) {
  auto* st = static_cast<StreamState*>(user);
  st->buffer.append(data, size * n);
  // A line longer than any message can be is not waited for to its end.
  if (st->buffer.find('\n') == std::string::npos && st->buffer.size() > st->max_message) {
    MC_LOG(warn) << "metadata: etcd watch of \"" << *st->key << "\": a message over "
                 << st->max_message << " bytes; dropping the stream";
    return 0;
  }
  size_t start = 0;
  for (size_t nl; (nl = st->buffer.find('\n', start)) != std::string::npos; start = nl + 1) {
    on_message(st, st->buffer.substr(start, nl - start));
  }
  st->buffer.erase(0, start);
  return size * n;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<StreamState*>(user)->stop->load() ? 1 : 0;
}

}  // namespace

Status EtcdStore::watch(const std::string& key, WatchCallback callback) {
  // The revision now: events after it are delivered.
  Value req = Value::object();
  req.set("key", base64_encode(key));
  req.set("count_only", true);
  Value response;
  MC_RETURN_IF_ERROR(call("/v3/kv/range", req, &response));
  const int64_t revision = int64_of(member(member(response, "header"), "revision")) + 1;
  std::lock_guard<std::mutex> guard(lease_lock_);
  if (stopping_) return Status::Canceled;
  watchers_.emplace_back([this, key, callback = std::move(callback), revision]() mutable {
    int64_t rev = revision;
    while (!watch_stop_) {
      watch_stream(key, callback, &rev);
      // Broken stream: try again shortly, on the next endpoint.
      for (int i = 0; i < 5 && !watch_stop_; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      current_ = (current_.load() + 1) % endpoints_.size();
    }
  });
  return Status::Ok;
}

void EtcdStore::watch_stream(const std::string& key, const WatchCallback& callback,
                             int64_t* revision) {
  curl_init_once();
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) return;
  Value request = Value::object();
  request.set("key", base64_encode(key));
  request.set("start_revision", *revision);
  Value create = Value::object();
  create.set("create_request", std::move(request));
  const std::string body = ucs::json::write(create);
  const std::string url = "http://" + endpoints_[current_.load() % endpoints_.size()] + "/v3/watch";
  StreamState st{&key, &callback, revision, &watch_stop_, max_answer(), {}};
  CURL* h = curl.get();
  curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> guard(headers, curl_slist_free_all);
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_PROXY, "");
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.c_str());
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.timeout.count()));
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &st);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, &st);
  const CURLcode rc = curl_easy_perform(h);
  if (!watch_stop_) {
    MC_LOG(debug) << "metadata: " << url << ": watch stream of \"" << key
                  << "\" ended: " << curl_easy_strerror(rc) << "; reconnecting";
  }
}

}  // namespace mc::metadata::etcd

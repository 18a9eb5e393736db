// SPDX-License-Identifier: Apache-2.0
// The redis metadata backend (module libmc_metadata_redis.so): GET, SET and
// DEL through hiredis on one connection per store, AUTH and SELECT from the
// URL or MC_REDIS_PASSWORD / MC_REDIS_DB_INDEX, every call bounded by
// MC_METADATA_TIMEOUT.
// Leases: a leased put is SET key value EX <lease_ttl> (MC_ETCD_LEASE_TTL),
// and a thread of the store sets every leased key again, with its value and
// a fresh expiry, every third of the TTL. So a SIGKILLed engine's keys vanish
// within the TTL, and a live engine's keys come back within a third of it
// after a restarted redis (no persistence) lost them. Setting the value
// again rather than EXPIRE costs the same round trip and needs no second
// command for a key that is gone. That SET, and put_if() and remove_if(),
// are Lua scripts (EVAL), atomic on the server: a leased key is set again
// only while it is absent or holds the value this store put, never over
// another writer's value (the key is then no longer this store's to keep).
// A GET first asks STRLEN in the same script, so a value longer than
// StoreOptions::max_value is refused before it is sent.
#include <hiredis/hiredis.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ucp/metadata/module.h"
#include "ucp/metadata/redis/redis_config.h"
#include "ucp/metadata/store_base.h"
#include "ucs/config/parser.h"
#include "ucs/config/registry.h"
#include "ucs/config/table.h"
#include "ucs/sys/sys.h"

namespace mc::metadata::redis {

namespace {

namespace cfg = ucs::config;

// redis://[[user]:password@]host[:port][/db]
struct RedisUrl {
  std::string user, password, host;
  int port = 6379;
  bool has_password = false;
  bool has_db = false;
  uint64_t db = 0;
  std::string shown;  // without the password
};

bool decode_percent(std::string_view in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out->push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return false;
    const std::string hex(in.substr(i + 1, 2));
    char* end = nullptr;
    const long v = std::strtol(hex.c_str(), &end, 16);
    if (end != hex.c_str() + 2) return false;
    out->push_back(static_cast<char>(v));
    i += 2;
  }
  return true;
}

bool parse_number(std::string_view s, uint64_t max, uint64_t* out) {
  if (s.empty() || s.size() > 10) return false;
  uint64_t v = 0;
  for (const char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > max) return false;
  *out = v;
  return true;
}

Result<RedisUrl> parse_url(const std::string& conn, std::string* error) {
  std::string_view rest = cfg::trim(conn);
  auto bad = [&](const std::string& why) {
    *error = "\"" + conn + "\": " + why + " (expected redis://[:password@]host[:port][/db])";
    return Status::InvalidParam;
  };
  if (cfg::to_lower(rest.substr(0, 8)) != "redis://") return bad("not a redis:// URL");
  rest.remove_prefix(8);
  RedisUrl url;
  const size_t at = rest.rfind('@');
  if (at != std::string_view::npos) {
    const std::string_view userinfo = rest.substr(0, at);
    rest.remove_prefix(at + 1);
    const size_t colon = userinfo.find(':');
    if (!decode_percent(userinfo.substr(0, colon), &url.user)) return bad("bad user");
    if (colon != std::string_view::npos &&
        !decode_percent(userinfo.substr(colon + 1), &url.password)) {
      return bad("bad percent-escape in the password");
    }
    url.has_password = colon != std::string_view::npos;
  }
  const size_t slash = rest.find('/');
  std::string_view hostport = rest.substr(0, slash);
  if (slash != std::string_view::npos && slash + 1 < rest.size()) {
    if (!parse_number(rest.substr(slash + 1), 1u << 20, &url.db)) return bad("bad database index");
    url.has_db = true;
  }
  const size_t colon = hostport.rfind(':');
  if (colon != std::string_view::npos) {
    uint64_t port = 0;
    if (!parse_number(hostport.substr(colon + 1), 65535, &port) || port == 0) {
      return bad("bad port");
    }
    url.port = static_cast<int>(port);
    hostport = hostport.substr(0, colon);
  }
  if (hostport.empty()) return bad("no host");
  url.host = std::string(hostport);
  url.shown = "redis://" + url.host + ":" + std::to_string(url.port) +
              (url.has_db ? "/" + std::to_string(url.db) : "");
  return url;
}

using ContextPtr = std::unique_ptr<redisContext, void (*)(redisContext*)>;
using ReplyPtr = std::unique_ptr<redisReply, void (*)(void*)>;

// KEYS[1]; ARGV: mode ("absent", "equal", "absent-or-equal"), the expected
// value, the new value, the expiry in seconds ("0": none). Answers {1} when
// set, {0} when the key is absent, {0, value} when it holds another value.
constexpr const char* kSetIfScript = R"lua(
local cur = redis.call('GET', KEYS[1])
local mode = ARGV[1]
local ok
if cur == false then ok = mode ~= 'equal' else ok = mode ~= 'absent' and cur == ARGV[2] end
if not ok then
  if cur == false then return {0} end
  return {0, cur}
end
if ARGV[4] == '0' then redis.call('SET', KEYS[1], ARGV[3])
else redis.call('SET', KEYS[1], ARGV[3], 'EX', ARGV[4]) end
return {1}
)lua";

// KEYS[1]; ARGV[1]: the expected value. {1} when removed or absent, {0}
// when the key holds another value.
constexpr const char* kRemoveIfScript = R"lua(
local cur = redis.call('GET', KEYS[1])
if cur == false then return {1} end
if cur ~= ARGV[1] then return {0} end
redis.call('DEL', KEYS[1])
return {1}
)lua";

// KEYS[1]; ARGV[1]: the largest length. The value, nil when absent, or
// {length} when longer.
constexpr const char* kBoundedGetScript = R"lua(
local n = redis.call('STRLEN', KEYS[1])
if n > tonumber(ARGV[1]) then return {n} end
return redis.call('GET', KEYS[1])
)lua";

std::string lower_first(std::string s) {
  if (!s.empty() && s[0] >= 'A' && s[0] <= 'Z') s[0] = static_cast<char>(s[0] - 'A' + 'a');
  return s;
}

class RedisStore final : public StoreBase {
 public:
  RedisStore(RedisUrl url, std::string password, uint64_t db, const StoreOptions& options)
      : url_(std::move(url)), password_(std::move(password)), db_(db), options_(options) {}

  // Stops the refresher. The leased keys are left to expire (an engine
  // removes its keys itself before it destroys its store).
  ~RedisStore() override {
    {
      std::lock_guard<std::mutex> guard(refresh_lock_);
      stopping_ = true;
    }
    refresh_cv_.notify_all();
    if (refresher_.joinable()) refresher_.join();
  }

  // Connects, authenticates, selects the database and PINGs: a server that
  // wants a password it did not get refuses here, not at the first GET.
  Status connect() {
    std::lock_guard<std::mutex> guard(lock_);
    ReplyPtr reply(nullptr, freeReplyObject);
    return command({"PING"}, &reply);
  }

  Result<std::string> get(const std::string& key) override {
    std::lock_guard<std::mutex> guard(lock_);
    ReplyPtr reply(nullptr, freeReplyObject);
    MC_RETURN_IF_ERROR(command(
        {"EVAL", kBoundedGetScript, "1", key, std::to_string(options_.max_value)}, &reply));
    if (reply->type == REDIS_REPLY_NIL) return Status::NoElem;
    if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 1 &&
        reply->element[0]->type == REDIS_REPLY_INTEGER) {
      return fail(Status::MessageTruncated,
                  url_.shown + ": GET key \"" + key + "\": the value has " +
                      std::to_string(reply->element[0]->integer) + " bytes, more than " +
                      std::to_string(options_.max_value) + " (MC_METADATA_MAX_VALUE); not read");
    }
    if (reply->type != REDIS_REPLY_STRING) return unexpected("GET", key, reply.get());
    return std::string(reply->str, reply->len);
  }

  Status put(const std::string& key, const std::string& value, bool leased) override {
    return leased_write(key, value, leased,
                        [&](bool with_ttl) { return set_locked(key, value, with_ttl); });
  }

  Status remove(const std::string& key) override {
    std::lock_guard<std::mutex> guard(lock_);
    ReplyPtr reply(nullptr, freeReplyObject);
    MC_RETURN_IF_ERROR(command({"DEL", key}, &reply));
    if (reply->type != REDIS_REPLY_INTEGER) return unexpected("DEL", key, reply.get());
    leased_.erase(key);
    return Status::Ok;
  }

  Status put_if(const std::string& key, const std::string& value,
                const std::optional<std::string>& expected, bool leased,
                std::optional<std::string>* current) override {
    return leased_write(key, value, leased, [&](bool with_ttl) {
      return set_if_locked(key, expected ? "equal" : "absent", expected.value_or(""), value,
                           with_ttl, current);
    });
  }

  Status remove_if(const std::string& key, const std::string& expected) override {
    std::lock_guard<std::mutex> guard(lock_);
    ReplyPtr reply(nullptr, freeReplyObject);
    MC_RETURN_IF_ERROR(command({"EVAL", kRemoveIfScript, "1", key, expected}, &reply));
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements < 1 ||
        reply->element[0]->type != REDIS_REPLY_INTEGER) {
      return unexpected("DEL (if unchanged)", key, reply.get());
    }
    if (reply->element[0]->integer != 1) return Status::Exists;
    leased_.erase(key);
    return Status::Ok;
  }

  bool has_leases() const override { return options_.lease_ttl.count() > 0; }
  std::string url() const override { return url_.shown; }

 private:
  // Writes `value` at `key` with `write(with_ttl)` under lock_, and keeps it
  // among the leased keys or not in the same critical section, so the
  // refresher never sets a value older than the one written last, nor a key
  // removed since.
  template <typename Write>
  Status leased_write(const std::string& key, const std::string& value, bool leased, Write write) {
    leased = leased && options_.lease_ttl.count() > 0;
    {
      std::lock_guard<std::mutex> guard(lock_);
      MC_RETURN_IF_ERROR(write(leased));
      if (leased) {
        leased_[key] = value;
      } else {
        leased_.erase(key);
      }
    }
    if (leased) start_refresher();
    return Status::Ok;
  }

  // kSetIfScript: Ok when set, NoElem or Exists (with *current) when not.
  Status set_if_locked(const std::string& key, const char* mode, const std::string& expected,
                       const std::string& value, bool leased,
                       std::optional<std::string>* current) {
    ReplyPtr reply(nullptr, freeReplyObject);
    MC_RETURN_IF_ERROR(command({"EVAL", kSetIfScript, "1", key, mode, expected, value,
                                leased ? std::to_string(options_.lease_ttl.count()) : "0"},
                               &reply));
    const redisReply* r = reply.get();
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
        r->element[0]->type != REDIS_REPLY_INTEGER ||
        (r->elements > 1 && r->element[1]->type != REDIS_REPLY_STRING)) {
      return unexpected("SET (if unchanged)", key, r);
    }
    if (r->element[0]->integer == 1) return Status::Ok;
    if (r->elements == 1) {
      if (current) *current = std::nullopt;
      return Status::NoElem;
    }
    if (current) *current = std::string(r->element[1]->str, r->element[1]->len);
    return Status::Exists;
  }

  // SET, with EX <lease_ttl> when `leased`.
  Status set_locked(const std::string& key, const std::string& value, bool leased) {
    ReplyPtr reply(nullptr, freeReplyObject);
    std::vector<std::string> args = {"SET", key, value};
    if (leased) {
      args.push_back("EX");
      args.push_back(std::to_string(options_.lease_ttl.count()));
    }
    MC_RETURN_IF_ERROR(command(args, &reply));
    if (reply->type != REDIS_REPLY_STATUS) return unexpected("SET", key, reply.get());
    return Status::Ok;
  }

  void start_refresher() {
    std::lock_guard<std::mutex> guard(refresh_lock_);
    if (!refresher_.joinable() && !stopping_) {
      refresher_ = std::thread([this] { refresh_loop(); });
    }
  }

  // Every third of the TTL (at least 200 ms), sets each leased key again.
  void refresh_loop() {
    ucs::set_thread_name("mc_redis_ttl");
    const auto period = std::max<std::chrono::milliseconds>(
        std::chrono::duration_cast<std::chrono::milliseconds>(options_.lease_ttl) / 3,
        std::chrono::milliseconds(200));
    std::unique_lock<std::mutex> guard(refresh_lock_);
    while (!stopping_) {
      refresh_cv_.wait_for(guard, period, [this] { return stopping_; });
      if (stopping_) break;
      guard.unlock();
      refresh_once();
      guard.lock();
    }
  }

  // One pass; stops at the first failure (the server is away: each further
  // key would only wait out the timeout). A failure is logged once per
  // outage by fail(); the keys set again after one are logged once. A key
  // that holds another writer's value is not this store's any more: it is
  // dropped from the leased keys, and left as it is.
  void refresh_once() {
    std::map<std::string, std::string> keys;
    {
      std::lock_guard<std::mutex> guard(lock_);
      keys = leased_;
    }
    size_t done = 0;
    for (const auto& [key, value] : keys) {
      std::lock_guard<std::mutex> guard(lock_);
      auto it = leased_.find(key);
      if (it == leased_.end()) continue;  // removed or put unleased since
      const Status s = set_if_locked(key, "absent-or-equal", it->second, it->second, true, nullptr);
      if (s == Status::Exists) {
        MC_LOG(warn) << "metadata: " << url_.shown << ": leased key \"" << key
                     << "\" now holds another writer's value; no longer kept alive by this store";
        leased_.erase(it);
        continue;
      }
      if (is_error(s)) {
        refresh_failing_ = true;
        return;
      }
      ++done;
    }
    if (refresh_failing_) {
      MC_LOG(info) << "metadata: " << url_.shown << ": reachable again; set " << done
                   << " leased keys again";
      refresh_failing_ = false;
    }
  }

  // What is left of the bound of the call in progress (at least 1 ms): a
  // reconnect after a broken connection shares the call's bound.
  timeval timeout() const {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline_ - std::chrono::steady_clock::now());
    const int64_t ms = std::max<int64_t>(left.count(), 1);
    return timeval{static_cast<time_t>(ms / 1000), static_cast<suseconds_t>(ms % 1000 * 1000)};
  }

  Status io_error(const redisContext* c) {
    const std::string text = lower_first(c->errstr);
    const bool timed_out = text.find("timed out") != std::string::npos ||
                           text.find("temporarily unavailable") != std::string::npos;
    return fail(timed_out ? Status::Timeout : Status::IoError,
                url_.shown + ": " +
                    (timed_out ? "no answer within " + std::to_string(options_.timeout.count()) +
                                     " ms (" + text + ")"
                               : text));
  }

  Status unexpected(const char* cmd, const std::string& key, const redisReply* r) {
    const std::string what = r->type == REDIS_REPLY_ERROR
                                 ? std::string(r->str, r->len)
                                 : "reply of type " + std::to_string(r->type);
    return fail(Status::IoError, url_.shown + ": " + cmd + " key \"" + key + "\": " + what);
  }

  // One command on the current connection; no reconnect.
  Status raw(const std::vector<std::string>& args, ReplyPtr* reply) {
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (const std::string& a : args) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    redisSetTimeout(ctx_.get(), timeout());
    reply->reset(static_cast<redisReply*>(
        redisCommandArgv(ctx_.get(), static_cast<int>(args.size()), argv.data(), lens.data())));
    if (!*reply) {
      const Status s = io_error(ctx_.get());
      ctx_.reset();
      return s;
    }
    return Status::Ok;
  }

  Status connect_locked() {
    ContextPtr c(redisConnectWithTimeout(url_.host.c_str(), url_.port, timeout()), redisFree);
    if (!c) return fail(Status::NoMemory, url_.shown + ": cannot allocate a redis context");
    if (c->err) return io_error(c.get());
    redisSetTimeout(c.get(), timeout());
    ctx_ = std::move(c);
    ReplyPtr reply(nullptr, freeReplyObject);
    if (!password_.empty()) {
      std::vector<std::string> args = {"AUTH"};
      if (!url_.user.empty()) args.push_back(url_.user);
      args.push_back(password_);
      MC_RETURN_IF_ERROR(raw(args, &reply));
      if (reply->type == REDIS_REPLY_ERROR) {
        const std::string why(reply->str, reply->len);
        ctx_.reset();
        return fail(Status::Rejected, url_.shown + ": AUTH failed: " + why);
      }
    }
    if (db_ != 0) {
      MC_RETURN_IF_ERROR(raw({"SELECT", std::to_string(db_)}, &reply));
      if (reply->type == REDIS_REPLY_ERROR) {
        const std::string why(reply->str, reply->len);
        ctx_.reset();
        return fail(Status::Rejected,
                    url_.shown + ": SELECT " + std::to_string(db_) + " failed: " + why);
      }
    }
    return Status::Ok;
  }

  // A command; a connection lost since the last call (server restarted) is
  // re-established once. A NOAUTH error is a refusal, not a value.
  Status command(const std::vector<std::string>& args, ReplyPtr* reply) {
    deadline_ = std::chrono::steady_clock::now() + options_.timeout;
    const bool reused = ctx_ != nullptr;
    if (!ctx_) MC_RETURN_IF_ERROR(connect_locked());
    Status s = raw(args, reply);
    if (s == Status::IoError && reused) {
      MC_RETURN_IF_ERROR(connect_locked());
      s = raw(args, reply);
    }
    MC_RETURN_IF_ERROR(s);
    succeeded();
    if ((*reply)->type == REDIS_REPLY_ERROR) {
      return fail(Status::Rejected,
                  url_.shown + ": " + args[0] + ": " + std::string((*reply)->str, (*reply)->len));
    }
    return Status::Ok;
  }

 private:
  const RedisUrl url_;
  const std::string password_;
  const uint64_t db_;
  const StoreOptions options_;
  // Lock order: refresh_lock_ is never held while taking lock_.
  std::mutex lock_;  // guards ctx_ (hiredis contexts are not thread-safe), leased_
  ContextPtr ctx_{nullptr, redisFree};
  std::chrono::steady_clock::time_point deadline_;  // of the call in progress
  std::map<std::string, std::string> leased_;       // key -> value, set again by the refresher

  std::mutex refresh_lock_;  // guards stopping_ and refresher_
  std::condition_variable refresh_cv_;
  bool stopping_ = false;
  std::thread refresher_;
  bool refresh_failing_ = false;  // refresher thread only
};

class RedisFactory final : public StoreFactory {
 public:
  const char* name() const override { return "redis"; }
  bool accepts(const std::string& conn) const override { return backend_of(conn) == "redis"; }
  void register_config(cfg::Registry& registry) override {
    registry.add<RedisConfig>(redis_config_table());
  }
  Result<std::unique_ptr<Store>> open(const std::string& conn, const StoreOptions& options,
                                      std::string* error) override {
    std::string why;
    Result<RedisUrl> url = parse_url(conn, &why);
    Result<RedisConfig> config =
        url.ok() ? cfg::read_table<RedisConfig>(redis_config_table(), &why) : url.status();
    if (!config.ok()) {
      MC_LOG(error) << "metadata: " << why;
      if (error) *error = why;
      return config.status();
    }
    auto store =
        std::make_unique<RedisStore>(*url, url->has_password ? url->password : config->password,
                                     url->has_db ? url->db : config->db_index, options);
    const Status s = store->connect();
    if (is_error(s)) {
      if (error) *error = store->last_error();
      return s;
    }
    return std::unique_ptr<Store>(std::move(store));
  }
};

}  // namespace

}  // namespace mc::metadata::redis

MC_METADATA_MODULE_DEFINE("redis", "1.0", ::mc::metadata::redis::RedisFactory)

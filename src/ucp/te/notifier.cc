// SPDX-License-Identifier: Apache-2.0
// Notifications: delivery, the key exchange and the target's queue (see
// notifier.h for the protocol, the ordering argument and the locks).
#include "ucp/te/notifier.h"

#include <algorithm>

#include "ucs/log/log.h"
#include "ucs/sys/sys.h"

namespace mc::te {

namespace {

// Keyer jobs waiting; more kNotify from unknown senders are answered Busy.
constexpr size_t kMaxKeyJobs = 64;
// Keys sent to one sender's listener and not yet seen: a claim of the name
// by another process replaces one, not the one the real sender is using.
constexpr size_t kMaxPendingKeys = 4;
// Key exchanges per notification before it is given up (Rejected).
constexpr int kMaxKeyExchanges = 3;

// A peer's segment name for the log: at most 128 bytes, no control bytes.
std::string shown(std::string_view name) {
  std::string out(name.substr(0, 128));
  for (char& ch : out) {
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) ch = '?';
  }
  return name.size() > 128 ? out + "..." : out;
}

RpcReply error_reply(Status s, std::string text) {
  return {static_cast<uint16_t>(-static_cast<int>(s)), std::move(text)};
}

// Failures in transit: the notification is sent again (with its seq).
bool transient(Status s) {
  return s == Status::Unreachable || s == Status::ConnectionReset || s == Status::IoError ||
         s == Status::Timeout;
}

}  // namespace

Notifier::Notifier(Params params) : params_(std::move(params)) {
  send_thread_ = std::thread([this] { send_loop(); });
  key_thread_ = std::thread([this] { key_loop(); });
}

Notifier::~Notifier() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  send_thread_.join();
  key_thread_.join();
}

Status Notifier::check(std::string_view name, std::string_view msg) const {
  if (name.size() + msg.size() <= params_.max_size) return Status::Ok;
  MC_LOG(error) << "transfer engine: notification of " << name.size() + msg.size()
                << " bytes (name and notify_msg) exceeds MC_NOTIFY_MAX_SIZE=" << params_.max_size;
  return Status::MessageTruncated;
}

void Notifier::set_self(std::string self) {
  std::lock_guard<std::mutex> lock(mu_);
  params_.self = std::move(self);
}

bool Notifier::post(std::string target, std::string name, std::string msg, Done done) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stop_) return false;
  outbox_.push_back({std::move(target), std::move(name), std::move(msg), std::move(done)});
  cv_.notify_all();
  return true;
}

Status Notifier::send(std::string target, std::string name, std::string msg) {
  std::mutex m;
  std::condition_variable cv;
  std::optional<Status> result;
  const bool posted = post(std::move(target), std::move(name), std::move(msg), [&](Status s) {
    std::lock_guard<std::mutex> lock(m);
    result = s;
    cv.notify_all();
  });
  if (!posted) return Status::Canceled;
  std::unique_lock<std::mutex> lock(m);
  cv.wait(lock, [&] { return result.has_value(); });
  return *result;
}

void Notifier::send_loop() {
  ucs::set_thread_name("mc_te_notify");
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !outbox_.empty(); });
    if (stop_) break;
    Outgoing o = std::move(outbox_.front());
    outbox_.pop_front();
    lock.unlock();
    const Status s = deliver(o);
    o.done(s);
    lock.lock();
  }
  std::deque<Outgoing> rest = std::move(outbox_);
  lock.unlock();
  for (Outgoing& o : rest) o.done(Status::Canceled);
}

bool Notifier::sleep_until(uint64_t deadline_ns) {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t now = ucs::monotonic_ns();
  if (now < deadline_ns) {
    cv_.wait_for(lock, std::chrono::nanoseconds(deadline_ns - now), [&] { return stop_; });
  }
  return !stop_;
}

std::optional<NotifyKey> Notifier::await_key(const NotifyKey& nonce, uint64_t deadline_ns) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = awaited_.find(nonce);
  for (;;) {
    if (stop_ || it->second.has_value()) break;
    const uint64_t now = ucs::monotonic_ns();
    if (now >= deadline_ns) break;
    cv_.wait_for(lock, std::chrono::nanoseconds(deadline_ns - now));
  }
  std::optional<NotifyKey> key = it->second;
  awaited_.erase(it);
  return key;
}

// One notification until the target took it, refused it, or the timeout
// passed. The first failure that ends it is logged here.
Status Notifier::deliver(const Outgoing& o) {
  const uint64_t deadline = ucs::monotonic_ns() + static_cast<uint64_t>(params_.timeout.count());
  const std::string target = "notification to '" + shown(o.target) + "'";
  std::string error;
  Result<std::pair<std::string, uint16_t>> addr = params_.resolve(o.target, &error);
  if (!addr.ok()) {
    MC_LOG(error) << "transfer engine: " << target << ": " << error;
    return addr.status();
  }
  NotifyFrame f;
  {
    std::lock_guard<std::mutex> lock(mu_);
    f.sender = params_.self;
  }
  f.generation = params_.generation;
  f.seq = ++seq_;
  f.name = o.name;
  f.msg = o.msg;
  Status last = Status::Timeout;
  int exchanges = 0;
  for (unsigned attempt = 0;; ++attempt) {
    const uint64_t now = ucs::monotonic_ns();
    if (now >= deadline) break;
    f.nonce = random_notify_key();
    auto key = keys_.find(o.target);
    f.key = key != keys_.end() ? key->second : NotifyKey{};
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return Status::Canceled;
      awaited_[f.nonce] = std::nullopt;  // before the target can answer it
    }
    Result<RpcReply> reply = rpc_call(
        addr->first, addr->second, kNotify, encode_auth_request(params_.token, encode_notify(f)),
        params_.frame_max_length, std::chrono::nanoseconds(deadline - now), &error);
    if (reply.ok() && reply->code == kNotifyNeedKey && exchanges++ < kMaxKeyExchanges) {
      std::optional<NotifyKey> given = await_key(f.nonce, deadline);
      if (!given) break;
      keys_[o.target] = *given;
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      awaited_.erase(f.nonce);
    }
    if (reply.ok() && reply->code == 0) return Status::Ok;
    if (reply.ok()) {
      last = reply->code == kNotifyNeedKey ? Status::Rejected : reply_status(reply->code);
      MC_LOG(error) << "transfer engine: " << target << " refused: "
                    << (reply->code == kNotifyNeedKey ? "no key exchange succeeded"
                                                      : shown(reply->payload));
      return last;
    }
    last = reply.status();
    if (!transient(last)) {
      MC_LOG(error) << "transfer engine: " << target << ": " << error;
      return last;
    }
    // Back-off: 1 ms doubling, at most 64 ms; the same seq goes again.
    MC_LOG(debug) << "transfer engine: " << target << " attempt " << attempt + 1 << ": " << error;
    if (!sleep_until(std::min<uint64_t>(
            deadline, ucs::monotonic_ns() + (1000000ULL << std::min<unsigned>(attempt, 6))))) {
      return Status::Canceled;
    }
  }
  MC_LOG(error) << "transfer engine: " << target << " not taken within "
                << std::chrono::duration_cast<std::chrono::milliseconds>(params_.timeout).count()
                << " ms (MC_HANDSHAKE_TIMEOUT); last: " << last << " " << error;
  return last;
}

RpcReply Notifier::on_request(uint16_t code, std::string_view body, const std::string& peer) {
  return code == kNotifyKey ? on_key(body, peer) : on_notify(body, peer);
}

bool Notifier::verified_locked(const NotifyFrame& f) {
  auto peer = peers_.find(f.sender);
  if (peer != peers_.end() && peer->second.generation == f.generation &&
      notify_key_equal(peer->second.key, f.key)) {
    return true;
  }
  auto pending = pending_.find(f.sender);
  if (pending == pending_.end()) return false;
  for (const PendingKey& k : pending->second) {
    if (k.generation != f.generation || !notify_key_equal(k.key, f.key)) continue;
    // The sender read the key sent to its address: it is that segment.
    const bool same = peer != peers_.end() && peer->second.generation == f.generation;
    Peer& p = peers_[f.sender];
    p.last_seq = same ? p.last_seq : 0;
    p.generation = f.generation;
    p.key = f.key;
    pending_.erase(pending);
    return true;
  }
  return false;
}

RpcReply Notifier::on_notify(std::string_view body, const std::string& peer) {
  NotifyFrame f;
  std::string error;
  if (Status s = decode_notify(body, &f, &error); s != Status::Ok) {
    if (auto v = bad_log_.check(); v.log) {
      MC_LOG(warn) << "transfer engine: notification from " << peer << ": " << error << v.note();
    }
    return error_reply(s, error);
  }
  if (f.name.size() + f.msg.size() > params_.max_size) {
    return error_reply(Status::MessageTruncated, "notification exceeds MC_NOTIFY_MAX_SIZE=" +
                                                     std::to_string(params_.max_size) +
                                                     " at the target");
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!verified_locked(f)) {
    if (key_jobs_.size() >= kMaxKeyJobs) {
      return error_reply(Status::Busy, "too many key exchanges in progress");
    }
    key_jobs_.push_back({f.sender, f.generation, f.nonce});
    cv_.notify_all();
    return {kNotifyNeedKey, {}};
  }
  Peer& p = peers_[f.sender];
  if (f.seq <= p.last_seq) return {0, {}};  // a repeat of one taken
  if (inbox_.size() >= params_.queue_length) {
    return error_reply(Status::NoResource, "notification queue full (MC_NOTIFY_QUEUE_LENGTH=" +
                                               std::to_string(params_.queue_length) + ")");
  }
  p.last_seq = f.seq;
  inbox_.push_back({f.sender, std::move(f.name), std::move(f.msg)});
  return {0, {}};
}

RpcReply Notifier::on_key(std::string_view body, const std::string& peer) {
  NotifyKeyFrame f;
  std::string error;
  if (Status s = decode_notify_key(body, &f, &error); s != Status::Ok) {
    if (auto v = bad_log_.check(); v.log) {
      MC_LOG(warn) << "transfer engine: notification key from " << peer << ": " << error
                   << v.note();
    }
    return error_reply(s, error);
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = awaited_.find(f.nonce);
  if (it == awaited_.end() || it->second.has_value()) {
    return error_reply(Status::NoElem, "no notification awaits that key");
  }
  it->second = f.key;
  cv_.notify_all();
  return {0, {}};
}

void Notifier::key_loop() {
  ucs::set_thread_name("mc_te_notifykey");
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !key_jobs_.empty(); });
    if (stop_) return;
    KeyJob job = std::move(key_jobs_.front());
    key_jobs_.pop_front();
    lock.unlock();
    send_key(job);
    lock.lock();
  }
}

// Sends a fresh key for `job.sender` to that segment's published address.
// The key is pending before it is sent: the sender's next kNotify may come
// before this thread reads the answer.
void Notifier::send_key(const KeyJob& job) {
  std::string error;
  Result<std::pair<std::string, uint16_t>> addr = params_.resolve(job.sender, &error);
  if (!addr.ok()) {
    MC_LOG(warn) << "transfer engine: notification from '" << shown(job.sender)
                 << "' not taken: the sender's address is not known: " << error;
    return;
  }
  const NotifyKey key = random_notify_key();
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::deque<PendingKey>& keys = pending_[job.sender];
    if (keys.size() >= kMaxPendingKeys) keys.pop_front();
    keys.push_back({job.generation, key});
  }
  Result<RpcReply> reply =
      rpc_call(addr->first, addr->second, kNotifyKey,
               encode_auth_request(params_.token, encode_notify_key({job.nonce, key})),
               params_.frame_max_length, params_.timeout, &error);
  if (reply.ok() && reply->code == 0) return;
  // Nobody at that address awaits it (a stale attempt, or a claim of the
  // name by another process): no kNotify will carry it, so it goes, and
  // claims of made-up names leave nothing behind.
  MC_LOG(debug) << "transfer engine: notification key to '" << shown(job.sender)
                << "': " << (reply.ok() ? shown(reply->payload) : error);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pending_.find(job.sender);
  if (it == pending_.end()) return;
  std::erase_if(it->second, [&](const PendingKey& k) { return notify_key_equal(k.key, key); });
  if (it->second.empty()) pending_.erase(it);
}

void Notifier::take(std::vector<TakenNotify>* out) {
  out->clear();
  std::lock_guard<std::mutex> lock(mu_);
  out->reserve(inbox_.size());
  for (TakenNotify& n : inbox_) out->push_back(std::move(n));
  inbox_.clear();
}

}  // namespace mc::te

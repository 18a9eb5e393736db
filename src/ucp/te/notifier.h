// SPDX-License-Identifier: Apache-2.0
// Notifier: the notifications of one engine (Mooncake's sendNotifyByName /
// getNotifies), both sides. Sending: one FIFO of outgoing notifications and
// one thread that delivers them one at a time, each a kNotify request to the
// target's RPC listener, the next only once the target answered the last.
// Receiving: the RPC listener hands kNotify / kNotifyKey requests here; an
// accepted notification joins a bounded queue that getNotifies empties.
//
// Who sent it. A notification names its sender's segment; the target
// believes the name only once the sender proved it can read what the
// target sends to that segment's published RPC address (the segment name
// under P2PHANDSHAKE, rpc_meta/<name> in a store): at the first kNotify of
// a sender (or of a new generation of it) the target answers kNotifyNeedKey,
// and its keyer thread sends a fresh random key, with the request's nonce,
// to that address (kNotifyKey). The sender's listener hands the key to the
// waiting sender thread, which sends again with it. Another process may
// claim the name but never receives the key.
//
// Exactly once, in order: every notification of a sender engine gets a seq
// above all earlier ones (one counter, one sending thread); an attempt that
// failed in transit (connection lost, no answer) is sent again with the same
// seq, and the target takes a seq only above the last one it took from that
// sender's generation, answering a repeat as taken. The target's answer to
// notification k comes before notification k+1 is sent, so they are taken
// in the order sent.
//
// Threads and locks: mu_ guards every member below it; no network call is
// made with it held; the Done callbacks run on the sending thread without it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "ucp/te/handshake.h"
#include "ucp/te/notify_wire.h"
#include "ucs/log/rate_limiter.h"

namespace mc::te {

/// A notification taken by this engine.
struct TakenNotify {
  std::string sender;  ///< the segment that sent it, proved by the key exchange
  std::string name;
  std::string msg;
};

/// Where the RPC listener of segment `segment` is (host, port); an error
/// status with `*error` set when it is not known.
using AddressResolver = std::function<Result<std::pair<std::string, uint16_t>>(
    const std::string& segment, std::string* error)>;

class Notifier {
 public:
  struct Params {
    std::string self;  ///< this engine's segment name, sent as the sender
    uint64_t generation = 0;
    std::string token;                  ///< MC_AUTH_TOKEN, sent with every request
    size_t max_size = 64 << 10;         ///< MC_NOTIFY_MAX_SIZE: name + notify_msg bytes
    size_t queue_length = 1024;         ///< MC_NOTIFY_QUEUE_LENGTH: taken, not yet handed over
    size_t frame_max_length = 1 << 20;  ///< MC_HANDSHAKE_MAX_LENGTH
    /// A notification is given up this long after its first attempt.
    std::chrono::nanoseconds timeout = std::chrono::seconds(5);
    AddressResolver resolve;
  };
  /// The outcome of a posted notification: Ok once the target took it.
  using Done = std::function<void(Status)>;

  /// Starts the sending and the keyer threads.
  explicit Notifier(Params params);
  /// Stops both; notifications still queued end with Canceled.
  ~Notifier();
  Notifier(const Notifier&) = delete;
  Notifier& operator=(const Notifier&) = delete;

  /// The sender name (this engine's segment, known once its listener is
  /// bound); before the first post().
  void set_self(std::string self);

  /// MessageTruncated (logged) when name and msg together exceed max_size.
  Status check(std::string_view name, std::string_view msg) const;
  /// Queues a notification to segment `target`, after every one queued
  /// before. `done` gets Ok, or the error (logged): MessageTruncated,
  /// NoResource (the target's queue is full), Rejected (MC_AUTH_TOKEN, or
  /// the key exchange failed), Unreachable / Timeout / ConnectionReset (no
  /// answer within the timeout), Canceled (stopped first).
  /// False, without calling `done`, once stopped. `done` runs on the
  /// sending thread, without this object's lock.
  bool post(std::string target, std::string name, std::string msg, Done done);
  /// post(), then waits for the outcome.
  Status send(std::string target, std::string name, std::string msg);

  /// A kNotify or kNotifyKey request (the RPC listener's thread).
  RpcReply on_request(uint16_t code, std::string_view body, const std::string& peer);

  /// Moves every notification taken so far into `out` (replacing its
  /// contents), oldest first.
  void take(std::vector<TakenNotify>* out);

 private:
  struct Outgoing {
    std::string target;
    std::string name;
    std::string msg;
    Done done;
  };
  /// A sender whose key this engine gave: what its kNotify must carry.
  struct Peer {
    uint64_t generation = 0;
    NotifyKey key{};
    uint64_t last_seq = 0;  ///< highest seq taken from this generation
  };
  /// A key sent to a sender's listener, not yet seen in a kNotify.
  struct PendingKey {
    uint64_t generation = 0;
    NotifyKey key{};
  };
  struct KeyJob {
    std::string sender;
    uint64_t generation = 0;
    NotifyKey nonce{};
  };

  void send_loop();
  Status deliver(const Outgoing& o);
  /// Waits for the key that answers `nonce`, until `deadline_ns`.
  std::optional<NotifyKey> await_key(const NotifyKey& nonce, uint64_t deadline_ns);
  bool sleep_until(uint64_t deadline_ns);
  void key_loop();
  void send_key(const KeyJob& job);
  RpcReply on_notify(std::string_view body, const std::string& peer);
  RpcReply on_key(std::string_view body, const std::string& peer);
  /// Whether `f` carries the key given to its sender (promoting a pending one).
  bool verified_locked(const NotifyFrame& f);

  Params params_;  ///< params_.self: set_self(), before the first post
  std::thread send_thread_;
  std::thread key_thread_;
  ucs::RateLimiter bad_log_{std::chrono::seconds(1), 5};  ///< the listener's thread only
  // The sending thread only.
  uint64_t seq_ = 0;
  std::map<std::string, NotifyKey> keys_;  ///< target segment -> the key it gave

  mutable std::mutex mu_;
  std::condition_variable cv_;  ///< outbox_, key_jobs_, awaited_, stop_
  bool stop_ = false;
  std::deque<Outgoing> outbox_;
  std::map<NotifyKey, std::optional<NotifyKey>> awaited_;  ///< nonce -> key, once it came
  std::deque<KeyJob> key_jobs_;
  std::map<std::string, Peer> peers_;                      ///< by sender segment
  std::map<std::string, std::deque<PendingKey>> pending_;  ///< by sender segment
  std::deque<TakenNotify> inbox_;
};

}  // namespace mc::te

// SPDX-License-Identifier: Apache-2.0
// tcp iface: a listening socket on one device, the event loop that drives
// every socket of the iface, the target side of puts and gets, and the
// queue of events that progress() hands to the user's thread.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <unordered_map>
#include <vector>

#include "ucs/async/event_loop.h"
#include "ucs/mpool/mpool.h"
#include "uct/api/iface.h"
#include "uct/tcp/tcp_conn.h"
#include "uct/tcp/tcp_device.h"
#include "uct/tcp/tcp_ep.h"
#include "uct/tcp/tcp_listener.h"
#include "uct/tcp/tcp_md.h"

namespace mc::uct::tcp {

/// Largest short operation (am: header included).
inline constexpr size_t kMaxShort = 4096;
/// Largest zcopy put or get, and largest frame payload of one.
inline constexpr size_t kMaxZcopy = size_t{1} << 30;
/// Largest am zcopy header.
inline constexpr size_t kMaxAmHeader = 128;
/// Replies a connection may have queued before it stops reading.
inline constexpr size_t kTargetTxBacklog = 1024;

/// Thread safety: the user's thread calls the Iface methods and the
/// endpoints' operations; the loop thread (own or IfaceParams::async) runs
/// every socket callback and serves puts and gets without the user.
/// Active messages, completions and errors reach the user in progress().
/// An IfaceParams::async loop must outlive the iface; when it does not run
/// on its own thread, progress() drives it, and nothing else may drive it
/// from another thread (a target is then served only while progressing).
class TcpIface : public Iface, private TcpConnHandler {
 public:
  static Result<std::unique_ptr<TcpIface>> create(TcpMd* md, const IfaceParams& params,
                                                  const TcpConfig& config);
  /// Cancels the work of endpoints still open (they become inert), closes
  /// every socket and joins its own loop thread.
  ~TcpIface() override;

  IfaceAttr query() const override;
  unsigned progress() override;
  std::vector<uint8_t> device_address() const override;
  std::vector<uint8_t> iface_address() const override;
  bool is_reachable(std::span<const uint8_t> device_addr, std::span<const uint8_t> iface_addr,
                    std::string* reason) const override;
  Result<std::unique_ptr<Endpoint>> ep_create(std::span<const uint8_t> device_addr,
                                              std::span<const uint8_t> iface_addr) override;
  Status flush(Completion* comp) override;
  /// An eventfd written when an event is queued for progress() after arm().
  /// Unsupported when the loop runs only inside progress() (nothing would
  /// queue events while the user sleeps).
  Result<int> event_fd() override;
  /// Busy when events wait for progress(); else arms the event fd.
  Status arm() override;

  /// What the loop thread hands to progress().
  struct Event {
    enum class Type : uint8_t { Done, Am, EpError };
    Type type;
    TcpRequest* req = nullptr;  ///< Done
    TcpEp* ep = nullptr;        ///< EpError
    Status status = Status::Ok;
    uint8_t am_id = 0;                    ///< Am
    uint32_t length = 0;                  ///< Am: payload bytes
    std::array<uint8_t, kSmallAm> small{};  ///< Am: the payload, up to kSmallAm bytes
    std::vector<uint8_t> data;            ///< Am: the payload, past kSmallAm bytes
    const uint8_t* payload() const { return length <= kSmallAm ? small.data() : data.data(); }
  };

  // For endpoints.
  /// Queues an event for progress(); any thread.
  void push_event(Event ev);
  /// Removes and returns the queued events of `ep` (user thread).
  std::vector<Event> take_events(const TcpEp* ep);
  /// Returns once no loop callback that started before the call still runs.
  void loop_barrier();
  /// The lock of every connection of the iface and of its endpoints' state.
  std::mutex& lock() const { return lock_; }
  TcpConnHandler* conn_handler() { return this; }
  /// What every connection accepts in one frame.
  wire::Limits limits() const {
    return {static_cast<uint32_t>(config_.seg_size), static_cast<uint32_t>(kMaxZcopy)};
  }
  /// Who we are in a Hello.
  uint64_t hello_identity() const;

  // Connection sharing (the lock held).
  /// An accepted primary connection from `peer_id` that no endpoint sends
  /// on and whose peer still does, or null.
  std::shared_ptr<TcpConn> find_adoptable_locked(uint64_t peer_id) const;
  void ep_created_locked(TcpEp* ep) { eps_.insert(ep); }
  void ep_destroyed_locked(TcpEp* ep) { eps_.erase(ep); }
  /// An endpoint stops sending on its primary, which the peer may still
  /// send on: Bye, then the iface keeps it until the peer's Bye or close.
  void release_primary_locked(const std::shared_ptr<TcpConn>& conn);
  /// Drops the iface's reference to a closed connection.
  void forget_locked(TcpConn& conn) { conns_.erase(&conn); }
  ucs::EventLoop& loop() const { return *loop_; }
  const TcpConfig& config() const { return config_; }
  const NetDevice& device() const { return dev_; }
  const ErrorHandler& err_handler() const { return err_handler_; }
  ucs::ThreadSafeMpool& bounce_pool() const { return *bounce_pool_; }
  /// Whether a bounce buffer can be had now.
  bool bounce_available() const { return bounce_pool_->in_use() < bounce_max_; }
  uint64_t next_seq() { return next_seq_++; }
  uint64_t peek_seq() const { return next_seq_; }
  /// A request from the iface's pool, or null when memory is out; given
  /// back with free_request(). User thread only, as requests are.
  TcpRequest* new_request(TcpRequest::Kind kind, TcpEp* ep, Completion* comp) {
    void* mem = request_pool_->get();
    return mem ? new (mem) TcpRequest(kind, ep, comp) : nullptr;
  }
  void free_request(TcpRequest* req) {
    req->~TcpRequest();
    request_pool_->put(req);
  }
  /// Iface-wide flush bookkeeping of requests (user thread).
  void track(uint64_t seq) { flush_.outstanding.insert(seq); }
  void untrack(uint64_t seq, Status status, std::vector<std::pair<Completion*, Status>>* done) {
    (void)flush_.end(seq, status, done);
  }

 private:
  TcpIface(TcpMd* md, const IfaceParams& params, const TcpConfig& config, NetDevice dev);
  Status init(const IfaceParams& params);
  /// A connection of a socket the listener accepted; null when it fails.
  std::shared_ptr<TcpConn> adopt(int fd);

  // TcpConnHandler for every connection (tcp_target.cc): the target side,
  // the handshake, and replies handed to the endpoint that sends there.
  Status begin_frame(TcpConn& conn, const wire::FrameHeader& hdr, RxSink* sink,
                     std::string* why) override;
  Status end_frame(TcpConn& conn, const wire::FrameHeader& hdr, RxSink& sink,
                   std::string* why) override;
  void frame_sent(TcpConn& conn, TxFrame& frame) override;
  void connected(TcpConn& conn) override;
  void conn_failed(TcpConn& conn, Status status, const std::string& why, bool clean) override;
  /// A Hello on an accepted connection: match it with an endpoint of ours
  /// to that peer and answer the verdict.
  void on_hello(TcpConn& conn, const wire::FrameHeader& hdr);
  Status begin_request(TcpConn& conn, const wire::FrameHeader& hdr, RxSink* sink,
                       std::string* why);
  void serve_get(TcpConn& conn, const wire::FrameHeader& hdr);
  /// Resumes the paused connections once the AM backlog has halved.
  void resume_paused();
  static void reply(TcpConn& conn, TxFrame frame);

  // Declared first so that it is destroyed last, after every socket.
  std::unique_ptr<ucs::EventLoop> own_loop_;
  TcpMd* md_;
  TcpConfig config_;
  NetDevice dev_;
  LinkModel link_;
  ErrorHandler err_handler_;
  ucs::EventLoop* loop_ = nullptr;
  std::unique_ptr<ucs::ThreadSafeMpool> bounce_pool_;
  std::unique_ptr<ucs::Mpool> request_pool_;  ///< TcpRequest, user thread only
  size_t bounce_max_ = 0;
  std::unique_ptr<TcpListener> listener_;  ///< the listening socket and the accepted ones
  /// Refused puts and gets, which a peer can make repeat: a few lines a second.
  ucs::RateLimiter refused_log_{std::chrono::seconds(1), 5};
  uint16_t port_ = 0;

  // Lock order: lock_ -> events_lock_ (a leaf).
  mutable std::mutex lock_;  ///< every connection's; guards conns_, paused_, eps_ (writes)
  /// Connections no endpoint owns alone: accepted ones, and primaries an
  /// endpoint stopped sending on while the peer may still send there.
  std::unordered_map<TcpConn*, std::shared_ptr<TcpConn>> conns_;
  std::vector<std::weak_ptr<TcpConn>> paused_;  ///< stopped reading: too many AMs queued
  std::atomic<size_t> am_queued_{0};            ///< Am events not yet delivered
  /// Set while progress() drives a caller's loop on the user's thread:
  /// active messages are handed to their handler as they are read.
  std::atomic<bool> direct_am_{false};
  uint64_t loop_waits_seen_ = 0;  ///< loop_->progress_count() after this iface's last progress()
  size_t direct_ams_ = 0;  ///< handed over so during this progress() (user thread)
  std::atomic<bool> any_paused_{false};  ///< paused_ is not empty (a hint, read without the lock)
  /// Events in order: a vector read from `head`, whose consumed front goes
  /// once it is half of the vector, so steady traffic allocates nothing (a
  /// deque allocated a block per four events and freed it again).
  struct EventQueue {
    std::vector<Event> items;
    size_t head = 0;
    bool empty() const { return head == items.size(); }
    size_t size() const { return items.size() - head; }
    Event pop();
    void clear() {
      items.clear();
      head = 0;
    }
  };
  std::mutex events_lock_;  ///< guards events_ and armed_
  EventQueue events_;
  std::atomic<bool> events_queued_{false};  ///< events_ is not empty (set with events_lock_ held)
  bool armed_ = false;  ///< the next queued event writes event_fd_
  int event_fd_ = -1;   ///< eventfd of blocking progress

  std::set<TcpEp*> eps_;  ///< written by the user's thread with lock_ held

  // User thread only.
  uint64_t next_seq_ = 1;
  FlushBook flush_;
};

}  // namespace mc::uct::tcp

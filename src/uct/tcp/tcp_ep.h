// SPDX-License-Identifier: Apache-2.0
// tcp endpoint: several connections to one peer iface; active messages and
// small operations on the first (the primary, which it may share with the
// peer's endpoint to us), large puts and gets split across all.
#pragma once

#include <array>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "ucs/datastruct/seq_map.h"
#include "uct/api/ep.h"
#include "uct/base/pending_queue.h"
#include "uct/tcp/tcp_conn.h"

namespace mc::uct::tcp {

class TcpEp;
class TcpIface;

/// One user operation: its completion and, for gets, where the data goes.
/// Created and destroyed on the user thread; while in flight the loop thread
/// reaches it only through its endpoint's lock.
struct TcpRequest {
  enum class Kind : uint8_t { Am, Put, Get };
  TcpRequest(Kind k, TcpEp* e, Completion* c) : kind(k), ep(e), comp(c) {}
  Kind kind;
  TcpEp* ep;
  Completion* comp;
  uint64_t seq = 0;    ///< order of posting in the iface, for flush
  int parts_left = 1;  ///< pieces (frames) not yet done
  Status status = Status::Ok;
  bool striped = false;
  std::array<Iov, kMaxIov> iov{};  ///< get destination
  size_t iov_count = 0;
  UnpackCallback unpack = nullptr;  ///< get_bcopy: called in progress()
  void* unpack_arg = nullptr;
  void* bounce = nullptr;  ///< get_bcopy destination, from the bounce pool
  size_t length = 0;
};

/// Fills `out` with the part [offset, offset + length) of `iov`; returns the
/// number of entries (at most `count`).
uint32_t slice_iov(const Iov* iov, size_t count, size_t offset, size_t length, iovec* out);

/// A frame of a request in flight: the part [offset, offset + length) on
/// connection `conn`.
struct Piece {
  TcpRequest* req;
  size_t offset;
  size_t length;
  uint32_t conn;
  bool sent = false;  ///< a reply before this is a protocol error (the frame may read user memory)
};

/// A flush() waiting for the operations posted before it.
struct FlushWaiter {
  uint64_t seq;  ///< done when no operation with a smaller seq is outstanding
  Completion* comp;
  Status status;
};

/// Operations not done yet, by sequence number, and the flushes waiting for
/// those posted before them: an endpoint's and its iface's (user thread).
struct FlushBook {
  ucs::SeqMap<std::monostate> outstanding;
  std::vector<FlushWaiter> waiters;

  /// Whether an operation posted before `seq` is not done yet.
  bool pending_before(uint64_t seq) const {
    return !outstanding.empty() && outstanding.min_key() < seq;
  }
  /// Operation `seq` ended with `status`. An error goes to every flush
  /// posted after it (true when there was one); the flushes with nothing
  /// left before them move to `done`.
  bool end(uint64_t seq, Status status, std::vector<std::pair<Completion*, Status>>* done);
};

/// Where an endpoint stands on its primary connection (tcp_wire.h, "Connection
/// sharing"). Nothing but the Hello is sent before Settled.
enum class ShareState : uint8_t {
  Seeking,  ///< Hello sent on our own primary, no verdict yet
  Yielded,  ///< told to adopt the peer's connection, which has not arrived yet
  Settled   ///< sending on conns_[0] (ours or adopted)
};

class TcpEp : public Endpoint, private TcpConnHandler {
  friend class TcpIface;

 public:
  /// Opens the connections to ipv4:port (network byte order); they complete
  /// on the loop thread. Unreachable / IoError when a socket cannot start.
  static Result<std::unique_ptr<TcpEp>> create(TcpIface* iface, uint32_t ipv4, uint16_t port);
  /// Completes outstanding work with Canceled, closes the connections.
  ~TcpEp() override;

  Status put_short(const void* buffer, size_t length, uint64_t remote_addr,
                   const Rkey& rkey) override;
  Result<size_t> put_bcopy(PackCallback pack, void* arg, uint64_t remote_addr,
                           const Rkey& rkey) override;
  Status put_zcopy(const Iov* iov, size_t iov_count, uint64_t remote_addr, const Rkey& rkey,
                   Completion* comp) override;
  Status get_bcopy(UnpackCallback unpack, void* arg, size_t length, uint64_t remote_addr,
                   const Rkey& rkey, Completion* comp) override;
  Status get_zcopy(const Iov* iov, size_t iov_count, uint64_t remote_addr, const Rkey& rkey,
                   Completion* comp) override;
  Status am_short(uint8_t id, uint64_t header, const void* payload, size_t length) override;
  Result<size_t> am_bcopy(uint8_t id, PackCallback pack, void* arg) override;
  Status am_zcopy(uint8_t id, const void* header, size_t header_length, const Iov* iov,
                  size_t iov_count, Completion* comp) override;
  Status flush(Completion* comp) override;
  Status fence() override;
  Status pending_add(PendingReq* req) override;
  void pending_purge(const std::function<void(PendingReq*)>& cb) override;
  Status check() override;
  Status connect_status() override;

  // For the iface, on the user thread.
  /// Finishes a request whose pieces are all done: flush bookkeeping, then
  /// the user's callbacks (after which `this` may be gone).
  void complete(TcpRequest* req);
  /// Calls the iface's error handler, once.
  void report_error(Status status);
  /// Retries pending requests when there is room.
  unsigned dispatch_pending();
  /// The iface is closing: cancel everything and forget it.
  void detach();
  const std::string& peer() const { return peer_; }

 private:
  TcpEp(TcpIface* iface, uint32_t ipv4, uint16_t port);

  // Connection sharing, for the iface (its lock held).
  uint64_t peer_id() const { return peer_id_; }
  ShareState share_state_locked() const { return share_; }
  /// The peer was told to adopt our primary: answer no other Hello so.
  bool promised_locked() const { return promised_; }
  void promise_locked() { promised_ = true; }
  /// Sends on `conn` (the peer's primary, accepted by our iface) from now
  /// on; our own primary gets a Bye and is left to the iface.
  void adopt_locked(const std::shared_ptr<TcpConn>& conn);
  /// The HelloAck on our primary.
  void on_verdict_locked(wire::Verdict verdict);
  /// Sends on conns_[0]: what waited is queued there, in order.
  void settle_locked();
  void on_yield_timeout();
  /// Sends on the primary, or keeps the frame until settled (as
  /// TcpConn::send_locked: true when it was written at once).
  bool send_primary_locked(TxFrame& frame);

  // TcpConnHandler, called by the iface for the connections this endpoint
  // sends on: the initiator side of the wire protocol (replies).
  Status begin_frame(TcpConn& conn, const wire::FrameHeader& hdr, RxSink* sink,
                     std::string* why) override;
  Status end_frame(TcpConn& conn, const wire::FrameHeader& hdr, RxSink& sink,
                   std::string* why) override;
  void frame_sent(TcpConn& conn, TxFrame& frame) override;
  void connected(TcpConn& conn) override;
  void conn_failed(TcpConn& conn, Status status, const std::string& why, bool clean) override;

  void on_conn_timeout();
  void fail_locked(Status status, const std::string& why, bool clean = false);
  void complete_piece_locked(TcpRequest* req, Status status);
  /// Closes everything and completes all work; `status` for what was in flight.
  void shut_down(Status status);

  Status admit() const;
  bool has_room() const;
  bool fenced() const;
  Result<const TcpRkey*> check_rkey(const Rkey& rkey, uint64_t addr, size_t length,
                                    unsigned access) const;
  /// Sends the frames of a put or a get, split across the connections when
  /// large; `bounce` (put_bcopy) goes with the only frame.
  Status post_rma(TcpRequest* req, wire::Op op, const Iov* iov, size_t iov_count, size_t total,
                  uint64_t remote_addr, const TcpRkey& key, void* bounce);
  /// Sends an active message frame; Ok when written at once, InProgress when
  /// queued (a request then completes `comp` when it is sent). `on_stack`:
  /// the payload is the caller's until we return (copied when queued).
  Status post_am(TxFrame& frame, Completion* comp, bool on_stack = false);
  void track(TcpRequest* req);
  void release_bounce(void* bounce);

  /// Closes a connection of ours for good (the iface forgets it).
  void close_conn_locked(TcpConn& conn, bool abort);
  /// Takes what this endpoint queued off `conn`, which stays open: bounce
  /// buffers back, requests into `cut`.
  void purge_frames_locked(TcpConn& conn, std::vector<TcpRequest*>* cut);

  TcpIface* iface_;  ///< null once detached
  std::string peer_;
  uint64_t peer_id_;  ///< wire::hello_identity of the peer iface
  size_t max_outstanding_;

  // Lock order: lock_ -> TcpIface::events_lock_ and the bounce pool's lock.
  // lock_ is the iface's: the loop thread holds it in every callback of
  // every connection of the iface.
  std::mutex& lock_;  ///< guards the connections' state and everything down to yield_timer_
  std::vector<std::shared_ptr<TcpConn>> conns_;   ///< [0]: the primary
  ucs::SeqMap<Piece> inflight_;  ///< by request id on the wire
  uint64_t next_req_id_ = 1;
  size_t connected_ = 0;
  uint64_t conn_timer_ = 0;
  Status failed_ = Status::Ok;
  bool closing_ = false;
  ShareState share_ = ShareState::Seeking;
  bool promised_ = false;
  std::deque<TxFrame> waiting_;  ///< frames for the primary before Settled
  uint64_t yield_timer_ = 0;

  // User thread only.
  FlushBook flush_;  ///< the tracked requests and the flushes waiting for them
  size_t striped_outstanding_ = 0;
  uint64_t fence_seq_ = 0;
  Status unreported_error_ = Status::Ok;  ///< of an operation without a completion
  bool error_reported_ = false;
  PendingQueue pending_;
};

}  // namespace mc::uct::tcp

// SPDX-License-Identifier: Apache-2.0
// TcpConn: one non-blocking socket with a queue of frames to send and a
// receive state machine (header, then payload into a sink). What a frame
// means is up to its handler, the iface: it serves requests (target) and
// hands replies to the endpoint that sends on the connection, if any.
#pragma once

#include <sys/uio.h>

#include <array>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ucs/async/event_loop.h"
#include "uct/tcp/tcp_md.h"
#include "uct/tcp/tcp_wire.h"

namespace mc::uct::tcp {

struct TcpRequest;

/// Most iov entries of a zcopy operation (IfaceAttr max_iov).
inline constexpr size_t kMaxIov = 8;
/// Payload pieces of one frame: an am zcopy header and kMaxIov entries.
inline constexpr size_t kMaxFrameIov = kMaxIov + 1;
/// Active messages up to this size are received without an allocation.
inline constexpr size_t kSmallAm = 64;

/// A frame to send: the encoded header, then `data` (user memory for zcopy,
/// a bounce buffer for bcopy, registered memory for a get reply).
struct TxFrame {
  uint8_t hdr[wire::kHeaderSize];
  std::array<iovec, kMaxFrameIov> data{};
  uint32_t data_count = 0;
  size_t total = wire::kHeaderSize;  ///< header + data bytes
  size_t sent = 0;
  void* bounce = nullptr;             ///< returned to the bounce pool once sent
  TcpRequest* req = nullptr;          ///< completes when sent (active messages)
  uint64_t piece = 0;                 ///< request id of a put or get piece, 0 for none
  std::shared_ptr<TcpRegion> region;  ///< `data` lies in this region (get replies)
  bool reply = false;                 ///< a target's reply (counted by tx_backlog_limit)
  bool burst = false;                 ///< a get request or a put of up to 64 KiB: may wait for
                                      ///< the ones after it (send_locked)
  std::vector<uint8_t> owned;         ///< the unsent rest of an abandoned frame (see keep_rest)

  explicit TxFrame(const wire::FrameHeader& h) { wire::encode(h, hdr); }
  void add(const void* p, size_t n) {
    if (n == 0) return;
    data[data_count++] = iovec{const_cast<void*>(p), n};
    total += n;
  }
  /// Copies what is not sent yet of the payload into `owned`, so the frame
  /// no longer reads its sender's memory (an endpoint going away while the
  /// stream, shared with the peer, must stay whole).
  void keep_rest();
};

/// Where the payload of the frame being received goes: `seg` (exactly the
/// payload length in all), or nowhere (`discard`). With `region` set, every
/// write holds the region's `use` lock and stops if it was revoked.
struct RxSink {
  std::array<iovec, kMaxIov> seg{};
  uint32_t seg_count = 0;
  size_t total = 0;
  size_t done = 0;
  bool discard = false;
  bool revoked = false;  ///< the region went away mid-frame: the rest was dropped
  std::shared_ptr<TcpRegion> region;
  std::vector<uint8_t> owned;  ///< an active message's own buffer, past kSmallAm bytes
  std::array<uint8_t, kSmallAm> small{};  ///< a small active message (no allocation)
  Status status = Status::Ok;  ///< the handler's verdict on the frame (e.g. refused put)
  uint64_t cookie = 0;         ///< the handler's own

  void add(void* p, size_t n) {
    if (n) seg[seg_count++] = iovec{p, n};
  }
  size_t remaining() const { return total - done; }
  /// Copies `n` bytes of payload (n <= remaining()).
  void write(const uint8_t* src, size_t n);
  /// readv() from `fd` straight into the segments; as readv(), or 0 with
  /// `revoked` newly set when the region went away.
  ssize_t readv_from(int fd);
};

class TcpConn;
class TcpEp;

/// What a connection's owner does with its events. Every method is called
/// with the connection's lock held, on the loop thread, except frame_sent,
/// which may also run on a thread that sends under the lock.
class TcpConnHandler {
 public:
  virtual ~TcpConnHandler() = default;
  /// A header arrived: set `sink` to take exactly hdr.length bytes. An error
  /// status closes the connection as a protocol error explained by `*why`.
  virtual Status begin_frame(TcpConn& conn, const wire::FrameHeader& hdr, RxSink* sink,
                             std::string* why) = 0;
  /// The payload is in; as begin_frame for errors.
  virtual Status end_frame(TcpConn& conn, const wire::FrameHeader& hdr, RxSink& sink,
                           std::string* why) = 0;
  /// `frame` was written completely (it is popped afterwards).
  virtual void frame_sent(TcpConn& conn, TxFrame& frame) = 0;
  /// A connect completed.
  virtual void connected(TcpConn& conn) = 0;
  /// The connection cannot go on: `clean` when the peer closed it between
  /// frames. The handler must close it (close_locked()) and clean its queue.
  virtual void conn_failed(TcpConn& conn, Status status, const std::string& why, bool clean) = 0;
};

/// Thread safety: every method ending in _locked needs lock() held; the
/// loop thread calls on_events(), which takes it. The fd stays open until
/// the destructor, so its number is never reused while the object lives.
class TcpConn : public std::enable_shared_from_this<TcpConn> {
 public:
  /// `lock` is the owner's (an iface shares one lock among all its
  /// connections), or null to use the connection's own.
  TcpConn(int fd, bool connecting, std::mutex* lock, TcpConnHandler* handler, ucs::EventLoop* loop,
          wire::Limits limits, std::string name);
  ~TcpConn();
  TcpConn(const TcpConn&) = delete;
  TcpConn& operator=(const TcpConn&) = delete;

  std::mutex& lock() const { return *lock_; }
  int fd() const { return fd_; }
  const std::string& name() const { return name_; }
  bool connected_locked() const { return !connecting_ && !dead_; }
  bool dead_locked() const { return dead_; }
  std::deque<TxFrame>& tx_locked() { return tx_; }
  /// Removes the queued frames `mine` selects, after `release` freed what
  /// they hold. A frame partly sent cannot leave the stream: it stays, with
  /// the rest of its payload copied (TxFrame::keep_rest) and nothing held.
  template <typename Mine, typename Release>
  void drop_tx_locked(Mine mine, Release release) {
    std::deque<TxFrame> keep;
    for (TxFrame& f : tx_) {
      if (!mine(f)) {
        keep.push_back(std::move(f));
        continue;
      }
      if (f.sent > 0) f.keep_rest();
      release(f);
      if (f.sent > 0) {
        f.req = nullptr;
        f.piece = 0;
        f.bounce = nullptr;
        f.region.reset();
        keep.push_back(std::move(f));
      } else if (f.reply) {
        --replies_queued_;
      }
    }
    tx_.swap(keep);
  }
  /// Its endpoint lets go of the memory replies are read into: a reply in
  /// the middle of its payload (a get's data) reads the rest and drops it,
  /// instead of writing into a buffer its owner may have freed.
  void drop_reply_locked();
  /// Empties the queue (the owner released what the frames hold).
  void clear_tx_locked() {
    tx_.clear();
    replies_queued_ = 0;
  }

  // Guarded by lock(); set by the iface and the endpoint that sends here.
  uint32_t index = 0;         ///< position in its endpoint
  TcpEp* owner = nullptr;     ///< the endpoint that sends requests here, if any
  bool accepted = false;      ///< the peer opened it
  bool hello_seen = false;    ///< accepted: its Hello arrived
  bool shareable = false;     ///< accepted: a primary connection, which an endpoint may adopt
  bool shared = false;        ///< both sides send requests here (as far as we know yet)
  bool verdict_seen = false;  ///< initiated: the HelloAck arrived
  bool got_bye = false;       ///< the peer sends no more requests here
  bool sent_bye = false;      ///< we send no more requests here
  uint64_t peer_id = 0;       ///< accepted: the Hello's identity (wire::hello_identity)
  /// Stop reading while this many replies wait to be sent (0: no limit): a
  /// peer that never reads its replies cannot make them grow without bound.
  /// Requests of our own do not count: they wait for the peer, who may be
  /// waiting for us to read. Set before attach().
  size_t tx_backlog_limit = 0;

  /// Starts watching the socket; `keep` (passive connections) is captured by
  /// the callback so the object outlives a callback that closes it.
  Status attach(std::shared_ptr<TcpConn> keep = nullptr);

  /// Stops watching the socket. Call without the lock; afterwards no new
  /// callback starts (one in flight may still finish: see EventLoop).
  void detach();

  /// Sends `frame` at once when nothing is queued, else queues it. True
  /// when it was written completely (the caller still owns its resources);
  /// false when it was queued (frame_sent() or the owner's cleanup will
  /// see it). A dead connection drops nothing: it queues, for the owner's
  /// cleanup. A `burst` frame posted after another one before the loop's
  /// next wait is queued too: the frames of a burst leave together.
  bool send_locked(TxFrame& frame);

  /// Stops reading frames (flow control) until resume_locked().
  void pause_locked();
  /// Reads again, starting with the frames already buffered; any thread.
  void resume_locked();

  /// Closes the connection: no more events, FIN to the peer. Idempotent.
  /// `abort`: reset the connection instead of ending it after what is
  /// queued, so that frames of a failed or abandoned connection never reach
  /// the peer later (a put reported failed must not land over a newer one).
  void close_locked(bool abort = false);

  /// The loop's callback.
  void on_events(uint32_t events);

 private:
  enum class RxState { Header, Payload };

  void finish_connect_locked();
  void flush_locked();
  void recv_locked();
  void recv_rounds_locked();
  bool consume_locked();
  void end_frame_locked();
  /// Once hung up, a put being received writes nothing more.
  void drop_stale_put_locked();
  void fail_locked(Status status, const std::string& why, bool clean);
  void update_events_locked();
  /// sendmsg() of queued frames from the front; bytes written or -1.
  ssize_t send_front_locked(bool* revoked);
  /// sendmsg() of `vec`, under `region`'s lock when set; -1 with EFAULT and
  /// `*revoked` when the region went away.
  ssize_t sendmsg_locked(iovec* vec, size_t n, TcpRegion* region, bool* revoked);
  void advance_locked(size_t written);
  size_t rx_len() const { return rx_end_ - rx_start_; }
  bool backlogged() const { return tx_backlog_limit && replies_queued_ >= tx_backlog_limit; }

  int fd_;
  // Lock order: the connection's lock (its iface's) -> TcpIface::events_lock_,
  // the bounce pool's lock, a region's `use` lock.
  std::mutex own_lock_;
  std::mutex* lock_;
  TcpConnHandler* handler_;
  ucs::EventLoop* loop_;
  wire::Limits limits_;
  std::string name_;

  // Guarded by *lock_.
  bool connecting_;
  bool dead_ = false;
  bool broken_ = false;      ///< a send outside the loop thread failed; the loop reports it
  bool paused_ = false;      ///< flow control: frames are not read
  bool kick_ = false;        ///< resumed off the loop thread: EPOLLOUT brings the loop here
  bool rx_stalled_ = false;  ///< reading stopped on tx_backlog_limit; resumes as tx_ drains
  bool in_rx_ = false;       ///< frames sent while receiving wait for one sendmsg at the end
  bool hung_up_ = false;     ///< the peer closed or the socket was shut down: puts are dropped
  /// The last header announced a payload for the direct path: reads from
  /// the buffer stop at the next header, so that the next payload (puts
  /// come in streams) goes straight to its destination too instead of
  /// through rx_buf_ and a copy.
  bool rx_large_ = false;
  int broken_errno_ = 0;
  /// loop_->progress_count() when a `burst` frame last left at once;
  /// another one before the loop's next wait is queued (send_locked).
  uint64_t burst_wait_ = UINT64_MAX;
  uint32_t events_ = 0;  ///< what the loop watches now
  std::deque<TxFrame> tx_;
  size_t replies_queued_ = 0;  ///< frames of tx_ that are replies
  RxState rx_state_ = RxState::Header;
  wire::FrameHeader rx_hdr_;
  RxSink sink_;
  std::vector<uint8_t> rx_buf_;
  size_t rx_start_ = 0;
  size_t rx_end_ = 0;
};

}  // namespace mc::uct::tcp

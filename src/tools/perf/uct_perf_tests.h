// SPDX-License-Identifier: Apache-2.0
// The UCT tests of mc_perftest (am_lat, put_lat, am_bw, put_bw, get) and the
// runner they share, with ucx_perftest's semantics:
//   *_lat  ping-pong: the client sends, the server answers each message the
//          same way (put_lat: it polls the last byte of its buffer, as UCX);
//          half the round trip is reported.
//   *_bw, get  the client streams with up to -O operations in flight (and up
//          to -W unacknowledged active messages); the server only progresses
//          until the client says it is done.
// Every test checks the data of its last message against the sender's pattern.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tools/perf/perf_measure.h"
#include "tools/perf/perf_registry.h"
#include "tools/perf/perf_rte.h"
#include "tools/perf/perf_verdict.h"
#include "tools/perf/perf_watchdog.h"
#include "tools/perf/uct_perf_side.h"

namespace mc::perf {

/// Active-message ids: test messages, and am_bw's acknowledgements (u64
/// count of messages received, little-endian).
inline constexpr uint8_t kDataAm = 1;
inline constexpr uint8_t kAckAm = 2;

/// Adds the UCT tests to `registry`.
void register_uct_tests(Registry& registry);

/// The operation a UCT test moves data with.
enum class UctCmd : uint8_t { Am, Put, Get };

/// One UCT test on one side (client or server) of a connection.
class UctTest {
 public:
  UctTest(const TestInfo& test, RunContext& ctx, UctCmd cmd);
  ~UctTest();

  /// Sets up, connects, runs and checks. Errors are logged where detected.
  Status run();

 private:
  // uct_perf_tests.cc: setup, the send path, ping-pong, the end.
  Status setup();
  Status open_side(const std::string& dev, const std::string& preferred_dev);
  Status check_capability();
  std::string protocol_name() const;
  std::vector<uint8_t> pack_setup(bool single) const;
  void fill_info();
  void install_handlers();
  void use_final();
  void use_slot(uint64_t iter);
  uint8_t* buf(Buf b) const { return buf_[static_cast<int>(b)]; }
  Status post();
  Status post_once();
  Status wait_window(unsigned max_outstanding);
  Status flush();
  /// Progresses until `done()`, bounded by the watchdog.
  template <typename Done>
  Status progress_until(Done done) {
    while (!done()) {
      events_ += iface_->progress();
      MC_RETURN_IF_ERROR(wd_.check(events_ + iter_));
    }
    return Status::Ok;
  }
  Status run_pingpong();
  Status finish();
  std::string check_own() const;

  // uct_perf_stream.cc: bandwidth tests and the server's service loops.
  Status run_stream_client();
  Status serve_acks();
  Status serve_until_done();
  Status send_ack(uint64_t count);

  static size_t pack_send(void* dest, void* arg);
  static void unpack_recv(void* arg, const void* data, size_t length);

  const TestInfo& test_;
  RunContext& ctx_;
  const Params& p_;
  const UctCmd cmd_;
  const bool client_;
  Layout layout_;
  const size_t len_;
  const uint64_t total_;
  const uint64_t own_seed_;
  uint64_t peer_seed_;
  uint64_t own_final_seed_ = 0, peer_final_seed_ = 0;  // the last message's patterns
  bool single_ = false;  // loopback over one iface (self): the peer is this side
  unsigned window_;
  const uint64_t slots_;  // messages side by side in the footprint (1: none)
  Watchdog& wd_;

  // Completions outlive the side: a transport may still hold them when a
  // run is cut short and the side is torn down.
  uct::Completion comp_;  // count = 1 + operations in flight
  uct::Completion flush_comp_;
  bool flushed_ = false;

  uint64_t iter_ = 0;    // the iteration in progress
  uint64_t events_ = 0;  // what progress() handled; with iter_, the watchdog's mark

  // Active-message state, updated by the handlers in progress().
  AmTally am_;  // the messages of the test (AmTally::expect once the seeds are known)
  uint64_t am_acked_ = 0;

  std::unique_ptr<UctSide> side_;
  uct::Iface* iface_ = nullptr;
  uct::Endpoint* ep_ = nullptr;
  uint64_t remote_addr_ = 0;        // put: the peer's receive buffer; get: its send buffer
  uint64_t slot_off_ = 0;           // the next message's offset in both buffers (--footprint)
  std::vector<uct::Iov> slot_iov_;  // the -s pieces at that offset
  const uct::Rkey* rkey_ = nullptr;
  uint8_t* buf_[3] = {};          // by Buf: send, final, receive
  std::vector<uct::Iov> iov_[3];  // by Buf: the -s pieces of each
  uint8_t* src_ = nullptr;        // what the next message is sent from
  const std::vector<uct::Iov>* src_iov_ = nullptr;
  uint8_t* dst_ = nullptr;  // where the next get lands
  const std::vector<uct::Iov>* dst_iov_ = nullptr;
  std::string peer_desc_;
  std::string why_;  // the cause of a failure, for the peer's Error message
};

}  // namespace mc::perf

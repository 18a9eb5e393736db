// SPDX-License-Identifier: Apache-2.0
// The UCP tests of mc_perftest (ucp_put_lat, ucp_put_bw, ucp_get, ucp_am_lat,
// ucp_am_bw), with ucx_perftest's semantics over UCP's own transport
// selection (MC_TLS, or -x as a replacement for it):
//   *_lat  ping-pong: the client sends, the server answers each message the
//          same way (ucp_put_lat: it polls the last byte of its buffer);
//          half the round trip is reported.
//   *_bw, ucp_get  the client streams with up to -O requests in flight; the
//          server progresses until the client says it is done (ucp_am_bw:
//          until every message arrived, which it acknowledges).
// Each side has its own context and worker (in loopback: one per thread).
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
#include "ucp/api/ucp.h"
#include "ucp/core/endpoint.h"
#include "ucp/core/worker.h"

namespace mc::perf {

/// User active-message ids: test messages, and ucp_am_bw's acknowledgement
/// of the last one (empty).
inline constexpr uint16_t kUcpDataAm = 1;
inline constexpr uint16_t kUcpAckAm = 2;

/// Adds the UCP tests to `registry`.
void register_ucp_tests(Registry& registry);

/// The operation a UCP test moves data with.
enum class UcpCmd : uint8_t { Put, Get, Am };

/// One UCP test on one side (client or server) of a connection.
class UcpTest {
 public:
  UcpTest(const TestInfo& test, RunContext& ctx, UcpCmd cmd);
  ~UcpTest();

  /// Sets up, connects, runs and checks. Errors are logged where detected.
  Status run();

 private:
  static constexpr int kBufs = 3;

  // ucp_perf_tests.cc: setup, connection, the description of the run.
  Status setup();
  Status open_side();
  std::vector<uint8_t> pack_setup() const;
  Status connect(std::span<const uint8_t> peer_wire);
  void fill_info();
  void install_handlers();
  uint8_t* buf(Buf b) const { return static_cast<uint8_t*>(memh_[static_cast<int>(b)]->address()); }
  const ucp::MemHandle* memh(Buf b) const { return memh_[static_cast<int>(b)].get(); }

  // ucp_perf_ops.cc: posting, waiting, the tests, the end.
  void use_final();
  void use_slot(uint64_t iter);
  Status post();
  Status wait_outstanding(unsigned max_outstanding);
  Status flush();
  Status send_ack();
  /// Progresses until `done()`, bounded by the watchdog.
  template <typename Done>
  Status progress_until(Done done) {
    while (!done()) {
      events_ += worker_->progress();
      MC_RETURN_IF_ERROR(wd_.check(events_ + iter_ + am_.received));
    }
    return request_error();
  }
  Status request_error();
  Status run_pingpong();
  Status post_until(uint64_t end, Measurement* measure);
  Status run_stream_client();
  Status serve_until_done();
  Status finish();
  std::string check_own() const;

  const TestInfo& test_;
  RunContext& ctx_;
  const Params& p_;
  const UcpCmd cmd_;
  const bool client_;
  const size_t len_;
  const uint64_t total_;
  const uint64_t own_seed_;
  const uint64_t peer_seed_;
  uint64_t own_final_seed_ = 0, peer_final_seed_ = 0;  // the last message's patterns
  unsigned window_;
  const uint64_t slots_;  // messages side by side in the footprint (1: none)
  Watchdog& wd_;

  uint64_t iter_ = 0;    // the iteration in progress
  uint64_t events_ = 0;  // what progress() handled; with iter_, the watchdog's mark

  // Requests in flight, counted down by their callback; the first error.
  unsigned outstanding_ = 0;
  Status request_status_ = Status::Ok;
  ucp::RequestParams src_params_, dst_params_;  // callback and the buffer's registration

  // Active-message state, updated by the handlers in progress().
  AmTally am_;  // the messages of the test (AmTally::expect once the seeds are known)
  bool am_acked_ = false;

  // Declaration order is teardown order reversed: keys and the endpoint go
  // first, the context last; buffers outlive their registrations.
  std::unique_ptr<ucp::Context> context_;
  std::unique_ptr<ucp::Worker> worker_;
  std::unique_ptr<AlignedBuffer> bufs_[kBufs];  // by Buf: send, final, receive (--alloc heap)
  std::unique_ptr<ucp::MemHandle> memh_[kBufs];
  std::unique_ptr<ucp::Endpoint> ep_;
  std::unique_ptr<ucp::Rkey> peer_recv_rkey_, peer_send_rkey_;

  uint64_t remote_addr_ = 0;  // put: the peer's receive buffer; get: its send buffer
  uint64_t slot_off_ = 0;     // the next message's offset in both buffers (--footprint)
  const ucp::Rkey* rkey_ = nullptr;
  uint8_t* src_ = nullptr;  // what the next message is sent from
  uint8_t* dst_ = nullptr;  // where the next get lands
  std::string peer_desc_;
  std::string why_;  // the cause of a failure, for the peer's Error message
};

}  // namespace mc::perf

// SPDX-License-Identifier: Apache-2.0
// A put over two tcp lanes (loopback and a second network device) whose
// second lane's sockets are shut down mid-transfer: the slices of the cut
// lane are re-issued on the other, every byte arrives, and the log says so.
// A lane whose peer never answers the connection fails by MC_CONNECT_TIMEOUT.
#include <arpa/inet.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "common/log_capture.h"
#include "common/net_util.h"
#include "ucp/api/ucp.h"
#include "ucp/core/endpoint.h"
#include "ucp/core/worker.h"
#include "ucs/log/log.h"
#include "uct/base/component_loader.h"

namespace mc::ucp::test {
namespace {

using ucs::Result;
using ucs::Status;

TEST(UcpLaneCut, PutCompletesOnTheOtherLane) {
  if (!uct::find_component("tcp")) GTEST_SKIP() << "tcp transport is not available";
  std::string dev;
  in_addr dev_addr{};
  if (!mc::test::second_device(&dev, &dev_addr)) GTEST_SKIP() << "no second network device is up";
  Result<ucs::config::Sources> sources =
      ucs::config::Sources::from({{"MC_TLS", "tcp"},
                                  {"MC_NET_DEVICES", "lo," + dev},
                                  {"MC_MAX_RMA_RAILS", "2"},
                                  {"MC_LOOPBACK_RAILS", "2"},
                                  // One slice in flight per lane: when the
                                  // first slice lands, the cut lane still has
                                  // slices waiting, however the threads run
                                  // (TSan once saw it finish its share first).
                                  {"MC_SLICES_IN_FLIGHT", "1"},
                                  {"MC_TRANSFER_TIMEOUT", "60s"},
                                  // The cut lane stays failed for the check
                                  // below, however slow the put (sanitizers):
                                  // reconnection is UcpLaneReconnect's.
                                  {"MC_LANE_RECONNECT_INTERVAL", "off"}},
                                 {});
  ASSERT_TRUE(sources.ok());
  ContextParams params;
  params.sources = &*sources;
  Result<std::unique_ptr<Context>> ctx = Context::create(params);
  ASSERT_TRUE(ctx.ok());
  Result<std::unique_ptr<Worker>> sender = Worker::create(**ctx);
  Result<std::unique_ptr<Worker>> receiver = Worker::create(**ctx);
  ASSERT_TRUE(sender.ok() && receiver.ok());
  Result<std::unique_ptr<Endpoint>> ep = (*sender)->ep_create((*receiver)->address());
  ASSERT_TRUE(ep.ok());
  ASSERT_EQ(ucp::impl(**ep).lanes().rma_bw_lanes.size(), 2u) << "two tcp rails expected";

  const size_t n = size_t{64} << 20;
  std::vector<uint8_t> target(n, 0), src(n);
  for (size_t i = 0; i < n; ++i) src[i] = static_cast<uint8_t>((i * 13 + (i >> 12)) | 1);
  auto tmh = MemHandle::map(**ctx, target.data(), n);
  auto smh = MemHandle::map(**ctx, src.data(), n);
  ASSERT_TRUE(tmh.ok() && smh.ok());
  auto rkey = (*ep)->rkey_unpack(*(*tmh)->rkey_pack());
  ASSERT_TRUE(rkey.ok());
  const proto::ProtoRange* range =
      ucp::impl(**ep).protocols().table(proto::Op::Put, true).lookup(n);
  ASSERT_NE(range, nullptr);
  ASSERT_EQ(range->kind, proto::ProtoKind::MultiZcopy);

  mc::test::LogCapture sink;
  RequestParams rp;
  rp.memh = smh->get();
  Result<std::shared_ptr<Request>> r =
      (*ep)->put_nbx(src.data(), n, reinterpret_cast<uintptr_t>(target.data()), **rkey, rp);
  ASSERT_TRUE(r.ok());
  // Mid-transfer: once each lane's first slice has completed (a lane with
  // one slice in flight posts its second only then), cut the second device.
  // Reading the target to tell would race the receiver's writes.
  const auto posted = [&ep](size_t rail) {
    return ucp::impl(**ep).lane_runtime()[ucp::impl(**ep).lanes().rma_bw_lanes[rail]].rma_bytes;
  };
  std::vector<uint64_t> first(2, 0);
  const auto second_posted = [&] {
    for (size_t rail = 0; rail < 2; ++rail) {
      if (first[rail] == 0) first[rail] = posted(rail);
      if (first[rail] == 0 || posted(rail) == first[rail]) return false;
    }
    return true;
  };
  while (!second_posted() && !(*r)->completed()) (*sender)->progress();
  ASSERT_FALSE((*r)->completed()) << "the put finished before the cut";
  EXPECT_GT(mc::test::cut_sockets_on(dev_addr), 0) << "no socket on " << dev << " to cut";
  while (!(*r)->completed()) (*sender)->progress();
  EXPECT_EQ((*r)->status(), Status::Ok);
  auto flush = (*ep)->flush();
  ASSERT_TRUE(flush.ok());
  EXPECT_EQ((*flush)->wait(), Status::Ok);

  EXPECT_TRUE(target == src) << "the put did not deliver every byte";
  size_t failed = 0;
  for (const proto::LaneRuntime& lr : ucp::impl(**ep).lane_runtime()) failed += is_error(lr.status);
  EXPECT_EQ(failed, 1u) << "exactly the cut lane should be marked failed";
  // Said by the request when it saw the failure first, else by the
  // endpoint (the request then re-issues without repeating it).
  EXPECT_TRUE(sink.text().find("re-issuing") != std::string::npos ||
              sink.text().find("its operations go to the other lanes") != std::string::npos)
      << sink.text();
  ep->reset();
}

// A listener on 127.0.0.1 whose accept queue is full: the kernel drops
// further SYNs, so a connect to it neither succeeds nor fails by itself.
struct BlackHole {
  int listener = -1;
  std::vector<int> fillers;
  uint16_t port = 0;
  bool open() {
    listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (bind(listener, reinterpret_cast<sockaddr*>(&a), len) != 0 || listen(listener, 0) != 0 ||
        getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      return false;
    }
    port = ntohs(a.sin_port);
    for (int i = 0; i < 2; ++i) {  // backlog 0 queues one; the rest wait
      const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
      (void)connect(fd, reinterpret_cast<sockaddr*>(&a), len);
      fillers.push_back(fd);
    }
    return true;
  }
  ~BlackHole() {
    for (int fd : fillers) close(fd);
    if (listener >= 0) close(listener);
  }
};

TEST(UcpConnectTimeout, LaneThatCannotConnectFailsByTheKnob) {
  if (!uct::find_component("tcp")) GTEST_SKIP() << "tcp transport is not available";
  BlackHole hole;
  ASSERT_TRUE(hole.open()) << strerror(errno);
  // The transport's own deadline and the request's are far away: only
  // MC_CONNECT_TIMEOUT can end the connection attempt soon.
  Result<ucs::config::Sources> sources =
      ucs::config::Sources::from({{"MC_TLS", "tcp"},
                                  {"MC_NET_DEVICES", "lo"},
                                  {"MC_CONNECT_TIMEOUT", "200ms"},
                                  {"MC_TCP_CONN_TIMEOUT", "1h"}},
                                 {});
  ASSERT_TRUE(sources.ok());
  ContextParams params;
  params.sources = &*sources;
  auto ctx = Context::create(params);
  ASSERT_TRUE(ctx.ok());
  EXPECT_EQ((*ctx)->config().connect_timeout, std::chrono::milliseconds(200));
  auto a = Worker::create(**ctx);
  auto b = Worker::create(**ctx);
  ASSERT_TRUE(a.ok() && b.ok());
  // b's address with its tcp port replaced by the black hole's.
  std::string why;
  auto peer = wireup::address_unpack((*b)->address(), &why);
  ASSERT_TRUE(peer.ok()) << why;
  for (wireup::AddressEntry& e : peer->ifaces) {
    if (e.tl_name == "tcp") e.iface_addr = {uint8_t(hole.port & 0xff), uint8_t(hole.port >> 8)};
  }
  auto ep = (*a)->ep_create(wireup::address_pack(*peer));
  ASSERT_TRUE(ep.ok());
  std::vector<uint8_t> target(4096), src(4096, 7);
  auto tmh = MemHandle::map(**ctx, target.data(), target.size());
  ASSERT_TRUE(tmh.ok());
  auto rkey = (*ep)->rkey_unpack(*(*tmh)->rkey_pack());
  ASSERT_TRUE(rkey.ok());
  RequestParams rp;
  rp.timeout = std::chrono::seconds(60);
  auto r = (*ep)->put_nbx(src.data(), src.size(), reinterpret_cast<uintptr_t>(target.data()),
                          **rkey, rp);
  ASSERT_TRUE(r.ok());
  (void)(*r)->wait();  // a short put may complete locally, queued for the socket
  auto f = (*ep)->flush(rp);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ((*f)->wait(), Status::Timeout);
  ASSERT_EQ(ucp::impl(**ep).lane_runtime().size(), 1u);
  // The transport reports the lane's failure from its own thread; the worker
  // applies it in progress(), which may come after the flush ended.
  for (int i = 0; i < 5000 && ucp::impl(**ep).lane_runtime()[0].status == Status::Ok; ++i) {
    (*a)->progress();
    usleep(1000);
  }
  EXPECT_EQ(ucp::impl(**ep).lane_runtime()[0].status, Status::Timeout)
      << "the lane itself must have failed (not just the request's deadline)";
  ep->reset();
}

}  // namespace
}  // namespace mc::ucp::test

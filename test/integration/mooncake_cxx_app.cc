// SPDX-License-Identifier: Apache-2.0
// A program written against Mooncake's C++ header (<mooncake/transfer_engine.h>,
// -ltransfer_engine) in the style of Mooncake's transfer_engine_bench, with
// the command line of mooncake_c_app.c, run by mooncake_c_api_check.sh:
//   mooncake_cxx_app target <metadata> <name>
//   mooncake_cxx_app initiator <metadata> <name> <segment> <addr> <len> <seed>
#include <mooncake/transfer_engine.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using namespace mooncake;

namespace {

constexpr size_t kLen = 1 << 20;
int failures = 0;

#define CHECK(cond)                                                \
  do {                                                             \
    if (!(cond)) {                                                 \
      std::fprintf(stderr, "FAIL line %d: %s\n", __LINE__, #cond); \
      ++failures;                                                  \
    }                                                              \
  } while (0)

unsigned char pattern(unsigned seed, size_t i) {
  return static_cast<unsigned char>((i * 131u + seed * 7u) ^ (i >> 8));
}

// Polls the batch as one until it leaves WAITING / PENDING.
TransferStatusEnum wait_batch(TransferEngine& e, BatchID b) {
  for (;;) {
    TransferStatus st{};
    Status s = e.getBatchTransferStatus(b, st);
    if (!s.ok()) return Transport::FAILED;
    if (st.s != Transport::WAITING && st.s != Transport::PENDING) return st.s;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

int run_target(const std::string& conn, const std::string& name) {
  TransferEngine engine;  // auto_discover: every transport MC_TLS allows
  if (engine.init(conn, name, "127.0.0.1", 0) != 0) return 2;
  std::vector<unsigned char> buf(kLen, 0);
  if (engine.registerLocalMemory(buf.data(), kLen, "cpu:0") != 0) return 2;
  const std::string seg = conn == "P2PHANDSHAKE" ? engine.getLocalIpAndPort() : name;
  std::printf("READY segment=%s addr=%llu len=%zu\n", seg.c_str(),
              static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(buf.data())), kLen);
  std::fflush(stdout);
  int bad = 0, seen = 0;
  for (bool done = false; !done;) {
    std::vector<TransferMetadata::NotifyDesc> got;
    if (engine.getNotifies(got) != 0) return 2;
    for (const auto& n : got) {
      if (n.name == "written") {
        unsigned seed = 0;
        if (std::sscanf(n.notify_msg.c_str(), "seed=%u", &seed) != 1) ++bad;
        size_t off = 0;
        while (off < kLen && buf[off] == pattern(seed, off)) ++off;
        std::printf("NOTIFY %s seed=%u\n", off == kLen ? "ok" : "bad", seed);
        if (off != kLen) ++bad;
        ++seen;
      } else if (n.name == "done") {
        done = true;
      }
    }
    std::fflush(stdout);
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  engine.unregisterLocalMemory(buf.data());
  return bad == 0 && seen == 1 ? 0 : 1;
}

int run_initiator(const std::string& conn, const std::string& name, const std::string& segment,
                  uint64_t addr, size_t len, unsigned seed) {
  TransferEngine engine(false);
  if (engine.init(conn, name, "127.0.0.1", 0) != 0) return 2;
  CHECK(engine.installTransport("tcp", nullptr) != nullptr);
  CHECK(engine.installTransport("nvlink", nullptr) == nullptr);
  CHECK(engine.getRpcPort() > 0);  // starts the engine, with tcp alone
  CHECK(engine.uninstallTransport("tcp") == -8);
  std::vector<unsigned char> src(len), back(len, 0);
  for (size_t i = 0; i < len; ++i) src[i] = pattern(seed, i);
  CHECK(engine.registerLocalMemoryBatch({{src.data(), len}, {back.data(), len}}, "cpu:0") == 0);
  const SegmentHandle seg = engine.openSegment(segment);
  CHECK(static_cast<int64_t>(seg) >= 0);

  BatchID b = engine.allocateBatchID(4);
  CHECK(b != INVALID_BATCH_ID);
  const std::vector<TransferRequest> write = {{TransferRequest::WRITE, src.data(), seg, addr, len}};
  Status s = engine.submitTransferWithNotify(b, write, {"written", "seed=" + std::to_string(seed)});
  CHECK(s.ok());
  CHECK(wait_batch(engine, b) == Transport::COMPLETED);
  TransferStatus st{};
  CHECK(engine.getTransferStatus(b, 0, st).ok() && st.s == Transport::COMPLETED &&
        st.transferred_bytes == len);
  CHECK(engine.freeBatchID(b).ok());

  b = engine.allocateBatchID(4);
  CHECK(engine.submitTransfer(b, {{TransferRequest::READ, back.data(), seg, addr, len}}).ok());
  CHECK(wait_batch(engine, b) == Transport::COMPLETED);
  CHECK(std::memcmp(src.data(), back.data(), len) == 0);
  // Out of bounds: FAILED, the task and the batch as one, as in Mooncake.
  CHECK(engine.submitTransfer(b, {{TransferRequest::WRITE, src.data(), seg, addr + len - 8, 64}})
            .ok());
  const TransferStatusEnum oob = wait_batch(engine, b);
  std::printf("out-of-bounds write ended %s\n", oob == Transport::INVALID  ? "INVALID"
                                                : oob == Transport::FAILED ? "FAILED"
                                                                           : "otherwise");
  CHECK(oob == Transport::FAILED);
  CHECK(engine.getTransferStatus(b, 1, st).ok() && st.s == Transport::FAILED);
  CHECK(engine.freeBatchID(b).ok());

  // The NIC load: the ended tasks left nothing in flight; their bytes show in
  // some device's bandwidth within the next 10 ms windows.
  std::vector<NicLoadStats> stats;
  double bw = 0;
  for (int i = 0; i < 10000 && bw <= 0; ++i) {
    CHECK(engine.getNicLoadStats(stats).ok() && !stats.empty());
    for (const NicLoadStats& n : stats) {
      CHECK(n.inflight_bytes == 0);
      bw = std::max(bw, n.ewma_bandwidth_bps);
    }
    if (bw <= 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  CHECK(bw > 0);
  CHECK(engine.showLinks(true).find("\"devices\":[{\"name\":") != std::string::npos);
  CHECK(engine.showLinks().find("priority matrix: ") != std::string::npos);
  engine.enableGracefulShutdown();  // logged: mc takes no signal

  // Errors come back as Status with a code and a text.
  Status bad = engine.getTransferStatus(12345, 0, st);
  CHECK(!bad.ok() && bad.code() < 0 && bad.ToString().rfind("error ", 0) == 0);
  CHECK(Status::OK().ToString() == "OK");
  CHECK(!engine.freeBatchID(12345).ok());
  CHECK(engine.removeLocalSegment(name) == -8);
  CHECK(engine.registerLocalMemory(src.data(), 16, "cpu:0", true, false) == -8);
  CHECK(engine.syncSegmentCache() == 0);
  CHECK(engine.sendNotifyByID(999, {"x", "y"}) < 0);

  CHECK(engine.sendNotifyByID(seg, {"done", ""}) == 0);
  CHECK(engine.closeSegment(seg) == 0);
  CHECK(engine.unregisterLocalMemoryBatch({src.data(), back.data()}) == 0);
  CHECK(engine.freeEngine() == 0);
  CHECK(engine.allocateBatchID(1) == INVALID_BATCH_ID);
  std::printf("initiator: %d failures\n", failures);
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "target") == 0) return run_target(argv[2], argv[3]);
  if (argc == 8 && std::strcmp(argv[1], "initiator") == 0) {
    return run_initiator(argv[2], argv[3], argv[4], std::strtoull(argv[5], nullptr, 10),
                         std::strtoull(argv[6], nullptr, 10),
                         static_cast<unsigned>(std::atoi(argv[7])));
  }
  std::fprintf(stderr, "usage: %s target|initiator ...\n", argv[0]);
  return 2;
}

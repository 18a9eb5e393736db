// SPDX-License-Identifier: Apache-2.0
// A Transfer Engine peer for the fault tests (netns_faults.sh,
// netns_metadata_faults.sh, soak.sh). The target serves one buffer with
// canaries on both sides and checks them when it is told to stop; the
// initiator runs rounds (write a pattern, read it back, check every byte)
// and keeps going through failures, re-opening the segment before each
// round, so a restarted target is reconnected (and, with a metadata store
// that is away, the open segment keeps its descriptor).
// --metadata URL (both modes; default P2PHANDSHAKE) names the metadata
// store; with a store, the target's --local NAME is its segment name.
//
//   target:    te_fault_peer --mode target --local IP:PORT [--buffer-size N]
//              [--metadata URL]
//              prints "READY segment=<name> ..."; on SIGTERM / SIGINT checks
//              its canaries and exits 0 when intact
//   initiator: te_fault_peer --mode initiator --local IP --segment NAME [--metadata URL]
//              [--rounds N] [--stop-file PATH] [--block-size N] [--batch-size N]
//              [--random-sizes] [--seed N] [--remote-offset N]
//              prints one line per round:
//                "round R ok bytes=B ms=T" or
//                "round R failed completed=C failed=F timeout=T other=O ms=T"
//              and "corruption: ..." (exit 3) when a byte or a canary is wrong;
//              exits 0 when the last round was ok, 1 otherwise.
#include <getopt.h>
#include <mc/transfer_engine.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr size_t kCanary = 4096;
constexpr uint8_t kCanaryByte = 0xa5;

struct Options {
  std::string mode;
  std::string metadata = "P2PHANDSHAKE";
  std::string local = "127.0.0.1";
  std::string segment;
  std::string stop_file;
  size_t buffer_size = 8 << 20;
  size_t block_size = 256 << 10;
  size_t batch_size = 8;
  size_t remote_offset = 0;  // where in the target's buffer this initiator works
  unsigned seed = 1;
  unsigned rounds = 1;  // 0: until --stop-file exists
  bool random_sizes = false;
};

uint8_t pattern(unsigned seed, size_t i) {
  return static_cast<uint8_t>((seed * 131u + i * 7u + (i >> 9)) & 0xffu);
}

size_t parse_size(const char* text) {
  char* end = nullptr;
  size_t v = std::strtoull(text, &end, 10);
  if (*end == 'k' || *end == 'K') v <<= 10;
  if (*end == 'm' || *end == 'M') v <<= 20;
  return v;
}

uint64_t now_ms() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// A buffer with kCanary bytes of kCanaryByte on each side.
struct Guarded {
  std::vector<uint8_t> all;
  explicit Guarded(size_t n) : all(n + 2 * kCanary, kCanaryByte) {}
  uint8_t* data() { return all.data() + kCanary; }
  size_t size() const { return all.size() - 2 * kCanary; }
  // The offset of the first damaged canary byte, or -1.
  long damaged() const {
    for (size_t i = 0; i < kCanary; ++i) {
      if (all[i] != kCanaryByte) return static_cast<long>(i);
      if (all[all.size() - 1 - i] != kCanaryByte) return static_cast<long>(all.size() - 1 - i);
    }
    return -1;
  }
};

int run_target(mc::TransferEngine& engine, const Options& opt) {
  Guarded buf(opt.buffer_size);
  std::memset(buf.data(), 0, buf.size());
  if (engine.registerLocalMemory(buf.data(), buf.size(), "*") != 0) return 1;
  std::printf("READY segment=%s addr=0x%" PRIxPTR " length=%zu\n",
              engine.getLocalIpAndPort().c_str(), reinterpret_cast<uintptr_t>(buf.data()),
              buf.size());
  std::fflush(stdout);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  int sig = 0;
  sigwait(&set, &sig);
  const long bad = buf.damaged();
  if (bad >= 0) {
    std::printf("corruption: target canary byte %ld overwritten\n", bad);
    return 3;
  }
  std::printf("target: canaries intact\n");
  return engine.unregisterLocalMemory(buf.data()) == 0 ? 0 : 1;
}

struct RoundResult {
  size_t completed = 0, failed = 0, timeout = 0, other = 0;
  bool ok() const { return failed + timeout + other == 0; }
};

// Runs [0, length) in blocks of `block`, batch_size blocks per batch.
void transfer(mc::TransferEngine& engine, mc::SegmentHandle seg, uint64_t remote, uint8_t* local,
              size_t length, size_t block, const Options& opt, mc::TransferRequest::OpCode op,
              RoundResult& r) {
  size_t offset = 0;
  while (offset < length) {
    mc::BatchID batch = engine.allocateBatchID(opt.batch_size);
    if (batch == mc::kInvalidBatchID) {
      r.other++;
      return;
    }
    std::vector<mc::TransferRequest> reqs;
    for (size_t i = 0; i < opt.batch_size && offset < length; ++i) {
      const size_t len = std::min(block, length - offset);
      reqs.push_back({op, local + offset, seg, remote + offset, len});
      offset += len;
    }
    if (engine.submitTransfer(batch, reqs) != 0) {
      r.other += reqs.size();
      return;
    }
    for (size_t t = 0; t < reqs.size(); ++t) {
      mc::TransferStatus st{};
      for (;;) {
        if (engine.getTransferStatus(batch, t, st) != 0) break;
        if (st.s != mc::WAITING && st.s != mc::PENDING) break;
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
      if (st.s == mc::COMPLETED)
        r.completed++;
      else if (st.s == mc::FAILED)
        r.failed++;
      else if (st.s == mc::TIMEOUT)
        r.timeout++;
      else
        r.other++;
    }
    engine.freeBatchID(batch);
    if (!r.ok()) return;  // this round is lost; the next one starts afresh
  }
}

int run_initiator(mc::TransferEngine& engine, const Options& opt) {
  Guarded local(opt.buffer_size);
  if (engine.registerLocalMemory(local.data(), local.size(), "*") != 0) return 1;
  std::mt19937_64 rng(opt.seed);
  bool last_ok = false;
  for (unsigned round = 1; opt.rounds == 0 || round <= opt.rounds; ++round) {
    if (!opt.stop_file.empty() && access(opt.stop_file.c_str(), F_OK) == 0) break;
    const uint64_t t0 = now_ms();
    RoundResult r;
    // Re-opening refreshes the descriptor: a restarted target (another
    // generation) gets a new endpoint.
    const mc::SegmentHandle seg = engine.openSegment(opt.segment);
    std::vector<mc::SegmentBufferInfo> bufs;
    if (seg < 0 || engine.getSegmentBuffers(seg, bufs) != 0 || bufs.empty()) {
      std::printf("round %u failed completed=0 failed=0 timeout=0 other=1 ms=%" PRIu64
                  " (segment not open)\n",
                  round, now_ms() - t0);
      std::fflush(stdout);
      last_ok = false;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      continue;
    }
    if (bufs[0].length <= opt.remote_offset) {
      std::fprintf(stderr, "--remote-offset %zu is past the target's buffer\n", opt.remote_offset);
      return 2;
    }
    const uint64_t remote = bufs[0].addr + opt.remote_offset;
    size_t length = std::min<size_t>(bufs[0].length - opt.remote_offset, local.size());
    size_t block = opt.block_size;
    if (opt.random_sizes) {
      length = 1 + rng() % length;
      block = 1 + rng() % opt.block_size;
    }
    const unsigned wseed = static_cast<unsigned>(rng());
    for (size_t i = 0; i < length; ++i) local.data()[i] = pattern(wseed, i);
    transfer(engine, seg, remote, local.data(), length, block, opt, mc::TransferRequest::WRITE, r);
    if (r.ok()) {
      std::memset(local.data(), 0, length);
      transfer(engine, seg, remote, local.data(), length, block, opt, mc::TransferRequest::READ, r);
    }
    const long bad = local.damaged();
    if (bad >= 0) {
      std::printf("corruption: initiator canary byte %ld overwritten\n", bad);
      return 3;
    }
    if (r.ok()) {
      for (size_t i = 0; i < length; ++i) {
        if (local.data()[i] != pattern(wseed, i)) {
          std::printf("corruption: round %u byte %zu is %u, expected %u\n", round, i,
                      local.data()[i], pattern(wseed, i));
          return 3;
        }
      }
      std::printf("round %u ok bytes=%zu ms=%" PRIu64 "\n", round, 2 * length, now_ms() - t0);
    } else {
      std::printf("round %u failed completed=%zu failed=%zu timeout=%zu other=%zu ms=%" PRIu64 "\n",
                  round, r.completed, r.failed, r.timeout, r.other, now_ms() - t0);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    std::fflush(stdout);
    last_ok = r.ok();
  }
  engine.unregisterLocalMemory(local.data());
  return last_ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  static const option longopts[] = {{"mode", required_argument, nullptr, 'm'},
                                    {"metadata", required_argument, nullptr, 'M'},
                                    {"local", required_argument, nullptr, 'l'},
                                    {"segment", required_argument, nullptr, 's'},
                                    {"stop-file", required_argument, nullptr, 'f'},
                                    {"buffer-size", required_argument, nullptr, 'B'},
                                    {"block-size", required_argument, nullptr, 'b'},
                                    {"batch-size", required_argument, nullptr, 'n'},
                                    {"seed", required_argument, nullptr, 'S'},
                                    {"rounds", required_argument, nullptr, 'r'},
                                    {"random-sizes", no_argument, nullptr, 'R'},
                                    {"remote-offset", required_argument, nullptr, 'o'},
                                    {nullptr, 0, nullptr, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "", longopts, nullptr)) != -1) {
    switch (c) {
      case 'm': opt.mode = optarg; break;
      case 'M': opt.metadata = optarg; break;
      case 'l': opt.local = optarg; break;
      case 's': opt.segment = optarg; break;
      case 'f': opt.stop_file = optarg; break;
      case 'B': opt.buffer_size = parse_size(optarg); break;
      case 'b': opt.block_size = parse_size(optarg); break;
      case 'n': opt.batch_size = parse_size(optarg); break;
      case 'S': opt.seed = static_cast<unsigned>(std::atoi(optarg)); break;
      case 'r': opt.rounds = static_cast<unsigned>(std::atoi(optarg)); break;
      case 'R': opt.random_sizes = true; break;
      case 'o': opt.remote_offset = parse_size(optarg); break;
      default: return 2;
    }
  }
  const bool target = opt.mode == "target";
  if ((!target && opt.mode != "initiator") || (!target && opt.segment.empty()) ||
      opt.buffer_size == 0 || opt.block_size == 0 || opt.batch_size == 0) {
    std::fprintf(stderr, "usage: see the top of te_fault_peer.cc\n");
    return 2;
  }
  if (target) {
    // Blocked before the engine's threads start, so they inherit the mask.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
  }
  mc::TransferEngine engine;
  if (engine.init(opt.metadata, opt.local) != 0) {
    std::fprintf(stderr, "init(%s, %s) failed\n", opt.metadata.c_str(), opt.local.c_str());
    return 1;
  }
  return target ? run_target(engine, opt) : run_initiator(engine, opt);
}

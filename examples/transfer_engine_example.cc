// SPDX-License-Identifier: Apache-2.0
// The Transfer Engine between two processes, in the manner of Mooncake's
// transfer_engine_bench. The target registers a buffer filled with a known
// pattern and serves it; the initiator opens the target's segment, lists its
// buffers, READs every block and checks the pattern, WRITEs its own pattern
// and READs it back, all in batches.
//
//   target:     transfer_engine_example --mode target [--metadata P2PHANDSHAKE]
//                   [--local 127.0.0.1] [--buffer-size 4m] [--seed 7]
//               prints "READY segment=<name> addr=0x<addr> length=<bytes>" and
//               serves until SIGINT / SIGTERM (or --duration seconds); with
//               --notifies N, until it took N notifications whose notify_msg
//               is "seed=<S>", checking its whole buffer against seed S the
//               moment each is taken ("NOTIFY sender=<segment> name=<bytes>
//               memory=ok", or "memory=bad at <offset>")
//   initiator:  transfer_engine_example --mode initiator --segment <name>
//                   [--metadata ...] [--local 127.0.0.1] [--block-size 64k]
//                   [--batch-size 16] [--seed 7] [--iterations 1]
// Transports come from MC_TLS; knobs from the MC_* environment.
#include <getopt.h>
#include <mc/transfer_engine.h>
#include <signal.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Options {
  std::string mode;
  std::string metadata = "P2PHANDSHAKE";
  std::string local = "127.0.0.1";
  std::string segment;
  std::string location = "*";  // of the registered buffer: cpu:N, cuda:N, * (detect)
  size_t buffer_size = 4 << 20;
  size_t block_size = 64 << 10;
  size_t batch_size = 16;
  unsigned seed = 7;
  unsigned iterations = 1;
  unsigned duration = 0;  // 0: until a signal
  unsigned notifies = 0;  // target: take this many notifications, then end
};

uint8_t pattern(unsigned seed, size_t i) {
  return static_cast<uint8_t>((seed * 131u + i * 7u + (i >> 8)) & 0xffu);
}

size_t parse_size(const char* text) {
  char* end = nullptr;
  size_t v = std::strtoull(text, &end, 10);
  if (*end == 'k' || *end == 'K') v <<= 10;
  if (*end == 'm' || *end == 'M') v <<= 20;
  if (*end == 'g' || *end == 'G') v <<= 30;
  return v;
}

int usage(const char* prog) {
  std::fprintf(stderr,
               "usage: %s --mode target|initiator [--metadata CONN] [--local HOST[:PORT]]\n"
               "          [--segment NAME] [--buffer-size N] [--block-size N] [--batch-size N]\n"
               "          [--seed N] [--iterations N] [--duration SECONDS] [--notifies N]\n"
               "          [--location cpu:N|cuda:N|*]  (of the registered buffer; * detects)\n",
               prog);
  return 2;
}

// Waits until every task of the batch has ended; returns how many did not
// end COMPLETED.
size_t wait_batch(mc::TransferEngine& engine, mc::BatchID batch, size_t tasks) {
  size_t bad = 0;
  for (size_t t = 0; t < tasks; ++t) {
    mc::TransferStatus st{};
    for (;;) {
      if (engine.getTransferStatus(batch, t, st) != 0) return tasks;
      if (st.s != mc::WAITING && st.s != mc::PENDING) break;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    if (st.s != mc::COMPLETED) {
      std::fprintf(stderr, "task %zu ended %s\n", t, mc::task_status_name(st.s));
      ++bad;
    }
  }
  return bad;
}

// Moves [0, length) of the remote buffer in blocks, batch_size blocks per
// batch, between `local` and the remote; 0 when every task completed.
int transfer_all(mc::TransferEngine& engine, mc::SegmentHandle seg, uint64_t remote, uint8_t* local,
                 size_t length, const Options& opt, mc::TransferRequest::OpCode op) {
  size_t offset = 0;
  while (offset < length) {
    mc::BatchID batch = engine.allocateBatchID(opt.batch_size);
    if (batch == mc::kInvalidBatchID) return 1;
    std::vector<mc::TransferRequest> reqs;
    for (size_t i = 0; i < opt.batch_size && offset < length; ++i) {
      const size_t len = std::min(opt.block_size, length - offset);
      reqs.push_back({op, local + offset, seg, remote + offset, len});
      offset += len;
    }
    if (engine.submitTransfer(batch, reqs) != 0) return 1;
    if (wait_batch(engine, batch, reqs.size()) != 0) return 1;
    if (engine.freeBatchID(batch) != 0) return 1;
  }
  return 0;
}

// Takes `count` notifications, each naming the seed the whole buffer must
// hold by then; 0 when it did every time.
int take_notifies(mc::TransferEngine& engine, const std::vector<uint8_t>& buf, unsigned count) {
  int rc = 0;
  for (unsigned taken = 0; taken < count;) {
    std::vector<mc::ReceivedNotify> got;
    if (engine.getNotifies(got) != 0) return 1;
    for (const mc::ReceivedNotify& n : got) {
      // Checked first: this is the moment the notification was taken.
      const unsigned seed = static_cast<unsigned>(std::atoi(n.notify.notify_msg.c_str() + 5));
      size_t bad = buf.size();
      for (size_t i = 0; i < buf.size() && bad == buf.size(); ++i) {
        if (buf[i] != pattern(seed, i)) bad = i;
      }
      if (bad == buf.size()) {
        std::printf("NOTIFY sender=%s name=%zu memory=ok\n", n.sender.c_str(),
                    n.notify.name.size());
      } else {
        std::printf("NOTIFY sender=%s name=%zu memory=bad at %zu\n", n.sender.c_str(),
                    n.notify.name.size(), bad);
        rc = 1;
      }
      std::fflush(stdout);
      ++taken;
    }
    if (got.empty()) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return rc;
}

int run_target(mc::TransferEngine& engine, const Options& opt) {
  std::vector<uint8_t> buf(opt.buffer_size);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = pattern(opt.seed, i);
  if (engine.registerLocalMemory(buf.data(), buf.size(), opt.location) != 0) return 1;
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  const std::string name = opt.metadata == "P2PHANDSHAKE" ? engine.getLocalIpAndPort() : opt.local;
  std::printf("READY segment=%s addr=0x%" PRIxPTR " length=%zu\n", name.c_str(),
              reinterpret_cast<uintptr_t>(buf.data()), buf.size());
  std::fflush(stdout);
  if (opt.notifies > 0) {
    const int rc = take_notifies(engine, buf, opt.notifies);
    return engine.unregisterLocalMemory(buf.data()) == 0 ? rc : 1;
  }
  if (opt.duration > 0) {
    timespec ts{static_cast<time_t>(opt.duration), 0};
    sigtimedwait(&set, nullptr, &ts);
  } else {
    int sig = 0;
    sigwait(&set, &sig);
  }
  return engine.unregisterLocalMemory(buf.data()) == 0 ? 0 : 1;
}

int run_initiator(mc::TransferEngine& engine, const Options& opt) {
  const mc::SegmentHandle seg = engine.openSegment(opt.segment);
  if (seg < 0) return 1;
  std::vector<mc::SegmentBufferInfo> bufs;
  if (engine.getSegmentBuffers(seg, bufs) != 0 || bufs.empty()) {
    std::fprintf(stderr, "segment %s has no buffers\n", opt.segment.c_str());
    return 1;
  }
  for (const auto& b : bufs) {
    std::printf("segment %s: buffer at 0x%" PRIx64 ", %" PRIu64 " bytes, %s\n", opt.segment.c_str(),
                b.addr, b.length, b.location.c_str());
  }
  const size_t length = bufs[0].length;
  std::vector<uint8_t> local(length);
  if (engine.registerLocalMemory(local.data(), local.size(), opt.location) != 0) return 1;
  for (unsigned it = 0; it < opt.iterations; ++it) {
    std::memset(local.data(), 0, local.size());
    if (transfer_all(engine, seg, bufs[0].addr, local.data(), length, opt,
                     mc::TransferRequest::READ)) {
      return 1;
    }
    for (size_t i = 0; i < length; ++i) {
      if (local[i] != pattern(opt.seed, i)) {
        std::fprintf(stderr, "read: byte %zu is %u, expected %u\n", i, local[i],
                     pattern(opt.seed, i));
        return 1;
      }
    }
    const unsigned wseed = opt.seed + 1 + it;
    for (size_t i = 0; i < length; ++i) local[i] = pattern(wseed, i);
    if (transfer_all(engine, seg, bufs[0].addr, local.data(), length, opt,
                     mc::TransferRequest::WRITE)) {
      return 1;
    }
    std::memset(local.data(), 0, local.size());
    if (transfer_all(engine, seg, bufs[0].addr, local.data(), length, opt,
                     mc::TransferRequest::READ)) {
      return 1;
    }
    for (size_t i = 0; i < length; ++i) {
      if (local[i] != pattern(wseed, i)) {
        std::fprintf(stderr, "write/read back: byte %zu is %u, expected %u\n", i, local[i],
                     pattern(wseed, i));
        return 1;
      }
    }
    // Leave the target as we found it, so the example can be run again.
    for (size_t i = 0; i < length; ++i) local[i] = pattern(opt.seed, i);
    if (transfer_all(engine, seg, bufs[0].addr, local.data(), length, opt,
                     mc::TransferRequest::WRITE)) {
      return 1;
    }
  }
  std::printf("initiator: %u x (read, write, read back) of %zu bytes verified\n", opt.iterations,
              length);
  // Which lanes the NIC priority matrices chose for this buffer and the
  // target's, and what each carried.
  std::vector<mc::SegmentPathInfo> paths;
  if (engine.getSegmentPaths(seg, paths, local.data(), bufs[0].addr) == 0) {
    for (const auto& p : paths) {
      std::printf("path %s -> %s: rank %d, %s%s, %" PRIu64 " bytes\n", p.local_device.c_str(),
                  p.remote_device.c_str(), p.rank, p.carries ? "carries" : "stand-by",
                  p.healthy ? "" : ", failed", p.bytes);
    }
  }
  return engine.unregisterLocalMemory(local.data()) == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  static const option longopts[] = {{"mode", required_argument, nullptr, 'm'},
                                    {"metadata", required_argument, nullptr, 'M'},
                                    {"local", required_argument, nullptr, 'l'},
                                    {"segment", required_argument, nullptr, 's'},
                                    {"buffer-size", required_argument, nullptr, 'B'},
                                    {"block-size", required_argument, nullptr, 'b'},
                                    {"batch-size", required_argument, nullptr, 'n'},
                                    {"seed", required_argument, nullptr, 'S'},
                                    {"iterations", required_argument, nullptr, 'i'},
                                    {"duration", required_argument, nullptr, 'd'},
                                    {"location", required_argument, nullptr, 'L'},
                                    {"notifies", required_argument, nullptr, 'N'},
                                    {nullptr, 0, nullptr, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "", longopts, nullptr)) != -1) {
    switch (c) {
      case 'm': opt.mode = optarg; break;
      case 'M': opt.metadata = optarg; break;
      case 'l': opt.local = optarg; break;
      case 's': opt.segment = optarg; break;
      case 'B': opt.buffer_size = parse_size(optarg); break;
      case 'b': opt.block_size = parse_size(optarg); break;
      case 'n': opt.batch_size = parse_size(optarg); break;
      case 'S': opt.seed = static_cast<unsigned>(std::atoi(optarg)); break;
      case 'i': opt.iterations = static_cast<unsigned>(std::atoi(optarg)); break;
      case 'd': opt.duration = static_cast<unsigned>(std::atoi(optarg)); break;
      case 'L': opt.location = optarg; break;
      case 'N': opt.notifies = static_cast<unsigned>(std::atoi(optarg)); break;
      default: return usage(argv[0]);
    }
  }
  const bool target = opt.mode == "target";
  if ((!target && opt.mode != "initiator") || (!target && opt.segment.empty()) ||
      opt.buffer_size == 0 || opt.block_size == 0 || opt.batch_size == 0) {
    return usage(argv[0]);
  }
  if (target) {
    // Blocked before the engine starts its threads, so that they inherit
    // the mask and the signal reaches sigwait() in run_target().
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
  const int rc = target ? run_target(engine, opt) : run_initiator(engine, opt);
  std::printf("%s: %s\n", opt.mode.c_str(), rc == 0 ? "PASS" : "FAIL");
  return rc;
}

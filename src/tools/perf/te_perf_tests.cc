// SPDX-License-Identifier: Apache-2.0
// te_write / te_read: Mooncake's transfer_engine_bench over mc::TransferEngine,
// with its option names and defaults (a P2PHANDSHAKE metadata default, since
// its own default is a site-specific etcd address), plus a data check.
#include "tools/perf/te_perf_tests.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "mc/transfer_engine.h"
#include "tools/perf/perf_buffer.h"
#include "tools/perf/perf_measure.h"
#include "tools/perf/perf_params.h"
#include "tools/perf/te_perf_options.h"
#include "tools/perf/te_perf_setup.h"
#include "ucs/config/parser.h"
#include "ucs/config/sources.h"

namespace mc::perf {

namespace {

constexpr int kExitFailed = 1;

std::atomic<bool> g_stop{false};

void on_signal(int) {
  g_stop.store(true);
}

// The MC_* settings the flags stand for, in this process's environment
// before the engine reads it (a flag wins over the environment, said on
// stderr), and the notes on flags mc has no meaning for, once each.
void apply_flags(const TeOptions& o) {
  const Result<ucs::config::Sources> sources = ucs::config::Sources::from_process();
  for (const auto& [var, value] : o.env) {
    const std::optional<ucs::config::SourceValue> old =
        sources.ok() ? sources->lookup(var) : std::nullopt;
    if (old && old->value != value) {
      std::fprintf(stderr, "mc_perftest: %s=%s from the command line replaces %s=%s (%s)\n",
                   var.c_str(), value.c_str(), var.c_str(), old->value.c_str(),
                   old->origin.c_str());
    }
    setenv(var.c_str(), value.c_str(), 1);
  }
  std::vector<std::string> said;
  for (const std::string& note : o.notes) {
    if (std::find(said.begin(), said.end(), note) != said.end()) continue;
    said.push_back(note);
    std::fprintf(stderr, "mc_perftest: %s\n", note.c_str());
  }
}

// What carried the transfers: the lanes of the endpoint to the target, as
// getSegmentPaths reports them for the buffers of the test.
std::string transport_description(TransferEngine& engine, SegmentHandle seg, const void* local,
                                  uint64_t remote) {
  std::vector<SegmentPathInfo> paths;
  if (engine.getSegmentPaths(seg, paths, local, remote) != 0 || paths.empty()) {
    return "unknown (no path reported)";
  }
  std::string out;
  for (const SegmentPathInfo& p : paths) {
    out += (out.empty() ? "" : ", ") + p.local_device + " -> " + p.remote_device + " (" +
           (p.carries ? "carries" : "stand-by") + ", " + std::to_string(p.bytes) + " B)";
  }
  return out;
}

// An anonymous mapping: pages cost nothing until touched.
// With `init` (--init_mem), every byte is 0xCC, as Mooncake fills its VRAM.
// A test's buffer: --alloc's pages, 0xCC in every byte with --init_mem,
// else untouched.
AlignedBuffer make_buffer(size_t length, const TeOptions& o) {
  return AlignedBuffer(length, o.alloc, o.init_mem ? std::optional<uint8_t>(0xCC) : std::nullopt);
}

bool init_engine(TransferEngine& engine, const TeOptions& o) {
  if (engine.init(o.metadata_server, o.local_server_name) != 0) {
    std::fprintf(stderr,
                 "mc_perftest: the transfer engine did not start (metadata '%s', local '%s')\n",
                 o.metadata_server.c_str(), o.local_server_name.c_str());
    return false;
  }
  return true;
}

int run_target(const TeOptions& o) {
  TransferEngine engine;
  if (!init_engine(engine, o)) return kExitFailed;
  AlignedBuffer buf = make_buffer(o.buffer_size, o);
  if (!buf.data() || engine.registerLocalMemory(buf.data(), buf.length(), "cpu:0") != 0) {
    std::fprintf(stderr, "mc_perftest: cannot allocate and register %zu B\n", buf.length());
    return kExitFailed;
  }
  const bool p2p = o.metadata_server == "P2PHANDSHAKE";
  std::printf(
      "target: segment %s, buffer %zu B at 0x%llx (%s); give --segment_id=%s to the initiator\n",
      (p2p ? engine.getLocalIpAndPort() : o.local_server_name).c_str(), buf.length(),
      static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(buf.data())),
      buf.huge() ? "huge-page advised" : "base pages",
      (p2p ? engine.getLocalIpAndPort() : o.local_server_name).c_str());
  std::fflush(stdout);
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  const auto end = std::chrono::steady_clock::now() +
                   std::chrono::seconds(o.duration_given ? o.duration + kTeTargetSlackS : 0);
  // Notifications (an initiator's --notify) are taken as they come, so that
  // its queue never fills; their count is said at the end. While none come
  // the look-ups slow down to one each 16 ms: a thread that woke every
  // millisecond cost the two that move the data a context switch each time
  // on a machine with two CPUs (the UCT server's main thread sleeps).
  // The look after the stop takes what arrived during the last nap.
  size_t notified = 0;
  int nap_ms = 1;
  for (;;) {
    std::vector<NotifyDesc> got;
    if (engine.getNotifies(got) == 0) notified += got.size();
    if (g_stop.load() || (o.duration_given && std::chrono::steady_clock::now() >= end)) break;
    nap_ms = got.empty() ? std::min(nap_ms == 0 ? 1 : nap_ms * 2, 16) : 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(nap_ms));
  }
  if (notified > 0) std::printf("target: %zu notifications taken\n", notified);
  std::printf("target: done\n");
  return engine.unregisterLocalMemory(buf.data()) == 0 ? 0 : kExitFailed;
}

// Submits one batch and waits for every task of it (as transfer_engine_bench:
// polling each task in order). False, after saying why, when a task failed.
// While tasks end, polling only yields; once none has ended for 10 ms (a
// stopped or very slow peer) it sleeps a sixteenth of that quiet time, at
// most 1 ms, so waiting for a deadline costs next to no CPU.
bool run_batch(TransferEngine& engine, const std::vector<TransferRequest>& reqs) {
  using Clock = std::chrono::steady_clock;
  const BatchID id = engine.allocateBatchID(reqs.size());
  if (id == kInvalidBatchID || engine.submitTransfer(id, reqs) != 0) return false;
  bool ok = true;
  Clock::time_point last_end = Clock::now();
  for (size_t task = 0; task < reqs.size(); ++task) {
    TransferStatus st{};
    for (;;) {
      if (engine.getTransferStatus(id, task, st) != 0) return false;
      if (st.s != WAITING && st.s != PENDING) break;
      const Clock::duration quiet = Clock::now() - last_end;
      if (quiet < std::chrono::milliseconds(10)) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(
            std::min<Clock::duration>(quiet / 16, std::chrono::milliseconds(1)));
      }
    }
    last_end = Clock::now();
    if (st.s != COMPLETED) {
      std::fprintf(stderr, "mc_perftest: task %zu of a batch ended %s\n", task,
                   task_status_name(st.s));
      ok = false;
    }
  }
  return engine.freeBatchID(id) == 0 && ok;
}

// The requests of thread `t`: the slots of transfer_engine_bench, block i of
// the batch at (i x threads + t) x block in both buffers, to target i mod N.
std::vector<TransferRequest> thread_requests(const TeOptions& o, TransferRequest::OpCode op,
                                             uint8_t* local, const std::vector<Remote>& targets,
                                             uint64_t t) {
  std::vector<TransferRequest> reqs;
  for (uint64_t i = 0; i < o.batch_size; ++i) {
    const uint64_t off = o.block_size * (i * o.threads + t);
    const Remote& r = targets[i % targets.size()];
    reqs.push_back({op, local + off, r.seg, r.addr + off, o.block_size});
  }
  return reqs;
}

// Writes a fresh pattern into the first batch x block bytes of the slots
// (block i to target i mod N), reads it back into a cleared buffer and
// compares.
bool check_data(TransferEngine& engine, const TeOptions& o, uint8_t* local, uint8_t* check,
                const std::vector<Remote>& targets, std::string* result) {
  const size_t len = o.batch_size * o.block_size;
  const uint64_t seed = (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
  pattern_fill(local, len, seed);
  std::memset(check, 0, len);
  std::vector<TransferRequest> w, r;
  for (uint64_t i = 0; i < o.batch_size; ++i) {
    const uint64_t off = i * o.block_size;
    const Remote& t = targets[i % targets.size()];
    w.push_back({TransferRequest::WRITE, local + off, t.seg, t.addr + off, o.block_size});
    r.push_back({TransferRequest::READ, check + off, t.seg, t.addr + off, o.block_size});
  }
  if (!run_batch(engine, w) || !run_batch(engine, r)) {
    *result = "failed (the check's batches did not complete)";
    return false;
  }
  if (const ptrdiff_t bad = pattern_check(check, len, seed); bad >= 0) {
    *result = "failed (byte " + std::to_string(bad) + " read back differs from what was written)";
    return false;
  }
  *result = "passed (" + std::to_string(o.batch_size) + " blocks written, read back, compared)";
  return true;
}

// Mooncake's result line first (its unit and precision), then mc's summary
// and its one-line result. `huge`: the local buffer was huge-page advised.
void report(const TeOptions& o, double seconds, uint64_t batches, double warm_ms, bool huge,
            const std::string& transport, const std::string& check) {
  const double requests = double(batches) * double(o.batch_size);
  const double bytes = requests * double(o.block_size);
  const double mbps = bytes / seconds / 1048576.0;
  std::printf("Test completed: duration %.2f, batch count %llu, throughput %.*f %s/s\n", seconds,
              static_cast<unsigned long long>(batches), static_cast<int>(o.report_precision),
              bytes / seconds / report_unit_bytes(o.report_unit), o.report_unit.c_str());
  std::printf("%s: %llu threads, batch_size %llu, block_size %llu B, duration %.2f s\n",
              o.test.c_str(), static_cast<unsigned long long>(o.threads),
              static_cast<unsigned long long>(o.batch_size),
              static_cast<unsigned long long>(o.block_size), seconds);
  std::printf("  batches      %llu (%.1f per second)\n", static_cast<unsigned long long>(batches),
              double(batches) / seconds);
  std::printf("  throughput   %.2f MB/s (MB = 2^20 B; %.3f GB/s with GB = 10^9 B)\n", mbps,
              bytes / seconds / 1e9);
  std::printf("  requests     %.0f per second\n", requests / seconds);
  std::printf("  warm-up      %llu batch%s per thread before the clock, %.1f ms\n",
              static_cast<unsigned long long>(o.warmup_batches), o.warmup_batches == 1 ? "" : "es",
              warm_ms);
  std::printf("  memory       --alloc=%s, %s\n", alloc_name(o.alloc),
              huge ? "huge-page advised" : "base pages");
  std::printf("  transport    %s\n", transport.c_str());
  std::printf("  data check   %s\n", check.c_str());
  std::printf(
      "result test=%s block=%llu batch=%llu threads=%llu seconds=%.3f batches=%llu "
      "bw_MBps=%.2f req_per_s=%.0f check=%s warmup_ms=%.1f alloc=%s huge=%d\n",
      o.test.c_str(), static_cast<unsigned long long>(o.block_size),
      static_cast<unsigned long long>(o.batch_size), static_cast<unsigned long long>(o.threads),
      seconds, static_cast<unsigned long long>(batches), mbps, requests / seconds,
      check.rfind("passed", 0) == 0 ? "passed" : "failed", warm_ms, alloc_name(o.alloc),
      huge ? 1 : 0);
}

std::string latency_text(std::vector<double> v) {
  if (v.empty()) return "no samples";
  const auto [min, max] = std::minmax_element(v.begin(), v.end());
  const double lo = *min, hi = *max;
  char buf[160];
  std::snprintf(buf, sizeof(buf), "p50 %.1f us (min %.1f, p10 %.1f, p90 %.1f, p99 %.1f, max %.1f)",
                nearest_rank(v, 50), lo, nearest_rank(v, 10), nearest_rank(v, 90),
                nearest_rank(v, 99), hi);
  return buf;
}

// --notify: pairs of one plain batch (submit until every task completed)
// and the same batch with a notification (submit until the target took it:
// getBatchNotifyStatus 0), alternating so both see the same conditions;
// the extra latency of each pair is the notified one minus the plain one.
bool measure_notify(TransferEngine& engine, const TeOptions& o,
                    const std::vector<TransferRequest>& reqs) {
  using Clock = std::chrono::steady_clock;
  std::vector<double> plain, notified, extra;
  for (uint64_t round = 0; round < o.notify_rounds; ++round) {
    auto t0 = Clock::now();
    if (!run_batch(engine, reqs)) return false;
    const double p = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    t0 = Clock::now();
    const BatchID id = engine.allocateBatchID(reqs.size());
    if (id == kInvalidBatchID ||
        engine.submitTransferWithNotify(id, reqs, {"mc_perftest", std::to_string(round)}) != 0) {
      std::fprintf(stderr, "mc_perftest: --notify: a notified batch was refused\n");
      return false;
    }
    int st = 1;
    while ((st = engine.getBatchNotifyStatus(id)) == 1) std::this_thread::yield();
    const double n = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    if (st != 0 || engine.freeBatchID(id) != 0) {
      std::fprintf(stderr, "mc_perftest: --notify: notification %llu not taken (%d)\n",
                   static_cast<unsigned long long>(round), st);
      return false;
    }
    plain.push_back(p);
    notified.push_back(n);
    extra.push_back(n - p);
  }
  std::printf("  notify       %llu pairs of one batch (%llu x %llu B)\n",
              static_cast<unsigned long long>(o.notify_rounds),
              static_cast<unsigned long long>(o.batch_size),
              static_cast<unsigned long long>(o.block_size));
  std::printf("    plain      %s\n", latency_text(plain).c_str());
  std::printf("    notified   %s\n", latency_text(notified).c_str());
  std::printf("    extra      %s\n", latency_text(extra).c_str());
  std::printf(
      "result test=notify block=%llu batch=%llu rounds=%llu plain_p50_us=%.1f "
      "notified_p50_us=%.1f extra_p50_us=%.1f extra_p90_us=%.1f\n",
      static_cast<unsigned long long>(o.block_size), static_cast<unsigned long long>(o.batch_size),
      static_cast<unsigned long long>(o.notify_rounds), nearest_rank(plain, 50),
      nearest_rank(notified, 50), nearest_rank(extra, 50), nearest_rank(extra, 90));
  return true;
}

int run_initiator(const TeOptions& o) {
  const size_t needed = o.batch_size * o.threads * o.block_size;
  TransferEngine engine;
  if (!init_engine(engine, o)) return kExitFailed;
  AlignedBuffer local = make_buffer(needed, o), check = make_buffer(o.batch_size * o.block_size, o);
  if (!local.data() || !check.data() ||
      engine.registerLocalMemory(local.data(), local.length(), "cpu:0") != 0 ||
      engine.registerLocalMemory(check.data(), check.length(), "cpu:0", false) != 0) {
    std::fprintf(stderr, "mc_perftest: cannot allocate and register %zu B\n", needed);
    return kExitFailed;
  }
  pattern_fill(local.data(), needed, 1);
  const auto op = o.test == "te_write" ? TransferRequest::WRITE : TransferRequest::READ;
  std::vector<Remote> targets;
  Setup setup;
  if (!open_targets(engine, o, needed, op, local.data(), &targets, &setup)) return kExitFailed;
  std::vector<std::vector<TransferRequest>> reqs;  // each thread's batch
  for (uint64_t t = 0; t < o.threads; ++t)
    reqs.push_back(thread_requests(o, op, local.data(), targets, t));
  // The warm-up, before the clock: each thread's batches in turn, from
  // this thread (what they touch is what the run touches).
  const auto warm_start = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < o.warmup_batches; ++i) {
    for (const std::vector<TransferRequest>& batch : reqs) {
      if (!run_batch(engine, batch)) {
        std::fprintf(stderr, "mc_perftest: %s failed: a transfer of the warm-up did not complete\n",
                     o.test.c_str());
        return kExitFailed;
      }
    }
  }
  const double warm_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - warm_start)
          .count();
  std::atomic<uint64_t> batches{0};
  std::atomic<bool> failed{false};
  std::vector<std::thread> workers;
  const auto start = std::chrono::steady_clock::now();
  for (uint64_t t = 0; t < o.threads; ++t) {
    workers.emplace_back([&, t] {
      uint64_t n = 0;
      while (!g_stop.load(std::memory_order_relaxed) && !failed.load()) {
        if (!run_batch(engine, reqs[t])) failed.store(true);
        ++n;
      }
      batches.fetch_add(n);
    });
  }
  const auto end = start + std::chrono::seconds(o.duration);
  while (!g_stop.load() && !failed.load() && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  g_stop.store(true);
  for (std::thread& w : workers) w.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (failed.load()) {
    std::fprintf(stderr, "mc_perftest: %s failed: a transfer did not complete\n", o.test.c_str());
    return kExitFailed;
  }
  const std::string transport =
      transport_description(engine, targets[0].seg, local.data(), targets[0].addr);
  std::string result;
  const bool ok = check_data(engine, o, local.data(), check.data(), targets, &result);
  report(o, seconds, batches.load(), warm_ms, local.huge(), transport, result);
  report_setup(setup);
  report_endpoints(engine);
  if (ok && o.notify && o.test == "te_write" && !measure_notify(engine, o, reqs[0])) {
    return kExitFailed;
  }
  return ok ? 0 : kExitFailed;
}

// te_lat: the latency of one transfer, as a KV-cache user waiting for one
// block sees it: a batch of one task, the time from submitTransfer until
// getTransferStatus says COMPLETED (polled without pause), batch allocation
// and release outside the clock.
struct LatencyRun {
  size_t size = 0;
  uint64_t iterations = 0;
  double avg_us = 0, min_us = 0, p50_us = 0, p99_us = 0, p999_us = 0, max_us = 0;
};

bool run_latency_size(TransferEngine& engine, const TeOptions& o, TransferRequest req,
                      LatencyRun* out) {
  out->size = req.length;
  out->iterations = o.iterations;
  const uint64_t warmup = std::max<uint64_t>(o.iterations / 10, 1);
  std::vector<double> samples;
  samples.reserve(o.iterations);
  for (uint64_t i = 0; i < warmup + o.iterations && !g_stop.load(); ++i) {
    double us = 0;
    if (!time_one(engine, req, &us)) return false;
    if (i >= warmup) samples.push_back(us);
  }
  if (samples.empty()) return false;
  double sum = 0;
  for (double v : samples) sum += v;
  out->iterations = samples.size();
  out->avg_us = sum / double(samples.size());
  const auto [min, max] = std::minmax_element(samples.begin(), samples.end());
  out->min_us = *min;
  out->max_us = *max;
  out->p50_us = nearest_rank(samples, 50);
  out->p99_us = nearest_rank(samples, 99);
  out->p999_us = nearest_rank(samples, 99.9);
  return true;
}

int run_latency(const TeOptions& o) {
  const std::vector<size_t> sizes =
      o.block_size_given ? std::vector<size_t>{o.block_size} : std::vector<size_t>{8, 4096, 65536};
  const size_t largest = *std::max_element(sizes.begin(), sizes.end());
  TransferEngine engine;
  if (!init_engine(engine, o)) return kExitFailed;
  AlignedBuffer local = make_buffer(largest, o), check = make_buffer(largest, o);
  if (!local.data() || !check.data() ||
      engine.registerLocalMemory(local.data(), local.length(), "cpu:0") != 0 ||
      engine.registerLocalMemory(check.data(), check.length(), "cpu:0", false) != 0) {
    std::fprintf(stderr, "mc_perftest: cannot allocate and register %zu B\n", largest);
    return kExitFailed;
  }
  Remote target;
  if (!open_target(engine, o, o.segment_id, largest, &target)) return kExitFailed;
  const SegmentHandle seg = target.seg;
  const uint64_t remote = target.addr;
  pattern_fill(local.data(), largest, 1);
  const auto op = o.operation == "write" ? TransferRequest::WRITE : TransferRequest::READ;
  std::vector<LatencyRun> runs;
  for (size_t size : sizes) {
    LatencyRun r;
    if (!run_latency_size(engine, o, {op, local.data(), seg, remote, size}, &r)) {
      std::fprintf(stderr, "mc_perftest: te_lat failed: a %zu-byte transfer did not complete\n",
                   size);
      return kExitFailed;
    }
    runs.push_back(r);
  }
  const std::string transport = transport_description(engine, seg, local.data(), remote);
  TeOptions one = o;
  one.batch_size = 1;
  one.block_size = largest;
  std::string result;
  const bool ok = check_data(engine, one, local.data(), check.data(), {target}, &result);
  std::printf("te_lat: %s, one task per batch, usec from submitTransfer to COMPLETED\n",
              o.operation.c_str());
  for (const LatencyRun& r : runs) {
    std::printf(
        "  %8zu B  p50 %9.3f  p99 %9.3f  p99.9 %9.3f  avg %9.3f  min %9.3f  max %9.3f  (%llu)\n",
        r.size, r.p50_us, r.p99_us, r.p999_us, r.avg_us, r.min_us, r.max_us,
        static_cast<unsigned long long>(r.iterations));
  }
  std::printf("  transport    %s\n", transport.c_str());
  std::printf("  data check   %s\n", result.c_str());
  for (const LatencyRun& r : runs) {
    std::printf(
        "result test=te_lat op=%s block=%zu iters=%llu p50_us=%.3f p99_us=%.3f p999_us=%.3f "
        "avg_us=%.3f check=%s\n",
        o.operation.c_str(), r.size, static_cast<unsigned long long>(r.iterations), r.p50_us,
        r.p99_us, r.p999_us, r.avg_us, ok ? "passed" : "failed");
  }
  return ok ? 0 : kExitFailed;
}

}  // namespace

void print_te_help(FILE* out) {
  print_te_usage(out);
}

void register_te_tests(Registry& registry) {
  auto unused = [](const TestInfo&, RunContext&) { return Status::Unsupported; };
  registry.add(TestInfo{"te_write", Api::TransferEngine, TestType::Stream,
                        "batch write throughput / request rate (own options, see below)",
                        "overhead", Layout::Zcopy},
               unused);
  registry.add(TestInfo{"te_read", Api::TransferEngine, TestType::Stream,
                        "batch read throughput / request rate (own options, see below)", "overhead",
                        Layout::Zcopy},
               unused);
  registry.add(TestInfo{"te_lat", Api::TransferEngine, TestType::PingPong,
                        "one transfer's latency, submit to COMPLETED (own options, see below)",
                        "latency", Layout::Zcopy},
               unused);
}

bool te_perf_requested(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "-t" && i + 1 < argc && std::string(argv[i + 1]).rfind("te_", 0) == 0) ||
        a.rfind("-tte_", 0) == 0 || is_te_flag(a)) {
      return true;
    }
  }
  return false;
}

int run_te_perf(int argc, char** argv) {
  TeOptions o;
  if (const int rc = parse_te_options(argc, argv, &o); rc >= 0) return rc;
  apply_flags(o);
  if (o.notify && o.test != "te_write" && o.mode != "target") {
    std::fprintf(stderr, "mc_perftest: --notify measures te_write batches; ignored for %s\n",
                 o.test.c_str());
  }
  if (o.mode == "target") return run_target(o);
  return o.test == "te_lat" ? run_latency(o) : run_initiator(o);
}

}  // namespace mc::perf

// SPDX-License-Identifier: Apache-2.0
// Opening the te_* initiators' targets and timing their set-up (see
// te_perf_setup.h).
#include "tools/perf/te_perf_setup.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "tools/perf/perf_measure.h"
#include "ucs/config/parser.h"

namespace mc::perf {

namespace {

// This process's resident memory in KiB (VmRSS of /proc/self/status), or -1.
long rss_kib() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  long kib = -1;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::sscanf(line, "VmRSS: %ld kB", &kib) == 1) break;
  }
  std::fclose(f);
  return kib;
}

struct Stats {
  double min = 0, p50 = 0, max = 0;
};

Stats stats(std::vector<double> v) {
  if (v.empty()) return {};
  const auto [min, max] = std::minmax_element(v.begin(), v.end());
  const double lo = *min, hi = *max;
  return {lo, nearest_rank(v, 50), hi};
}

}  // namespace

bool open_target(TransferEngine& engine, const TeOptions& o, const std::string& name, size_t needed,
                 Remote* out) {
  out->seg = engine.openSegment(name);
  std::vector<SegmentBufferInfo> bufs;
  if (out->seg < 0 || engine.getSegmentBuffers(out->seg, bufs) != 0) {
    std::fprintf(stderr, "mc_perftest: cannot open segment '%s' (metadata '%s')\n", name.c_str(),
                 o.metadata_server.c_str());
    return false;
  }
  uint64_t largest = 0;
  for (const SegmentBufferInfo& b : bufs) {
    if (b.length >= needed + o.target_offset) {
      out->addr = b.addr + o.target_offset;
      return true;
    }
    largest = std::max(largest, b.length);
  }
  std::fprintf(stderr,
               "mc_perftest: segment '%s' has no buffer of --target_offset + batch_size x threads "
               "x block_size = %llu B (its largest: %llu B); give the target a larger "
               "--buffer_size\n",
               name.c_str(), static_cast<unsigned long long>(needed + o.target_offset),
               static_cast<unsigned long long>(largest));
  return false;
}

bool time_one(TransferEngine& engine, const TransferRequest& req, double* usec) {
  using Clock = std::chrono::steady_clock;
  const BatchID id = engine.allocateBatchID(1);
  if (id == kInvalidBatchID) return false;
  TransferStatus st{};
  const auto t0 = Clock::now();
  bool ok = engine.submitTransfer(id, {req}) == 0;
  while (ok) {
    if (engine.getTransferStatus(id, 0, st) != 0) {
      ok = false;
    } else if (st.s != WAITING && st.s != PENDING) {
      break;
    }
  }
  *usec = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  if (ok && st.s != COMPLETED) {
    std::fprintf(stderr, "mc_perftest: a %zu-byte task ended %s\n", req.length,
                 task_status_name(st.s));
    ok = false;
  }
  return engine.freeBatchID(id) == 0 && ok;
}

bool open_targets(TransferEngine& engine, const TeOptions& o, size_t needed,
                  TransferRequest::OpCode op, uint8_t* local, std::vector<Remote>* targets,
                  Setup* setup) {
  using Clock = std::chrono::steady_clock;
  setup->rss_kib = rss_kib();
  for (const std::string& name : ucs::config::split_list(o.segment_id)) {
    Remote r;
    const auto t0 = Clock::now();
    if (!open_target(engine, o, name, needed, &r)) return false;
    setup->open_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    targets->push_back(r);
  }
  setup->rss_opened_kib = rss_kib();
  for (std::vector<double>* times : {&setup->first_us, &setup->steady_us}) {
    for (const Remote& r : *targets) {
      double us = 0;
      if (!time_one(engine, {op, local, r.seg, r.addr, o.block_size}, &us)) {
        std::fprintf(stderr, "mc_perftest: the set-up transfer to segment %d did not complete\n",
                     static_cast<int>(r.seg));
        return false;
      }
      times->push_back(us);
    }
    if (times == &setup->first_us) setup->rss_connected_kib = rss_kib();
  }
  return true;
}

void report_setup(const Setup& s) {
  const Stats open = stats(s.open_us), first = stats(s.first_us), steady = stats(s.steady_us);
  const size_t n = s.open_us.size();
  const double last = s.open_us.empty() ? 0 : s.open_us.back();
  const long opened = s.rss_opened_kib - s.rss_kib;
  const long connected = s.rss_connected_kib - s.rss_opened_kib;
  std::printf(
      "  set-up       %zu segments, usec min / p50 / max: openSegment %.1f / %.1f / %.1f "
      "(the last %.1f), first transfer %.1f / %.1f / %.1f, second %.1f / %.1f / %.1f\n",
      n, open.min, open.p50, open.max, last, first.min, first.p50, first.max, steady.min,
      steady.p50, steady.max);
  std::printf(
      "  memory       VmRSS %ld KiB, +%ld KiB after the opens, +%ld KiB after the first "
      "transfers (%.1f KiB per segment)\n",
      s.rss_kib, opened, connected, double(opened + connected) / double(n ? n : 1));
  std::printf(
      "result test=te_setup segments=%zu open_min_us=%.1f open_p50_us=%.1f open_max_us=%.1f "
      "open_last_us=%.1f first_min_us=%.1f first_p50_us=%.1f first_max_us=%.1f "
      "steady_p50_us=%.1f steady_max_us=%.1f rss_kib=%ld rss_open_kib=%ld rss_ep_kib=%ld\n",
      n, open.min, open.p50, open.max, last, first.min, first.p50, first.max, steady.p50,
      steady.max, s.rss_kib, opened, connected);
}

void report_endpoints(const TransferEngine& engine) {
  EndpointStoreStats st;
  if (engine.getEndpointStoreStats(st) != 0) return;
  const unsigned long long opened = st.opened, evicted = st.evicted, busy = st.evicted_busy,
                           removed = st.removed, cached = st.cached, draining = st.draining;
  std::printf(
      "  endpoints    %llu opened, %llu evicted (%llu with operations in flight), %llu removed; "
      "%llu open now, %llu draining\n",
      opened, evicted, busy, removed, cached, draining);
  std::printf(
      "result test=te_endpoints opened=%llu evicted=%llu evicted_busy=%llu removed=%llu "
      "cached=%llu draining=%llu\n",
      opened, evicted, busy, removed, cached, draining);
}

}  // namespace mc::perf

// SPDX-License-Identifier: Apache-2.0
// Reporter: ucx_perftest's formats and mc's summary.
#include "tools/perf/perf_report.h"

#include <unistd.h>

#include <cmath>
#include <cstdarg>
#include <cstdio>

namespace mc::perf {

namespace {

constexpr double kMB = 1024.0 * 1024.0;  // ucx_perftest's MB: 2^20 bytes
constexpr const char* kRule =
    "+--------------+--------------+----------+---------+---------+----------+----------+"
    "-----------+-----------+";
constexpr const char* kBoxRule =
    "+------------------------------------------------------------------------------------------"
    "----------------+";

std::string printf_string(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string printf_string(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return buf;
}

std::string pad_left(const std::string& s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

void box_line(const char* key, const std::string& value) {
  std::printf("| %-14s%-91s|\n", key, value.c_str());
}

std::string usec(double seconds) {
  return printf_string("%.3f", seconds * 1e6);
}

}  // namespace

std::string group_thousands(double v) {
  std::string digits = printf_string("%.0f", std::fabs(v));
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (v < 0 ? "-" : "") + out;
}

Reporter::Reporter(const Options& options, const TestInfo& test)
    : opt_(options),
      test_(test),
      live_(isatty(STDOUT_FILENO) && !options.csv && !options.final_only) {}

void Reporter::header(const RunInfo& info) {
  const Params& p = opt_.params;
  if (opt_.csv) {
    std::printf(
        "iterations,%.1f_percentile_lat,avg_lat,overall_lat,avg_bw,overall_bw,avg_mr,"
        "overall_mr\n",
        p.percentile_rank);
    std::fflush(stdout);
    return;
  }
  std::printf("%s\n", kBoxRule);
  box_line("API:", api_name(test_.api));
  box_line("Test:", test_.desc + " (" + test_.name + ")");
  box_line("Data layout:", layout_name(info.layout));
  box_line("Send memory:", mem_kind_name(p.send_mem));
  box_line("Recv memory:", mem_kind_name(p.recv_mem));
  box_line("Message size:", std::to_string(p.message_size()));
  box_line("Window size:", std::to_string(info.window));
  if (p.slots() > 1) {
    box_line("Footprint:", std::to_string(p.slots() * p.message_size()) + " B per side, cycled");
  }
  box_line("Transport:", info.transport + "/" + info.device + " (" + info.device_type + "), " +
                             info.protocol +
                             (opt_.loopback ? ", loopback" : ", peer " + opt_.server));
  box_line("Units:", "latency usec, bandwidth MB/s with MB = 2^20 B, message rate msg/s");
  std::printf("%s\n", kRule);
  std::printf(
      "|              |              |       %8s (usec)        |   bandwidth (MB/s)  |  "
      "message rate (msg/s) |\n",
      test_.lat_label.c_str());
  std::printf("%s\n", kRule);
  std::printf(
      "|    %5s     | # iterations | %4.1f%%ile | average | overall |  average |  overall |  "
      "average  |  overall  |\n",
      opt_.final_only ? "Test" : "Stage", p.percentile_rank);
  std::printf("%s\n", kRule);
  std::fflush(stdout);
}

// ucx_perftest's row: plain, numeric (-N) or CSV (-v).
std::string Reporter::row(const PerfResult& r) const {
  const double lat[3] = {r.lat_percentile * 1e6, r.lat_moment * 1e6, r.lat_total * 1e6};
  const double bw[2] = {r.bw_moment / kMB, r.bw_total / kMB};
  const auto iters = static_cast<double>(r.iters);
  if (opt_.csv) {
    return printf_string("%4.0f,%.3f,%.3f,%.3f,%.2f,%.2f,%.0f,%.0f", iters, lat[0], lat[1], lat[2],
                         bw[0], bw[1], r.mr_moment, r.mr_total);
  }
  if (opt_.numeric) {
    return pad_left(group_thousands(iters), 18) +
           printf_string(" %10.3f %9.3f %9.3f %11.2f %10.2f ", lat[0], lat[1], lat[2], bw[0],
                         bw[1]) +
           pad_left(group_thousands(r.mr_moment), 11) + " " +
           pad_left(group_thousands(r.mr_total), 11);
  }
  return printf_string("%18.0f %10.3f %9.3f %9.3f %11.2f %10.2f %11.0f %11.0f", iters, lat[0],
                       lat[1], lat[2], bw[0], bw[1], r.mr_moment, r.mr_total);
}

void Reporter::progress(const PerfResult& r) {
  if (!live_) return;
  std::printf("\r%s\033[K", row(r).c_str());
  std::fflush(stdout);
  live_shown_ = true;
}

void Reporter::clear_live() {
  if (live_shown_) std::printf("\r\033[K");
  live_shown_ = false;
}

void Reporter::final(const PerfResult& r, const RunInfo& info, const Limits* limits) {
  clear_live();
  if (opt_.csv) {
    std::printf("%s\n", row(r).c_str());
  } else {
    std::printf("%s%s\n", opt_.final_only ? "          " : "Final:    ", row(r).c_str());
    std::printf("%s\n", kRule);
    const bool pp = test_.type == TestType::PingPong;
    std::printf("  transport    %s/%s (%s), %s, %zu-byte messages, window %u\n",
                info.transport.c_str(), info.device.c_str(), info.device_type.c_str(),
                info.protocol.c_str(), opt_.params.message_size(), info.window);
    if (const uint64_t slots = opt_.params.slots(); slots > 1) {
      std::printf("  footprint    %llu B per side: %llu messages side by side, cycled\n",
                  static_cast<unsigned long long>(slots * opt_.params.message_size()),
                  static_cast<unsigned long long>(slots));
    }
    std::printf(
        "  %-12s usec, %s: avg %s  min %s  p50 %s  p99 %s  p99.9 %s  max %s  (%zu samples)\n",
        pp ? "latency" : "overhead", pp ? "half round trip" : "per posted operation",
        usec(r.lat_total).c_str(), usec(r.lat_min).c_str(), usec(r.lat_p50).c_str(),
        usec(r.lat_p99).c_str(), usec(r.lat_p999).c_str(), usec(r.lat_max).c_str(), r.samples);
    std::printf("  bandwidth    %.2f MB/s (MB = 2^20 B; %.3f GB/s with GB = 10^9 B)\n",
                r.bw_total / kMB, r.bw_total / 1e9);
    std::printf("  msg rate     %s msg/s over %s iterations in %.3f s\n",
                group_thousands(r.mr_total).c_str(),
                group_thousands(static_cast<double>(r.iters)).c_str(), r.elapsed);
    std::printf("  data check   %s\n", info.check.c_str());
  }
  if (limits) {
    // Bandwidth tests against the copy limit of their kind of transport
    // (kernel TCP for network ones, memcpy for the others); latency tests
    // against busy-polling kernel TCP's ping-pong of the same size.
    const char* c = opt_.csv ? "# " : "  ";
    if (test_.type == TestType::Stream) {
      const double limit_bw = info.net ? limits->tcp_bw : limits->memcpy_bw;
      std::printf(
          "%svs limits    bandwidth %.1f%% of %s (%.2f MB/s); %.1f%% of memcpy, %.1f%% "
          "of kernel TCP\n",
          c, 100.0 * r.bw_total / limit_bw, info.net ? "kernel TCP" : "memcpy", limit_bw / kMB,
          100.0 * r.bw_total / limits->memcpy_bw, 100.0 * r.bw_total / limits->tcp_bw);
    } else {
      const bool sized = limits->tcp_size_lat > 0;  // above 8 B
      const double limit_lat = sized ? limits->tcp_size_lat : limits->tcp_lat;
      std::printf(
          "%svs limits    latency %.3f usec vs kernel TCP ping-pong of %zu B %.3f usec: %.1f%% "
          "(above 100%%: faster than kernel TCP)\n",
          c, r.lat_total * 1e6, sized ? limits->size : size_t{8}, limit_lat * 1e6,
          100.0 * limit_lat / r.lat_total);
    }
  }
  if (opt_.extra_info && !opt_.csv) {
    for (const std::string& d : info.details) std::printf("  %s\n", d.c_str());
  }
  std::fflush(stdout);
}

void print_limits(const Limits& l, bool csv) {
  const char* c = csv ? "# " : "";
  const std::string size = std::to_string(l.size);
  auto line = [c](const std::string& what, const std::string& value) {
    std::printf("%s  %-58s %s\n", c, (what + ":").c_str(), value.c_str());
  };
  std::printf("%sMachine limits (this host, MB = 2^20 B):\n", c);
  line("memcpy, " + size + "-byte copies", printf_string("%.2f MB/s", l.memcpy_bw / kMB));
  if (l.footprint > 0) {
    line("memcpy, " + size + "-byte copies over " + std::to_string(l.footprint) + " B (cold)",
         printf_string("%.2f MB/s", l.memcpy_cold_bw / kMB));
  }
  line("kernel TCP 127.0.0.1, one stream, " + size + "-byte writes",
       printf_string("%.2f MB/s", l.tcp_bw / kMB));
  if (l.senders > 0) {
    const std::string streams =
        std::to_string(l.senders) + (l.senders == 1 ? " stream" : " streams");
    line("kernel TCP 127.0.0.1, " + streams + " into one thread, " + size + "-byte writes",
         printf_string("%.2f MB/s", l.tcp_fanin_bw / kMB));
  }
  line("kernel TCP 127.0.0.1 ping-pong, 8 B, busy-polling",
       printf_string("%.3f usec (half round trip)", l.tcp_lat * 1e6));
  if (l.tcp_rtt > 0) {
    line("kernel TCP 127.0.0.1 round trip, " + size + " B out, 8 B back",
         printf_string("%.3f usec (busy-polling)", l.tcp_rtt * 1e6));
  }
  if (l.tcp_size_lat > 0) {
    line("kernel TCP 127.0.0.1 ping-pong, " + size + " B, busy-polling",
         printf_string("%.3f usec (half round trip)", l.tcp_size_lat * 1e6));
  }
  std::fflush(stdout);
}

}  // namespace mc::perf

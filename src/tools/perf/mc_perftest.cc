// SPDX-License-Identifier: Apache-2.0
// mc_perftest: mc's benchmark tool, command-line compatible with ucx_perftest.
// Server: no host argument; client: the server's host; -l: both in this
// process. Tests come from a registry (UCT, UCP, Transfer Engine); the
// Transfer Engine tests have Mooncake's options and run from te_perf_tests.
//
// Files: perf_options (command line), perf_params (parameters and their wire
// form), perf_registry (test name -> runner), perf_rte (control connection),
// perf_watchdog (bounded waits), perf_clock + perf_measure (timing,
// percentiles), perf_report (ucx_perftest's table and CSV, mc's summary),
// perf_limits (memcpy, kernel TCP), uct_perf_side (md, iface, buffers),
// uct_perf_tests / uct_perf_ops / uct_perf_stream (the UCT tests),
// ucp_perf_tests / ucp_perf_ops (the UCP tests), te_perf_tests (te_write,
// te_read, te_lat).
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <memory>
#include <random>
#include <string_view>
#include <thread>

#include "config.h"
#include "tools/perf/perf_limits.h"
#include "tools/perf/perf_options.h"
#include "tools/perf/perf_report.h"
#include "tools/perf/perf_watchdog.h"
#include "tools/perf/te_perf_tests.h"
#include "tools/perf/ucp_perf_tests.h"
#include "tools/perf/uct_perf_tests.h"
#include "tools/tool_version.h"
#include "ucs/async/event_loop.h"
#include "ucs/log/log.h"
#include "ucs/sys/sys.h"

namespace {

using namespace mc;
using namespace mc::perf;

constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

// Whether this build can run `p` at all; the reason otherwise.
std::string unsupported(const Params& p) {
  if (p.threads > 1)
    return "only one thread is supported for now (-T 1), not -T " + std::to_string(p.threads);
  if (p.send_mem != MemKind::Host || p.recv_mem != MemKind::Host) {
    return "memory type cuda is not supported by mc_perftest yet (-m host)";
  }
  return "";
}

std::string cpu_list(const std::vector<unsigned>& cpus) {
  std::string s;
  for (unsigned c : cpus) s += (s.empty() ? "" : ",") + std::to_string(c);
  return s;
}

bool pin(pthread_t thread, const std::vector<unsigned>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (unsigned c : cpus) CPU_SET(c, &set);
  const int rc = pthread_setaffinity_np(thread, sizeof(set), &set);
  if (rc != 0) {
    std::fprintf(stderr, "mc_perftest: cannot run on CPUs %s (-c): %s; %u CPUs are online\n",
                 cpu_list(cpus).c_str(), ucs::errno_string(rc).c_str(), ucs::cpu_count());
  }
  return rc == 0;
}

// Runs one side of a test on a connected control channel.
Status run_side(Role role, const Registry::Entry& entry, const Params& params, Rte& rte,
                const Options& o, ucs::EventLoop* async, const Limits* limits) {
  Watchdog wd(&rte, o.timeout);
  RunInfo info;
  std::unique_ptr<Reporter> reporter;
  std::unique_ptr<Measurement> measure;
  if (role == Role::Client) {
    reporter = std::make_unique<Reporter>(o, entry.info);
    Measurement::ProgressFn progress;
    if (reporter->live()) progress = [&](const PerfResult& r) { reporter->progress(r); };
    measure = std::make_unique<Measurement>(entry.info.type, params.iters, params.percentile_rank,
                                            progress);
  }
  RunContext ctx{params, role, o.loopback, &rte, o.timeout, &wd, async, measure.get(), &info, {}};
  if (reporter) ctx.on_start = [&] { reporter->header(info); };
  const Status s = entry.run(entry.info, ctx);
  if (role == Role::Client && !is_error(s)) {
    info.details.insert(
        info.details.begin(),
        {"host         " + ucs::host_identity().hostname + ", " + std::to_string(ucs::cpu_count()) +
             " CPUs online, " + (o.cpus.empty() ? "not pinned" : "pinned to " + cpu_list(o.cpus)),
         "clock        " + clock_description(),
         std::string("build        mc ") + MC_VERSION + " (" + MC_BUILD_KIND + ")"});
    reporter->final(measure->result(), info, limits);
  }
  return s;
}

// The server's part after the connection: the client's parameters, then the test.
int serve(std::unique_ptr<Rte> rte, const Registry& registry, const Options& o,
          ucs::EventLoop* async) {
  Result<std::vector<uint8_t>> wire = rte->recv(MsgType::Params, o.timeout);
  if (!wire.ok()) return kExitFailed;
  Result<Params> params = decode_params(*wire);
  if (!params.ok()) {
    rte->send_error("the server cannot decode the parameters (another version of mc_perftest?)");
    return kExitFailed;
  }
  std::string why = unsupported(*params);
  const Registry::Entry* entry = registry.find(params->test);
  if (!entry) why = "the server has no test '" + params->test + "'";
  if (o.tl_given && o.params.tl != params->tl) {
    why =
        "the server runs transport '" + o.params.tl + "', the client asks for '" + params->tl + "'";
  }
  if (!why.empty()) {
    std::fprintf(stderr, "mc_perftest: %s\n", why.c_str());
    rte->send_error(why);
    return kExitFailed;
  }
  if (o.dev_given) params->dev = o.params.dev;  // device names may differ between hosts
  const Status s = run_side(Role::Server, *entry, *params, *rte, o, async, nullptr);
  if (!o.loopback) {
    std::printf("server: %s with %s: %s\n", params->test.c_str(), rte->peer_name().c_str(),
                is_error(s) ? ucs::status_string(s) : "done");
  }
  return is_error(s) ? kExitFailed : 0;
}

// The client's part: send the parameters, run, report.
int run_client(Rte& rte, const Registry& registry, Options& o, ucs::EventLoop* async,
               const Limits* limits) {
  o.params.seed = (std::random_device{}() * 0x9e3779b97f4a7c15ull) ^ ucs::monotonic_ns();
  if (is_error(rte.send(MsgType::Params, encode_params(o.params)))) return kExitFailed;
  const Status s =
      run_side(Role::Client, *registry.find(o.params.test), o.params, rte, o, async, limits);
  if (is_error(s)) {
    std::fprintf(stderr, "mc_perftest: %s failed: %s\n", o.params.test.c_str(),
                 ucs::status_string(s));
  }
  return is_error(s) ? kExitFailed : 0;
}

// Loopback: the server on a thread of its own, over a socket pair.
int run_loopback(const Registry& registry, Options& o, ucs::EventLoop* async,
                 const Limits* limits) {
  std::unique_ptr<Rte> client, server;
  if (is_error(Rte::pair(&client, &server))) return kExitFailed;
  server->set_quiet();
  int server_rc = 0;
  // The server thread gets its own copy: the client sets its seed meanwhile.
  std::thread thread([&, rte = std::move(server), so = o]() mutable {
    server_rc = serve(std::move(rte), registry, so, async);
  });
  const bool pinned = (o.cpus.size() < 2 || pin(thread.native_handle(), {o.cpus[1]})) &&
                      (o.cpus.empty() || pin(pthread_self(), {o.cpus[0]}));
  const int rc = pinned ? run_client(*client, registry, o, async, limits) : kExitFailed;
  client.reset();  // a server still waiting sees the end
  thread.join();
  return rc != 0 ? rc : server_rc;
}

}  // namespace

int main(int argc, char** argv) {
  if (is_error(ucs::log_init(argv[0]))) return kExitUsage;
  std::signal(SIGPIPE, SIG_IGN);  // a dead peer is an error status, not a signal
  Registry registry;
  register_uct_tests(registry);
  register_ucp_tests(registry);
  register_te_tests(registry);
  if (argc == 2 && std::string_view(argv[1]) == "--version") {
    return tools::print_version("mc_perftest");
  }
  if (te_perf_requested(argc, argv)) return run_te_perf(argc, argv);
  Result<Options> parsed = parse_options(argc, argv, registry);
  if (!parsed.ok()) return parsed.status() == Status::Canceled ? 0 : kExitUsage;
  Options& o = *parsed;
  if (const std::string why = unsupported(o.params); !why.empty()) {
    std::fprintf(stderr, "mc_perftest: %s\n", why.c_str());
    return kExitFailed;
  }
  // Threads made from here on (the event loop's) may use every listed CPU;
  // the test threads are narrowed to one each once they exist.
  if (!o.cpus.empty() && !pin(pthread_self(), o.cpus)) return kExitUsage;
  clock_init();

  std::unique_ptr<Limits> limits;
  if (o.limits && (o.limits_only() || !o.is_server())) {
    Result<Limits> l = measure_limits(o.params.message_size(), o.params.footprint, o.senders);
    if (!l.ok()) return kExitFailed;
    limits = std::make_unique<Limits>(*l);
    print_limits(*limits, o.csv);
    if (!o.test_given) return 0;
  }

  // UCT transports get this loop: driven by their progress() unless it runs
  // on its thread (loopback: both sides share it, so it must run there).
  Result<std::unique_ptr<ucs::EventLoop>> async = ucs::EventLoop::create();
  if (!async.ok()) return kExitFailed;
  if ((o.async_thread || o.loopback) && is_error((*async)->start())) return kExitFailed;
  int rc;
  if (o.loopback) {
    rc = run_loopback(registry, o, async->get(), limits.get());
  } else if (o.is_server()) {
    std::printf("waiting for a client on port %u\n", o.port);
    std::fflush(stdout);
    if (!o.cpus.empty() && !pin(pthread_self(), {o.cpus[0]})) return kExitFailed;
    Result<std::unique_ptr<Rte>> rte = Rte::accept(o.port, o.timeout);
    rc = rte.ok() ? serve(std::move(*rte), registry, o, async->get()) : kExitFailed;
  } else {
    if (!o.cpus.empty() && !pin(pthread_self(), {o.cpus[0]})) return kExitFailed;
    Result<std::unique_ptr<Rte>> rte = Rte::connect(o.server, o.port, o.timeout);
    rc = rte.ok() ? run_client(**rte, registry, o, async->get(), limits.get()) : kExitFailed;
  }
  (void)(*async)->stop();
  return rc;
}

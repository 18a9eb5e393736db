// SPDX-License-Identifier: Apache-2.0
// Command-line parsing and the help text.
#include "tools/perf/perf_options.h"

#include <getopt.h>
#include <sched.h>

#include <cstdlib>
#include <cstring>
#include <set>
#include <string>

#include "tools/perf/te_perf_tests.h"
#include "ucs/config/parser.h"

namespace mc::perf {

namespace {

enum LongOnly {
  OptLimits = 1000,
  OptTimeout,
  OptFull,
  OptAlloc,
  OptAsync,
  OptFootprint,
  OptSenders
};

constexpr option kLongOptions[] = {
    {"limits", no_argument, nullptr, OptLimits},
    {"timeout", required_argument, nullptr, OptTimeout},
    {"full", no_argument, nullptr, OptFull},
    {"alloc", required_argument, nullptr, OptAlloc},
    {"async", required_argument, nullptr, OptAsync},
    {"footprint", required_argument, nullptr, OptFootprint},
    {"senders", required_argument, nullptr, OptSenders},
    {"help", no_argument, nullptr, 'h'},
    {nullptr, 0, nullptr, 0},
};

constexpr const char* kShortOptions = "t:s:n:w:c:O:W:lx:d:D:m:T:p:R:fvNIh";

// The tests that cycle through --footprint bytes of buffer.
const std::set<std::string> kFootprintTests = {"put_bw", "get", "ucp_put_bw", "ucp_get"};

// Prints why the command line is wrong; the caller adds the usage.
void say(const std::string& why) {
  std::fprintf(stderr, "mc_perftest: %s\n", why.c_str());
}

Status bad(const std::string& why) {
  say(why);
  return Status::InvalidParam;
}

Status parse_uint(const char* opt, const char* text, uint64_t min, uint64_t max, uint64_t* out) {
  uint64_t v = 0;
  if (ucs::config::uint_parser(min, max).parse(text, &v) != Status::Ok) {
    return bad(std::string("invalid value '") + text + "' for -" + opt +
               ": expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
               "]");
  }
  *out = v;
  return Status::Ok;
}

Status parse_sizes(const char* text, std::vector<size_t>* out) {
  std::vector<size_t> sizes;
  for (const std::string& item : ucs::config::split_list(text)) {
    size_t v = 0;
    if (ucs::config::size_parser(1, size_t{1} << 40).parse(item, &v) != Status::Ok) {
      return bad(std::string("invalid size '") + item + "' in -s " + text +
                 ": expected a positive byte count such as 8, 4096 or 64k");
    }
    sizes.push_back(v);
  }
  if (sizes.empty()) return bad("-s needs at least one size");
  *out = std::move(sizes);
  return Status::Ok;
}

Status parse_layout(const char* text, std::optional<Layout>* out) {
  if (!std::strcmp(text, "short"))
    *out = Layout::Short;
  else if (!std::strcmp(text, "bcopy"))
    *out = Layout::Bcopy;
  else if (!std::strcmp(text, "zcopy"))
    *out = Layout::Zcopy;
  else
    return bad(std::string("invalid data layout '") + text + "' for -D: short, bcopy or zcopy");
  return Status::Ok;
}

Status parse_mem(const char* text, Params* p) {
  const std::vector<std::string> kinds = ucs::config::split_list(text);
  if (kinds.empty() || kinds.size() > 2) return bad("-m takes <send>[,<recv>]");
  MemKind parsed[2] = {MemKind::Host, MemKind::Host};
  for (size_t i = 0; i < kinds.size(); ++i) {
    if (kinds[i] == "host")
      parsed[i] = MemKind::Host;
    else if (kinds[i] == "cuda")
      parsed[i] = MemKind::Cuda;
    else
      return bad("invalid memory type '" + kinds[i] + "' for -m: host or cuda");
  }
  p->send_mem = parsed[0];
  p->recv_mem = kinds.size() == 2 ? parsed[1] : parsed[0];
  return Status::Ok;
}

// "0,2,4" or ranges "0-3,8".
Status parse_cpus(const char* text, std::vector<unsigned>* out) {
  std::vector<unsigned> cpus;
  for (const std::string& item : ucs::config::split_list(text)) {
    char* end = nullptr;
    const unsigned long lo = std::strtoul(item.c_str(), &end, 10);
    unsigned long hi = lo;
    if (*end == '-') hi = std::strtoul(end + 1, &end, 10);
    if (item.empty() || *end != '\0' || hi < lo || hi >= CPU_SETSIZE) {
      return bad("invalid CPU list '" + std::string(text) + "' for -c: e.g. 0,2 or 0-3");
    }
    for (unsigned long c = lo; c <= hi; ++c) cpus.push_back(static_cast<unsigned>(c));
  }
  if (cpus.empty()) return bad("-c needs at least one CPU");
  *out = std::move(cpus);
  return Status::Ok;
}

Status parse_timeout(const char* text, Duration* out) {
  ucs::config::Duration d{};
  if (ucs::config::time_parser().parse(text, &d) != Status::Ok) {
    return bad(std::string("invalid --timeout '") + text + "': e.g. 60, 30s, 500ms, or 0 for none");
  }
  const auto ms = std::chrono::duration_cast<Duration>(d);
  // 0 and "inf" mean no limit.
  *out = (ms.count() <= 0 || ms > std::chrono::hours(24 * 365)) ? Duration(-1) : ms;
  return Status::Ok;
}

Status parse_one(int c, const char* arg, const Registry& registry, Options* o) {
  Params& p = o->params;
  uint64_t v = 0;
  switch (c) {
    case 't': {
      const Registry::Entry* e = registry.find(arg);
      if (!e) return bad(std::string("unknown test '") + arg + "' for -t (see -h for the list)");
      p.test = e->info.name;
      o->test_given = true;
      return Status::Ok;
    }
    case 's': return parse_sizes(arg, &p.sizes);
    case 'n':
      MC_RETURN_IF_ERROR(parse_uint("n", arg, 1, UINT64_MAX / 2, &p.iters));
      return Status::Ok;
    case 'w':
      MC_RETURN_IF_ERROR(parse_uint("w", arg, 0, UINT64_MAX / 2, &p.warmup));
      return Status::Ok;
    case 'O':
      MC_RETURN_IF_ERROR(parse_uint("O", arg, 1, 1 << 16, &v));
      p.window = unsigned(v);
      return Status::Ok;
    case 'W':
      MC_RETURN_IF_ERROR(parse_uint("W", arg, 1, 1 << 20, &v));
      p.fc_window = unsigned(v);
      return Status::Ok;
    case 'T':
      MC_RETURN_IF_ERROR(parse_uint("T", arg, 1, 1024, &v));
      p.threads = unsigned(v);
      return Status::Ok;
    case 'p':
      MC_RETURN_IF_ERROR(parse_uint("p", arg, 1, 65535, &v));
      o->port = uint16_t(v);
      return Status::Ok;
    case 'R': {
      char* end = nullptr;
      const double r = std::strtod(arg, &end);
      if (*end != '\0' || !(r >= 0 && r <= 100))
        return bad(std::string("invalid -R '") + arg + "': a rank in [0, 100]");
      p.percentile_rank = r;
      return Status::Ok;
    }
    case 'c': return parse_cpus(arg, &o->cpus);
    case 'l': o->loopback = true; return Status::Ok;
    case 'x':
      p.tl = arg;
      o->tl_given = true;
      return Status::Ok;
    case 'd':
      p.dev = arg;
      o->dev_given = true;
      return Status::Ok;
    case 'D': return parse_layout(arg, &p.layout);
    case 'm': return parse_mem(arg, &p);
    case 'f': o->final_only = true; return Status::Ok;
    case 'v': o->csv = true; return Status::Ok;
    case 'N': o->numeric = true; return Status::Ok;
    case 'I':
    case OptFull: o->extra_info = true; return Status::Ok;
    case OptLimits: o->limits = true; return Status::Ok;
    case OptSenders: {
      uint64_t n = 0;
      MC_RETURN_IF_ERROR(parse_uint("-senders", arg, 1, 1024, &n));
      o->senders = static_cast<unsigned>(n);
      return Status::Ok;
    }
    case OptTimeout: return parse_timeout(arg, &o->timeout);
    case OptFootprint: {
      size_t n = 0;
      if (ucs::config::size_parser(0, kMaxFootprint).parse(arg, &n) != Status::Ok) {
        return bad(std::string("invalid --footprint '") + arg +
                   "': a byte count up to 64g, e.g. 128m or 1g (0: one message)");
      }
      p.footprint = n;
      return Status::Ok;
    }
    case OptAsync:
      if (std::strcmp(arg, "thread") != 0 && std::strcmp(arg, "progress") != 0) {
        return bad(std::string("invalid --async '") + arg + "': thread or progress");
      }
      o->async_thread = !std::strcmp(arg, "thread");
      return Status::Ok;
    case OptAlloc:
      for (Alloc a : {Alloc::Md, Alloc::Heap, Alloc::Pages}) {
        if (!std::strcmp(arg, alloc_name(a))) {
          p.alloc = a;
          return Status::Ok;
        }
      }
      return bad(std::string("invalid --alloc '") + arg + "': md, heap or pages");
    default: return bad("unknown option (see -h)");
  }
}

}  // namespace

Result<Options> parse_options(int argc, char** argv, const Registry& registry) {
  Options o;
  const char* slash = std::strrchr(argv[0], '/');
  const char* prog = slash ? slash + 1 : argv[0];
  auto fail = [&](Status s) {
    print_usage(stderr, prog, registry);
    return s;
  };
  opterr = 0;  // our own messages
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, kShortOptions, kLongOptions, nullptr)) != -1) {
    if (c == 'h') {
      print_usage(stdout, prog, registry);
      return Status::Canceled;
    }
    if (c == '?' || c == ':') {
      const std::string name =
          optopt ? std::string("-") + static_cast<char>(optopt) : std::string(argv[optind - 1]);
      say(c == ':' || (optopt && std::strchr(kShortOptions, optopt))
              ? "option " + name + " needs a value"
              : "unknown option " + name);
      return fail(Status::InvalidParam);
    }
    if (is_error(parse_one(c, optarg, registry, &o))) return fail(Status::InvalidParam);
  }
  if (optind < argc) o.server = argv[optind++];
  if (optind < argc) {
    say(std::string("unexpected argument '") + argv[optind] + "': only one server host is taken");
    return fail(Status::InvalidParam);
  }
  if (o.loopback && !o.server.empty()) {
    say("a server host is not allowed with -l (loopback runs both sides in this process)");
    return fail(Status::InvalidParam);
  }
  if (!o.is_server() && !o.test_given && !o.limits) {
    say("missing test name: give -t (or --limits alone)");
    return fail(Status::InvalidParam);
  }
  if (o.senders > 0 && !o.limits) {
    say("--senders is a part of --limits: give both");
    return fail(Status::InvalidParam);
  }
  if (o.params.footprint > 0 && o.test_given && !kFootprintTests.contains(o.params.test)) {
    say("--footprint applies to the bandwidth tests of put and get (put_bw, get, ucp_put_bw, "
        "ucp_get), not to " +
        o.params.test);
    return fail(Status::InvalidParam);
  }
  if (!o.is_server() && o.test_given && !o.tl_given &&
      registry.find(o.params.test)->info.api == Api::Uct) {
    say("missing transport: UCT tests need -x (e.g. -x tcp; mc_info -d lists them)");
    return fail(Status::InvalidParam);
  }
  return o;
}

void print_usage(FILE* out, const char* prog, const Registry& registry) {
  const Params d;
  std::fprintf(out,
               "Usage: %s [ server-host ] [ options ]\n"
               "  Without a host and without -l, act as the server: wait for a client on -p,\n"
               "  take the test and its parameters from it, run it, and exit (a server's -d\n"
               "  replaces the client's device there, its -x must match). With a host, act as\n"
               "  the client of the server there; the client prints the results.\n"
               "\n"
               "  Common options:\n"
               "     -t <test>      test to run:\n",
               prog);
  for (const Registry::Entry& e : registry.entries()) {
    std::string names = e.info.name;
    for (const std::string& a : registry.aliases_of(e.info.name)) names += ", " + a;
    std::fprintf(out, "    %16s - %s %s\n", names.c_str(),
                 e.info.api == Api::Uct   ? "UCT"
                 : e.info.api == Api::Ucp ? "UCP"
                                          : "TE",
                 e.info.desc.c_str());
  }
  std::fprintf(
      out,
      "     -s <size>      list of scatter-gather sizes for a single message (%zu); a message\n"
      "                    is their sum, sent as one iov entry each with -D zcopy; units k, m, g\n"
      "                    are accepted. Example: \"-s 16,48,8192,8192,14\"\n"
      "     -n <iters>     number of measured iterations (%llu)\n"
      "     -w <iters>     number of warm-up iterations, run before the clock starts (%llu)\n"
      "     -c <cpulist>   run on these CPUs, e.g. 0,2 or 0-3 (off); the test thread takes\n"
      "                    the first, a loopback server thread the second\n"
      "     -O <count>     maximal number of uncompleted outstanding operations (%u)\n"
      "     -l             loopback: client and server in this process (one iface for\n"
      "                    self, two ifaces on two threads for other transports); no host\n"
      "     -T <threads>   number of threads in the test (%u); only 1 is supported for now\n"
      "     -m <send mem type>[,<recv mem type>]\n"
      "                    memory type of messages: host (default), cuda (not supported yet)\n"
      "     -p <port>      TCP port of the control connection (%u)\n"
      "     -R <rank>      percentile rank of the first latency column (%.1f)\n"
      "     --footprint <bytes>\n"
      "                    put_bw, get, ucp_put_bw, ucp_get: cycle through this many bytes\n"
      "                    of buffer on each side, message i at offset (i mod n) x size\n"
      "                    with n = footprint / size, as a Transfer Engine batch spreads\n"
      "                    over its buffer (the te_* tests' batch x threads x block);\n"
      "                    units k, m, g. Default 0: every message from and to the same\n"
      "                    bytes, hot in the cache (as ucx_perftest)\n"
      "     --timeout <t>  give up when the peer does not connect or the test makes no\n"
      "                    progress for <t> (60s); e.g. 10, 30s, 500ms; 0: no limit\n"
      "     --limits       measure this machine's limits (alone: only that): memcpy\n"
      "                    bandwidth at the message size, kernel TCP throughput over\n"
      "                    127.0.0.1 (one stream, messages of the message size) and\n"
      "                    busy-polling TCP ping-pong latency (8 B), above 8 B also the\n"
      "                    round trip of the message size out and 8 B back and the\n"
      "                    ping-pong of the message size; with -t, also print the\n"
      "                    fraction of them that the test reached (a latency test:\n"
      "                    of the ping-pong of its size)\n"
      "     --senders <n>  with --limits, also n TCP streams over 127.0.0.1, each from a\n"
      "                    thread of its own writing blocking, into one thread that reads\n"
      "                    them all through epoll: the kernel's ceiling for n initiators\n"
      "                    to one target (1-1024; with --footprint, each message goes to\n"
      "                    the next slot of a buffer that large)\n"
      "     -h, --help     show this help message\n"
      "     --version      show the version line\n"
      "\n"
      "  Output format:\n"
      "     -N             use numeric formatting (thousands separator)\n"
      "     -f             print only final numbers (no live progress line; that line is\n"
      "                    shown once a second on a terminal only)\n"
      "     -v             print CSV-formatted output: a header and the final row, with\n"
      "                    ucx_perftest's columns in its order\n"
      "     -I, --full     print extra information: the environment of the run (host,\n"
      "                    clock, CPUs, the transport's attributes and limits)\n"
      "\n"
      "  UCT only:\n"
      "     -x <tl>        transport to use for testing (self, tcp, sm, ...); required\n"
      "                    (mc_info -d lists what this host has). UCP tests: optional,\n"
      "                    a transport list that replaces MC_TLS (tcp, sm, shm, net, ^tcp);\n"
      "                    without it UCP selects lanes by itself; the summary names the\n"
      "                    lanes and protocol that carried the test (-I: all of UCP's\n"
      "                    explanation)\n"
      "     -d <device>    device to use for testing (default: the transport's first; lo\n"
      "                    in loopback when the transport has it)\n"
      "     -D <layout>    data layout for sender side:\n"
      "                        short - short messages (default, cannot be used for get)\n"
      "                        bcopy - copy-out (default for get)\n"
      "                        zcopy - zero-copy\n"
      "     -W <count>     flow control window size, for active messages (%u)\n"
      "     --async <how>  where a transport's background work (tcp: its sockets) runs,\n"
      "                    in UCT and UCP tests:\n"
      "                    progress - in the test thread's progress() calls, as UCX\n"
      "                    progresses its transports (default); thread - on an event\n"
      "                    loop thread. Loopback (-l) always uses the thread\n"
      "     --alloc <how>  where the buffers come from: md - the memory domain's own\n"
      "                    allocator when it has one (sm: shared memory the peer maps;\n"
      "                    as ucx_perftest), else heap (default); heap - page-aligned\n"
      "                    heap memory registered with the md (sm: moved by CMA); from\n"
      "                    one transparent huge page up, huge-page aligned and advised\n"
      "                    MADV_HUGEPAGE, as ucx_perftest's thp allocation; pages - the\n"
      "                    same on base pages, not advised, as the Transfer Engine\n"
      "                    tests' buffers (their --alloc): a ceiling like with like\n"
      "\n"
      "  Output: latency in microseconds (half a round trip for *_lat tests; the time\n"
      "  per posted operation, \"overhead\", for bandwidth tests, timed over batches of\n"
      "  64 operations), bandwidth in MB/s with MB = 2^20 bytes (as ucx_perftest),\n"
      "  message rate in messages per second.\n"
      "  Every test checks the data of its last message; a failed check fails the run.\n"
      "  Exit status: 0 success, 1 the test failed, 2 invalid command line.\n"
      "\n"
      "  Examples:\n"
      "     %s -l -x self -d memory -t am_lat -s 8 -n 100000\n"
      "     server: %s -x tcp -d lo         client: %s 127.0.0.1 -x tcp -d lo -t put_bw -s 1m -D "
      "zcopy\n",
      d.sizes[0], static_cast<unsigned long long>(d.iters),
      static_cast<unsigned long long>(d.warmup), d.window, d.threads, 13337u, d.percentile_rank,
      d.fc_window, prog, prog, prog);
  std::fprintf(out, "\n");
  print_te_help(out);
}

}  // namespace mc::perf

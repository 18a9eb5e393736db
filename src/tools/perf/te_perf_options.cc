// SPDX-License-Identifier: Apache-2.0
// The te_* tests' command line: Mooncake's transfer_engine_bench flags in
// gflags syntax, each mapped onto mc (an option, an MC_* knob) or answered
// with a note of what mc does instead.
#include "tools/perf/te_perf_options.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "ucs/config/parser.h"
#include "ucs/datastruct/json.h"

namespace mc::perf {

namespace {

constexpr int kExitUsage = 2;

enum class Kind { String, Uint, Int, Bool };

// One flag: its kind and what a value does to the options. `apply` returns
// an empty string when the value is good, else why not.
struct Flag {
  Kind kind;
  std::function<std::string(const std::string& value, TeOptions* o)> apply;
};

std::string size_value(const std::string& v, uint64_t min, uint64_t max, uint64_t* out) {
  size_t n = 0;
  if (ucs::config::size_parser(min, max).parse(v, &n) != ucs::Status::Ok) {
    return "expected a number in [" + std::to_string(min) + ", " + std::to_string(max) +
           "] (units k, m, g accepted)";
  }
  *out = n;
  return "";
}

// Mooncake's --nic_priority_matrix file, {"cpu:0": [["mlx5_0"], ["mlx5_1"]],
// ...}, as MC_TOPO_PRIORITY_MATRIX text: cpu:0=mlx5_0|mlx5_1;... Locations
// mc does not have (musa:N) are left out with a note.
std::string matrix_value(const std::string& path, TeOptions* o) {
  std::ifstream in(path);
  if (!in) return "cannot read '" + path + "': " + std::strerror(errno);
  std::stringstream text;
  text << in.rdbuf();
  std::string error;
  ucs::Result<ucs::json::Value> doc = ucs::json::parse(text.str(), &error);
  if (!doc.ok() || !doc->is_object()) {
    return "'" + path + "' is not a JSON object of location: [[preferred NICs], [others]] (" +
           (doc.ok() ? std::string("not an object") : error) + ")";
  }
  auto names = [](const ucs::json::Value& list, std::string* out) {
    for (const ucs::json::Value& nic : list.items()) {
      if (!nic.as_string()) return false;
      *out += (out->empty() ? "" : ",") + *nic.as_string();
    }
    return list.is_array();
  };
  std::string matrix;
  for (const ucs::json::Member& m : doc->members()) {
    const auto& lists = m.value.items();
    std::string preferred, secondary;
    if (!m.value.is_array() || lists.empty() || lists.size() > 2 || !names(lists[0], &preferred) ||
        (lists.size() == 2 && !names(lists[1], &secondary))) {
      return "entry '" + m.key + "' of '" + path +
             "' is not [[preferred NICs], [other NICs]] of strings";
    }
    if (!m.key.starts_with("cpu:") && !m.key.starts_with("cuda:")) {
      o->notes.push_back("--nic_priority_matrix: location '" + m.key +
                         "' left out (mc has cpu:N and cuda:N locations)");
      continue;
    }
    if (preferred.empty() && secondary.empty()) continue;
    matrix += (matrix.empty() ? "" : ";") + m.key + "=" + preferred +
              (secondary.empty() ? "" : "|" + secondary);
  }
  o->env.emplace_back("MC_TOPO_PRIORITY_MATRIX", matrix);
  return "";
}

// Mooncake's protocols: rdma and tcp are mc's rc_* and tcp transports
// (MC_FORCE_HCA, MC_FORCE_TCP); the others name transports mc has not.
std::string protocol_value(const std::string& v, TeOptions* o) {
  if (v == "tcp") {
    o->env.emplace_back("MC_FORCE_TCP", "y");
  } else if (v == "rdma") {
    o->env.emplace_back("MC_FORCE_HCA", "y");
  } else if (v == "barex" || v == "efa" || v == "nvlink" || v == "nvlink_intra" || v == "hip" ||
             v == "ubshmem" || v == "hccl" || v == "ascend_direct") {
    return "mc has no " + v + " transport (rdma or tcp)";
  } else {
    return "expected rdma or tcp";
  }
  o->protocol = v;
  return "";
}

const std::map<std::string, Flag>& flags() {
  static const std::map<std::string, Flag> table = {
      {"batch_size",
       {Kind::Uint, [](const std::string& v,
                       TeOptions* o) { return size_value(v, 1, 1 << 20, &o->batch_size); }}},
      {"block_size",
       {Kind::Uint,
        [](const std::string& v, TeOptions* o) {
          o->block_size_given = true;
          return size_value(v, 1, uint64_t{1} << 32, &o->block_size);
        }}},
      {"iterations",
       {Kind::Uint,
        [](const std::string& v, TeOptions* o) {
          return size_value(v, 1, uint64_t{1} << 32, &o->iterations);
        }}},
      {"buffer_size",
       {Kind::Uint,
        [](const std::string& v, TeOptions* o) {
          return size_value(v, 1, uint64_t{1} << 40, &o->buffer_size);
        }}},
      {"threads",
       {Kind::Uint,
        [](const std::string& v, TeOptions* o) { return size_value(v, 1, 1024, &o->threads); }}},
      {"duration",
       {Kind::Uint,
        [](const std::string& v, TeOptions* o) {
          o->duration_given = true;
          return size_value(v, 1, 86400, &o->duration);
        }}},
      {"metadata_server",
       {Kind::String,
        [](const std::string& v, TeOptions* o) {
          o->metadata_server = v;
          return std::string();
        }}},
      {"segment_id",
       {Kind::String,
        [](const std::string& v, TeOptions* o) {
          o->segment_id = v;
          return std::string();
        }}},
      {"local_server_name",
       {Kind::String,
        [](const std::string& v, TeOptions* o) {
          o->local_server_name = v;
          return std::string();
        }}},
      {"operation",
       {Kind::String,
        [](const std::string& v, TeOptions* o) {
          if (v != "read" && v != "write") return std::string("expected read or write");
          o->operation = v;
          if (o->test != "te_lat") o->test = "te_" + v;
          return std::string();
        }}},
      {"mode",
       {Kind::String,
        [](const std::string& v, TeOptions* o) {
          if (v != "target" && v != "initiator") {
            return std::string("expected target or initiator");
          }
          o->mode = v;
          return std::string();
        }}},
      {"protocol", {Kind::String, protocol_value}},
      {"device_name",
       {Kind::String,
        [](const std::string& v, TeOptions* o) {
          if (v.empty()) return std::string("expected NIC names, e.g. mlx5_0,mlx5_1");
          o->env.emplace_back("MC_IB_DEVICES", v);
          return std::string();
        }}},
      {"nic_priority_matrix", {Kind::String, matrix_value}},
      {"auto_discovery",
       {Kind::Bool,
        [](const std::string&, TeOptions* o) {
          o->notes.push_back(
              "--auto_discovery: mc always discovers the topology (mc_info -T) "
              "and UCP chooses the transports; the flag changes nothing");
          return std::string();
        }}},
      {"report_unit",
       {Kind::String,
        [](const std::string& v, TeOptions* o) {
          if (report_unit_bytes(v) == 0) {
            return std::string("expected GB, GiB, Gb, MB, MiB, Mb, KB, KiB or Kb");
          }
          o->report_unit = v;
          return std::string();
        }}},
      {"report_precision",
       {Kind::Uint, [](const std::string& v,
                       TeOptions* o) { return size_value(v, 0, 17, &o->report_precision); }}},
      {"use_vram",
       {Kind::Bool,
        [](const std::string& v, TeOptions* o) {
          if (v == "true") {
            o->notes.push_back(
                "--use_vram: the te_* tests register host memory (cpu:0) only; no "
                "VRAM is allocated (GPU memory: the UCP tests' -m cuda)");
          }
          return std::string();
        }}},
      {"gpu_id",
       {Kind::Int,
        [](const std::string& v, TeOptions* o) {
          o->notes.push_back("--gpu_id=" + v +
                             ": no GPU buffer is allocated (see --use_vram); ignored");
          return std::string();
        }}},
      {"init_mem",
       {Kind::Bool,
        [](const std::string& v, TeOptions* o) {
          o->init_mem = v == "true";
          return std::string();
        }}},
      {"alloc",
       {Kind::String,
        [](const std::string& v, TeOptions* o) {
          for (Alloc a : {Alloc::Pages, Alloc::Heap}) {
            if (v == alloc_name(a)) {
              o->alloc = a;
              return std::string();
            }
          }
          return std::string("expected pages or heap");
        }}},
      {"warmup_batches",
       {Kind::Uint, [](const std::string& v,
                       TeOptions* o) { return size_value(v, 0, 1 << 20, &o->warmup_batches); }}},
      {"notify",
       {Kind::Bool,
        [](const std::string& v, TeOptions* o) {
          o->notify = v == "true";
          return std::string();
        }}},
      {"notify_rounds",
       {Kind::Uint, [](const std::string& v,
                       TeOptions* o) { return size_value(v, 1, 1 << 20, &o->notify_rounds); }}},
      {"target_offset",
       {Kind::Uint,
        [](const std::string& v, TeOptions* o) {
          return size_value(v, 0, uint64_t{1} << 40, &o->target_offset);
        }}},
      {"backend",
       {Kind::String,
        [](const std::string& v, TeOptions* o) {
          if (v == "tent") {
            o->notes.push_back("--backend=tent: mc has one engine, with the classic API; it runs");
          } else if (v != "classic") {
            return std::string("expected classic or tent");
          }
          return std::string();
        }}},
  };
  return table;
}

int usage_error(const std::string& why) {
  std::fprintf(stderr, "mc_perftest: %s (mc_perftest -h lists the te_* options)\n", why.c_str());
  return kExitUsage;
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "127.0.0.1";
  return name;
}

// gflags' booleans: true, false, 1, 0, yes, no, t, f, y, n (any case).
bool bool_text(const std::string& text, std::string* out) {
  const std::string v = ucs::config::to_lower(text);
  if (v == "true" || v == "1" || v == "yes" || v == "t" || v == "y") {
    *out = "true";
  } else if (v == "false" || v == "0" || v == "no" || v == "f" || v == "n") {
    *out = "false";
  } else {
    return false;
  }
  return true;
}

// "--name=value" / "-name" -> name and, after '=', the value.
// A '-' inside the name is read as '_': the Mooncake document writes
// --auto-discovery for the bench's --auto_discovery.
std::string flag_name(std::string_view arg, std::string_view* value, bool* has_value) {
  arg.remove_prefix(arg.starts_with("--") ? 2 : 1);
  const size_t eq = arg.find('=');
  *has_value = eq != std::string_view::npos;
  if (*has_value) *value = arg.substr(eq + 1);
  std::string name(arg.substr(0, eq));
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

// Checks across flags once all are read; -1 when fine.
int finish(TeOptions* o) {
  if (o->test != "te_write" && o->test != "te_read" && o->test != "te_lat")
    return usage_error("unknown Transfer Engine test '" + o->test +
                       "': te_write, te_read or te_lat");
  if (o->mode.empty()) o->mode = o->segment_id.empty() ? "target" : "initiator";
  if (o->mode == "initiator" && o->segment_id.empty())
    return usage_error("the initiator needs --segment_id (the target prints it)");
  if (o->test == "te_lat" && o->segment_id.find(',') != std::string::npos)
    return usage_error("te_lat times one target: give --segment_id one segment");
  if (o->protocol == "tcp") {
    // As Mooncake's bench: the NIC list and matrix are read for rdma only.
    for (const char* var : {"MC_IB_DEVICES", "MC_TOPO_PRIORITY_MATRIX"}) {
      for (auto it = o->env.begin(); it != o->env.end();) {
        if (it->first == var) {
          o->notes.push_back(
              std::string("--") +
              (it->first == "MC_IB_DEVICES" ? "device_name" : "nic_priority_matrix") +
              " is ignored with --protocol=tcp, as by Mooncake's bench");
          it = o->env.erase(it);
        } else {
          ++it;
        }
      }
    }
  }
  return -1;
}

}  // namespace

double report_unit_bytes(const std::string& unit) {
  static const std::map<std::string, double> units = {
      {"GB", 1e9},     {"GiB", 1073741824.0}, {"Gb", 1e9 / 8}, {"MB", 1e6},    {"MiB", 1048576.0},
      {"Mb", 1e6 / 8}, {"KB", 1e3},           {"KiB", 1024.0}, {"Kb", 1e3 / 8}};
  auto it = units.find(unit);
  return it == units.end() ? 0 : it->second;
}

bool is_te_flag(std::string_view arg) {
  if (!arg.starts_with("-") || arg.size() < 3) return false;
  std::string_view value;
  bool has_value = false;
  const std::string name = flag_name(arg, &value, &has_value);
  // The UCT and UCP tests have it too: it does not make a te command line.
  if (name == "alloc") return false;
  if (flags().count(name)) return true;
  if (name.starts_with("no")) {
    auto it = flags().find(name.substr(2));
    return it != flags().end() && it->second.kind == Kind::Bool;
  }
  return false;
}

int parse_te_options(int argc, char** argv, TeOptions* o) {
  o->local_server_name = host_name();
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help" || arg == "-help") {
      print_te_usage(stdout);
      return 0;
    }
    if (arg == "-t" || (arg.starts_with("-t") && !arg.starts_with("-th"))) {
      // -t TEST or -tTEST, as the other tests; a later --operation overrides it.
      if (arg == "-t" && i + 1 >= argc) return usage_error("-t needs a test name");
      o->test = arg == "-t" ? argv[++i] : arg.substr(2);
      continue;
    }
    if (!arg.starts_with("-") || arg == "-" || arg == "--") {
      return usage_error("unexpected argument '" + arg +
                         "': Transfer Engine tests name the target with --segment_id");
    }
    std::string_view inline_value;
    bool has_value = false;
    std::string name = flag_name(arg, &inline_value, &has_value);
    std::string value(inline_value);
    auto it = flags().find(name);
    if (it == flags().end() && name.starts_with("no") && !has_value) {
      // --noflag: a boolean set to false.
      it = flags().find(name.substr(2));
      if (it != flags().end() && it->second.kind != Kind::Bool) it = flags().end();
      if (it != flags().end()) {
        name = name.substr(2);
        value = "false";
        has_value = true;
      }
    }
    if (it == flags().end()) return usage_error("unknown option '" + arg + "'");
    const Flag& flag = it->second;
    if (flag.kind == Kind::Bool) {
      // gflags: a bare boolean flag is true; it never takes the next argument.
      if (!has_value) value = "true";
      if (!bool_text(value, &value)) {
        return usage_error("invalid --" + name + " '" + std::string(inline_value) +
                           "': expected true or false (or --" + name + ", --no" + name + ")");
      }
    } else if (!has_value) {
      if (i + 1 >= argc) return usage_error("--" + name + " needs a value");
      value = argv[++i];
    }
    if (flag.kind == Kind::Int) {
      int64_t n = 0;
      char* end = nullptr;
      n = std::strtoll(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || n < -1 || n > 1024) {
        return usage_error("invalid --" + name + " '" + value + "': expected an integer >= -1");
      }
    }
    if (const std::string why = flag.apply(value, o); !why.empty()) {
      return usage_error("invalid --" + name + " '" + value + "': " + why);
    }
  }
  return finish(o);
}

void print_te_usage(FILE* out) {
  const TeOptions d;
  std::fprintf(
      out,
      "Transfer Engine tests (te_write, te_read, te_lat): the command line of Mooncake's\n"
      "transfer_engine_bench, in gflags syntax (--flag=v, --flag v, -flag=v, --noflag);\n"
      "any of its flags, e.g. --mode=target, selects these tests without -t.\n"
      "  target:    mc_perftest --mode=target [--local_server_name=<host[:port]>]\n"
      "  initiator: mc_perftest --segment_id=<target's segment> [--operation=write]\n"
      "     -t te_write|te_read        the test; --operation=write|read says the same\n"
      "                                (default: read, as Mooncake's)\n"
      "     -t te_lat                  latency of one transfer: one task per batch, the\n"
      "                                time from submitTransfer to COMPLETED, --iterations\n"
      "                                times for 8 B, 4 KiB and 64 KiB (or --block_size);\n"
      "                                --operation says read or write (read)\n"
      "     --iterations <n>           te_lat: measured transfers per size (%llu), after\n"
      "                                a tenth as many unmeasured ones\n"
      "     --mode <m>                 target or initiator (default: initiator when\n"
      "                                --segment_id is given, else target)\n"
      "     --metadata_server <s>      metadata service (%s; or http://, etcd://, redis://)\n"
      "     --segment_id <name>        the target's segment: its ip:port under\n"
      "                                P2PHANDSHAKE, as the target prints it; (mc's own)\n"
      "                                a comma-separated list: block i of each batch\n"
      "                                goes to segment i mod N (te_write, te_read)\n"
      "     --target_offset <bytes>    (mc's own) the slots start this far into the\n"
      "                                target's buffer (0): initiators sharing a target\n"
      "                                keep their data checks apart\n"
      "     --local_server_name <n>    host[:port] peers reach this engine at (hostname);\n"
      "                                with a metadata server, also the segment name, which\n"
      "                                one engine owns: a second engine of the same name is\n"
      "                                refused, naming the first\n"
      "     --batch_size <n>           requests per batch (%llu)\n"
      "     --block_size <bytes>       bytes per request (%llu)\n"
      "     --threads <n>              submitting threads of the initiator (%llu)\n"
      "     --duration <s>             seconds of the initiator's run (%llu); a target\n"
      "                                given it serves %d s longer, else until killed\n"
      "     --buffer_size <bytes>      the registered buffer (%llu); the target's must\n"
      "                                hold batch_size x threads x block_size\n"
      "     --protocol rdma|tcp        the transport: tcp is MC_FORCE_TCP=y, rdma is\n"
      "                                MC_FORCE_HCA=y (fails without an RDMA device); not\n"
      "                                given: UCP's own selection (MC_TLS). Mooncake's\n"
      "                                other protocols (nvlink, efa, ...) are refused\n"
      "     --device_name <nics>       RDMA NICs to use, comma-separated: MC_IB_DEVICES\n"
      "                                (ignored with --protocol=tcp)\n"
      "     --nic_priority_matrix <f>  Mooncake's JSON matrix file, read into\n"
      "                                MC_TOPO_PRIORITY_MATRIX (ignored with --protocol=tcp)\n"
      "     --report_unit <u>          GB (default), GiB, Gb, MB, MiB, Mb, KB, KiB, Kb: the\n"
      "                                unit of the 'Test completed' line\n"
      "     --report_precision <n>     its decimals (%llu)\n"
      "     --init_mem                 fill the buffers with 0xCC before registering them\n"
      "                                (Mooncake fills its VRAM); default: untouched\n"
      "     --alloc pages|heap         (mc's own) the buffers' pages: pages - base pages,\n"
      "                                not advised, as Mooncake's bench (default); heap -\n"
      "                                huge-page aligned and advised MADV_HUGEPAGE from\n"
      "                                one huge page up, as the UCT and UCP tests' --alloc\n"
      "                                heap\n"
      "     --warmup_batches <n>       (mc's own; te_write, te_read) batches each thread\n"
      "                                runs before the clock starts (%llu): the first one\n"
      "                                touches the target's pages; 0 times it, as\n"
      "                                Mooncake's bench does\n"
      "     --notify                   (mc's own; te_write) after the run, the latency of\n"
      "                                one batch of thread 0's requests written with a\n"
      "                                notification (until the target took it) against\n"
      "                                the same batch without (until it completed),\n"
      "                                alternating, and the difference; percentiles\n"
      "     --notify_rounds <n>        pairs of batches of --notify (%llu)\n"
      "     --auto_discovery, --use_vram, --gpu_id, --backend=classic|tent\n"
      "                                accepted; mc says once on stderr what it does instead\n"
      "                                (it always discovers the topology, registers host\n"
      "                                memory only, has one engine)\n"
      "  The initiator prints Mooncake's line 'Test completed: duration D, batch count N,\n"
      "  throughput X GB/s' (in --report_unit), a summary with the lanes that carried\n"
      "  the transfers, then writes one batch with a fresh pattern, reads it back and\n"
      "  compares it; then, per segment, the time of openSegment, of the first transfer\n"
      "  (the endpoint's set-up) and of a second one, and VmRSS before and after\n"
      "  ('result test=te_setup ...'). te_lat prints p50, p99 and p99.9 in usec per size and one "
      "line\n"
      "  'result test=te_lat op=<op> block=<B> ... p50_us=<v> p99_us=<v> p999_us=<v>'.\n",
      static_cast<unsigned long long>(d.iterations), d.metadata_server.c_str(),
      static_cast<unsigned long long>(d.batch_size), static_cast<unsigned long long>(d.block_size),
      static_cast<unsigned long long>(d.threads), static_cast<unsigned long long>(d.duration),
      kTeTargetSlackS, static_cast<unsigned long long>(d.buffer_size),
      static_cast<unsigned long long>(d.report_precision),
      static_cast<unsigned long long>(d.warmup_batches),
      static_cast<unsigned long long>(d.notify_rounds));
}

}  // namespace mc::perf

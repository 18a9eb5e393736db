// SPDX-License-Identifier: Apache-2.0
// mc_info -b: config.h's HAVE_* results, and how this binary was built.
#include "info_build.h"

#include <string>
#include <utility>
#include <vector>

#include "config.h"
#include "info_json.h"
#include "ucs/module/module_abi.h"
#include "ucs/module/module_loader.h"
#include "uct/base/component_loader.h"

namespace mc::info {

namespace {

// Each optional dependency configure checks (config/m4): HAVE_* in config.h.
struct Feature {
  const char* name;
  bool found;
  const char* enables;
};

#ifdef HAVE_VERBS
constexpr bool kHaveVerbs = true;
#else
constexpr bool kHaveVerbs = false;
#endif
#ifdef HAVE_MLX5DV
constexpr bool kHaveMlx5dv = true;
#else
constexpr bool kHaveMlx5dv = false;
#endif
#ifdef HAVE_CUDA
constexpr bool kHaveCuda = true;
#else
constexpr bool kHaveCuda = false;
#endif
#ifdef HAVE_CUDA_TOOLKIT
constexpr bool kHaveCudaToolkit = true;
#else
constexpr bool kHaveCudaToolkit = false;
#endif
#ifdef HAVE_LIBURING
constexpr bool kHaveLiburing = true;
#else
constexpr bool kHaveLiburing = false;
#endif
#ifdef HAVE_HIREDIS
constexpr bool kHaveHiredis = true;
#else
constexpr bool kHaveHiredis = false;
#endif
#ifdef HAVE_CURL
constexpr bool kHaveCurl = true;
#else
constexpr bool kHaveCurl = false;
#endif
#ifdef HAVE_NUMA
constexpr bool kHaveNuma = true;
#else
constexpr bool kHaveNuma = false;
#endif
#ifdef HAVE_GTEST
constexpr bool kHaveGtest = true;
#else
constexpr bool kHaveGtest = false;
#endif
#ifdef HAVE_BENCHMARK
constexpr bool kHaveBenchmark = true;
#else
constexpr bool kHaveBenchmark = false;
#endif

const Feature kFeatures[] = {
    {"verbs", kHaveVerbs, "rc_verbs transport"},
    {"mlx5dv", kHaveMlx5dv, "rc_mlx5 transport"},
    {"cuda", kHaveCuda, "cuda_copy and cuda_ipc transports, GPU memory types"},
    {"cuda_toolkit", kHaveCudaToolkit, "cuda.h check of the declared driver API, CUDA runtime tests"},
    {"liburing", kHaveLiburing, "nvmeof transport"},
    {"hiredis", kHaveHiredis, "redis metadata backend"},
    {"curl", kHaveCurl, "http and etcd metadata backends"},
    {"numa", kHaveNuma, "NUMA binding"},
    {"gtest", kHaveGtest, "mc_gtest (make check)"},
    {"benchmark", kHaveBenchmark, "mc_bench (make bench)"},
};

}  // namespace

void print_build(bool json, std::ostream& os) {
  const std::vector<std::pair<const char*, std::string>> facts = {
      {"version", PACKAGE_VERSION},
      {"build_kind", MC_BUILD_KIND},
      {"compiler", __VERSION__},
      {"cplusplus", std::to_string(__cplusplus)},
      {"module_abi", std::to_string(MC_MODULE_ABI_VERSION)},
      {"build_tag", MC_MODULE_BUILD_TAG},
  };
  if (!json) {
    os << "# build configuration\n";
    for (const auto& [k, v] : facts) os << "#   " << k << ": " << v << "\n";
    os << "# optional dependencies (configure):\n";
    for (const Feature& f : kFeatures) {
      os << "#   " << f.name << (f.found ? ": found" : ": not found") << " (" << f.enables << ")\n";
    }
    return;
  }
  os << "{";
  JsonList top(os);
  for (const auto& [k, v] : facts) top.key(k) << json_string(v);
  std::ostream& deps = top.key("dependencies");
  deps << "{";
  JsonList list(deps);
  for (const Feature& f : kFeatures) {
    list.key(f.name) << "{\"found\":" << (f.found ? "true" : "false")
                     << ",\"enables\":" << json_string(f.enables) << "}";
  }
  deps << "}";
  os << "}\n";
}

std::vector<LeftOutModule> configure_left_out() {
  // "kind name: reason|kind name: reason" (configure.ac).
  const std::string all = MC_CONFIGURE_LEFT_OUT;
  std::vector<LeftOutModule> out;
  size_t at = 0;
  while (at < all.size()) {
    size_t end = all.find('|', at);
    if (end == std::string::npos) end = all.size();
    const std::string entry = all.substr(at, end - at);
    at = end + 1;
    const size_t space = entry.find(' ');
    const size_t colon = entry.find(": ", space == std::string::npos ? 0 : space);
    if (space == std::string::npos || colon == std::string::npos) continue;
    out.push_back({entry.substr(0, space), entry.substr(space + 1, colon - space - 1),
                   entry.substr(colon + 2)});
  }
  return out;
}

void print_modules_json(std::ostream& os) {
  ucs::ModuleLoader& loader = ucs::ModuleLoader::instance();
  os << "{\"search_path\":[";
  JsonList dirs(os);
  for (const std::string& d : loader.search_path()) dirs.item() << json_string(d);
  os << "],\"modules\":[";
  JsonList list(os);
  for (const ucs::ModuleInfo& m : loader.load_all()) {
    std::ostream& o = list.item();
    o << "{";
    JsonList f(o);
    f.key("kind") << json_string(m.kind);
    f.key("name") << json_string(m.name);
    f.key("path") << json_string(m.path);
    f.key("state") << json_string(ucs::module_state_name(m.state));
    f.key("abi") << m.abi_version;
    f.key("build_tag") << json_string(m.build_tag);
    f.key("version") << json_string(m.version);
    f.key("reason") << json_string(m.reason);
    o << "}";
  }
  for (const LeftOutModule& m : configure_left_out()) {
    std::ostream& o = list.item();
    o << "{";
    JsonList f(o);
    f.key("kind") << json_string(m.kind);
    f.key("name") << json_string(m.name);
    f.key("path") << json_string("");
    f.key("state") << json_string("left out by configure");
    f.key("reason") << json_string(m.reason);
    o << "}";
  }
  os << "],\"unavailable_components\":{";
  JsonList comps(os);
  for (uct::Component* c : uct::load_components()) {
    const std::string why = c->unavailable_reason();
    if (!why.empty()) comps.key(c->name()) << json_string(why);
  }
  os << "}}\n";
}

void print_config_json(const ucs::config::Registry& registry, const ucs::config::Sources& sources,
                       bool full, std::ostream& os) {
  os << "{\"files\":[";
  JsonList files(os);
  for (const std::string& f : sources.files()) files.item() << json_string(f);
  os << "],\"tables\":[";
  JsonList tables(os);
  for (const ucs::config::Table* t : registry.tables()) {
    std::ostream& o = tables.item();
    o << "{\"name\":" << json_string(t->name()) << ",\"knobs\":[";
    JsonList knobs(o);
    for (const ucs::config::Field& f : t->fields()) {
      const std::string name = t->env_name(f);
      const std::optional<ucs::config::SourceValue> v = sources.lookup(name);
      std::ostream& k = knobs.item();
      k << "{\"name\":" << json_string(name)
        << ",\"value\":" << json_string(v ? v->value : f.default_value)
        << ",\"origin\":" << json_string(v ? v->origin : "default")
        << ",\"default\":" << json_string(f.default_value);
      if (full) k << ",\"syntax\":" << json_string(f.syntax) << ",\"doc\":" << json_string(f.doc);
      k << "}";
    }
    o << "]}";
  }
  os << "],\"unknown\":[";
  JsonList unknown(os);
  for (const ucs::config::UnknownVar& u : registry.find_unknown(sources)) {
    unknown.item() << "{\"name\":" << json_string(u.name) << ",\"origin\":" << json_string(u.origin)
                   << ",\"suggestion\":" << json_string(u.suggestion) << "}";
  }
  os << "]}\n";
}

}  // namespace mc::info

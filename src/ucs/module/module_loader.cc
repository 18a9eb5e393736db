// SPDX-License-Identifier: Apache-2.0
// Module discovery, dlopen, ABI checks and the record of every outcome.
#include "ucs/module/module_loader.h"

#include <dirent.h>
#include <dlfcn.h>
#include <link.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>

#include "ucs/config/sources.h"
#include "ucs/log/log.h"
#include "ucs/sys/sys.h"

namespace mc::ucs {

const config::Table& module_config_table() {
  static const config::Table table(
      "module loader", "",
      {config::field("MODULE_DIR", "",
                     "Colon-separated directories searched for modules before the default "
                     "ones (next to libmc_ucs, the build tree, $libdir/mc).",
                     &ModuleConfig::dirs,
                     [] {
                       // The path list is colon-separated, unlike other lists.
                       config::Parser<std::vector<std::string>> p;
                       p.syntax = "a colon-separated list of directories";
                       p.parse = [](std::string_view text, std::vector<std::string>* out) {
                         std::vector<std::string> dirs;
                         for (std::string& d : config::split_list(text, ':')) {
                           if (!d.empty()) dirs.push_back(std::move(d));
                         }
                         *out = std::move(dirs);
                         return Status::Ok;
                       };
                       p.format = [](const std::vector<std::string>& v) {
                         std::string s;
                         for (size_t i = 0; i < v.size(); ++i) s += (i ? ":" : "") + v[i];
                         return s;
                       };
                       return p;
                     }()),
       config::field("MODULES", "all",
                     "Modules to load, by name (tcp) or kind_name (uct_tcp); ^ loads all but "
                     "those.",
                     &ModuleConfig::filter, config::allow_list_parser())});
  return table;
}

const char* module_state_name(ModuleState state) {
  switch (state) {
    case ModuleState::Loaded: return "loaded";
    case ModuleState::Filtered: return "filtered";
    case ModuleState::Shadowed: return "shadowed";
    case ModuleState::OpenFailed: return "open failed";
    case ModuleState::NoEntry: return "no entry symbol";
    case ModuleState::AbiMismatch: return "ABI mismatch";
    case ModuleState::CreateFailed: return "create failed";
  }
  return "?";
}

namespace {

std::string real_path(const char* path) {
  char buf[PATH_MAX];
  return realpath(path, buf) ? std::string(buf) : std::string(path);
}

std::string dir_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// Module files of one kind in `dir`, sorted by name for a stable order.
std::vector<std::pair<std::string, std::string>> list_dir(const std::string& dir,
                                                          std::string_view kind) {
  std::vector<std::pair<std::string, std::string>> found;  // (name, path)
  DIR* d = opendir(dir.c_str());
  if (!d) return found;
  const std::string prefix = "libmc_" + std::string(kind) + "_";
  while (dirent* e = readdir(d)) {
    const std::string file = e->d_name;
    if (file.size() > prefix.size() + 3 && file.rfind(prefix, 0) == 0 &&
        file.compare(file.size() - 3, 3, ".so") == 0) {
      found.emplace_back(file.substr(prefix.size(), file.size() - prefix.size() - 3),
                         dir + "/" + file);
    }
  }
  closedir(d);
  std::sort(found.begin(), found.end());
  return found;
}

bool filter_allows(const config::AllowList& filter, std::string_view kind,
                   const std::string& name) {
  const std::string qualified = std::string(kind) + "_" + name;
  const bool listed =
      std::find(filter.items.begin(), filter.items.end(), name) != filter.items.end() ||
      std::find(filter.items.begin(), filter.items.end(), qualified) != filter.items.end();
  return filter.negate ? !listed : listed;
}

// Fills `info` from the module's descriptor, or says why it is refused.
bool check_desc(const mc_module_desc_t* desc, std::string_view kind, uint32_t kind_version,
                ModuleInfo* info) {
  info->abi_version = desc->abi_version;
  if (desc->abi_version != MC_MODULE_ABI_VERSION) {
    info->state = ModuleState::AbiMismatch;
    info->reason = "built for module ABI " + std::to_string(desc->abi_version) +
                   ", this mc runs module ABI " + std::to_string(MC_MODULE_ABI_VERSION);
    return false;
  }
  if (desc->struct_size != sizeof(mc_module_desc_t)) {
    info->state = ModuleState::AbiMismatch;
    info->reason = "descriptor size " + std::to_string(desc->struct_size) + ", expected " +
                   std::to_string(sizeof(mc_module_desc_t));
    return false;
  }
  info->build_tag = desc->build_tag ? desc->build_tag : "";
  info->version = desc->version ? desc->version : "";
  info->kind_version = desc->kind_version;
  if (info->build_tag != MC_MODULE_BUILD_TAG) {
    info->state = ModuleState::AbiMismatch;
    info->reason = "built with tag '" + info->build_tag + "', this mc has '" +
                   MC_MODULE_BUILD_TAG + "'";
    return false;
  }
  if (!desc->kind || !desc->name || kind != desc->kind || info->name != desc->name) {
    info->state = ModuleState::AbiMismatch;
    info->reason = std::string("declares ") + (desc->kind ? desc->kind : "(null)") + "/" +
                   (desc->name ? desc->name : "(null)") + " but its file name says " +
                   std::string(kind) + "/" + info->name;
    return false;
  }
  if (kind_version != 0 && desc->kind_version != kind_version) {
    info->state = ModuleState::AbiMismatch;
    info->reason = "built for " + std::string(kind) + " interface version " +
                   std::to_string(desc->kind_version) + ", this mc has version " +
                   std::to_string(kind_version);
    return false;
  }
  if (!desc->create || !desc->destroy) {
    info->state = ModuleState::AbiMismatch;
    info->reason = "descriptor has no create or destroy function";
    return false;
  }
  return true;
}

std::vector<std::string> default_dirs(const std::vector<std::string>& user_dirs) {
  std::vector<std::string> dirs = user_dirs;
  const std::string lib = ucs_library_path();
  if (!lib.empty()) dirs.push_back(dir_name(lib) + "/mc");
  // From the build tree, libmc_ucs lives in src/ucs/.libs; modules are
  // linked into $(top_builddir)/modules.
  const std::string build_tree = real_path(MC_BUILD_TREE);
  if (!lib.empty() && lib.rfind(build_tree + "/", 0) == 0) dirs.push_back(build_tree + "/modules");
  dirs.push_back(MC_INSTALLED_MODULE_DIR);
  std::vector<std::string> unique;
  for (std::string& d : dirs) {
    if (std::find(unique.begin(), unique.end(), d) == unique.end()) unique.push_back(std::move(d));
  }
  return unique;
}

}  // namespace

ModuleLoader& ModuleLoader::instance() {
  // Leaked on purpose: module objects stay valid until the process exits.
  static ModuleLoader* loader = [] {
    ModuleConfig cfg{{}, config::AllowList{}};
    std::string error;
    Result<config::Sources> sources = config::Sources::from_process(&error);
    if (sources.ok()) {
      Result<ModuleConfig> read = config::read_table<ModuleConfig>(module_config_table(), *sources);
      if (read.ok()) cfg = std::move(*read);
      for (const std::string& dir : cfg.dirs) {
        struct stat st{};
        const bool found = stat(dir.c_str(), &st) == 0;
        if (!found || !S_ISDIR(st.st_mode)) {
          MC_LOG(warn) << "MC_MODULE_DIR names '" << dir << "': "
                       << (found ? std::string("not a directory") : errno_string(errno))
                       << "; no module is loaded from it";
        }
      }
    } else {
      MC_LOG(error) << error;
    }
    const std::vector<std::string> copies = loaded_ucs_copies();
    if (copies.size() > 1) {
      std::string list;
      for (const std::string& c : copies) list += " " + c;
      MC_LOG(error) << copies.size() << " copies of libmc_ucs are loaded in this process:" << list
                    << "; modules and the application may use different copies. Use one build.";
    }
    return new ModuleLoader(default_dirs(cfg.dirs), cfg.filter);
  }();
  return *loader;
}

ModuleLoader::ModuleLoader(std::vector<std::string> dirs, config::AllowList filter)
    : dirs_(std::move(dirs)), filter_(std::move(filter)) {}

ModuleLoader::~ModuleLoader() {
  for (auto& [object, desc] : created_) desc->destroy(object);
}

ModuleInfo ModuleLoader::load_file(const std::string& path, std::string_view kind,
                                   std::string name, uint32_t kind_version) {
  ModuleInfo info;
  info.kind = std::string(kind);
  info.name = std::move(name);
  info.path = path;
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!handle) {
    const char* err = dlerror();
    info.state = ModuleState::OpenFailed;
    info.reason = err ? err : "dlopen failed";
    return info;
  }
  auto entry = reinterpret_cast<mc_module_entry_fn_t>(dlsym(handle, MC_MODULE_ENTRY_SYMBOL));
  const mc_module_desc_t* desc = entry ? entry() : nullptr;
  if (!desc) {
    info.state = ModuleState::NoEntry;
    info.reason = entry ? std::string(MC_MODULE_ENTRY_SYMBOL) + "() returned null"
                        : std::string("no symbol ") + MC_MODULE_ENTRY_SYMBOL +
                              " (not an mc module, or built without MC_MODULE_DEFINE)";
    dlclose(handle);
    return info;
  }
  if (!check_desc(desc, kind, kind_version, &info)) {
    dlclose(handle);
    return info;
  }
  char err[512] = {};
  void* object = nullptr;
  if (desc->create(&object, err, sizeof(err) - 1) != 0 || !object) {
    info.state = ModuleState::CreateFailed;
    info.reason = err[0] ? err : "create() failed without a reason";
    return info;
  }
  info.state = ModuleState::Loaded;
  info.object = object;
  created_.emplace_back(object, desc);
  return info;
}

std::vector<ModuleInfo> ModuleLoader::load(std::string_view kind, uint32_t kind_version) {
  std::lock_guard guard(lock_);
  if (std::find(loaded_kinds_.begin(), loaded_kinds_.end(), kind) == loaded_kinds_.end()) {
    loaded_kinds_.emplace_back(kind);
    std::vector<std::pair<std::string, std::string>> seen;  // (name, path)
    for (const std::string& dir : dirs_) {
      for (auto& entry : list_dir(dir, kind)) {
        // Not a structured binding: clang 14 cannot capture those in a lambda.
        const std::string& name = entry.first;
        const std::string& path = entry.second;
        ModuleInfo info;
        auto earlier = std::find_if(seen.begin(), seen.end(),
                                    [&](const auto& s) { return s.first == name; });
        if (earlier != seen.end()) {
          info = ModuleInfo{std::string(kind), name, path, ModuleState::Shadowed,
                            "shadowed by " + earlier->second};
        } else if (!filter_allows(filter_, kind, name)) {
          info = ModuleInfo{std::string(kind), name, path, ModuleState::Filtered,
                            "excluded by MC_MODULES"};
        } else {
          seen.emplace_back(name, path);
          info = load_file(path, kind, name, kind_version);
          if (info.state == ModuleState::Loaded) {
            MC_LOG(debug) << "loaded module " << kind << "/" << name << " from " << path;
          } else {
            MC_LOG(warn) << "module " << kind << "/" << name << " (" << path
                         << ") not loaded: " << module_state_name(info.state) << ": "
                         << info.reason;
          }
        }
        infos_.push_back(std::move(info));
      }
    }
  }
  std::vector<ModuleInfo> out;
  for (const ModuleInfo& i : infos_) {
    if (i.kind == kind) out.push_back(i);
  }
  return out;
}

std::vector<ModuleInfo> ModuleLoader::load_all() {
  std::vector<std::string> kinds;
  for (const std::string& dir : dirs_) {
    DIR* d = opendir(dir.c_str());
    if (!d) continue;
    while (dirent* e = readdir(d)) {
      const std::string file = e->d_name;
      const size_t sep = file.find('_', 6);
      if (file.rfind("libmc_", 0) == 0 && sep != std::string::npos && file.size() > 3 &&
          file.compare(file.size() - 3, 3, ".so") == 0) {
        std::string kind = file.substr(6, sep - 6);
        if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(kind);
      }
    }
    closedir(d);
  }
  std::sort(kinds.begin(), kinds.end());
  for (const std::string& kind : kinds) load(kind);
  return modules();
}

std::vector<ModuleInfo> ModuleLoader::modules() const {
  std::lock_guard guard(lock_);
  return infos_;
}

std::string ucs_library_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&ucs_library_path), &info) == 0 || !info.dli_fname) {
    return {};
  }
  return real_path(info.dli_fname);
}

std::vector<std::string> loaded_ucs_copies() {
  std::vector<std::string> copies;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* out = static_cast<std::vector<std::string>*>(data);
        const char* name = info->dlpi_name;
        if (!name || !*name) return 0;
        const char* base = std::strrchr(name, '/');
        base = base ? base + 1 : name;
        if (std::strncmp(base, "libmc_ucs.so", 12) == 0) {
          std::string path = real_path(name);
          if (std::find(out->begin(), out->end(), path) == out->end()) out->push_back(path);
        }
        return 0;
      },
      &copies);
  return copies;
}

}  // namespace mc::ucs

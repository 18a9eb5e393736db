// SPDX-License-Identifier: Apache-2.0
// The module loader: finds libmc_<kind>_<name>.so files, dlopens them, checks
// their ABI, creates their objects, and remembers every outcome for mc_info.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "ucs/config/parser.h"
#include "ucs/config/table.h"
#include "ucs/module/module_abi.h"
#include "ucs/status/status.h"

namespace mc::ucs {

/// The knobs of the loader: MC_MODULE_DIR, MC_MODULES.
struct ModuleConfig {
  std::vector<std::string> dirs;  ///< searched first, in order
  config::AllowList filter;       ///< by "<kind>_<name>" or "<name>"
};

const config::Table& module_config_table();

/// What happened to one module file.
enum class ModuleState {
  Loaded,        ///< opened, checked and its object created
  Filtered,      ///< skipped because MC_MODULES excludes it
  Shadowed,      ///< a module of the same kind and name was found earlier
  OpenFailed,    ///< dlopen failed (the dlerror text says why)
  NoEntry,       ///< the entry symbol is missing
  AbiMismatch,   ///< ABI version, struct size or build tag differ
  CreateFailed,  ///< the module's create() refused
};

const char* module_state_name(ModuleState state);

struct ModuleInfo {
  std::string kind;
  std::string name;
  std::string path;
  ModuleState state = ModuleState::OpenFailed;
  std::string reason;       ///< empty when loaded
  uint32_t abi_version = 0;
  std::string build_tag;
  std::string version;
  uint32_t kind_version = 0;
  void* object = nullptr;   ///< what create() returned, when loaded
};

/// Loads modules once per kind and keeps them for the life of the process.
/// Thread-safe.
class ModuleLoader {
 public:
  /// Search path: MC_MODULE_DIR entries, then <dir of libmc_ucs>/mc, then the
  /// build tree's modules/ when libmc_ucs runs from it, then the installed
  /// $libdir/mc.
  static ModuleLoader& instance();

  /// A loader with an explicit search path and filter (tests).
  ModuleLoader(std::vector<std::string> dirs, config::AllowList filter);
  ~ModuleLoader();
  ModuleLoader(const ModuleLoader&) = delete;
  ModuleLoader& operator=(const ModuleLoader&) = delete;

  /// Loads every module of `kind` on the first call; later calls return the
  /// same outcomes. A module that fails is reported once, at warn level, with
  /// its reason, and the others load regardless. A non-zero `kind_version`
  /// refuses, before create(), modules built for another version of the
  /// kind's interface (the first call for a kind decides).
  std::vector<ModuleInfo> load(std::string_view kind, uint32_t kind_version = 0);

  /// Loads every kind found in the search path (file names libmc_<kind>_*.so)
  /// and returns every outcome (mc_info -m).
  std::vector<ModuleInfo> load_all();

  /// Every outcome so far, all kinds.
  std::vector<ModuleInfo> modules() const;

  const std::vector<std::string>& search_path() const { return dirs_; }

 private:
  ModuleInfo load_file(const std::string& path, std::string_view kind, std::string name,
                       uint32_t kind_version);

  std::vector<std::string> dirs_;
  config::AllowList filter_;
  mutable std::mutex lock_;  // guards infos_ and loaded_kinds_
  std::vector<ModuleInfo> infos_;
  std::vector<std::string> loaded_kinds_;
  std::vector<std::pair<void*, const mc_module_desc_t*>> created_;
};

/// Every copy of libmc_ucs in this process, by real path. More than one means
/// two builds are mixed (installed and build tree): modules may bind to one
/// copy while the application uses the other. Empty when this cannot be told.
std::vector<std::string> loaded_ucs_copies();

/// The real path of this copy of libmc_ucs.
std::string ucs_library_path();

}  // namespace mc::ucs

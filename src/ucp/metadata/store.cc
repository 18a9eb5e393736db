// SPDX-License-Identifier: Apache-2.0
// Picking a metadata backend for a connection string: the shape names the
// backend, the loaded modules of kind "metadata" provide it.
#include "ucp/metadata/store.h"

#include <mutex>

#include "ucp/metadata/config.h"
#include "ucs/config/parser.h"
#include "ucs/log/log.h"
#include "ucs/module/module_loader.h"

namespace mc::metadata {

namespace {

// "host:port" with a port of digits only.
bool is_host_port(std::string_view item) {
  const size_t colon = item.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == item.size()) return false;
  for (size_t i = colon + 1; i < item.size(); ++i) {
    if (item[i] < '0' || item[i] > '9') return false;
  }
  return item.find('/') == std::string_view::npos;
}

std::vector<ucs::ModuleInfo> load_modules() {
  std::vector<ucs::ModuleInfo> infos =
      ucs::ModuleLoader::instance().load("metadata", kStoreApiVersion);
  static std::once_flag registered;
  std::call_once(registered, [&infos] {
    for (const ucs::ModuleInfo& m : infos) {
      if (m.state != ucs::ModuleState::Loaded) continue;
      static_cast<StoreFactory*>(m.object)->register_config(ucs::config::Registry::instance());
    }
  });
  return infos;
}

std::string search_path_text() {
  std::string text;
  for (const std::string& dir : ucs::ModuleLoader::instance().search_path()) {
    text += (text.empty() ? "" : ":") + dir;
  }
  return text.empty() ? "(empty)" : text;
}

}  // namespace

bool is_p2p(const std::string& conn) {
  return ucs::config::to_lower(ucs::config::trim(conn)) == "p2phandshake";
}

std::string backend_of(const std::string& conn) {
  const std::string lower = ucs::config::to_lower(ucs::config::trim(conn));
  if (lower.starts_with("http://") || lower.starts_with("https://")) return "http";
  if (lower.starts_with("etcd://")) return "etcd";
  if (lower.starts_with("redis://")) return "redis";
  if (lower.empty() || lower.find("://") != std::string::npos) return "";
  for (const std::string& item : ucs::config::split_list(lower)) {
    if (!is_host_port(item)) return "";
  }
  return "etcd";
}

std::vector<StoreFactory*> load_store_factories() {
  std::vector<StoreFactory*> factories;
  for (const ucs::ModuleInfo& m : load_modules()) {
    if (m.state == ucs::ModuleState::Loaded) {
      factories.push_back(static_cast<StoreFactory*>(m.object));
    }
  }
  return factories;
}

void register_metadata_config_tables(ucs::config::Registry& registry) {
  registry.add<MetadataConfig>(metadata_config_table());
  (void)load_store_factories();
}

Result<std::unique_ptr<Store>> open_store(const std::string& conn, const StoreOptions& options,
                                          std::string* error) {
  auto fail = [&](Status status, const std::string& why) {
    MC_LOG(error) << why;
    if (error) *error = why;
    return status;
  };
  if (is_p2p(conn)) {
    return fail(Status::InvalidParam,
                "metadata: P2PHANDSHAKE has no store: peers are asked directly");
  }
  const std::vector<ucs::ModuleInfo> infos = load_modules();
  for (const ucs::ModuleInfo& m : infos) {
    if (m.state != ucs::ModuleState::Loaded) continue;
    auto* factory = static_cast<StoreFactory*>(m.object);
    if (!factory->accepts(conn)) continue;
    std::string why;
    Result<std::unique_ptr<Store>> store = factory->open(conn, options, &why);
    if (!store.ok()) {
      // The backend names the URL and the cause; it logged already.
      if (error) *error = why.empty() ? conn + ": " + ucs::status_string(store.status()) : why;
      return store.status();
    }
    MC_LOG(debug) << "metadata: " << (*store)->url() << " opened by backend " << factory->name();
    return store;
  }
  const std::string backend = backend_of(conn);
  if (backend.empty()) {
    return fail(Status::InvalidParam,
                "metadata: \"" + conn +
                    "\" is not a metadata connection string (expected P2PHANDSHAKE, "
                    "http://host:port/path, etcd://host:port[,host:port], host:port or "
                    "redis://[:password@]host:port[/db])");
  }
  for (const ucs::ModuleInfo& m : infos) {
    if (m.name == backend) {
      return fail(Status::Unsupported, "metadata: the " + backend + " backend for \"" + conn +
                                           "\" did not load: " + m.path + ": " +
                                           ucs::module_state_name(m.state) + ": " + m.reason);
    }
  }
  return fail(Status::Unsupported, "metadata: the " + backend + " backend for \"" + conn +
                                       "\" is not available: no " + "libmc_metadata_" + backend +
                                       ".so in the module path " + search_path_text());
}

}  // namespace mc::metadata

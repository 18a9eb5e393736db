// SPDX-License-Identifier: Apache-2.0
// How a metadata backend module exports its StoreFactory: one macro, one C
// symbol (modelled on uct/api/module.h).
#pragma once

#include <cstdio>
#include <exception>

#include "ucp/metadata/store.h"
#include "ucs/module/module_abi.h"

namespace mc::metadata::detail {

/// Makes a factory, turning any exception into an error string: nothing may
/// cross the module boundary as an exception.
template <typename FactoryT>
int create_factory(void** object, char* err, size_t err_len) {
  try {
    *object = static_cast<StoreFactory*>(new FactoryT());
    return 0;
  } catch (const std::exception& e) {
    std::snprintf(err, err_len, "store factory constructor threw: %s", e.what());
  } catch (...) {
    std::snprintf(err, err_len, "store factory constructor threw an unknown exception");
  }
  *object = nullptr;
  return -1;
}

inline void destroy_factory(void* object) {
  delete static_cast<StoreFactory*>(object);
}

}  // namespace mc::metadata::detail

/// Defines the entry symbol of a metadata module whose factory class is
/// `FactoryT` (default-constructible). The module file must be named
/// libmc_metadata_<name>.so: MC_METADATA_MODULE_DEFINE("etcd", "1.0", EtcdFactory)
#define MC_METADATA_MODULE_DEFINE(name_, version_, FactoryT)                      \
  MC_MODULE_DEFINE("metadata", name_, version_, ::mc::metadata::kStoreApiVersion, \
                   ::mc::metadata::detail::create_factory<FactoryT>,              \
                   ::mc::metadata::detail::destroy_factory)

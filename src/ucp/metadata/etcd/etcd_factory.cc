// SPDX-License-Identifier: Apache-2.0
// The etcd module's entry: the factory for etcd://... and bare host:port lists.
#include "ucp/metadata/curl_client.h"
#include "ucp/metadata/etcd/etcd_store.h"
#include "ucp/metadata/module.h"

namespace mc::metadata::etcd {

namespace {

class EtcdFactory final : public StoreFactory {
 public:
  EtcdFactory() { curl_init_once(); }
  const char* name() const override { return "etcd"; }
  bool accepts(const std::string& conn) const override { return backend_of(conn) == "etcd"; }
  Result<std::unique_ptr<Store>> open(const std::string& conn, const StoreOptions& options,
                                      std::string* error) override {
    std::string why;
    Result<std::unique_ptr<EtcdStore>> store = EtcdStore::open(conn, options, &why);
    if (!store.ok()) {
      if (error) *error = why;
      return store.status();
    }
    return std::unique_ptr<Store>(std::move(*store));
  }
};

}  // namespace

}  // namespace mc::metadata::etcd

MC_METADATA_MODULE_DEFINE("etcd", "1.0", ::mc::metadata::etcd::EtcdFactory)

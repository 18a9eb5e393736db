// SPDX-License-Identifier: Apache-2.0
// The cuda_ipc component and the module's entry symbol. Without a device or
// a driver the module still loads: it offers no memory domain and says why.
#include "uct/api/module.h"
#include "uct/cuda/base/cu_probe.h"
#include "uct/cuda/base/cuda_driver_config.h"
#include "uct/cuda/cuda_ipc/cuda_ipc_md.h"

namespace mc::uct::cuda {

class CudaIpcComponent : public Component {
 public:
  const std::string& name() const override { return name_; }

  std::vector<std::string> md_names() const override {
    if (!probe_(nullptr, nullptr)) return {};
    return {name_};
  }

  std::string unavailable_reason() const override {
    std::string why;
    return probe_(nullptr, &why) ? "" : why;
  }

  Result<std::unique_ptr<MemoryDomain>> md_open(const std::string& md_name,
                                                const ucs::config::Sources& sources) override {
    if (md_name != name_) return Status::NoElem;
    const CuDriver* driver = probe_(&sources, nullptr);
    if (!driver) return Status::NoDevice;
    MC_ASSIGN_OR_RETURN(CudaIpcConfig config,
                        ucs::config::read_table<CudaIpcConfig>(cuda_ipc_config_table(), sources));
    MC_ASSIGN_OR_RETURN(std::unique_ptr<CudaIpcMd> md, CudaIpcMd::create(driver, config));
    return std::unique_ptr<MemoryDomain>(std::move(md));
  }

  void register_config(ucs::config::Registry& registry) const override {
    registry.add<CudaIpcConfig>(cuda_ipc_config_table());
    registry.add<CudaDriverConfig>(cuda_driver_config_table());
  }

 private:
  const std::string name_ = "cuda_ipc";
  const CuProbe probe_{name_};  // the driver, or why not
};

}  // namespace mc::uct::cuda

MC_UCT_MODULE_DEFINE("cuda_ipc", "1.0", mc::uct::cuda::CudaIpcComponent)

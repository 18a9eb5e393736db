// SPDX-License-Identifier: Apache-2.0
// The cuda_copy component and the module's entry symbol. Without a device or
// a driver the module still loads: it offers no memory domain and says why.
#include <cuda_runtime.h>

#include <mutex>

#include "ucs/log/log.h"
#include "uct/api/module.h"
#include "uct/cuda/cuda_copy/cuda_copy_md.h"

namespace mc::uct::cuda {

class CudaCopyComponent : public Component {
 public:
  const std::string& name() const override { return name_; }

  std::vector<std::string> md_names() const override {
    probe();
    if (!reason_.empty()) return {};
    return {name_};
  }

  std::string unavailable_reason() const override {
    probe();
    return reason_;
  }

  Result<std::unique_ptr<MemoryDomain>> md_open(const std::string& md_name,
                                                const ucs::config::Sources& sources) override {
    if (md_name != name_) return Status::NoElem;
    probe();
    if (!reason_.empty()) return Status::NoDevice;
    MC_ASSIGN_OR_RETURN(CudaCopyConfig config,
                        ucs::config::read_table<CudaCopyConfig>(cuda_copy_config_table(), sources));
    return std::unique_ptr<MemoryDomain>(new CudaCopyMd(config));
  }

  void register_config(ucs::config::Registry& registry) const override {
    registry.add<CudaCopyConfig>(cuda_copy_config_table());
  }

 private:
  // The driver is asked once, on first use rather than at load time, so
  // programs that never look at CUDA do not initialise it.
  void probe() const {
    std::call_once(probed_, [this] {
      int count = 0;
      const cudaError_t e = cudaGetDeviceCount(&count);
      if (e != cudaSuccess) {
        (void)cudaGetLastError();
        reason_ = "no CUDA device: " + cuda_error_string(e);
      } else if (count == 0) {
        reason_ = "no CUDA device: cudaGetDeviceCount found none";
      }
      if (!reason_.empty()) MC_LOG(info) << "cuda_copy: " << reason_;
    });
  }

  const std::string name_ = "cuda_copy";
  mutable std::once_flag probed_;
  mutable std::string reason_;
};

}  // namespace mc::uct::cuda

MC_UCT_MODULE_DEFINE("cuda", "1.0", mc::uct::cuda::CudaCopyComponent)

// SPDX-License-Identifier: Apache-2.0
// cuda_ipc iface: GPU to GPU copies between processes of one host, on
// streams (base/cu_streams.h), into and out of a peer's allocation mapped by
// the md. Addresses:
//   device address: u64 boot id hash | u8 count | count x 16-byte GPU UUID
//   iface address:  u32 pid | u32 zero
// A peer is reachable when it is on this host, in another process, and one
// of its GPUs is a GPU of this process or reached by peer access (the same
// GPU in two processes included).
#pragma once

#include <memory>

#include "uct/api/iface.h"
#include "uct/base/op_counter.h"
#include "uct/cuda/base/cu_streams.h"
#include "uct/cuda/cuda_ipc/cuda_ipc_md.h"

namespace mc::uct::cuda {

class CudaIpcIface : public Iface {
 public:
  static Result<std::unique_ptr<Iface>> create(CudaIpcMd* md);

  IfaceAttr query() const override;
  unsigned progress() override;
  std::vector<uint8_t> device_address() const override;
  std::vector<uint8_t> iface_address() const override;
  bool is_reachable(std::span<const uint8_t> device_addr, std::span<const uint8_t> iface_addr,
                    std::string* reason) const override;
  Result<std::unique_ptr<Endpoint>> ep_create(std::span<const uint8_t> device_addr,
                                              std::span<const uint8_t> iface_addr) override;
  Status flush(Completion* comp) override { return ops_->flush(comp); }

  /// Posts `pieces` on `device`; `done` from progress().
  Status post(const std::vector<CuStreams::Piece>& pieces, int device, CuStreams::Done done);

  CudaIpcMd& ipc_md() const { return *md_; }

 private:
  explicit CudaIpcIface(CudaIpcMd* md);

  CudaIpcMd* md_;
  CuStreams streams_;
  std::shared_ptr<OpCounter> ops_ = std::make_shared<OpCounter>();
};

}  // namespace mc::uct::cuda

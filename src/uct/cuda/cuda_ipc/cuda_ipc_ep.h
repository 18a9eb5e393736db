// SPDX-License-Identifier: Apache-2.0
// cuda_ipc endpoint: put and get by zero-copy between local GPU memory and
// a peer's allocation mapped in this process, checked against the rkey's
// registered range and access, and refused once the mapping is stale.
#pragma once

#include "uct/api/ep.h"
#include "uct/cuda/cuda_ipc/cuda_ipc_iface.h"

namespace mc::uct::cuda {

class CudaIpcEp : public Endpoint {
 public:
  explicit CudaIpcEp(CudaIpcIface* iface) : iface_(iface) {}

  Status put_zcopy(const Iov* iov, size_t iov_count, uint64_t remote_addr, const Rkey& rkey,
                   Completion* comp) override;
  Status get_zcopy(const Iov* iov, size_t iov_count, uint64_t remote_addr, const Rkey& rkey,
                   Completion* comp) override;
  Status flush(Completion* comp) override { return ops_->flush(comp); }

 private:
  Status zcopy(bool put, const Iov* iov, size_t iov_count, uint64_t remote_addr, const Rkey& rkey,
               Completion* comp);

  CudaIpcIface* iface_;
  std::shared_ptr<OpCounter> ops_ = std::make_shared<OpCounter>();
};

}  // namespace mc::uct::cuda

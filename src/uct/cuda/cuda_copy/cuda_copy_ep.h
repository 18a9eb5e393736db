// SPDX-License-Identifier: Apache-2.0
// cuda_copy endpoint: puts and gets between local memory and a registered
// region of this process (host, device or managed), checked by its rkey.
#pragma once

#include <memory>

#include "uct/api/ep.h"
#include "uct/base/op_counter.h"
#include "uct/cuda/cuda_copy/cuda_copy_iface.h"

namespace mc::uct::cuda {

class CudaCopyEp : public Endpoint {
 public:
  explicit CudaCopyEp(CudaCopyIface* iface) : iface_(iface) {}

  Status put_short(const void* buffer, size_t length, uint64_t remote_addr,
                   const Rkey& rkey) override;
  Result<size_t> put_bcopy(PackCallback pack, void* arg, uint64_t remote_addr,
                           const Rkey& rkey) override;
  Status put_zcopy(const Iov* iov, size_t iov_count, uint64_t remote_addr, const Rkey& rkey,
                   Completion* comp) override;
  Status get_bcopy(UnpackCallback unpack, void* arg, size_t length, uint64_t remote_addr,
                   const Rkey& rkey, Completion* comp) override;
  Status get_zcopy(const Iov* iov, size_t iov_count, uint64_t remote_addr, const Rkey& rkey,
                   Completion* comp) override;
  Status flush(Completion* comp) override { return ops_->flush(comp); }

 private:
  /// The checked rkey of [remote_addr, +length) for `access`, or null (logged).
  const CudaCopyRkey* checked(const Rkey& rkey, uint64_t remote_addr, size_t length,
                              unsigned access) const;
  /// A bounce-buffer copy of `length` bytes: put when `put`, else get.
  Status bounce_copy(bool put, void* bounce, size_t length, uint64_t remote_addr,
                     const CudaCopyRkey& key, CudaCopyIface::Done done);
  Status zcopy(bool put, const Iov* iov, size_t iov_count, uint64_t remote_addr, const Rkey& rkey,
               Completion* comp);

  CudaCopyIface* iface_;
  std::shared_ptr<OpCounter> ops_ = std::make_shared<OpCounter>();
};

}  // namespace mc::uct::cuda

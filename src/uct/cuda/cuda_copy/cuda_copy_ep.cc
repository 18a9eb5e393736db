// SPDX-License-Identifier: Apache-2.0
// cuda_copy endpoint operations.
#include "uct/cuda/cuda_copy/cuda_copy_ep.h"

#include <cstring>

#include "ucs/log/log.h"

namespace mc::uct::cuda {

const CudaCopyRkey* CudaCopyEp::checked(const Rkey& rkey, uint64_t remote_addr, size_t length,
                                        unsigned access) const {
  const auto* key = dynamic_cast<const CudaCopyRkey*>(&rkey);
  if (!key) {
    MC_LOG(error) << "cuda_copy: the rkey was not unpacked by a cuda_copy memory domain";
    return nullptr;
  }
  return iface_->cuda_md().check_access(*key, remote_addr, length, access) == Status::Ok ? key
                                                                                         : nullptr;
}

Status CudaCopyEp::bounce_copy(bool put, void* bounce, size_t length, uint64_t remote_addr,
                               const CudaCopyRkey& key, CudaCopyIface::Done done) {
  void* remote = reinterpret_cast<void*>(remote_addr);
  const std::vector<CudaCopyIface::Piece> pieces{
      put ? CudaCopyIface::Piece{remote, bounce, length}
          : CudaCopyIface::Piece{bounce, remote, length}};
  const int device = iface_->copy_device(key.region.info, MemTypeInfo{MemType::Host, -1});
  CudaCopyIface* iface = iface_;
  auto ops = ops_;
  const Status s = iface_->post(pieces, device, [iface, bounce, ops, done](Status st) {
    if (done) done(st);
    iface->bounce_put(bounce);
    ops->done();
  });
  if (s != Status::InProgress) {
    iface_->bounce_put(bounce);
    return s;
  }
  ++ops_->outstanding;
  return Status::InProgress;
}

Status CudaCopyEp::put_short(const void* buffer, size_t length, uint64_t remote_addr,
                             const Rkey& rkey) {
  if (length > iface_->config().seg_size) return Status::InvalidParam;
  const CudaCopyRkey* key = checked(rkey, remote_addr, length, kAccessRemoteWrite);
  if (!key) return Status::InvalidParam;
  if (length == 0) return Status::Ok;
  if (!iface_->has_room()) return Status::NoResource;
  void* bounce = iface_->bounce_get();
  if (!bounce) return Status::NoResource;
  std::memcpy(bounce, buffer, length);
  const Status s = bounce_copy(true, bounce, length, remote_addr, *key, nullptr);
  return s == Status::InProgress ? Status::Ok : s;  // the source is free to reuse
}

Result<size_t> CudaCopyEp::put_bcopy(PackCallback pack, void* arg, uint64_t remote_addr,
                                     const Rkey& rkey) {
  if (!iface_->has_room()) return Status::NoResource;
  void* bounce = iface_->bounce_get();
  if (!bounce) return Status::NoResource;
  const size_t length = pack(bounce, arg);
  const CudaCopyRkey* key = length <= iface_->config().seg_size
                                ? checked(rkey, remote_addr, length, kAccessRemoteWrite)
                                : nullptr;
  if (!key || length == 0) {
    iface_->bounce_put(bounce);
    return key ? Result<size_t>(size_t{0}) : Result<size_t>(Status::InvalidParam);
  }
  const Status s = bounce_copy(true, bounce, length, remote_addr, *key, nullptr);
  if (s != Status::InProgress) return s;
  return length;
}

Status CudaCopyEp::get_bcopy(UnpackCallback unpack, void* arg, size_t length, uint64_t remote_addr,
                             const Rkey& rkey, Completion* comp) {
  if (length > iface_->config().seg_size) return Status::InvalidParam;
  const CudaCopyRkey* key = checked(rkey, remote_addr, length, kAccessRemoteRead);
  if (!key) return Status::InvalidParam;
  if (length == 0) return Status::Ok;
  if (!iface_->has_room()) return Status::NoResource;
  void* bounce = iface_->bounce_get();
  if (!bounce) return Status::NoResource;
  return bounce_copy(false, bounce, length, remote_addr, *key,
                     [unpack, arg, bounce, length, comp](Status s) {
                       if (s == Status::Ok) unpack(arg, bounce, length);
                       completion_update(comp, s);
                     });
}

Status CudaCopyEp::zcopy(bool put, const Iov* iov, size_t iov_count, uint64_t remote_addr,
                         const Rkey& rkey, Completion* comp) {
  if (iov_count > iface_->query().put.max_iov) {
    MC_LOG(error) << "cuda_copy: " << iov_count << " iov entries (at most "
                  << iface_->query().put.max_iov << ")";
    return Status::InvalidParam;
  }
  const size_t length = iov_length(iov, iov_count);
  const CudaCopyRkey* key =
      checked(rkey, remote_addr, length, put ? kAccessRemoteWrite : kAccessRemoteRead);
  if (!key) return Status::InvalidParam;
  if (length == 0) return Status::Ok;
  std::vector<CudaCopyIface::Piece> pieces;
  MemTypeInfo local{MemType::Host, -1};
  uint64_t at = remote_addr;
  for (size_t i = 0; i < iov_count; ++i) {
    void* remote = reinterpret_cast<void*>(at);
    pieces.push_back(put ? CudaCopyIface::Piece{remote, iov[i].buffer, iov[i].length}
                         : CudaCopyIface::Piece{iov[i].buffer, remote, iov[i].length});
    if (local.device < 0 && iov[i].length > 0) {
      local = iface_->cuda_md().detect(iov[i].buffer, iov[i].length);
    }
    at += iov[i].length;
  }
  const int device = iface_->copy_device(key->region.info, local);
  auto ops = ops_;
  const Status s = iface_->post(pieces, device, [comp, ops](Status st) {
    completion_update(comp, st);
    ops->done();
  });
  if (s == Status::InProgress) ++ops_->outstanding;
  return s;
}

Status CudaCopyEp::put_zcopy(const Iov* iov, size_t iov_count, uint64_t remote_addr,
                             const Rkey& rkey, Completion* comp) {
  return zcopy(true, iov, iov_count, remote_addr, rkey, comp);
}

Status CudaCopyEp::get_zcopy(const Iov* iov, size_t iov_count, uint64_t remote_addr,
                             const Rkey& rkey, Completion* comp) {
  return zcopy(false, iov, iov_count, remote_addr, rkey, comp);
}

}  // namespace mc::uct::cuda

// SPDX-License-Identifier: Apache-2.0
// cuda_ipc endpoint operations.
#include "uct/cuda/cuda_ipc/cuda_ipc_ep.h"

#include "ucs/log/log.h"

namespace mc::uct::cuda {

Status CudaIpcEp::zcopy(bool put, const Iov* iov, size_t iov_count, uint64_t remote_addr,
                        const Rkey& rkey, Completion* comp) {
  const auto* key = dynamic_cast<const CudaIpcRkey*>(&rkey);
  if (!key) {
    MC_LOG(error) << "cuda_ipc: the rkey was not unpacked by a cuda_ipc memory domain";
    return Status::InvalidParam;
  }
  if (iov_count > 16) {
    MC_LOG(error) << "cuda_ipc: " << iov_count << " iov entries (at most 16)";
    return Status::InvalidParam;
  }
  const CudaIpcKey& k = key->key;
  if (!key->mapping) {
    MC_LOG(error) << "cuda_ipc: the rkey is of this process's own memory (cuda_copy moves it)";
    return Status::InvalidParam;
  }
  const std::string stale = key->mapping->stale_reason();
  if (!stale.empty()) {
    MC_LOG(error) << "cuda_ipc: the peer's GPU memory (export " << k.export_id << " of process "
                  << k.owner_pid << ") is no longer mapped: " << stale;
    return Status::InvalidParam;
  }
  const unsigned need = put ? kAccessRemoteWrite : kAccessRemoteRead;
  if ((k.access & need) != need) {
    MC_LOG(error) << "cuda_ipc: the peer's region does not allow remote "
                  << (put ? "write" : "read");
    return Status::InvalidParam;
  }
  const size_t length = iov_length(iov, iov_count);
  if (remote_addr < k.reg_base || length > k.reg_length ||
      remote_addr - k.reg_base > k.reg_length - length) {
    MC_LOG(error) << "cuda_ipc: access [0x" << std::hex << remote_addr << ", +" << std::dec
                  << length << ") is outside the peer's registered region [0x" << std::hex
                  << k.reg_base << ", +" << std::dec << k.reg_length << ")";
    return Status::InvalidParam;
  }
  if (length == 0) return Status::Ok;
  // The peer's address in this process: the mapping of its allocation.
  uintptr_t at = key->mapping->base() + (remote_addr - k.alloc_base);
  std::vector<CuStreams::Piece> pieces;
  for (size_t i = 0; i < iov_count; ++i) {
    void* remote = reinterpret_cast<void*>(at);
    pieces.push_back(put ? CuStreams::Piece{remote, iov[i].buffer, iov[i].length}
                         : CuStreams::Piece{iov[i].buffer, remote, iov[i].length});
    at += iov[i].length;
  }
  auto ops = ops_;
  // The mapping stays open until the copy completes, whatever happens to
  // the rkey meanwhile.
  std::shared_ptr<IpcMapping> hold = key->mapping;
  const Status s = iface_->post(pieces, hold->device(), [comp, ops, hold](Status st) {
    completion_update(comp, st);
    ops->done();
  });
  if (s == Status::InProgress) ++ops_->outstanding;
  return s;
}

Status CudaIpcEp::put_zcopy(const Iov* iov, size_t iov_count, uint64_t remote_addr,
                            const Rkey& rkey, Completion* comp) {
  return zcopy(true, iov, iov_count, remote_addr, rkey, comp);
}

Status CudaIpcEp::get_zcopy(const Iov* iov, size_t iov_count, uint64_t remote_addr,
                            const Rkey& rkey, Completion* comp) {
  return zcopy(false, iov, iov_count, remote_addr, rkey, comp);
}

}  // namespace mc::uct::cuda

// SPDX-License-Identifier: Apache-2.0
// cuda_copy iface: copies between host and device memory (and device to
// device) with cuMemcpyAsync on a small pool of streams per device; each
// operation records an event that progress() polls (base/cu_streams.h).
#pragma once

#include <memory>
#include <vector>

#include "ucs/mpool/mpool.h"
#include "uct/api/iface.h"
#include "uct/base/op_counter.h"
#include "uct/base/self_address.h"
#include "uct/cuda/base/cu_streams.h"
#include "uct/cuda/cuda_copy/cuda_copy_md.h"

namespace mc::uct::cuda {

class CudaCopyIface : public Iface {
 public:
  static Result<std::unique_ptr<Iface>> create(CudaCopyMd* md, const CudaCopyConfig& config);
  ~CudaCopyIface() override;

  IfaceAttr query() const override;
  unsigned progress() override;
  std::vector<uint8_t> device_address() const override;
  std::vector<uint8_t> iface_address() const override;
  /// Only this iface itself: cuda_copy copies inside this process.
  bool is_reachable(std::span<const uint8_t> device_addr, std::span<const uint8_t> iface_addr,
                    std::string* reason) const override;
  Result<std::unique_ptr<Endpoint>> ep_create(std::span<const uint8_t> device_addr,
                                              std::span<const uint8_t> iface_addr) override;
  Status flush(Completion* comp) override { return ops_->flush(comp); }

  using Piece = CuStreams::Piece;
  using Done = CuStreams::Done;

  /// Issues `pieces` in order on one stream of `device` and records an event;
  /// `done` runs from progress() when the event completes (IoError, logged,
  /// when a copy failed). NoResource when MAX_OUTSTANDING copies are in flight.
  Status post(const std::vector<Piece>& pieces, int device, Done done);

  /// The device that should run a copy between `a` and `b` (the one that
  /// owns device memory, else the current device).
  int copy_device(const MemTypeInfo& a, const MemTypeInfo& b) const;

  /// A pinned bounce buffer of config().seg_size bytes, or null when all are in use.
  void* bounce_get() { return bounce_->get(); }
  void bounce_put(void* b) { bounce_->put(b); }
  bool has_room() const { return streams_.has_room(); }

  CudaCopyMd& cuda_md() const { return *md_; }
  const CudaCopyConfig& config() const { return config_; }
  const std::shared_ptr<OpCounter>& ops() const { return ops_; }

 private:
  CudaCopyIface(CudaCopyMd* md, const CudaCopyConfig& config);

  CudaCopyMd* md_;
  CudaCopyConfig config_;
  SelfAddress self_addr_;
  std::unique_ptr<ucs::Mpool> bounce_;
  CuStreams streams_;
  std::shared_ptr<OpCounter> ops_ = std::make_shared<OpCounter>();
};

}  // namespace mc::uct::cuda

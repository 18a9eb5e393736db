// SPDX-License-Identifier: Apache-2.0
// nvmeof iface and endpoint: put_zcopy writes local memory into a registered
// file, get_zcopy reads a file into local memory; remote_addr is the offset.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "uct/api/ep.h"
#include "uct/api/iface.h"
#include "uct/base/op_counter.h"
#include "uct/base/self_address.h"
#include "uct/nvmeof/nvmeof_io.h"
#include "uct/nvmeof/nvmeof_md.h"

namespace mc::uct::nvmeof {

/// A transfer between GPU memory and a file, run through cuFile from progress().
struct CufileRequest {
  cufile::Handle fh = nullptr;
  bool write = false;
  uint64_t offset = 0;     ///< file offset of the first byte
  std::vector<iovec> iov;  ///< GPU memory
  std::string path;        ///< for error messages
  std::function<void(Status)> done;
};

class NvmeofIface : public Iface {
 public:
  NvmeofIface(NvmeofMd* md, const NvmeofConfig& config);
  ~NvmeofIface() override;

  IfaceAttr query() const override;
  unsigned progress() override;
  std::vector<uint8_t> device_address() const override;
  std::vector<uint8_t> iface_address() const override;
  /// Only this iface itself: files are reached through file rkeys.
  bool is_reachable(std::span<const uint8_t> device_addr, std::span<const uint8_t> iface_addr,
                    std::string* reason) const override;
  Result<std::unique_ptr<Endpoint>> ep_create(std::span<const uint8_t> device_addr,
                                              std::span<const uint8_t> iface_addr) override;
  Status flush(Completion* comp) override;

  /// Checks `rkey` for this host, `access` and [offset, offset + length) and
  /// starts the transfer between `iov` and the file. InvalidParam (logged)
  /// when the range lies outside the registered or the current file length,
  /// the rkey does not allow `access` or names a file of another host.
  /// GPU memory (an iov whose memh has mem_type() Cuda) goes through cuFile:
  /// Unsupported (logged with why) when cuFile is not in use, IoError when
  /// the file cannot be registered with it.
  Status post(bool write, const Iov* iov, size_t iov_count, uint64_t offset, const Rkey& rkey,
              Completion* comp, const std::shared_ptr<OpCounter>& ep_ops);

  IoEngine& engine() { return *engine_; }

 private:
  Result<std::shared_ptr<NvmeofFile>> file_for(const NvmeofRkey& rkey, bool write);
  Status post_cufile(bool write, const Iov* iov, size_t iov_count, uint64_t offset,
                     const std::shared_ptr<NvmeofFile>& file, Completion* comp,
                     const std::shared_ptr<OpCounter>& ep_ops);
  unsigned progress_cufile();
  /// Counts an operation on the endpoint and on the iface and returns what
  /// ends it: the counters, then `comp`; `file` stays open until then.
  std::function<void(Status)> track(std::shared_ptr<NvmeofFile> file, Completion* comp,
                                    const std::shared_ptr<OpCounter>& ep_ops);
  Status check_range(const NvmeofRkey& rkey, const NvmeofFile& file, uint64_t offset, size_t length,
                     bool write) const;

  NvmeofMd* md_;
  NvmeofConfig config_;
  SelfAddress self_addr_;
  std::unique_ptr<IoEngine> engine_;
  std::shared_ptr<OpCounter> ops_ = std::make_shared<OpCounter>();
  std::map<std::string, std::shared_ptr<NvmeofFile>> files_;  // by path
  std::deque<std::unique_ptr<CufileRequest>> cufile_backlog_;
};

class NvmeofEp : public Endpoint {
 public:
  explicit NvmeofEp(NvmeofIface* iface) : iface_(iface) {}
  Status put_zcopy(const Iov* iov, size_t iov_count, uint64_t remote_addr, const Rkey& rkey,
                   Completion* comp) override;
  Status get_zcopy(const Iov* iov, size_t iov_count, uint64_t remote_addr, const Rkey& rkey,
                   Completion* comp) override;
  Status flush(Completion* comp) override { return ops_->flush(comp); }

 private:
  NvmeofIface* iface_;
  std::shared_ptr<OpCounter> ops_ = std::make_shared<OpCounter>();
};

}  // namespace mc::uct::nvmeof

// SPDX-License-Identifier: Apache-2.0
// FileService and File (see file_service.h, api/file.h).
#include "ucp/core/file_service.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

#include "ucs/config/sources.h"
#include "ucs/log/log.h"
#include "ucs/sys/sys.h"
#include "uct/api/component.h"
#include "uct/base/component_loader.h"

namespace mc::ucp {

File::~File() = default;
const std::string& File::path() const {
  return impl(*this).path();
}
uint64_t File::length() const {
  return impl(*this).length();
}
bool File::writable() const {
  return impl(*this).writable();
}

Result<std::unique_ptr<FileService>> FileService::open() {
  uct::Component* comp = uct::find_component("nvmeof");
  if (comp == nullptr) {
    MC_LOG(error) << "ucp: files need the nvmeof transport, which is not loaded (built without "
                     "liburing? see mc_info -m)";
    return Status::Unsupported;
  }
  MC_ASSIGN_OR_RETURN(ucs::config::Sources sources, ucs::config::Sources::from_process());
  std::unique_ptr<FileService> fs(new FileService());
  MC_ASSIGN_OR_RETURN(fs->md_, comp->md_open("nvmeof", sources));
  uct::IfaceParams params;
  params.tl_name = "nvmeof";
  params.dev_name = "file";
  params.sources = &sources;
  MC_ASSIGN_OR_RETURN(fs->iface_, fs->md_->iface_open(params));
  MC_ASSIGN_OR_RETURN(
      fs->ep_, fs->iface_->ep_create(fs->iface_->device_address(), fs->iface_->iface_address()));
  const uct::IfaceAttr attr = fs->iface_->query();
  fs->direct_ = attr.access_mem_types;
  fs->max_piece_ = std::min(attr.put.max_zcopy, attr.get.max_zcopy);
  if (fs->max_piece_ == 0) {
    MC_LOG(error) << "ucp: the nvmeof transport reports no zcopy put or get";
    return Status::Unsupported;
  }
  MC_LOG(info) << "ucp: files: GPU memory "
               << ((fs->direct_ & uct::mem_type_bit(uct::MemType::Cuda))
                       ? "moves directly (nvmeof with cuFile)"
                       : "goes through host bounce buffers (nvmeof without cuFile: mc_info -d)");
  return fs;
}

void FileService::drain() {
  // A posted piece completes into its op (and the op's request): the
  // transport must not close under it.
  const uint64_t give_up = ucs::monotonic_ns() + 30'000'000'000ULL;
  while (posted_ > 0 && ucs::monotonic_ns() < give_up) {
    if (iface_->progress() == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  if (posted_ > 0) MC_LOG(warn) << "ucp: " << posted_ << " file operations did not end";
}

Result<std::unique_ptr<File>> FileService::open_file(const std::string& path, bool writable) {
  MC_ASSIGN_OR_RETURN(
      std::unique_ptr<uct::MemHandle> memh,
      md_->mem_reg_file(path,
                        writable ? uct::kAccessAll : uct::kAccessLocal | uct::kAccessRemoteRead));
  std::vector<uint8_t> packed;
  MC_RETURN_IF_ERROR(md_->mkey_pack(*memh, &packed));
  MC_ASSIGN_OR_RETURN(std::unique_ptr<uct::Rkey> rkey, md_->rkey_unpack(packed));
  return std::unique_ptr<File>(
      new FileImpl(this, path, writable, std::move(memh), std::move(rkey)));
}

Status FileService::check(const FileIo& io, bool staged, size_t* total, std::string* why) const {
  if (io.runs.empty()) {
    *why = "no runs";
    return Status::InvalidParam;
  }
  for (size_t i = 0; i < io.runs.size(); ++i) {
    const FileRun& r = io.runs[i];
    const std::string run = "run " + std::to_string(i);
    if (r.file == nullptr || r.buffer == nullptr || r.length == 0) {
      *why = run + " has no file, no buffer or no bytes";
      return Status::InvalidParam;
    }
    const FileImpl& f = impl(*r.file);
    if (f.owner() != this) {
      *why = run + ": '" + f.path() + "' was opened by another worker";
      return Status::InvalidParam;
    }
    if (r.offset > f.length() || r.length > f.length() - r.offset) {
      *why = run + " (" + std::to_string(r.length) + " bytes at " + std::to_string(r.offset) +
             ") is outside '" + f.path() + "' (" + std::to_string(f.length()) + " bytes)";
      return Status::InvalidParam;
    }
    if (io.write && !f.writable()) {
      *why = run + ": '" + f.path() + "' is opened read-only";
      return Status::InvalidParam;
    }
    if (staged && i > 0 &&
        r.buffer != static_cast<uint8_t*>(io.runs[i - 1].buffer) + io.runs[i - 1].length) {
      *why = run + "'s buffer does not follow run " + std::to_string(i - 1) +
             "'s, which staging through host memory needs";
      return Status::InvalidParam;
    }
    *total += r.length;
  }
  return Status::Ok;
}

std::vector<proto::FilePiece> FileService::pieces(std::span<const FileRun> runs, uint64_t offset,
                                                  size_t length, uint8_t* local) const {
  std::vector<proto::FilePiece> out;
  uint64_t run_start = 0;  // of the current run, in the runs laid end to end
  const uint64_t end = offset + length;
  for (const FileRun& r : runs) {
    const uint64_t run_end = run_start + r.length;
    uint64_t pos = std::max(offset, run_start);
    while (pos < std::min(end, run_end)) {
      const auto n = static_cast<size_t>(std::min({end, run_end, pos + max_piece_}) - pos);
      const FileImpl& f = impl(*r.file);
      uint8_t* mem =
          local ? local + (pos - offset) : static_cast<uint8_t*>(r.buffer) + (pos - run_start);
      out.push_back({&f.rkey(), &f.path(), r.offset + (pos - run_start), mem, n});
      pos += n;
    }
    run_start = run_end;
    if (run_start >= end) break;
  }
  return out;
}

std::unique_ptr<proto::RequestOp> FileService::direct_op(const FileIo& io, size_t total) {
  return std::make_unique<proto::FileOp>(ep_.get(), io.write, pieces(io.runs, 0, total, nullptr),
                                         io.mem_type, &posted_);
}

proto::StagingNetwork FileService::staged_network(const FileIo& io) {
  // The bounce buffers are host memory. The runs and the files outlive the
  // request (api/file.h).
  return [this, runs = io.runs, write = io.write](
             void* bounce, size_t length,
             uint64_t offset) -> Result<std::unique_ptr<proto::RequestOp>> {
    return std::unique_ptr<proto::RequestOp>(new proto::FileOp(
        ep_.get(), write, pieces(runs, offset, length, static_cast<uint8_t*>(bounce)),
        uct::MemType::Host, &posted_));
  };
}

}  // namespace mc::ucp

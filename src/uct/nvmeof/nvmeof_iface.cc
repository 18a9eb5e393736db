// SPDX-License-Identifier: Apache-2.0
// nvmeof iface and endpoint.
#include "uct/nvmeof/nvmeof_iface.h"

#include <unistd.h>

#include "ucs/log/log.h"
#include "ucs/sys/sys.h"

namespace mc::uct::nvmeof {

namespace {

constexpr size_t kMaxIov = 64;
// Linux moves at most 0x7ffff000 bytes per read or write; 1 GiB per operation.
constexpr size_t kMaxIo = size_t{1} << 30;

// The entries of `iov` that hold bytes.
std::vector<iovec> non_empty(const Iov* iov, size_t count) {
  std::vector<iovec> out;
  for (size_t i = 0; i < count; ++i) {
    if (iov[i].length > 0) out.push_back(iovec{iov[i].buffer, iov[i].length});
  }
  return out;
}

}  // namespace

NvmeofIface::NvmeofIface(NvmeofMd* md, const NvmeofConfig& config)
    : Iface(md),
      md_(md),
      config_(config),
      self_addr_("nvmeof", "files are reached through file rkeys"),
      engine_(IoEngine::create(static_cast<unsigned>(config.queue_depth), config.io_uring)) {}

NvmeofIface::~NvmeofIface() {
  if (!cufile_backlog_.empty()) {
    MC_LOG(warn) << "nvmeof: iface closed with " << cufile_backlog_.size()
                 << " cuFile transfer(s) not started; their completions are dropped";
  }
  engine_.reset();
}

IfaceAttr NvmeofIface::query() const {
  IfaceAttr attr;
  attr.cap = kCapPutZcopy | kCapGetZcopy | kCapConnectToSelf;
  attr.put = OpLimits{0, 0, 0, kMaxIo, kMaxIov, 0};
  attr.get = OpLimits{0, 0, 0, kMaxIo, kMaxIov, 0};
  attr.latency = LinearFunc{20e-6, 0};   // an NVMe read; a remote namespace adds the fabric
  attr.bandwidth = Bandwidth{0, 2.0e9};  // shared by every iface on the storage
  attr.overhead = 1e-6;
  attr.device_addr_len = SelfAddress::kAddrLen;
  attr.iface_addr_len = SelfAddress::kAddrLen;
  // GPU memory through cuFile (or, with MC_NVMEOF_CUFILE=on and no cuFile,
  // refused at post with the reason rather than staged by the caller).
  attr.access_mem_types =
      mem_type_bit(MemType::Host) | (md_->access_gpu() ? mem_type_bit(MemType::Cuda) : 0);
  return attr;
}

unsigned NvmeofIface::progress() {
  return engine_->progress() + progress_cufile();
}

// cuFileRead/cuFileWrite block until the data moved: at most queue_depth of
// them per call, so that one call stays bounded.
unsigned NvmeofIface::progress_cufile() {
  unsigned events = 0;
  for (unsigned k = 0; k < config_.queue_depth && !cufile_backlog_.empty(); ++k) {
    std::unique_ptr<CufileRequest> req = std::move(cufile_backlog_.front());
    cufile_backlog_.pop_front();
    Status s = Status::Ok;
    uint64_t offset = req->offset;
    for (const iovec& v : req->iov) {
      s = md_->cufile()->transfer(req->fh, req->write, v.iov_base, v.iov_len, offset, req->path);
      if (s != Status::Ok) break;
      offset += v.iov_len;
    }
    req->done(s);
    ++events;
  }
  return events;
}

std::vector<uint8_t> NvmeofIface::device_address() const { return self_addr_.device_address(); }

std::vector<uint8_t> NvmeofIface::iface_address() const { return self_addr_.iface_address(); }

bool NvmeofIface::is_reachable(std::span<const uint8_t> device_addr,
                               std::span<const uint8_t> iface_addr, std::string* reason) const {
  return self_addr_.is_reachable(device_addr, iface_addr, reason);
}

Result<std::unique_ptr<Endpoint>> NvmeofIface::ep_create(std::span<const uint8_t> device_addr,
                                                         std::span<const uint8_t> iface_addr) {
  MC_RETURN_IF_ERROR(self_addr_.check_connect(device_addr, iface_addr));
  return std::unique_ptr<Endpoint>(new NvmeofEp(this));
}

Status NvmeofIface::flush(Completion* comp) {
  return ops_->flush(comp);
}

Result<std::shared_ptr<NvmeofFile>> NvmeofIface::file_for(const NvmeofRkey& rkey, bool write) {
  auto it = files_.find(rkey.path);
  if (it != files_.end() && (!write || it->second->writable())) return it->second;
  // Opened writable when the key allows writes, so one descriptor serves both.
  MC_ASSIGN_OR_RETURN(
      std::shared_ptr<NvmeofFile> file,
      NvmeofFile::open(rkey.path, (rkey.access & kAccessRemoteWrite) != 0, config_.direct_io));
  files_[rkey.path] = file;
  return file;
}

Status NvmeofIface::check_range(const NvmeofRkey& rkey, const NvmeofFile& file, uint64_t offset,
                                size_t length, bool write) const {
  const char* op = write ? "write" : "read";
  if (offset > rkey.length || length > rkey.length - offset) {
    MC_LOG(error) << "nvmeof: " << op << " of " << length << " bytes at offset " << offset
                  << " is outside " << rkey.path << " (registered length " << rkey.length << ")";
    return Status::InvalidParam;
  }
  MC_ASSIGN_OR_RETURN(uint64_t now, file.size());
  if (offset > now || length > now - offset) {
    MC_LOG(error) << "nvmeof: " << op << " of " << length << " bytes at offset " << offset
                  << " is outside " << rkey.path << ": its length is now " << now
                  << " (registered with " << rkey.length << ")";
    return Status::InvalidParam;
  }
  return Status::Ok;
}

Status NvmeofIface::post(bool write, const Iov* iov, size_t iov_count, uint64_t offset,
                         const Rkey& rkey, Completion* comp,
                         const std::shared_ptr<OpCounter>& ep_ops) {
  const auto* key = dynamic_cast<const NvmeofRkey*>(&rkey);
  if (!key) {
    MC_LOG(error) << "nvmeof: the rkey was not unpacked by an nvmeof memory domain";
    return Status::InvalidParam;
  }
  const unsigned need = write ? kAccessRemoteWrite : kAccessRemoteRead;
  if (!(key->access & need)) {
    MC_LOG(error) << "nvmeof: " << key->path << " is registered without remote "
                  << (write ? "write" : "read") << " access";
    return Status::InvalidParam;
  }
  if (key->boot_id != ucs::boot_id_hash()) {
    MC_LOG(error) << "nvmeof: the rkey names " << key->path << " on another host; register the "
                  << "path this host mounts it at (local_path_map) and use that rkey";
    return Status::InvalidParam;
  }
  if (iov_count == 0 || iov_count > kMaxIov) {
    MC_LOG(error) << "nvmeof: " << iov_count << " iov entries (1 to " << kMaxIov << ")";
    return Status::InvalidParam;
  }
  const size_t length = iov_length(iov, iov_count);
  if (length == 0) return Status::Ok;
  if (length > kMaxIo) {
    MC_LOG(error) << "nvmeof: " << length << " bytes exceed the limit of " << kMaxIo;
    return Status::InvalidParam;
  }
  size_t gpu = 0;
  for (size_t i = 0; i < iov_count; ++i) {
    if (iov[i].memh && iov[i].memh->mem_type() == MemType::Cuda) ++gpu;
  }
  if (gpu > 0 && gpu < iov_count) {
    MC_LOG(error) << "nvmeof: one operation on both host and GPU memory";
    return Status::InvalidParam;
  }
  if (gpu > 0 && !md_->cufile()) {
    MC_LOG(error) << "nvmeof: " << (write ? "write" : "read") << " of GPU memory to " << key->path
                  << ": cuFile not used (" << md_->cufile_why() << ")";
    return Status::Unsupported;
  }
  MC_ASSIGN_OR_RETURN(std::shared_ptr<NvmeofFile> file, file_for(*key, write));
  MC_RETURN_IF_ERROR(check_range(*key, *file, offset, length, write));
  if (gpu > 0) return post_cufile(write, iov, iov_count, offset, file, comp, ep_ops);
  auto req = std::make_unique<IoRequest>();
  req->iov = non_empty(iov, iov_count);
  req->fd = file->fd(file->direct_ok(offset, req->iov.data(), req->iov.size()));
  req->write = write;
  req->offset = offset;
  req->length = length;
  req->path = file->path();
  // The file stays open until the request ends, even if the cache drops it.
  req->done = track(file, comp, ep_ops);
  engine_->submit(std::move(req));
  return Status::InProgress;
}

std::function<void(Status)> NvmeofIface::track(std::shared_ptr<NvmeofFile> file, Completion* comp,
                                               const std::shared_ptr<OpCounter>& ep_ops) {
  ++ep_ops->outstanding;
  ++ops_->outstanding;
  return [file = std::move(file), comp, ep_ops, ops = ops_](Status s) {
    ep_ops->done();
    ops->done();
    completion_update(comp, s);
  };
}

Status NvmeofIface::post_cufile(bool write, const Iov* iov, size_t iov_count, uint64_t offset,
                                const std::shared_ptr<NvmeofFile>& file, Completion* comp,
                                const std::shared_ptr<OpCounter>& ep_ops) {
  std::string why;
  const cufile::Handle fh = file->cufile_handle(md_->cufile(), &why);
  if (!fh) {
    MC_LOG(error) << "nvmeof: cannot register " << file->path() << " with cuFile ("
                  << md_->cufile()->library() << "): " << why;
    return Status::IoError;
  }
  auto req = std::make_unique<CufileRequest>();
  req->fh = fh;
  req->write = write;
  req->offset = offset;
  req->iov = non_empty(iov, iov_count);
  req->path = file->path();
  // The file (and its cuFile handle) stays open until the request ends.
  req->done = track(file, comp, ep_ops);
  cufile_backlog_.push_back(std::move(req));
  return Status::InProgress;
}

Status NvmeofEp::put_zcopy(const Iov* iov, size_t iov_count, uint64_t remote_addr, const Rkey& rkey,
                           Completion* comp) {
  return iface_->post(true, iov, iov_count, remote_addr, rkey, comp, ops_);
}

Status NvmeofEp::get_zcopy(const Iov* iov, size_t iov_count, uint64_t remote_addr, const Rkey& rkey,
                           Completion* comp) {
  return iface_->post(false, iov, iov_count, remote_addr, rkey, comp, ops_);
}

}  // namespace mc::uct::nvmeof

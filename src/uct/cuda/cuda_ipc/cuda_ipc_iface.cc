// SPDX-License-Identifier: Apache-2.0
// cuda_ipc iface: addresses, reachability, progress.
#include "uct/cuda/cuda_ipc/cuda_ipc_iface.h"

#include <unistd.h>

#include <cstring>

#include "ucs/datastruct/wire.h"
#include "ucs/log/log.h"
#include "ucs/sys/sys.h"
#include "uct/cuda/cuda_ipc/cuda_ipc_ep.h"

namespace mc::uct::cuda {

namespace {

constexpr size_t kMaxGpus = 64;
constexpr size_t kFabricLen = 1 + 16 + 4;  // u8 fabric | cluster uuid | u32 clique id

struct PeerAddress {
  uint64_t host = 0;
  std::vector<std::array<uint8_t, 16>> gpus;
  bool fabric = false;  // fabric handles available, in NVLink domain `domain`
  GpuFabric domain;
  uint32_t pid = 0;
};

std::string hex16(const std::array<uint8_t, 16>& b) {
  std::string s;
  for (uint8_t c : b) {
    s += "0123456789abcdef"[c >> 4];
    s += "0123456789abcdef"[c & 15];
  }
  return s;
}

// The decoded pair; false with `*why` when malformed.
bool decode(std::span<const uint8_t> device_addr, std::span<const uint8_t> iface_addr,
            PeerAddress* out, std::string* why) {
  ucs::WireReader d(device_addr);
  out->host = d.u64();
  const uint8_t n = d.u8();
  if (!d.ok() || n > kMaxGpus || d.remaining() != size_t{n} * 16 + kFabricLen) {
    *why = "malformed cuda_ipc device address (" + std::to_string(device_addr.size()) + " bytes)";
    return false;
  }
  for (uint8_t i = 0; i < n; ++i) {
    std::array<uint8_t, 16> u{};
    std::memcpy(u.data(), d.bytes(16).data(), 16);
    out->gpus.push_back(u);
  }
  out->fabric = d.u8() != 0;
  std::memcpy(out->domain.cluster_uuid.data(), d.bytes(16).data(), 16);
  out->domain.clique_id = d.u32();
  ucs::WireReader f(iface_addr);
  out->pid = f.u32();
  (void)f.u32();
  if (!f.at_end()) {
    *why = "malformed cuda_ipc iface address (" + std::to_string(iface_addr.size()) + " bytes)";
    return false;
  }
  return true;
}

}  // namespace

CudaIpcIface::CudaIpcIface(CudaIpcMd* md)
    : Iface(md),
      md_(md),
      streams_(md->driver(), md->config().streams, md->config().max_outstanding, "cuda_ipc") {}

Result<std::unique_ptr<Iface>> CudaIpcIface::create(CudaIpcMd* md) {
  return std::unique_ptr<Iface>(new CudaIpcIface(md));
}

IfaceAttr CudaIpcIface::query() const {
  IfaceAttr attr;
  attr.cap = kCapPutZcopy | kCapGetZcopy | kCapConnectToIface;
  attr.put = OpLimits{0, 0, 0, SIZE_MAX, 16, 0};
  attr.get = OpLimits{0, 0, 0, SIZE_MAX, 16, 0};
  attr.latency = LinearFunc{5e-6, 0};    // launch + event round trip, NVLink or one GPU
  attr.bandwidth = Bandwidth{0, 300e9};  // NVLink 4 one way, below HBM: the lower bound of both
  attr.overhead = 3e-6;                  // cuMemcpyAsync + cuEventRecord
  attr.priority = 10;                    // ahead of staging transports for GPU memory
  attr.device_addr_len = 9 + 16 * md_->devices().size() + kFabricLen;
  attr.iface_addr_len = 8;
  attr.access_mem_types = mem_type_bit(MemType::Cuda);
  return attr;
}

std::vector<uint8_t> CudaIpcIface::device_address() const {
  std::vector<uint8_t> out;
  ucs::WireWriter w(&out);
  w.u64(ucs::boot_id_hash());
  const size_t n = std::min(md_->devices().size(), kMaxGpus);
  w.u8(static_cast<uint8_t>(n));
  for (size_t i = 0; i < n; ++i) w.bytes(md_->devices()[i].uuid.data(), 16);
  const bool fabric = md_->fabric_unavailable().empty();
  w.u8(fabric ? 1 : 0);
  w.bytes(md_->fabric().cluster_uuid.data(), 16);
  w.u32(md_->fabric().clique_id);
  return out;
}

std::vector<uint8_t> CudaIpcIface::iface_address() const {
  std::vector<uint8_t> out;
  ucs::WireWriter w(&out);
  w.u32(static_cast<uint32_t>(getpid()));
  w.u32(0);
  return out;
}

bool CudaIpcIface::is_reachable(std::span<const uint8_t> device_addr,
                                std::span<const uint8_t> iface_addr, std::string* reason) const {
  PeerAddress peer;
  std::string why;
  bool ok = decode(device_addr, iface_addr, &peer, &why);
  if (ok && peer.host != ucs::boot_id_hash()) {
    // Multi-node NVLink: another host in this NVLink domain, by fabric handles.
    const std::string& here = md_->fabric_unavailable();
    ok = false;
    if (!here.empty()) {
      why = "another host (boot ids differ), and fabric handles are unavailable here: " + here;
    } else if (!peer.fabric) {
      why = "another host (boot ids differ) without fabric handles";
    } else if (!(peer.domain == md_->fabric())) {
      why = "another host in another NVLink domain (cluster " + hex16(peer.domain.cluster_uuid) +
            " clique " + std::to_string(peer.domain.clique_id) + "; here cluster " +
            hex16(md_->fabric().cluster_uuid) + " clique " + std::to_string(md_->fabric().clique_id) +
            ")";
    } else {
      ok = true;  // the same NVLink domain
    }
  } else if (ok && peer.pid == static_cast<uint32_t>(getpid())) {
    ok = false;
    why = "the same process: cuda_copy moves GPU memory inside a process";
  } else if (ok && peer.host == ucs::boot_id_hash()) {
    ok = false;
    for (const auto& g : peer.gpus) ok = ok || md_->reaches(g);
    if (!ok) {
      why = peer.gpus.empty() ? "the peer has no GPU"
                              : "none of the peer's " + std::to_string(peer.gpus.size()) +
                                    " GPU(s) is a GPU of this process or reached by peer access";
    }
  }
  if (!ok && reason) *reason = why;
  return ok;
}

Result<std::unique_ptr<Endpoint>> CudaIpcIface::ep_create(std::span<const uint8_t> device_addr,
                                                          std::span<const uint8_t> iface_addr) {
  std::string why;
  if (!is_reachable(device_addr, iface_addr, &why)) {
    MC_LOG(error) << "cuda_ipc: cannot connect: " << why;
    return Status::Unreachable;
  }
  return std::unique_ptr<Endpoint>(new CudaIpcEp(this));
}

Status CudaIpcIface::post(const std::vector<CuStreams::Piece>& pieces, int device,
                          CuStreams::Done done) {
  auto ops = ops_;
  const Status s = streams_.post(pieces, device, [done = std::move(done), ops](Status st) {
    done(st);
    ops->done();
  });
  if (s == Status::InProgress) ++ops_->outstanding;
  return s;
}

unsigned CudaIpcIface::progress() { return streams_.progress() + md_->poll(); }

}  // namespace mc::uct::cuda

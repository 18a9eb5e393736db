// SPDX-License-Identifier: Apache-2.0
// The cuda_ipc rkey codec.
#include "uct/cuda/cuda_ipc/cuda_ipc_key.h"

#include <cstring>

#include "ucs/datastruct/wire.h"

namespace mc::uct::cuda {

namespace {
constexpr size_t kFixed = 1 + 1 + 2 + 16 + 8 * 4 + 4 + 4 + 8 + 8 + 8 + CudaIpcKey::kHandleSize;
}  // namespace

const char* ipc_handle_kind_name(IpcHandleKind kind) {
  switch (kind) {
    case IpcHandleKind::Legacy: return "legacy";
    case IpcHandleKind::PosixFd: return "posix-fd";
    case IpcHandleKind::Fabric: return "fabric";
  }
  return "?";
}

void cuda_ipc_key_pack(const CudaIpcKey& key, std::vector<uint8_t>* out) {
  ucs::WireWriter w(out);
  const size_t name = std::min(key.socket.size(), CudaIpcKey::kMaxSocketName);
  w.u8(CudaIpcKey::kVersion);
  w.u8(static_cast<uint8_t>(key.kind));
  w.u16(static_cast<uint16_t>(name));
  w.bytes(key.device_uuid.data(), key.device_uuid.size());
  w.u64(key.alloc_base);
  w.u64(key.alloc_length);
  w.u64(key.reg_base);
  w.u64(key.reg_length);
  w.u32(key.access);
  w.u32(key.owner_pid);
  w.u64(key.owner_host);
  w.u64(key.export_id);
  w.u64(key.token);
  w.bytes(key.handle.data(), key.handle.size());
  w.bytes(key.socket.data(), name);
}

ucs::Result<CudaIpcKey> cuda_ipc_key_unpack(std::span<const uint8_t> payload, std::string* error) {
  auto bad = [&](std::string why) -> ucs::Result<CudaIpcKey> {
    if (error) *error = "malformed cuda_ipc rkey (" + std::to_string(payload.size()) + " bytes): " + why;
    return ucs::Status::InvalidParam;
  };
  if (payload.size() < kFixed) {
    return bad("shorter than the " + std::to_string(kFixed) + " fixed bytes");
  }
  ucs::WireReader r(payload);
  CudaIpcKey k;
  const uint8_t version = r.u8();
  if (version != CudaIpcKey::kVersion) {
    return bad("version " + std::to_string(version) + ", this build reads version " +
               std::to_string(CudaIpcKey::kVersion));
  }
  const uint8_t kind = r.u8();
  if (kind < static_cast<uint8_t>(IpcHandleKind::Legacy) ||
      kind > static_cast<uint8_t>(IpcHandleKind::Fabric)) {
    return bad("unknown handle kind " + std::to_string(kind));
  }
  k.kind = static_cast<IpcHandleKind>(kind);
  const uint16_t name = r.u16();
  std::memcpy(k.device_uuid.data(), r.bytes(k.device_uuid.size()).data(), k.device_uuid.size());
  k.alloc_base = r.u64();
  k.alloc_length = r.u64();
  k.reg_base = r.u64();
  k.reg_length = r.u64();
  k.access = r.u32();
  k.owner_pid = r.u32();
  k.owner_host = r.u64();
  k.export_id = r.u64();
  k.token = r.u64();
  std::memcpy(k.handle.data(), r.bytes(k.handle.size()).data(), k.handle.size());
  if (name == 0 || name > CudaIpcKey::kMaxSocketName) {
    return bad("socket name of " + std::to_string(name) + " bytes (1 to " +
               std::to_string(CudaIpcKey::kMaxSocketName) + ")");
  }
  if (r.remaining() != name) {
    return bad(std::to_string(r.remaining()) + " bytes after the fixed part, the socket name is " +
               std::to_string(name));
  }
  const std::span<const uint8_t> s = r.bytes(name);
  k.socket.assign(reinterpret_cast<const char*>(s.data()), s.size());
  if (!r.at_end()) return bad("trailing bytes");
  if (k.alloc_length == 0 || k.alloc_base + k.alloc_length < k.alloc_base) {
    return bad("empty or wrapping allocation");
  }
  if (k.reg_length == 0 || k.reg_base + k.reg_length < k.reg_base) {
    return bad("empty or wrapping registered range");
  }
  if (k.reg_base < k.alloc_base || k.reg_base - k.alloc_base > k.alloc_length - k.reg_length ||
      k.reg_length > k.alloc_length) {
    return bad("registered range outside the exported allocation");
  }
  if (k.owner_pid == 0 || k.export_id == 0) return bad("no owner process or export id");
  return k;
}

}  // namespace mc::uct::cuda

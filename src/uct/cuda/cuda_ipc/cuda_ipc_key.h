// SPDX-License-Identifier: Apache-2.0
// The cuda_ipc packed rkey: what a peer needs to map an exported GPU
// allocation (its handle, base and length), the registered range inside it,
// and where to ask its owner (process, export id, secret, socket). Pure: no
// CUDA, tested everywhere.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ucs/status/status.h"

namespace mc::uct::cuda {

/// How the allocation is exported.
enum class IpcHandleKind : uint8_t {
  Legacy = 1,   ///< cuIpcGetMemHandle of cuMemAlloc memory (64 opaque bytes)
  PosixFd = 2,  ///< cuMemExportToShareableHandle, a POSIX fd the owner passes over its socket
  Fabric = 3,   ///< CU_MEM_HANDLE_TYPE_FABRIC (64 bytes), multi-node NVLink (MNNVL)
};

/// "legacy", "posix-fd", "fabric".
const char* ipc_handle_kind_name(IpcHandleKind kind);

/// An exported registration, as packed into the rkey.
struct CudaIpcKey {
  static constexpr uint8_t kVersion = 1;
  static constexpr size_t kHandleSize = 64;
  static constexpr size_t kMaxSocketName = 100;  ///< fits sockaddr_un's sun_path

  IpcHandleKind kind = IpcHandleKind::Legacy;
  std::array<uint8_t, 16> device_uuid{};  ///< the owner's GPU (CUuuid)
  uint64_t alloc_base = 0;    ///< the whole exported allocation, owner's address
  uint64_t alloc_length = 0;
  uint64_t reg_base = 0;      ///< the registered range: every access lies inside it
  uint64_t reg_length = 0;
  uint32_t access = 0;        ///< kAccessRemoteRead / Write bits
  uint32_t owner_pid = 0;
  uint64_t owner_host = 0;    ///< the owner's boot id hash: only fabric handles cross hosts
  uint64_t export_id = 0;     ///< the owner's number for this registration
  uint64_t token = 0;         ///< random; the owner refuses a request without it
  std::array<uint8_t, kHandleSize> handle{};  ///< legacy / fabric handle bytes (zero for PosixFd)
  std::string socket;         ///< the owner's abstract unix socket name

  bool operator==(const CudaIpcKey&) const = default;
};

/// Payload (little-endian): u8 version | u8 kind | u16 socket name length |
/// 16 B device uuid | u64 alloc base | u64 alloc length | u64 reg base |
/// u64 reg length | u32 access | u32 owner pid | u64 owner host | u64 export
/// id | u64 token | 64 B handle | socket name. 158 bytes + the name.
void cuda_ipc_key_pack(const CudaIpcKey& key, std::vector<uint8_t>* out);

/// The key of `payload`; InvalidParam with `*error` naming what is wrong
/// (version, kind, length, a registered range outside the allocation, a
/// wrapping range, an empty or too long socket name).
ucs::Result<CudaIpcKey> cuda_ipc_key_unpack(std::span<const uint8_t> payload, std::string* error);

}  // namespace mc::uct::cuda

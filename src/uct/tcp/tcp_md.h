// SPDX-License-Identifier: Apache-2.0
// tcp memory domain: a table of registered regions that the iface's async
// thread consults before it lets a peer put into or get from memory.
#pragma once

#include <memory>
#include <mutex>
#include <random>
#include <shared_mutex>
#include <unordered_map>

#include "uct/api/md.h"
#include "uct/tcp/tcp_config.h"
#include "uct/tcp/tcp_wire.h"

namespace mc::uct::tcp {

/// A registered range. The async thread holds `use` shared while it reads or
/// writes the memory; deregistration takes it exclusively and sets `revoked`,
/// so once a handle's destructor returns no byte of it is touched again.
struct TcpRegion {
  uint64_t id = 0;
  uint64_t key = 0;  ///< random secret a peer must quote with the id
  uintptr_t base = 0;
  size_t length = 0;
  unsigned access = 0;  ///< MemAccess bits
  std::shared_mutex use;
  bool revoked = false;  ///< guarded by `use`
};

/// An unpacked tcp rkey: what the target will check again.
class TcpRkey : public Rkey {
 public:
  explicit TcpRkey(const wire::RkeyPayload& p) : payload(p) {}
  /// Whether [addr, addr + len) lies in the key's range with `access`.
  bool allows(uint64_t addr, size_t len, unsigned access) const {
    return (payload.access & access) == access && addr >= payload.base && len <= payload.length &&
           addr - payload.base <= payload.length - len;
  }
  wire::RkeyPayload payload;
};

class TcpMd : public MemoryDomain {
 public:
  explicit TcpMd(TcpConfig config);

  const std::string& name() const override { return name_; }
  MdAttr query() const override;
  std::vector<TlResource> query_tl_resources() const override;
  Result<std::unique_ptr<Iface>> iface_open(const IfaceParams& params) override;
  Result<std::unique_ptr<MemHandle>> mem_reg(void* address, size_t length,
                                             unsigned access) override;
  Status mkey_pack(const MemHandle& memh, std::vector<uint8_t>* out) const override;
  Result<std::unique_ptr<Rkey>> rkey_unpack(std::span<const uint8_t> packed) const override;

  /// The live region `id` when `key` matches, it allows `access` and
  /// [addr, addr + len) lies inside it; otherwise Rejected and `*why` says
  /// which check failed. Any thread.
  Result<std::shared_ptr<TcpRegion>> find_region(uint64_t id, uint64_t key, uint64_t addr,
                                                 size_t len, unsigned access,
                                                 std::string* why) const;

  /// Removes a region and waits until no thread is inside its memory.
  void forget(const std::shared_ptr<TcpRegion>& region);

  const TcpConfig& config() const { return config_; }

 private:
  const std::string name_ = "tcp";
  TcpConfig config_;
  // Lock order: lock_ is a leaf; a region's `use` lock is never taken with it held.
  mutable std::mutex lock_;  ///< guards regions_, next_id_ and rng_
  std::unordered_map<uint64_t, std::shared_ptr<TcpRegion>> regions_;
  uint64_t next_id_ = 1;
  std::mt19937_64 rng_;
};

}  // namespace mc::uct::tcp

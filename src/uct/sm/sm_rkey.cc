// SPDX-License-Identifier: Apache-2.0
// sm rkey encoding and the initiator-side access check.
#include "uct/sm/sm_rkey.h"

#include "ucs/datastruct/wire.h"
#include "ucs/log/log.h"

namespace mc::uct::sm {

void RkeyInfo::pack(std::vector<uint8_t>* out) const {
  ucs::WireWriter w(out);
  w.u8(static_cast<uint8_t>(kind));
  w.u32(pid);
  w.u64(start);
  w.u64(boot_hash);
  w.u64(pid_ns);
  w.u64(reg_id);
  w.u64(base);
  w.u64(length);
  w.u32(access);
  if (kind == RkeyKind::Shm) {
    w.u32(seg_counter);
    w.u64(seg_random);
  }
}

bool RkeyInfo::unpack(std::span<const uint8_t> payload) {
  ucs::WireReader r(payload);
  const uint8_t k = r.u8();
  pid = r.u32();
  start = r.u64();
  boot_hash = r.u64();
  pid_ns = r.u64();
  reg_id = r.u64();
  base = r.u64();
  length = r.u64();
  access = r.u32();
  if (k == static_cast<uint8_t>(RkeyKind::Shm)) {
    seg_counter = r.u32();
    seg_random = r.u64();
  } else if (k != static_cast<uint8_t>(RkeyKind::Cma)) {
    return false;
  }
  kind = static_cast<RkeyKind>(k);
  return r.at_end() && pid != 0 && length != 0 && base + length > base &&
         (access & ~static_cast<uint32_t>(kAccessAll)) == 0;
}

Status SmRkey::refuse(uint64_t addr, size_t len, unsigned access) const {
  if ((info_.access & access) != access) {
    MC_LOG(error) << "sm: memory of process " << info_.pid << " at 0x" << std::hex << info_.base
                  << std::dec << " was not registered for remote "
                  << (access & kAccessRemoteWrite ? "write" : "read");
  } else {
    MC_LOG(error) << "sm: access [0x" << std::hex << addr << ", +" << std::dec << len
                  << ") is outside the remote region [0x" << std::hex << info_.base << ", +"
                  << std::dec << info_.length << ") of process " << info_.pid;
  }
  return Status::InvalidParam;
}

}  // namespace mc::uct::sm

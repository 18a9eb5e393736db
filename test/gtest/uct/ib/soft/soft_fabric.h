// SPDX-License-Identifier: Apache-2.0
// The soft provider's fabric: one shared-memory file that every process of a
// test maps, holding the devices' fault switches, the table of memory
// regions (so a peer's rkey is checked against what its owner registered)
// and the table of queue pairs with an inbound message ring each (SEND/RECV).
#pragma once

#include <pthread.h>
#include <sys/types.h>

#include <cstdint>
#include <string>

#include "ucs/status/status.h"

namespace mc::uct::ib::soft {

inline constexpr uint32_t kMaxDevices = 8;
inline constexpr uint32_t kMaxMr = 4096;
inline constexpr uint32_t kMaxQp = 512;
inline constexpr uint32_t kRingSlots = 16;
inline constexpr uint32_t kMsgMax = 16384;  ///< largest SEND the soft device carries

/// A registered memory region. key = generation << 12 | slot index (lkey == rkey).
struct MrSlot {
  uint32_t key;
  int32_t pid;
  uint32_t dev;
  uint32_t access;  ///< ibv_access_flags
  uint64_t addr;    ///< the first address peers and SGEs name (the iova)
  uint64_t length;
  /// Where `addr` is in the owner's address space: addr itself, or for a
  /// dma-buf MR the provider's own mapping of the buffer.
  uint64_t base;
};

struct RingSlot {
  uint32_t length;
  uint32_t src_qpn;
  uint8_t data[kMsgMax];
};

/// A queue pair. qpn = generation << 10 | slot index; 0 marks a free slot.
struct QpSlot {
  uint32_t qpn;
  int32_t pid;
  uint32_t dev;
  uint32_t state;     ///< ibv_qp_state
  uint32_t dest_qpn;  ///< set at RTR
  uint32_t failed;    ///< fault switch
  uint32_t head;      ///< inbound ring: next slot the owner reads
  uint32_t tail;      ///< next slot a sender writes
  RingSlot ring[kRingSlots];
};

struct FabricLayout {
  uint32_t magic;
  uint32_t version;
  pthread_mutex_t lock;  ///< process-shared, robust; guards everything below
  uint32_t generation;
  uint32_t device_failed[kMaxDevices];
  MrSlot mr[kMaxMr];
  QpSlot qp[kMaxQp];
};

/// The mapped fabric of this process (one per process; the first open wins).
class Fabric {
 public:
  /// Maps (creating when needed) /dev/shm/mc-ibsoft-<name>. Clears slots of
  /// processes that died. IoError naming the system call that failed.
  static ucs::Result<Fabric*> open(const std::string& name);
  /// Removes the shared-memory file of `name` (tests clean up with it).
  static void unlink(const std::string& name);

  const std::string& name() const { return name_; }
  FabricLayout* layout() { return layout_; }

  /// Scoped fabric lock.
  class Guard {
   public:
    explicit Guard(Fabric* f);
    ~Guard();
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

   private:
    Fabric* f_;
  };

  // Every function below is called with the lock held.
  MrSlot* mr_alloc();
  MrSlot* mr_find(uint32_t key);
  QpSlot* qp_alloc();
  QpSlot* qp_find(uint32_t qpn);
  bool device_failed(uint32_t dev) const;

 private:
  Fabric(std::string name, FabricLayout* layout) : name_(std::move(name)), layout_(layout) {}
  void reap_dead();
  uint32_t next_generation();

  std::string name_;
  FabricLayout* layout_;
};

/// Fault switches, for tests: fail (or heal) device `dev`: its port reports
/// down and every work request to or from it fails as a NIC's does when
/// its peer stops answering (IBV_WC_RETRY_EXC_ERR); or fail one queue pair
/// that way. NoElem when there is no such device / queue pair; an error of
/// Fabric::open when the fabric does not open.
ucs::Status set_device_failed(const std::string& fabric, uint32_t dev, bool failed);
ucs::Status fail_qp(const std::string& fabric, uint32_t qpn);

}  // namespace mc::uct::ib::soft

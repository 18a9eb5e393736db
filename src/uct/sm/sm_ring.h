// SPDX-License-Identifier: Apache-2.0
// The receive ring of an sm iface: a bounded, lock-free multi-producer /
// single-consumer queue of fixed-size slots in shared memory. Header-only:
// it is the data path, and the white-box tests drive it on plain memory.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <optional>

namespace mc::uct::sm {

// Protocol. Every slot starts with a 64-bit state word:
//     bits 63..32  seq: the low 32 bits of the ring position the slot serves
//     bits 31..0   tag: kFree, the pid of the producer that claimed it, or kReady
// Slot i starts as {seq i, kFree}. For position p (slot p & mask):
//   1. a producer reads `head` (p) and the slot's state. {p, kFree}: it
//      claims the slot with a CAS to {p, pid}, then moves head p -> p+1 by
//      CAS (a failure means another producer already helped). {p, a pid or
//      kReady}: the slot is taken but head lags: it helps head to p+1 and
//      retries (likewise for {p + N, kFree}: p was claimed and already
//      consumed, or reclaimed, before head moved). {p - N, anything}: the consumer has not freed
//      the slot of the previous lap: the ring is full (NoResource).
//   2. the owner of the claim writes the slot's type, id, length and
//      payload, then publishes with a release store of {p, kReady}.
//   3. the consumer (the iface's owner, one thread) reads {tail, kReady}
//      with acquire, handles the payload in place, and frees the slot for
//      the next lap with a release store of {tail + N, kFree}; tail += 1.
// The release/acquire pairs on the state word order the payload: the
// producer's writes happen before the consumer's reads (publish), and the
// consumer's reads happen before the next lap's writes (free). `head` only
// picks a candidate slot; every decision is made on the slot's own state,
// so head needs no ordering of its own (relaxed).
// Claim and ownership are one CAS carrying the producer's pid, so a slot
// claimed by a producer that died before publishing ({tail, pid} for ever)
// can be told apart and reclaimed by the consumer (reclaim()) once that pid
// is known dead; nothing else ever writes a claimed slot. Positions are
// 64-bit and never wrap; seq comparisons use 32-bit modular differences,
// exact while N < 2^31.

/// The 16-byte header of a slot; the payload follows it.
struct SlotHeader {
  std::atomic<uint64_t> state;
  uint8_t type;
  uint8_t am_id;
  uint16_t reserved;
  uint32_t length;  ///< payload bytes; checked by the consumer, never trusted
};
static_assert(sizeof(SlotHeader) == 16);
static_assert(std::atomic<uint64_t>::is_always_lock_free,
              "the ring needs address-free 64-bit atomics in shared memory");

/// The ring's header, at the start of its memory.
struct RingHeader {
  std::atomic<uint64_t> magic;  ///< stored last, with release: the ring is ready
  uint32_t num_slots;
  uint32_t slot_size;
  alignas(64) std::atomic<uint64_t> head;  ///< next position to claim
};

class Ring {
 public:
  static constexpr uint64_t kMagic = 0x31474e49524d534dull;  // "MSMRING1"
  static constexpr uint32_t kFree = 0;
  static constexpr uint32_t kReady = 0xffffffffu;
  static constexpr size_t kHeaderSize = 128;
  static constexpr uint32_t kMaxSlots = 1u << 20;
  static constexpr uint32_t kMinSlotSize = 64;

  /// A claimed slot, to fill and publish.
  struct Claim {
    SlotHeader* slot = nullptr;
    uint64_t pos = 0;
    uint8_t* payload() const { return reinterpret_cast<uint8_t*>(slot + 1); }
  };

  Ring() = default;

  /// Bytes a ring of this geometry occupies.
  static size_t bytes_for(uint32_t num_slots, uint32_t slot_size) {
    return kHeaderSize + static_cast<size_t>(num_slots) * slot_size;
  }

  /// Whether the geometry is one this code handles: a power-of-two slot
  /// count and slot sizes that are multiples of 64.
  static bool valid_geometry(uint32_t num_slots, uint32_t slot_size) {
    return num_slots >= 2 && num_slots <= kMaxSlots && (num_slots & (num_slots - 1)) == 0 &&
           slot_size >= kMinSlotSize && slot_size % 64 == 0;
  }

  /// Builds an empty ring in `mem` (bytes_for() bytes, 64-byte aligned).
  static Ring create(void* mem, uint32_t num_slots, uint32_t slot_size) {
    auto* h = new (mem) RingHeader;
    h->num_slots = num_slots;
    h->slot_size = slot_size;
    h->head.store(0, std::memory_order_relaxed);
    Ring r(h, num_slots, slot_size);
    for (uint32_t i = 0; i < num_slots; ++i) {
      new (r.slot(i)) SlotHeader;
      r.slot(i)->state.store(make_state(i, kFree), std::memory_order_relaxed);
    }
    h->magic.store(kMagic, std::memory_order_release);
    return r;
  }

  /// A producer's view of a ring another process built in `mem` (`size`
  /// bytes); nullopt when its header is not a valid ring of that size. The
  /// geometry is read once and kept here, never re-read from shared memory.
  static std::optional<Ring> attach(void* mem, size_t size) {
    if (size < kHeaderSize) return std::nullopt;
    auto* h = static_cast<RingHeader*>(mem);
    if (h->magic.load(std::memory_order_acquire) != kMagic) return std::nullopt;
    const uint32_t n = h->num_slots;
    const uint32_t s = h->slot_size;
    if (!valid_geometry(n, s) || bytes_for(n, s) > size) return std::nullopt;
    return Ring(h, n, s);
  }

  uint32_t num_slots() const { return mask_ + 1; }
  uint32_t slot_size() const { return slot_size_; }
  /// Payload bytes of one slot.
  size_t capacity() const { return slot_size_ - sizeof(SlotHeader); }

  // ---- producers (any process, any thread) -------------------------------

  /// Claims the next free slot for producer `tag` (its pid: not kFree, not
  /// kReady). False when the ring is full.
  bool claim(uint32_t tag, Claim* out) {
    for (;;) {
      uint64_t pos = hdr_->head.load(std::memory_order_relaxed);
      SlotHeader* s = slot(pos);
      uint64_t st = s->state.load(std::memory_order_acquire);
      const int32_t lap = static_cast<int32_t>(seq_of(st) - static_cast<uint32_t>(pos));
      if (lap < 0) return false;  // the previous lap's message is still there
      if (lap > 0) {              // position pos was claimed and even freed: head lags
        help_head(pos);
        continue;
      }
      if (tag_of(st) == kFree) {
        if (s->state.compare_exchange_strong(st, make_state(pos, tag), std::memory_order_acquire,
                                             std::memory_order_relaxed)) {
          help_head(pos);
          *out = Claim{s, pos};
          return true;
        }
        continue;
      }
      help_head(pos);  // claimed by another producer that has not moved head yet
    }
  }

  /// Makes a claimed slot visible to the consumer.
  void publish(const Claim& c, uint8_t type, uint8_t am_id, uint32_t length) {
    c.slot->type = type;
    c.slot->am_id = am_id;
    c.slot->reserved = 0;
    c.slot->length = length;
    c.slot->state.store(make_state(c.pos, kReady), std::memory_order_release);
  }

  /// Whether a claim would succeed now (it may not by the time it is tried).
  bool has_space() const {
    for (;;) {
      const uint64_t pos = hdr_->head.load(std::memory_order_relaxed);
      const uint64_t st = slot(pos)->state.load(std::memory_order_acquire);
      const int32_t lap = static_cast<int32_t>(seq_of(st) - static_cast<uint32_t>(pos));
      if (lap < 0) return false;
      if (lap == 0 && tag_of(st) == kFree) return true;
      help_head(pos);
    }
  }

  // ---- the consumer (the owner, one thread) ------------------------------

  /// The published slot at the tail, or null when there is none yet.
  const SlotHeader* front() const {
    const SlotHeader* s = slot(tail_);
    const uint64_t st = s->state.load(std::memory_order_acquire);
    return st == make_state(tail_, kReady) ? s : nullptr;
  }

  /// Frees the slot front() returned, for the next lap.
  void pop() {
    slot(tail_)->state.store(make_state(tail_ + num_slots(), kFree), std::memory_order_release);
    ++tail_;
  }

  /// The pid that claimed the tail slot without publishing it yet, or 0.
  uint32_t stalled_tag() const {
    const uint64_t st = slot(tail_)->state.load(std::memory_order_acquire);
    const uint32_t t = tag_of(st);
    return seq_of(st) == static_cast<uint32_t>(tail_) && t != kFree && t != kReady ? t : 0;
  }

  /// Frees the tail slot claimed by `tag`, a producer known to be dead, so
  /// the messages behind it flow again. False when the slot changed.
  bool reclaim(uint32_t tag) {
    uint64_t expect = make_state(tail_, tag);
    if (!slot(tail_)->state.compare_exchange_strong(expect, make_state(tail_ + num_slots(), kFree),
                                                    std::memory_order_acq_rel)) {
      return false;
    }
    ++tail_;
    return true;
  }

  uint64_t tail() const { return tail_; }

 private:
  Ring(RingHeader* h, uint32_t num_slots, uint32_t slot_size)
      : hdr_(h),
        slots_(reinterpret_cast<uint8_t*>(h) + kHeaderSize),
        mask_(num_slots - 1),
        slot_size_(slot_size) {}

  static uint64_t make_state(uint64_t pos, uint32_t tag) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(pos)) << 32) | tag;
  }
  static uint32_t seq_of(uint64_t st) { return static_cast<uint32_t>(st >> 32); }
  static uint32_t tag_of(uint64_t st) { return static_cast<uint32_t>(st); }

  SlotHeader* slot(uint64_t pos) const {
    return reinterpret_cast<SlotHeader*>(slots_ + (pos & mask_) * slot_size_);
  }
  void help_head(uint64_t pos) const {
    hdr_->head.compare_exchange_strong(pos, pos + 1, std::memory_order_relaxed);
  }

  RingHeader* hdr_ = nullptr;
  uint8_t* slots_ = nullptr;
  uint32_t mask_ = 0;
  uint32_t slot_size_ = 0;
  uint64_t tail_ = 0;  // consumer only
};

}  // namespace mc::uct::sm

// SPDX-License-Identifier: Apache-2.0
// sm iface: addresses, reachability, the receive loop, peer liveness.
#include "uct/sm/sm_iface.h"

#include <unistd.h>

#include <algorithm>

#include "ucs/datastruct/wire.h"
#include "ucs/log/log.h"
#include "ucs/sys/sys.h"
#include "uct/sm/sm_ep.h"
#include "uct/sm/sm_proc.h"
#include "uct/sm/sm_rma_fallback.h"

namespace mc::uct::sm {

namespace {

// Device address: what decides that two processes share memory.
//   u8 version (1) | str boot id | u64 ipc ns | u64 mnt ns | u64 pid ns  (LE)
// The pid namespace is ours to add: iface addresses and rkeys name pids.
constexpr uint8_t kDevAddrVersion = 1;

constexpr double kLatency = 300e-9;  // a cache line through shared memory and a poll
constexpr double kBandwidth = 10e9;  // one memcpy (or CMA copy) per byte
constexpr double kOverhead = 30e-9;  // claim a slot, copy, publish

}  // namespace

Result<std::unique_ptr<SmIface>> SmIface::create(SmMd* md, const SmConfig& config,
                                                 const IfaceParams& params) {
  const auto slots = static_cast<uint32_t>(config.ring_size);
  const auto slot_size = static_cast<uint32_t>(config.seg_size);
  if (!Ring::valid_geometry(slots, slot_size)) {
    MC_LOG(error) << "sm: invalid ring geometry: " << slots << " slots of " << slot_size
                  << " bytes";
    return Status::InvalidParam;
  }
  MC_ASSIGN_OR_RETURN(std::unique_ptr<ShmSegment> segment,
                      ShmSegment::create(SegKind::Ring, Ring::bytes_for(slots, slot_size)));
  Ring ring = Ring::create(segment->data(), slots, slot_size);
  const SegmentName& name = segment->name();
  IfaceId id{name.pid, name.counter, name.random, own_start_time(), slot_size};
  return std::unique_ptr<SmIface>(new SmIface(md, config, params, std::move(segment), ring, id));
}

SmIface::SmIface(SmMd* md, const SmConfig& config, const IfaceParams& params,
                 std::unique_ptr<ShmSegment> segment, Ring ring, IfaceId id)
    : Iface(md),
      config_(config),
      err_handler_(params.err_handler),
      segment_(std::move(segment)),
      ring_(ring),
      id_(id),
      fallback_(std::make_unique<RmaFallback>(this)),
      bounce_(ring.capacity()) {
  next_check_ns_ =
      ucs::coarse_monotonic_ns() + static_cast<uint64_t>(config_.peer_check_interval.count());
}

SmIface::~SmIface() {
  if (!eps_.empty()) {
    MC_LOG(warn) << "sm: iface closed with " << eps_.size() << " endpoints still open";
  }
  for (Completion* comp : std::exchange(flush_waiters_, {}))
    completion_update(comp, Status::Canceled);
}

IfaceAttr SmIface::query() const {
  IfaceAttr attr;
  attr.cap = kCapAmShort | kCapAmBcopy | kCapAmZcopy | kCapPutShort | kCapPutBcopy | kCapPutZcopy |
             kCapGetBcopy | kCapGetZcopy | kCapPending | kCapConnectToIface |
             kCapErrHandlePeerFailure;
  const size_t cap = ring_.capacity();
  const size_t frag = fallback_->fragment_size();
  // am_zcopy copies into the ring too: header and payload share one slot.
  attr.am = OpLimits{cap, cap, 0, cap - kMaxAmHeader, kMaxIov, kMaxAmHeader};
  attr.put = OpLimits{frag, frag, 0, SIZE_MAX, kMaxIov, 0};
  attr.get = OpLimits{0, frag, 0, SIZE_MAX, kMaxIov, 0};
  attr.latency = LinearFunc{kLatency, 0};
  attr.bandwidth = Bandwidth{kBandwidth, 0};
  attr.overhead = kOverhead;
  attr.priority = 0;
  attr.device_addr_len = device_address().size();
  attr.iface_addr_len = IfaceId::kPackedSize;
  attr.ep_addr_len = 0;
  return attr;
}

std::vector<uint8_t> SmIface::device_address() const {
  const ucs::HostIdentity& host = ucs::host_identity();
  std::vector<uint8_t> out;
  ucs::WireWriter w(&out);
  w.u8(kDevAddrVersion);
  w.str(host.boot_id);
  w.u64(host.ipc_ns);
  w.u64(host.mnt_ns);
  w.u64(pid_ns_inode());
  return out;
}

std::vector<uint8_t> SmIface::iface_address() const {
  std::vector<uint8_t> out;
  id_.pack(&out);
  return out;
}

Status SmIface::parse_peer(std::span<const uint8_t> device_addr,
                           std::span<const uint8_t> iface_addr, IfaceId* id,
                           std::string* reason) const {
  auto say = [reason](Status status, const char* why) {
    if (reason) *reason = why;
    return status;
  };
  ucs::WireReader r(device_addr);
  const uint8_t version = r.u8();
  ucs::HostIdentity peer;
  peer.boot_id = r.str();
  peer.ipc_ns = r.u64();
  peer.mnt_ns = r.u64();
  const uint64_t pid_ns = r.u64();
  if (!r.at_end() || version != kDevAddrVersion) {
    return say(Status::InvalidParam, "malformed sm device address");
  }
  if (!id->unpack(iface_addr)) return say(Status::InvalidParam, "malformed sm iface address");
  const ucs::HostIdentity& self = ucs::host_identity();
  if (peer.boot_id != self.boot_id) {
    return say(Status::Unreachable, "sm reaches only processes of this host and boot");
  }
  if (!peer.shares_memory_with(self)) {
    return say(Status::Unreachable, "different IPC or mount namespace: /dev/shm is not shared");
  }
  if (pid_ns != pid_ns_inode()) {
    return say(Status::Unreachable, "different pid namespace: pids in sm addresses differ");
  }
  if (id->slot_size != id_.slot_size) {
    return say(Status::Unreachable, "different ring slot size (MC_SM_SEG_SIZE)");
  }
  return Status::Ok;
}

bool SmIface::is_reachable(std::span<const uint8_t> device_addr,
                           std::span<const uint8_t> iface_addr, std::string* reason) const {
  IfaceId id;
  return parse_peer(device_addr, iface_addr, &id, reason) == Status::Ok;
}

Result<std::unique_ptr<Endpoint>> SmIface::ep_create(std::span<const uint8_t> device_addr,
                                                     std::span<const uint8_t> iface_addr) {
  std::string reason;
  IfaceId id;
  const Status status = parse_peer(device_addr, iface_addr, &id, &reason);
  if (status != Status::Ok) {
    MC_LOG(error) << "sm: cannot connect: " << reason;
    return status;
  }
  MC_ASSIGN_OR_RETURN(PeerRing * pr, peer(id));
  if (!pr->alive()) {
    MC_LOG(error) << "sm: cannot connect: peer process " << id.pid << " is gone";
    return Status::Unreachable;
  }
  auto ep = std::make_unique<SmEp>(this, pr);
  eps_.push_back(ep.get());
  return std::unique_ptr<Endpoint>(std::move(ep));
}

Result<PeerRing*> SmIface::peer(const IfaceId& id) {
  auto it = peers_.find(id);
  if (it != peers_.end()) {
    if (it->second->id().start == id.start) return it->second.get();
    MC_LOG(error) << "sm: iface address of process " << id.pid << " has a wrong start time";
    return Status::InvalidParam;
  }
  if (id.slot_size != ring_.slot_size()) {
    MC_LOG(error) << "sm: peer process " << id.pid << " uses " << id.slot_size
                  << "-byte ring slots, this process " << ring_.slot_size()
                  << " (MC_SM_SEG_SIZE must match)";
    return Status::Unreachable;
  }
  // Ring names are never reused, so a ring that could not be mapped never
  // can be: answer at once (requests of a dead peer may still be queued).
  if (unmappable_.count(id)) return Status::Unreachable;
  Result<std::unique_ptr<PeerRing>> attached = PeerRing::attach(id, id_.pid);
  if (!attached.ok()) {
    unmappable_.insert(id);
    return attached.status();
  }
  std::unique_ptr<PeerRing> pr = std::move(*attached);
  if (pr->ring().slot_size() != ring_.slot_size()) {
    // Fragments and messages are sized for our slots; a peer configured
    // otherwise could not take them (nor we its replies).
    MC_LOG(error) << "sm: ring of process " << id.pid << " has " << pr->ring().slot_size()
                  << "-byte slots, not the " << id.slot_size << " its address says";
    return Status::BadData;
  }
  PeerRing* raw = pr.get();
  peers_.emplace(id, std::move(pr));
  return raw;
}

Status SmIface::flush(Completion* comp) {
  if (fallback_->idle()) return Status::Ok;
  if (!comp) return Status::InProgress;
  flush_waiters_.push_back(comp);
  return Status::InProgress;
}

void SmIface::ops_drained() {
  for (Completion* comp : std::exchange(flush_waiters_, {})) completion_update(comp, Status::Ok);
}

void SmIface::schedule(SmEp* ep) {
  if (ep->scheduled) return;
  ep->scheduled = true;
  scheduled_.push_back(ep);
}

void SmIface::ep_destroyed(SmEp* ep) {
  std::erase(eps_, ep);
  std::replace(scheduled_.begin(), scheduled_.end(), ep, static_cast<SmEp*>(nullptr));
}

unsigned SmIface::progress() {
  unsigned events = poll_ring();
  events += send_replies();
  events += progress_eps();
  // The peer check's clock is read on every 16th call: a busy-polling
  // caller makes 16 calls in well under a microsecond, and a clock read on
  // each would be a good part of the time between two looks at the ring.
  // The coarse clock (a few ms) is enough for the check's interval.
  if ((++progress_calls_ & 15) == 0) {
    const uint64_t now = ucs::coarse_monotonic_ns();
    if (now >= next_check_ns_) {
      next_check_ns_ = now + static_cast<uint64_t>(config_.peer_check_interval.count());
      check_peers();
    }
  }
  if (failures_) events += report_failures();
  return events;
}

unsigned SmIface::poll_ring() {
  if (polling_) return 0;  // re-entered from a handler: the outer call goes on
  polling_ = true;
  unsigned n = 0;
  for (; n < ring_.num_slots(); ++n) {
    const SlotHeader* slot = ring_.front();
    if (!slot) break;
    handle(*slot, reinterpret_cast<const uint8_t*>(slot + 1));
    ring_.pop();
  }
  polling_ = false;
  return n;
}

void SmIface::handle(const SlotHeader& slot, const uint8_t* payload) {
  const uint32_t length = slot.length;  // read once: the producer could rewrite it
  if (length > ring_.capacity()) {
    MC_LOG(error) << "sm: dropped a ring message of type " << unsigned(slot.type) << " claiming "
                  << length << " bytes (a slot holds " << ring_.capacity() << ")";
    return;
  }
  const std::span<const uint8_t> msg(payload, length);
  switch (slot.type) {
    case kMsgAm: (void)invoke_am(slot.am_id, payload, length, 0); return;
    case kMsgPutReq:
    case kMsgGetReq: fallback_->serve(slot.type, msg); return;
    case kMsgPutAck:
    case kMsgGetRep: fallback_->complete(slot.type, msg); return;
    case kMsgNop: return;
    default: MC_LOG(error) << "sm: dropped a ring message of unknown type " << unsigned(slot.type);
  }
}

unsigned SmIface::send_replies() {
  if (!replies_waiting_) return 0;
  replies_waiting_ = false;
  unsigned n = 0;
  for (auto& [id, pr] : peers_) {
    auto& q = pr->replies;
    while (!q.empty() && pr->send(q.front().first, 0, {q.front().second})) {
      q.pop_front();
      ++n;
    }
    if (!q.empty()) replies_waiting_ = true;
  }
  return n;
}

unsigned SmIface::progress_eps() {
  unsigned n = 0;
  // Indexing: a pending callback may create or destroy endpoints, which
  // appends to or nulls entries of scheduled_.
  for (size_t i = 0; i < scheduled_.size(); ++i) {
    SmEp* ep = scheduled_[i];
    if (!ep) continue;
    n += ep->dispatch();
    if (scheduled_[i] == ep && !ep->busy()) {
      ep->scheduled = false;
      scheduled_[i] = nullptr;
    }
  }
  std::erase(scheduled_, static_cast<SmEp*>(nullptr));
  return n;
}

void SmIface::check_peers() {
  for (auto it = peers_.begin(); it != peers_.end();) {
    PeerRing& pr = *it->second;
    if (pr.alive() || pr.death_handled) {
      it = pr.alive() || pr.refs > 0 ? std::next(it) : peers_.erase(it);
      continue;
    }
    pr.death_handled = true;
    pr.replies.clear();
    for (SmEp* ep : eps_) {
      if (&ep->peer() == &pr && ep->failure() == Status::Ok) {
        MC_LOG(debug) << "sm: peer process " << pr.id().pid << " is gone";
        ep->fail(Status::ConnectionReset);
      }
    }
    it = pr.refs == 0 ? peers_.erase(it) : std::next(it);
  }
  // A producer that died between claiming a slot of our ring and
  // publishing it would hold back every message behind it.
  for (uint32_t tag = ring_.stalled_tag();
       tag != 0 && tag != id_.pid && !process_alive(static_cast<pid_t>(tag), 0) &&
       ring_.reclaim(tag);
       tag = ring_.stalled_tag()) {
    MC_LOG(warn) << "sm: reclaimed a ring slot claimed by dead process " << tag;
  }
}

unsigned SmIface::report_failures() {
  failures_ = false;
  std::vector<SmEp*> failed;
  for (SmEp* ep : eps_) {
    if (ep->take_unreported_failure()) failed.push_back(ep);
  }
  // User callbacks (completions, the handler) may destroy endpoints, so each
  // is looked up again after every call out.
  auto live = [this](SmEp* ep) { return std::find(eps_.begin(), eps_.end(), ep) != eps_.end(); };
  for (SmEp* ep : failed) {
    if (!live(ep)) continue;
    const Status status = ep->failure();
    fallback_->fail_ep(ep, status);
    if (!live(ep)) continue;
    ep->complete_flushes(status);
    if (!live(ep)) continue;
    if (err_handler_) {
      err_handler_(ep, status);
    } else {
      MC_LOG(error) << "sm: endpoint to process " << ep->peer().id().pid << " failed: " << status
                    << " (no error handler is set)";
    }
    // Pending requests run now and see the failure: nothing waits for ever.
    if (live(ep) && ep->busy()) schedule(ep);
  }
  // A peer that died without closing left its segments in /dev/shm.
  if (!failed.empty()) remove_stale_segments();
  return static_cast<unsigned>(failed.size());
}

}  // namespace mc::uct::sm

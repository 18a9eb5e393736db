// SPDX-License-Identifier: Apache-2.0
// Lane selection: which local iface talks to which remote iface, for what
// (active messages, RMA, bandwidth), and why every other pair was not chosen.
// Pure functions over attributes, so they are testable without transports.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "ucp/wireup/address.h"
#include "uct/api/types.h"
#include "ucs/sys/visibility.h"

namespace mc::ucp::wireup {

/// A local transport resource as lane selection sees it.
struct LocalResource {
  std::string tl_name;   ///< "tcp"
  std::string dev_name;  ///< "eth0"
  std::string md_name;   ///< the md the iface belongs to
  uct::DeviceType dev_type = uct::DeviceType::Net;
  uct::IfaceAttr attr;       ///< as the opened iface reports it
  uct::LinearFunc reg_cost;  ///< the md's registration cost
  bool enabled = true;       ///< false: filtered by configuration, with the reason below
  std::string disabled_reason;
  int numa_node = -1;  ///< NUMA node of the device (ucs/topo); -1: unknown
  /// "tcp/eth0".
  std::string name() const { return tl_name + "/" + dev_name; }
};

/// Whether local resource `local` reaches remote iface `remote` (indices into
/// the vectors given to select_lanes); sets `*reason` when it does not.
using ReachFn = std::function<bool(size_t local, size_t remote, std::string* reason)>;

/// Limits and the representative sizes of the scores.
struct LaneSelectParams {
  size_t max_rma_rails = 2;
  size_t max_eager_rails = 1;
  size_t rma_size = 256 * 1024;                ///< size an RMA lane is scored at
  uct::MemType mem_type = uct::MemType::Host;  ///< memory the RMA lanes must touch
  /// NUMA node of the memory the rails move (the worker's): rails on devices
  /// of that node come first, the others only when rails are left; -1: no
  /// preference (the topology is unknown).
  int mem_numa_node = -1;
  /// Most rails on resources whose traffic goes through the kernel's
  /// loopback (IfaceAttr::kernel_loopback): MC_LOOPBACK_RAILS when the peer
  /// shares this network namespace, else no limit.
  size_t loopback_rails = SIZE_MAX;
};

/// What a lane is used for; a lane may have several roles.
enum LaneRole : unsigned {
  kLaneAm = 1u << 0,     ///< active messages and small operations
  kLaneRma = 1u << 1,    ///< put / get below the multi-lane range
  kLaneRmaBw = 1u << 2,  ///< one of the multi-lane put / get rails
  kLaneAmBw = 1u << 3,   ///< one of the rails of large active messages
  kLaneRmaGpu = 1u << 4, ///< put / get of GPU memory the other lanes cannot touch (cuda_ipc)
};

/// "am|rma|rma-bw".
MC_INTERNAL std::string lane_roles_string(unsigned roles);

/// Scores of one reachable pair and the terms they are made of (seconds,
/// bytes per second). Lower times are better.
struct Candidate {
  size_t local = 0;
  size_t remote = 0;
  std::string name;      ///< "tcp/eth0 -> tcp/eth1"
  double latency = 0;    ///< max of both sides' latency
  double overhead = 0;   ///< local + remote overhead for am; local for rma
  double bandwidth = 0;  ///< min of both sides' bandwidth
  double am_time = 0;    ///< latency + both overheads
  double rma_time = 0;   ///< latency + local overhead + rma_size / bandwidth
  bool am_ok = false;    ///< can carry active messages
  bool rma_ok = false;   ///< can put and get
  bool bw_ok = false;    ///< can put and get by zero-copy
  int priority = 0;
};

/// A chosen pair.
struct Lane {
  size_t candidate = 0;  ///< index into LaneSelection::candidates
  size_t local = 0;
  size_t remote = 0;
  unsigned roles = 0;  ///< LaneRole bits
};

/// Why a resource or a pair was not chosen for a role.
enum class RejectReason {
  Filtered,
  NoPeerTransport,
  NoLocalTransport,
  Unreachable,
  Capability,
  MemType,
  LowerScore,
  SameDevice,
  RailLimit,
  LowBandwidth,
  SharedMemory,  ///< a network rail beside a shared-memory one
  Loopback       ///< another loopback rail to a peer in this network namespace
};

/// "filtered", "unreachable", ...
MC_INTERNAL const char* reject_reason_name(RejectReason reason);

struct Rejection {
  std::string name;  ///< "tcp/eth0", or "tcp/eth0 -> tcp/eth1" for a pair
  std::string role;  ///< "am", "rma", "rma-bw", "am-bw", or "" for every role
  RejectReason reason = RejectReason::Unreachable;
  std::string detail;  ///< the transport's reason, the scores compared, ...
};

/// The outcome of select_lanes(): the lanes, every candidate with its scores,
/// every rejection with its reason.
struct MC_INTERNAL LaneSelection {
  std::vector<Candidate> candidates;
  std::vector<Lane> lanes;
  int am_lane = -1;                  ///< index into lanes; -1: none
  std::vector<size_t> rma_lanes;     ///< best first
  std::vector<size_t> rma_bw_lanes;  ///< best first
  std::vector<size_t> am_bw_lanes;   ///< the am lane first
  /// Lanes for GPU memory when no RMA lane can touch it (cuda_ipc between
  /// processes of one host): used for that memory, ahead of staging.
  std::vector<size_t> gpu_lanes;
  std::vector<Rejection> rejections;

  /// The candidate behind lanes[lane].
  const Candidate& candidate_of(size_t lane) const { return candidates[lanes[lane].candidate]; }
  /// Readable report: lanes with roles and score terms, then rejections.
  void print(std::ostream& os) const;
};

/// Scores every reachable pair of an enabled local resource and a remote
/// iface of the same transport and picks: the AM lane (lowest am_time), RMA
/// lanes (lowest rma_time), up to max_rma_rails bandwidth lanes (highest
/// bandwidth, distinct devices first) and up to max_eager_rails AM rails;
/// when no RMA lane can touch GPU (CUDA) memory, the best pair that puts and
/// gets it becomes a GPU lane.
/// Ties go to the higher priority, then to the lower local index. Pure.
MC_INTERNAL LaneSelection select_lanes(const std::vector<LocalResource>& local,
                           const std::vector<AddressEntry>& remote, const ReachFn& reachable,
                           const LaneSelectParams& params);

}  // namespace mc::ucp::wireup

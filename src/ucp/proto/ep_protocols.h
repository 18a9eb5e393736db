// SPDX-License-Identifier: Apache-2.0
// EpProtocols: the protocol tables of one endpoint configuration (every
// operation, with and without a user registration), built from its lanes.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "ucp/api/rkey.h"
#include "ucp/proto/proto_select.h"
#include "ucp/wireup/lane_select.h"
#include "ucs/sys/visibility.h"

namespace mc::ucp::proto {

/// Knobs of the tables (from the context configuration).
struct EpProtoParams {
  size_t slice_size = 65536;
  std::optional<size_t> bcopy_thresh;
  std::optional<size_t> zcopy_thresh;
  std::optional<size_t> rndv_thresh;  ///< nullopt: auto
  double copy_bandwidth = 8e9;
  /// Staging fragment per memory type (MC_RNDV_FRAG_SIZE), indexed by MemType.
  size_t frag_size[3] = {size_t{512} << 10, size_t{4} << 20, size_t{4} << 20};
  size_t staging_depth = 4;  ///< MC_STAGING_DEPTH
};

/// How a put or get of memory no lane can access goes: each fragment is
/// copied between the user's buffer and a registered host bounce buffer by
/// a memory-type transport (a connect-to-self iface whose access_mem_types
/// cover the type, e.g. cuda_copy) and moved by the host tables' protocol.
struct Staging {
  size_t resource = 0;   ///< the memory-type transport: an index into the local resources
  std::string name;      ///< "cuda_copy/cuda"
  size_t frag_size = 0;  ///< bytes of one fragment (one bounce buffer)
  size_t depth = 1;      ///< fragments in flight
};

/// What carries one put or get (EpProtocols::route).
enum class RmaRoute : uint8_t {
  Table,         ///< `range`, row `index` of the table of the local memory type
  Staged,        ///< copied here through host bounce buffers (`staging`), each fragment
                 ///< moved by the registered host table
  RemoteStaged,  ///< the peer stages its memory, asked over the am lane; `staging` is set
                 ///< when the local memory is staged here too
  NoAmLane,      ///< the peer's memory would be remote staged, but there is no am lane
  None,          ///< no lane moves the local memory and nothing stages it
};

/// EpProtocols::route's answer.
struct RmaChoice {
  RmaRoute route = RmaRoute::None;
  const ProtoRange* range = nullptr;  ///< Table
  size_t index = 0;                   ///< Table: the row of `range`
  const Staging* staging = nullptr;   ///< Staged; RemoteStaged of local GPU memory
};

/// Memory types with tables of their own: host, and cuda / cuda-managed
/// (empty until a lane can access GPU memory).
inline constexpr size_t kProtoMemTypes = 3;

/// The tables of put, get and am, for each memory type of the local buffer,
/// each for an unregistered and a registered user buffer. A table is empty
/// when no lane can move that memory (the lanes' access_mem_types). Immutable
/// once built; shared by endpoints of one config.
class MC_INTERNAL EpProtocols {
 public:
  /// The table of `op` for a buffer of memory type `mem` that is (or is not)
  /// registered; an empty table for a memory type no lane can access.
  const ProtoTable& table(Op op, bool registered, uct::MemType mem = uct::MemType::Host) const {
    const auto m = static_cast<size_t>(mem);
    if (m >= kProtoMemTypes) return kNone;
    return tables_[static_cast<size_t>(op)][m][registered ? 1 : 0];
  }
  /// Every host table, unregistered then registered buffers, then the other
  /// memory types' tables, or why they are empty.
  void print(std::ostream& os) const;
  /// The staging protocol of `op` (put or get) for memory `mem`: set when no
  /// lane can access that memory, a memory-type transport can, and the host
  /// registered table of `op` has a protocol. Null otherwise.
  const Staging* staging(Op op, uct::MemType mem) const;
  /// What carries a put or get of `length` bytes of local memory `mem`
  /// (registered or not) to the registration of the peer's key `rkey`: the
  /// table's range for the size when `rkey` reaches the range's lane;
  /// otherwise staging here, when a memory-type transport stages `mem`;
  /// otherwise, for the peer's GPU memory, remote staging. The peer's GPU
  /// memory that no lane's key reaches is remote staged at once. The one
  /// place a put or get is routed: the endpoint only carries it out.
  RmaChoice route(Op op, bool registered, uct::MemType mem, size_t length, const Rkey& rkey) const;

  /// Builds the tables from a lane selection over `local` resources. Pure.
  static EpProtocols build(const wireup::LaneSelection& sel,
                           const std::vector<wireup::LocalResource>& local,
                           const EpProtoParams& params);

 private:
  static inline const ProtoTable kNone{};           ///< what table() gives no memory type
  ProtoTable tables_[3][kProtoMemTypes][2];         ///< op, memory type, registered
  std::optional<Staging> staging_[kProtoMemTypes];  ///< by memory type (put and get)
  /// A put or get of a peer's memory that no lane's key reaches (its GPU
  /// memory over tcp or sm) can go by remote staging: the peer stages it
  /// through its own bounce buffers, asked and answered over the
  /// active-message lane (set when there is one).
  bool remote_staging_ = false;
};

/// How memory of type `mem` is staged: the first enabled resource of `local`
/// that copies between host memory and `mem` (a memory-type transport:
/// connect-to-self, zero-copy put and get, access to both types, e.g.
/// cuda_copy), fragments of `frag_size` capped by its zero-copy limits,
/// `depth` of them in flight. Empty: no such transport (or Host). Pure.
std::optional<Staging> plan_staging(const std::vector<wireup::LocalResource>& local,
                                    uct::MemType mem, size_t frag_size, size_t depth);

/// The figures of endpoint lane `lane` (candidate `c` over resource `l`) for
/// `op`, with UCP's headers taken off the payload limits. Pure.
LanePerf lane_perf(Op op, const wireup::Candidate& c, const wireup::LocalResource& l, size_t lane);

}  // namespace mc::ucp::proto

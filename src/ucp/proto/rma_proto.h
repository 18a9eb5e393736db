// SPDX-License-Identifier: Apache-2.0
// The put and get protocols' one decision: which UCT call moves a slice on
// a lane, how large a slice may be, and each range's immediate entry (the
// lane and the sizes that one call on it moves without an op). The
// endpoint and RmaOp both go through these; nothing else derives a call,
// a lane or a limit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ucp/proto/lane_runtime.h"
#include "ucp/proto/proto_select.h"
#include "ucs/sys/visibility.h"

namespace mc::ucp::proto {

/// In line on the data path (a put of 8 bytes costs a few tens of
/// instructions here): slice_call() and post_slice() and what they use.
namespace detail {

struct Caps {
  bool bcopy;
  bool zcopy;
  const uct::OpLimits* lim;
};

inline Caps caps_of(Op op, const uct::IfaceAttr& a) {
  const bool put = op == Op::Put;
  return {(a.cap & (put ? uct::kCapPutBcopy : uct::kCapGetBcopy)) != 0,
          (a.cap & (put ? uct::kCapPutZcopy : uct::kCapGetZcopy)) != 0, put ? &a.put : &a.get};
}

struct PackArg {
  const uint8_t* src;
  size_t length;
};

inline size_t pack_slice(void* dest, void* arg) {
  auto* a = static_cast<PackArg*>(arg);
  if (a->length) std::memcpy(dest, a->src, a->length);
  return a->length;
}

// The destination pointer travels as the argument: it stays valid for the
// whole request.
inline void unpack_slice(void* arg, const void* data, size_t length) {
  if (length) std::memcpy(arg, data, length);
}

}  // namespace detail

/// The UCT call one slice is moved with.
enum class SliceCall : uint8_t { None, Short, Bcopy, Zcopy };

/// The call for a slice of `length` bytes of a range of `kind` on a lane
/// with `attr`: the kind's own call when the slice fits it (put_short for a
/// short put, bcopy for a copy kind, zero-copy otherwise), else the other
/// mode that fits (a slice re-issued on a lane with smaller limits); None
/// when nothing fits. The one place a call is chosen.
inline SliceCall slice_call(Op op, ProtoKind kind, const uct::IfaceAttr& attr, size_t length) {
  const detail::Caps c = detail::caps_of(op, attr);
  if (op == Op::Put && kind == ProtoKind::Short && (attr.cap & uct::kCapPutShort) &&
      length <= attr.put.max_short) {
    return SliceCall::Short;
  }
  const bool bcopy = c.bcopy && length <= c.lim->max_bcopy;
  const bool copy_kind = kind == ProtoKind::Short || kind == ProtoKind::Bcopy;
  if (copy_kind && bcopy) return SliceCall::Bcopy;
  if (c.zcopy && length <= c.lim->max_zcopy && length > 0) return SliceCall::Zcopy;
  return bcopy ? SliceCall::Bcopy : SliceCall::None;
}

/// The largest slice of a copy (bcopy) or zero-copy `kind` one lane takes,
/// falling back to the other mode; 0: neither.
MC_INTERNAL size_t slice_limit(Op op, ProtoKind kind, const uct::IfaceAttr& attr);

/// The fragment of a single-lane `kind`: the smallest slice_limit() among
/// `lanes` (a re-issued fragment must fit where it goes); `length` (at
/// least 1) for a short kind or when no lane limits it.
MC_INTERNAL size_t rma_fragment(Op op, ProtoKind kind, const std::vector<LaneRuntime>& runtime,
                    const std::vector<size_t>& lanes, size_t length);

/// Posts one slice [buffer, +length) at `remote_addr` with `call` on `lr`
/// (`memh`: the buffer's registration on its md, for Zcopy; `comp`: for
/// Bcopy gets and Zcopy) and counts it: its bytes once posted (and done,
/// when the call completed it), a local completion for a put done in the
/// call. The transport's answer.
inline ucs::Status post_slice(Op op, SliceCall call, const LaneRuntime& lr, void* buffer,
                              size_t length, uint64_t remote_addr, const uct::Rkey& rkey,
                              const uct::MemHandle* memh, uct::Completion* comp) {
  using ucs::Status;
  const bool put = op == Op::Put;
  Status s = Status::Unsupported;
  switch (call) {
    case SliceCall::None: return Status::Unsupported;
    case SliceCall::Short: s = lr.ep->put_short(buffer, length, remote_addr, rkey); break;
    case SliceCall::Bcopy:
      if (put) {
        detail::PackArg arg{static_cast<const uint8_t*>(buffer), length};
        ucs::Result<size_t> r = lr.ep->put_bcopy(detail::pack_slice, &arg, remote_addr, rkey);
        s = !r.ok() ? r.status() : (*r == length ? Status::Ok : Status::IoError);
      } else {
        s = lr.ep->get_bcopy(detail::unpack_slice, buffer, length, remote_addr, rkey, comp);
      }
      break;
    case SliceCall::Zcopy: {
      const uct::Iov iov{buffer, length, memh};
      s = put ? lr.ep->put_zcopy(&iov, 1, remote_addr, rkey, comp)
              : lr.ep->get_zcopy(&iov, 1, remote_addr, rkey, comp);
      break;
    }
  }
  if (s == Status::Ok && put) lr.local_completions = true;
  if (s == Status::Ok || s == Status::InProgress) lr.rma_bytes += length;
  if (s == Status::Ok) lr.rma_done_bytes += length;  // InProgress: at its completion
  return s;
}

/// A put or get range's immediate entry: a message of at most `max` bytes
/// is one slice on `lane` (the range's first lane), posted there by the
/// endpoint without an op, a slice plan or an executor. `max` is what the
/// general path would cut no smaller: rma_fragment() over the lanes that
/// may carry it or take it over (the range's and the stand-by rails). 0: no
/// entry (a multi-lane range, or none).
struct RmaEntry {
  size_t lane = 0;
  size_t max = 0;
};

/// The entry of each range of `table` (same order), for an endpoint with
/// `runtime` whose stand-by rails are `rails`. Computed once per endpoint.
MC_INTERNAL std::vector<RmaEntry> rma_entries(const ProtoTable& table, const std::vector<LaneRuntime>& runtime,
                                  const std::vector<size_t>& rails);

}  // namespace mc::ucp::proto

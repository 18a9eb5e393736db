// SPDX-License-Identifier: Apache-2.0
// UctSide: one end of a UCT test: the memory domain and iface opened on the
// chosen transport and device, its registered buffers, and (once connected)
// the endpoint and remote keys of the peer.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tools/perf/perf_buffer.h"
#include "tools/perf/perf_params.h"
#include "uct/api/component.h"
#include "uct/api/ep.h"
#include "uct/api/iface.h"

namespace mc::ucs {
class EventLoop;
}

namespace mc::perf {

/// A transport on a device, and who offers it.
struct UctResource {
  uct::Component* component = nullptr;
  std::string md_name;
  uct::TlResource tl;
};

/// The resource of transport `tl` on device `dev`; an empty `dev` takes
/// `preferred_dev` when the transport has it, else its first device.
/// NoDevice when there is none; `why` (logged) then says what exists.
Result<UctResource> find_uct_resource(const std::string& tl, const std::string& dev,
                                      const std::string& preferred_dev, std::string* why);

/// Every transport/device pair the loaded modules offer, "self/memory tcp/lo ...".
std::string list_uct_resources();

/// The buffers of a side, each of the message size (send and receive: of
/// the footprint, when the test cycles through one): what it sends, what it
/// sends last (a distinct pattern, so the final check proves the last
/// message moved; a get's last destination), and what peers put into (or
/// get from: the send buffer).
enum class Buf : uint8_t { Send = 0, Final = 1, Recv = 2 };

/// The length of each buffer, by Buf.
using BufLengths = std::array<size_t, 3>;

class UctSide {
 public:
  /// Opens the md and the iface and makes the buffers of `lengths` bytes,
  /// for local and remote access: from the md's mem_alloc when `alloc` is
  /// Md and the md has one, else an AlignedBuffer of `alloc` (huge pages
  /// but for Pages) registered with mem_reg. On
  /// error `why` (logged) says what failed.
  static Result<std::unique_ptr<UctSide>> open(const UctResource& resource,
                                               const BufLengths& lengths, Alloc alloc,
                                               ucs::EventLoop* async, uct::ErrorHandler on_error,
                                               std::string* why);

  const UctResource& resource() const { return resource_; }
  uct::MemoryDomain& md() const { return *md_; }
  uct::Iface& iface() const { return *iface_; }
  const uct::IfaceAttr& attr() const { return attr_; }

  uint8_t* buf(Buf b) const { return bufs_[static_cast<int>(b)]; }
  /// Whether the buffers came from the md's mem_alloc.
  bool md_allocated() const { return md_allocated_; }
  const uct::MemHandle* memh(Buf b) const { return memh_[static_cast<int>(b)].get(); }

  /// The packed remote key of a buffer.
  Result<std::vector<uint8_t>> pack_rkey(Buf b) const;

  /// Connects to a peer iface and unpacks the peer's keys. Unreachable when
  /// this iface cannot reach the peer's; `why` (logged) says why.
  Status connect(std::span<const uint8_t> dev_addr, std::span<const uint8_t> iface_addr,
                 std::span<const uint8_t> peer_recv_rkey, std::span<const uint8_t> peer_send_rkey,
                 std::string* why);

  uct::Endpoint& ep() const { return *ep_; }
  const uct::Rkey& peer_recv_rkey() const { return *peer_recv_rkey_; }
  const uct::Rkey& peer_send_rkey() const { return *peer_send_rkey_; }

  /// Destroys the endpoint (the run is over; its errors no longer matter).
  void disconnect() { ep_.reset(); }

 private:
  static constexpr int kBufs = 3;

  explicit UctSide(UctResource resource) : resource_(std::move(resource)) {}
  Status make_buf(int i, size_t length, std::string* why);

  // Declaration order is teardown order reversed: the endpoint goes first,
  // the md last; buffers outlive their registrations.
  UctResource resource_;
  std::unique_ptr<uct::MemoryDomain> md_;
  std::unique_ptr<uct::Iface> iface_;
  uct::IfaceAttr attr_;
  std::unique_ptr<AlignedBuffer> heap_[kBufs];   // the memory of heap buffers
  std::unique_ptr<uct::MemHandle> memh_[kBufs];  // owns md-allocated memory
  uint8_t* bufs_[kBufs] = {};
  Alloc alloc_ = Alloc::Md;  // of heap buffers
  bool md_allocated_ = false;
  std::unique_ptr<uct::Rkey> peer_recv_rkey_, peer_send_rkey_;
  std::unique_ptr<uct::Endpoint> ep_;
};

}  // namespace mc::perf

// SPDX-License-Identifier: Apache-2.0
// self iface: active messages are queued and delivered by progress(); puts
// and gets are memcpy after the rkey is checked.
#pragma once

#include <deque>
#include <vector>

#include "uct/api/iface.h"
#include "uct/base/pending_queue.h"
#include "uct/base/self_address.h"
#include "uct/self/self_md.h"

namespace mc::uct::self {

class SelfIface : public Iface {
 public:
  SelfIface(SelfMd* md, SelfConfig config);

  IfaceAttr query() const override;
  unsigned progress() override;
  std::vector<uint8_t> device_address() const override;
  std::vector<uint8_t> iface_address() const override;
  bool is_reachable(std::span<const uint8_t> device_addr, std::span<const uint8_t> iface_addr,
                    std::string* reason) const override;
  Result<std::unique_ptr<Endpoint>> ep_create(std::span<const uint8_t> device_addr,
                                              std::span<const uint8_t> iface_addr) override;
  Status flush(Completion* comp) override;

  SelfMd& self_md() const { return *md_; }
  const SelfConfig& config() const { return config_; }

  /// Queues an active message; NoResource when the queue is full.
  Status enqueue_am(uint8_t id, std::vector<uint8_t> data);
  /// Whether a send would be accepted now.
  bool has_room() const { return queue_.size() < config_.am_queue_len; }
  PendingQueue& pending() { return pending_; }

 private:
  struct Message {
    uint8_t id;
    std::vector<uint8_t> data;
  };

  SelfMd* md_;
  SelfConfig config_;
  SelfAddress self_addr_;
  std::deque<Message> queue_;
  PendingQueue pending_;
};

}  // namespace mc::uct::self

// SPDX-License-Identifier: Apache-2.0
// The sm configuration table.
#include "uct/sm/sm_config.h"

#include "ucs/log/log.h"

namespace mc::uct::sm {

const ucs::config::Table& sm_config_table() {
  using ucs::config::field;
  static const ucs::config::Table table(
      "sm transport", "SM_",
      {field("RING_SIZE", "256",
             "Slots in the shared-memory receive ring of each iface (a power of two); every "
             "peer process sends into it, and a full ring makes sends return NoResource.",
             &SmConfig::ring_size, ucs::config::uint_parser(2, 1u << 20)),
       field("SEG_SIZE", "8k",
             "Bytes of one ring slot, its 16-byte header included (rounded up to 64); it "
             "bounds active messages, bcopy puts and gets, and each piece of a put or get "
             "sent through the ring. Peers must use the same value.",
             &SmConfig::seg_size, ucs::config::size_parser(256, 1u << 24)),
       field("CMA", "y",
             "Move put/get data of registered (not sm-allocated) memory with cross-memory "
             "attach (process_vm_readv/writev); when off or not permitted, the data goes "
             "through the ring and the target process copies it.",
             &SmConfig::cma, ucs::config::bool_parser()),
       field("PEER_CHECK_INTERVAL", "100ms",
             "How often progress() checks that the peer processes of the endpoints are "
             "alive; a dead peer fails its endpoint and calls the iface's error handler.",
             &SmConfig::peer_check_interval, ucs::config::time_parser())});
  return table;
}

ucs::Result<SmConfig> sm_config_read(const ucs::config::Sources& sources) {
  MC_ASSIGN_OR_RETURN(SmConfig config,
                      ucs::config::read_table<SmConfig>(sm_config_table(), sources));
  if ((config.ring_size & (config.ring_size - 1)) != 0) {
    MC_LOG(error) << "MC_SM_RING_SIZE=" << config.ring_size << " is not a power of two";
    return ucs::Status::InvalidParam;
  }
  config.seg_size = (config.seg_size + kSlotAlign - 1) / kSlotAlign * kSlotAlign;
  if (config.peer_check_interval.count() <= 0) {
    MC_LOG(error) << "MC_SM_PEER_CHECK_INTERVAL must be positive";
    return ucs::Status::InvalidParam;
  }
  return config;
}

}  // namespace mc::uct::sm

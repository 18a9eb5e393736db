// SPDX-License-Identifier: Apache-2.0
// The self transport's configuration table.
#include "uct/self/self_config.h"

namespace mc::uct::self {

const ucs::config::Table& self_config_table() {
  static const ucs::config::Table table(
      "self transport", "SELF_",
      {ucs::config::field("SEG_SIZE", "8k",
                          "Largest active message sent by bcopy or zcopy, and of a put or get "
                          "by bcopy.",
                          &SelfConfig::seg_size, ucs::config::size_parser(64, 1 << 30)),
       ucs::config::field("AM_QUEUE_LEN", "256",
                          "Active messages queued for delivery before sends return NoResource.",
                          &SelfConfig::am_queue_len, ucs::config::uint_parser(1, 1 << 20))});
  return table;
}

}  // namespace mc::uct::self

// SPDX-License-Identifier: Apache-2.0
// The RC transports' configuration table.
#include "uct/ib/rc/rc_config.h"

#include "ucs/config/parser.h"

namespace mc::uct::ib::rc {

const ucs::config::Table& rc_config_table() {
  using ucs::config::field;
  using ucs::config::uint_parser;
  static const ucs::config::Table table(
      "rc transport", "",
      {field("NUM_QP_PER_EP", "2",
             "RC queue pairs per endpoint; puts and gets go round-robin over them, active "
             "messages always take the first, so they stay ordered.",
             &RcConfig::num_qp_per_ep, uint_parser(1, 16)),
       field("MAX_WR", "256", "Send queue depth of each queue pair (work requests in flight).",
             &RcConfig::max_wr, uint_parser(16, 32768)),
       field("MAX_SGE", "4", "Scatter/gather entries per work request: the iov limit of zcopy.",
             &RcConfig::max_sge, uint_parser(1, 32)),
       field("MAX_INLINE", "64",
             "Bytes sent inline in the work request (put_short, am_short) with no DMA read "
             "of the source.",
             &RcConfig::max_inline, uint_parser(0, 1024)),
       field("NUM_CQ_PER_CTX", "1",
             "Send completion queues of an iface; its queue pairs are spread over them.",
             &RcConfig::num_cq_per_ctx, uint_parser(1, 64)),
       field("MAX_CQE_PER_CTX", "4096",
             "Entries of each completion queue; work requests beyond what they can report "
             "return NoResource.",
             &RcConfig::max_cqe_per_ctx, uint_parser(64, 65536)),
       field("NUM_COMP_CHANNELS_PER_CTX", "1",
             "Completion channels of an iface (its event fd waits on all of them); its send "
             "CQs and then its receive CQ report to them in turn.",
             &RcConfig::num_comp_channels_per_ctx, uint_parser(1, 64)),
       field("RC_SEG_SIZE", "8k",
             "Bounce buffer and receive buffer size: the largest bcopy put or get and the "
             "largest active message.",
             &RcConfig::seg_size, ucs::config::size_parser(256, 16384)),
       field("RC_RX_QUEUE_LEN", "64", "Receive buffers posted to each queue pair.",
             &RcConfig::rx_queue_len, uint_parser(4, 4096)),
       field("RC_TX_MODERATION", "32",
             "Every this many work requests one is signalled; the others complete with it.",
             &RcConfig::tx_moderation, uint_parser(1, 1024)),
       field("RC_MAX_BUFS", "1024", "Bounce buffers of an iface (bcopy and short sends).",
             &RcConfig::max_bufs, uint_parser(16, 1u << 20)),
       field("RC_OOB_ADDR", "auto",
             "IPv4 address peers use to exchange queue pair numbers with this iface; auto: "
             "the address inside a RoCE IPv4 GID, else the first non-loopback IPv4 address, "
             "else 127.0.0.1.",
             &RcConfig::oob_addr, ucs::config::string_parser()),
       field("RC_TIMEOUT", "18",
             "Local ACK timeout of the queue pairs: 4.096 us * 2^value (IB spec).",
             &RcConfig::timeout, uint_parser(1, 31)),
       field("RC_RETRY_COUNT", "7", "Transport retries before a work request fails.",
             &RcConfig::retry_count, uint_parser(0, 7))});
  return table;
}

}  // namespace mc::uct::ib::rc

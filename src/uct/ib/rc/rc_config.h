// SPDX-License-Identifier: Apache-2.0
// The knobs of the RC transports: queue pairs, work requests, completion
// queues and buffers. Mooncake's names where it has one (MC_MAX_WR, ...).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "ucs/config/table.h"

namespace mc::uct::ib::rc {

struct RcConfig {
  uint64_t num_qp_per_ep;              ///< MC_NUM_QP_PER_EP
  uint64_t max_wr;                     ///< MC_MAX_WR: send queue depth of each QP
  uint64_t max_sge;                    ///< MC_MAX_SGE
  uint64_t max_inline;                 ///< MC_MAX_INLINE
  uint64_t num_cq_per_ctx;             ///< MC_NUM_CQ_PER_CTX: send CQs of an iface
  uint64_t max_cqe_per_ctx;            ///< MC_MAX_CQE_PER_CTX: entries of each CQ
  uint64_t num_comp_channels_per_ctx;  ///< MC_NUM_COMP_CHANNELS_PER_CTX: of an iface
  size_t seg_size;                     ///< MC_RC_SEG_SIZE
  uint64_t rx_queue_len;               ///< MC_RC_RX_QUEUE_LEN: receives posted per QP
  uint64_t tx_moderation;              ///< MC_RC_TX_MODERATION
  uint64_t max_bufs;                   ///< MC_RC_MAX_BUFS: bounce buffers of an iface
  std::string oob_addr;                ///< MC_RC_OOB_ADDR
  uint64_t timeout;                    ///< MC_RC_TIMEOUT: local ACK timeout exponent
  uint64_t retry_count;                ///< MC_RC_RETRY_COUNT
};

/// The "rc transport" table (prefix "").
const ucs::config::Table& rc_config_table();

}  // namespace mc::uct::ib::rc

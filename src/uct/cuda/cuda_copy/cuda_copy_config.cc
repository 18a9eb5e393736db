// SPDX-License-Identifier: Apache-2.0
// The cuda_copy transport's configuration table.
#include "uct/cuda/cuda_copy/cuda_copy_config.h"

namespace mc::uct::cuda {

const ucs::config::Table& cuda_copy_config_table() {
  using ucs::config::field;
  static const ucs::config::Table table(
      "cuda_copy transport", "CUDA_COPY_",
      {field("STREAMS", "4",
             "CUDA streams per device that an iface spreads its copies over; each copy runs "
             "on one, and its completion is an event polled by progress().",
             &CudaCopyConfig::streams, ucs::config::uint_parser(1, 64)),
       field("SEG_SIZE", "64k",
             "Bytes of one pinned host bounce buffer: the largest put_short, put_bcopy and "
             "get_bcopy.",
             &CudaCopyConfig::seg_size, ucs::config::size_parser(256, size_t{16} << 20)),
       field("BOUNCE_COUNT", "128",
             "Most pinned bounce buffers an iface holds; when all are in use, short and bcopy "
             "operations return NoResource.",
             &CudaCopyConfig::bounce_count, ucs::config::uint_parser(1, 65536)),
       field("MAX_OUTSTANDING", "1024",
             "Copies an iface keeps in flight before new operations return NoResource.",
             &CudaCopyConfig::max_outstanding, ucs::config::uint_parser(1, 1 << 20)),
       field("REG_HOST", "y",
             "Registering pageable host memory pins it (cuMemHostRegister), so copies from and "
             "to it are asynchronous and run at full speed; unregistering unpins it.",
             &CudaCopyConfig::reg_host, ucs::config::bool_parser())});
  return table;
}

}  // namespace mc::uct::cuda

// SPDX-License-Identifier: Apache-2.0
// The nvmeof transport's configuration table.
#include "uct/nvmeof/nvmeof_config.h"

namespace mc::uct::nvmeof {

const ucs::config::Table& nvmeof_config_table() {
  using ucs::config::field;
  static const ucs::config::Table table(
      "nvmeof transport", "NVMEOF_",
      {field("QUEUE_DEPTH", "32",
             "File reads and writes an iface keeps in flight (the io_uring submission queue "
             "size); more wait in a queue until one completes.",
             &NvmeofConfig::queue_depth, ucs::config::uint_parser(1, 4096)),
       field("IO_URING", "y",
             "Move file data with io_uring; when off, or when io_uring cannot be set up (the "
             "reason is logged), progress() runs preadv/pwritev instead.",
             &NvmeofConfig::io_uring, ucs::config::bool_parser()),
       field("DIRECT_IO", "y",
             "Open files with O_DIRECT as well, and use it for every operation whose file "
             "offset, lengths and memory addresses are multiples of the file's block size; the "
             "others, and files whose file system refuses O_DIRECT, use the page cache.",
             &NvmeofConfig::direct_io, ucs::config::bool_parser()),
       field("CUFILE", "auto",
             "How GPU (CUDA device) memory moves to and from files: auto (cuFile, GPUDirect "
             "Storage, when MC_NVMEOF_CUFILE_LIB loads and its driver opens; otherwise through "
             "the worker's pinned host bounce buffers), on (cuFile only: when it cannot be used, "
             "GPU memory <-> file transfers fail with the reason instead of being staged) or off "
             "(always the bounce buffers). mc_info -d says whether cuFile is in use, or why not.",
             &NvmeofConfig::cufile,
             ucs::config::enum_parser<CufileMode>(
                 {{"auto", CufileMode::Auto}, {"on", CufileMode::On}, {"off", CufileMode::Off}})),
       field("CUFILE_LIB", "libcufile.so.0",
             "The cuFile library MC_NVMEOF_CUFILE loads at run time (dlopen: a name searched as "
             "usual, or a path); mc is built without cufile.h.",
             &NvmeofConfig::cufile_lib, ucs::config::string_parser())});
  return table;
}

}  // namespace mc::uct::nvmeof

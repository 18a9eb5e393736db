// SPDX-License-Identifier: Apache-2.0
// mc_uct_check: runs the UCT conformance checks against one transport,
// loaded like any module (MC_MODULE_DIR), in one process and across two.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "tools/tool_version.h"
#include "tools/uct_check/checks.h"
#include "ucs/log/log.h"

namespace {

void usage(FILE* out) {
  std::fprintf(out,
               "Usage: mc_uct_check [-d DEVICE] [-1 | -2] TRANSPORT\n\n"
               "Runs the UCT conformance checks on TRANSPORT (e.g. tcp, sm, self, or a\n"
               "vendor module found through MC_MODULE_DIR): every operation at every size\n"
               "class with data checked, in one process and across two (a forked target).\n"
               "  -d DEVICE  the device to use (default: the first; lo for network)\n"
               "  -1         one process only\n"
               "  -2         two processes only\n"
               "  -h, --help this help\n"
               "  --version  the version line\n"
               "Prints 'operation | size | result' rows and 'N passed, N failed'; exits 0\n"
               "only when every check passed.\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::string dev;
  bool one = true, two = true;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help") {
      usage(stdout);
      return 0;
    }
    if (arg == "--version") return mc::tools::print_version("mc_uct_check");
  }
  int opt;
  while ((opt = getopt(argc, argv, "d:12h")) != -1) {
    switch (opt) {
      case 'd': dev = optarg; break;
      case '1': two = false; break;
      case '2': one = false; break;
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (optind + 1 != argc) {
    usage(stderr);
    return 2;
  }
  if (mc::ucs::is_error(mc::ucs::log_init(argv[0]))) return 1;
  const std::string tl = argv[optind];
  mc::uct::check::Resource r;
  std::string why;
  if (!mc::uct::check::find_resource(tl, dev, &r, &why)) {
    std::fprintf(stderr, "mc_uct_check: %s\n", why.c_str());
    return 1;
  }
  std::printf("transport %s on device %s (component %s, md %s)\n", r.tl.tl_name.c_str(),
              r.tl.dev_name.c_str(), r.component->name().c_str(), r.md_name.c_str());
  mc::uct::check::Table table;
  // Two processes first: the fork happens before any iface starts a thread.
  if (two) mc::uct::check::run_two_process(r, table);
  if (one) mc::uct::check::run_one_process(r, table);
  table.print();
  return table.failed() == 0 ? 0 : 1;
}

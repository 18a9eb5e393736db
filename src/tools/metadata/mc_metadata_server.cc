// SPDX-License-Identifier: Apache-2.0
// mc_metadata_server: the HTTP metadata server of the Transfer Engine's
// http:// backend. Keys live in memory for the life of the process.
#include <signal.h>

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>

#include "tools/metadata/metadata_server.h"
#include "ucs/log/log.h"

namespace {

using mc::tools::metadata::MetadataServer;
using mc::tools::metadata::ServerOptions;

void usage(std::ostream& os) {
  os << "Usage: mc_metadata_server [--host H] [--port P] [--max-size BYTES]\n"
        "  HTTP metadata server: GET/PUT/DELETE /metadata?key=<key>, GET /health.\n"
        "  --host H          address to listen on (default 127.0.0.1; 0.0.0.0 for all)\n"
        "  --port P          TCP port (default 8080; 0 picks a free one)\n"
        "  --max-size BYTES  largest value accepted, larger PUTs get 413 (default 67108864)\n"
        "  -h, --help        this text\n";
}

bool parse_uint(const char* text, uint64_t max, uint64_t* out) {
  const char* end = text + std::strlen(text);
  const auto r = std::from_chars(text, end, *out);
  return r.ec == std::errc() && r.ptr == end && *out <= max;
}

}  // namespace

int main(int argc, char** argv) {
  ServerOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    uint64_t v = 0;
    if (arg == "-h" || arg == "--help") {
      usage(std::cout);
      return 0;
    } else if (arg == "--host" && has_value) {
      options.host = argv[++i];
    } else if (arg == "--port" && has_value) {
      if (!parse_uint(argv[++i], 65535, &v)) {
        std::cerr << "mc_metadata_server: invalid --port \"" << argv[i] << "\": expected 0-65535\n";
        return 2;
      }
      options.port = static_cast<uint16_t>(v);
    } else if (arg == "--max-size" && has_value) {
      if (!parse_uint(argv[++i], uint64_t{1} << 40, &v) || v == 0) {
        std::cerr << "mc_metadata_server: invalid --max-size \"" << argv[i]
                  << "\": expected a byte count from 1 to 2^40\n";
        return 2;
      }
      options.max_body = v;
    } else {
      std::cerr << "mc_metadata_server: unknown or incomplete option \"" << arg << "\"\n";
      usage(std::cerr);
      return 2;
    }
  }
  if (mc::ucs::is_error(mc::ucs::log_init(argv[0]))) return 1;

  // Signals are taken by sigwait below, never by the server's threads.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  std::string error;
  auto server = MetadataServer::create(options, &error);
  if (!server.ok()) {
    std::cerr << "mc_metadata_server: " << error << "\n";
    return 1;
  }
  MetadataServer* s = server->get();
  std::cout << "mc_metadata_server: listening on " << options.host << ":" << s->port() << std::endl;
  std::thread acceptor([s] { s->run(); });
  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::cout << "mc_metadata_server: " << strsignal(sig) << ", stopping" << std::endl;
  s->stop();
  acceptor.join();
  // Connection threads are detached and may still run: leave without
  // destroying what they use.
  std::_Exit(0);
}

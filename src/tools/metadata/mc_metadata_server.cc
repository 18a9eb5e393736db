// SPDX-License-Identifier: Apache-2.0
// mc_metadata_server: the HTTP metadata server of the Transfer Engine's
// http:// backend. Keys live in memory for the life of the process.
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>

#include "tools/metadata/metadata_server.h"
#include "tools/tool_version.h"
#include "ucs/config/parser.h"
#include "ucs/config/table.h"
#include "ucs/log/log.h"

namespace {

namespace cfg = mc::ucs::config;
using mc::tools::metadata::MetadataServer;
using mc::tools::metadata::ServerOptions;

void usage(std::ostream& os) {
  os << "Usage: mc_metadata_server [OPTIONS]\n"
        "  HTTP metadata server: GET/PUT/DELETE /metadata?key=<key>, GET /health.\n"
        "  --host H                  address to listen on (default 127.0.0.1; 0.0.0.0 for all)\n"
        "  --port P                  TCP port (default 8080; 0 picks a free one)\n"
        "  --addr [HOST]:PORT        both at once, as Mooncake's http-metadata-server takes\n"
        "                            them: --addr=:8080 listens on every interface (0.0.0.0),\n"
        "                            --addr=10.0.0.1:8080 on one, --addr=[::1]:8080 (IPv6)\n"
        "  --max-size BYTES          largest value, larger PUTs get 413 (default 67108864)\n"
        "  --max-total BYTES         keys and values in all, a PUT beyond gets 507\n"
        "                            (default 1073741824)\n"
        "  --max-in-flight BYTES     bytes of requests received and not yet handled, in all\n"
        "                            connections; beyond, 503 and close (default 1073741824)\n"
        "  --max-connections N       open connections; beyond, the one idle the longest is\n"
        "                            closed, 503 only when all are busy (default 256)\n"
        "  --max-connections-per-peer N\n"
        "                            the same for one client address (default 64)\n"
        "  --request-timeout T       bound of reading one request, head and body (default 10s)\n"
        "  --send-timeout T          bound of sending one answer (default 10s)\n"
        "  --idle-timeout T          a connection idle between requests this long is closed\n"
        "                            (default 60s)\n"
        "  --auth-token TOKEN        every request but GET /health needs 'Authorization:\n"
        "                            Bearer TOKEN', else 401 (default: MC_METADATA_AUTH_TOKEN\n"
        "                            from the environment; none when both are empty)\n"
        "  -h, --help                this text\n"
        "  --version                 the version line\n"
        "  Every option takes its value as --option VALUE or --option=VALUE; a later option\n"
        "  overrides an earlier one. Sizes take binary units (64m, 1g); times s, ms, m\n"
        "  (10s, 500ms).\n";
}

// The environment's part of the options: MC_METADATA_AUTH_TOKEN, the knob
// that the http:// backend sends.
struct EnvOptions {
  std::string auth_token;
};

const cfg::Table& env_table() {
  static const cfg::Table table(
      "mc_metadata_server", "METADATA_",
      {cfg::field("AUTH_TOKEN", "",
                  "The token mc_metadata_server requires as 'Authorization: Bearer <token>' when "
                  "--auth-token is not given; empty: none.",
                  &EnvOptions::auth_token, cfg::string_parser())});
  return table;
}

template <typename T>
bool parse_value(const std::string& option, const char* text, const cfg::Parser<T>& parser,
                 T* out) {
  if (parser.parse(text, out) == mc::ucs::Status::Ok) return true;
  std::cerr << "mc_metadata_server: invalid " << option << " \"" << text << "\": expected "
            << parser.syntax << "\n";
  return false;
}

bool parse_time(const std::string& option, const char* text, std::chrono::milliseconds* out) {
  cfg::Duration d{};
  if (!parse_value(option, text, cfg::time_parser(), &d)) return false;
  if (d < std::chrono::milliseconds(1) || d > std::chrono::hours(24)) {
    std::cerr << "mc_metadata_server: invalid " << option << " \"" << text
              << "\": expected a time from 1ms to 24h\n";
    return false;
  }
  *out = std::chrono::duration_cast<std::chrono::milliseconds>(d);
  return true;
}

// A token fits in a header line: visible ASCII, no blanks.
bool valid_token(const std::string& token) {
  if (token.empty()) return false;
  for (const char c : token) {
    if (c <= 0x20 || c > 0x7e) return false;
  }
  return true;
}

// --addr [HOST]:PORT: HOST an IPv4 address or name, [an IPv6 address], or
// nothing for every interface (0.0.0.0, as Go's ":8080" of the seed's
// http-metadata-server example).
bool parse_addr(const std::string& text, ServerOptions* options) {
  auto bad = [&text](const char* why) {
    std::cerr << "mc_metadata_server: invalid --addr \"" << text << "\": " << why
              << "; expected [HOST]:PORT, e.g. :8080, 10.0.0.1:8080 or [::1]:8080\n";
    return false;
  };
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos) return bad("no ':' before the port");
  std::string host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
    if (host.empty()) return bad("empty brackets");
  } else if (host.find_first_of("[]:") != std::string::npos) {
    return bad("an IPv6 address needs brackets");
  }
  uint64_t port = 0;
  const std::string port_text = text.substr(colon + 1);
  if (port_text.empty() ||
      cfg::uint_parser(0, 65535).parse(port_text, &port) != mc::ucs::Status::Ok) {
    return bad("the port is not a number in 0-65535");
  }
  if (host.empty()) {
    host = "0.0.0.0";
    std::cout << "mc_metadata_server: --addr=" << text
              << " names no host: listening on every interface (0.0.0.0)" << std::endl;
  }
  options->host = host;
  options->port = static_cast<uint16_t>(port);
  return true;
}

// 0 when parsed, else the exit status.
int parse_args(int argc, char** argv, ServerOptions* options) {
  bool token_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      usage(std::cout);
      std::exit(0);
    }
    if (arg == "--version") std::exit(mc::tools::print_version("mc_metadata_server"));
    // --option=VALUE (gflags' form, as Mooncake's tools are called) or
    // --option VALUE.
    std::string inline_value;
    const size_t eq = arg.find('=');
    const bool has_inline = arg.starts_with("--") && eq != std::string::npos;
    if (has_inline) {
      inline_value = arg.substr(eq + 1);
      arg.resize(eq);
    } else if (i + 1 >= argc) {
      std::cerr << "mc_metadata_server: unknown or incomplete option \"" << arg << "\"\n";
      usage(std::cerr);
      return 2;
    }
    const char* value = has_inline ? inline_value.c_str() : argv[++i];
    bool ok = true;
    uint64_t n = 0;
    if (arg == "--addr") {
      ok = parse_addr(value, options);
    } else if (arg == "--host") {
      options->host = value;
    } else if (arg == "--port") {
      ok = parse_value(arg, value, cfg::uint_parser(0, 65535), &n);
      options->port = static_cast<uint16_t>(n);
    } else if (arg == "--max-size") {
      ok = parse_value(arg, value, cfg::size_parser(1, size_t{1} << 40), &options->max_body);
    } else if (arg == "--max-total") {
      ok = parse_value(arg, value, cfg::size_parser(1, SIZE_MAX - 1), &options->max_total);
    } else if (arg == "--max-in-flight") {
      ok = parse_value(arg, value, cfg::size_parser(1, SIZE_MAX - 1), &options->max_in_flight);
    } else if (arg == "--max-connections") {
      ok = parse_value(arg, value, cfg::size_parser(1, 1000000), &options->max_connections);
    } else if (arg == "--max-connections-per-peer") {
      ok =
          parse_value(arg, value, cfg::size_parser(1, 1000000), &options->max_connections_per_peer);
    } else if (arg == "--request-timeout") {
      ok = parse_time(arg, value, &options->request_timeout);
    } else if (arg == "--send-timeout") {
      ok = parse_time(arg, value, &options->send_timeout);
    } else if (arg == "--idle-timeout") {
      ok = parse_time(arg, value, &options->idle_timeout);
    } else if (arg == "--auth-token") {
      options->auth_token = value;
      token_given = true;
    } else {
      std::cerr << "mc_metadata_server: unknown option \"" << arg << "\"\n";
      usage(std::cerr);
      return 2;
    }
    if (!ok) return 2;
  }
  if (!token_given) {
    std::string error;
    auto env = cfg::read_table<EnvOptions>(env_table(), &error);
    if (!env.ok()) {
      std::cerr << "mc_metadata_server: " << error << "\n";
      return 2;
    }
    options->auth_token = env->auth_token;
  }
  if ((token_given || !options->auth_token.empty()) && !valid_token(options->auth_token)) {
    std::cerr << "mc_metadata_server: invalid auth token: expected visible ASCII characters "
                 "without blanks, at least one\n";
    return 2;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  ServerOptions options;
  if (const int status = parse_args(argc, argv, &options); status != 0) return status;
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
  std::cout << "mc_metadata_server: listening on " << options.host << ":" << s->port()
            << (options.auth_token.empty() ? "" : " (bearer token required)") << std::endl;
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

// SPDX-License-Identifier: Apache-2.0
// The real-services fixture: fork/exec with the log in the temporary
// directory, readiness by asking each service (HTTP /health, redis PING),
// bounded waits, and SIGKILL of the children if the test process dies.
#include "common/services.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "ucs/sys/sys.h"

namespace mc::test {

namespace fs = std::filesystem;

namespace {

constexpr auto kReadyTimeout = std::chrono::seconds(30);
constexpr auto kStopTimeout = std::chrono::seconds(5);

// A connected socket to 127.0.0.1:port within timeout_ms, or -1.
int connect_loopback(uint16_t port, int timeout_ms) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    pollfd p{fd, POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof(err);
    if (errno != EINPROGRESS || poll(&p, 1, timeout_ms) != 1 ||
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
      close(fd);
      return -1;
    }
  }
  return fd;
}

// Sends `out`, then reads until the peer closes or `done` says the reply is
// complete, within timeout_ms overall.
bool exchange(int fd, const std::string& out, std::string* in, int timeout_ms,
              bool (*done)(const std::string&), bool half_close = false) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  auto left_ms = [&] {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    return static_cast<int>(std::max<int64_t>(0, left.count()));
  };
  size_t sent = 0;
  while (sent < out.size()) {
    const ssize_t n = send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    pollfd p{fd, POLLOUT, 0};
    if ((n < 0 && errno != EAGAIN) || poll(&p, 1, left_ms()) != 1) return false;
  }
  if (half_close) shutdown(fd, SHUT_WR);
  char buf[4096];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n > 0) {
      in->append(buf, static_cast<size_t>(n));
      if (done != nullptr && done(*in)) return true;
      continue;
    }
    if (n == 0) return true;
    pollfd p{fd, POLLIN, 0};
    if (errno != EAGAIN || poll(&p, 1, left_ms()) != 1) return false;
  }
}

bool redis_reply_complete(const std::string& in) {
  return in.find("\r\n") != std::string::npos;
}

}  // namespace

int http_request(uint16_t port, const std::string& method, const std::string& target,
                 const std::string& body_out, std::string* body, int timeout_ms) {
  const int fd = connect_loopback(port, timeout_ms);
  if (fd < 0) return 0;
  std::string req = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                    "\r\nConnection: close\r\nContent-Length: " + std::to_string(body_out.size()) +
                    "\r\n\r\n" + body_out;
  std::string in;
  const bool ok = exchange(fd, req, &in, timeout_ms, nullptr);
  close(fd);
  if (!ok || in.compare(0, 9, "HTTP/1.1 ") != 0 || in.size() < 12) return 0;
  const size_t head_end = in.find("\r\n\r\n");
  if (body) *body = head_end == std::string::npos ? "" : in.substr(head_end + 4);
  return std::atoi(in.substr(9, 3).c_str());
}

std::string raw_exchange(uint16_t port, const std::string& bytes, int timeout_ms) {
  const int fd = connect_loopback(port, timeout_ms);
  if (fd < 0) return "";
  std::string in;
  (void)exchange(fd, bytes, &in, timeout_ms, nullptr, true);
  close(fd);
  return in;
}

std::string metadata_server_path() {
  return std::string(MC_TOP_BUILDDIR) + "/src/tools/metadata/mc_metadata_server";
}

std::string Services::find_binary(const std::string& name) {
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string full = (dir.empty() ? "." : dir) + "/" + name;
    if (access(full.c_str(), X_OK) == 0) return full;
  }
  return "";
}

Services::Services() {
  std::string tmpl = (fs::temp_directory_path() / "mc-services-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) {
    ADD_FAILURE() << "services: mkdtemp(" << tmpl << ") failed: " << ucs::errno_string(errno);
    return;
  }
  dir_ = tmpl;
  procs_[0].name = "etcd";
  procs_[1].name = "redis-server";
  procs_[2].name = "mc_metadata_server";
}

Services::~Services() {
  for (Service s : {Service::Etcd, Service::Redis, Service::MetadataServer}) end(s, false);
  if (!dir_.empty()) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
}

uint16_t Services::free_port() {
  for (int attempt = 0; attempt < 100; ++attempt) {
    ucs::Result<uint16_t> port = ucs::find_free_tcp_port();
    if (!port.ok()) break;
    bool used = false;
    for (uint16_t p : used_ports_) used = used || p == *port;
    if (used) continue;
    used_ports_.push_back(*port);
    return *port;
  }
  ADD_FAILURE() << "services: no free TCP port on 127.0.0.1";
  return 0;
}

std::string Services::start_etcd() {
  Proc& p = proc(Service::Etcd);
  if (p.pid > 0) return p.url;
  const std::string bin = find_binary("etcd");
  if (bin.empty()) {
    ADD_FAILURE() << "services: the etcd binary is missing (not in PATH); install etcd-server "
                     "(contrib/install-deps.sh)";
    return "";
  }
  const uint16_t client = free_port();
  const uint16_t peer = free_port();
  if (client == 0 || peer == 0) return "";
  const std::string c = "http://127.0.0.1:" + std::to_string(client);
  const std::string pr = "http://127.0.0.1:" + std::to_string(peer);
  p.argv = {bin,
            "--name",
            "mc-test",
            "--data-dir",
            dir_ + "/etcd",
            "--listen-client-urls",
            c,
            "--advertise-client-urls",
            c,
            "--listen-peer-urls",
            pr,
            "--initial-advertise-peer-urls",
            pr,
            "--initial-cluster",
            "mc-test=" + pr,
            "--initial-cluster-state",
            "new"};
  p.port = client;
  p.url = "etcd://127.0.0.1:" + std::to_string(client);
  p.log = dir_ + "/etcd.log";
  return launch(Service::Etcd) ? p.url : "";
}

std::string Services::start_redis(const std::string& password) {
  Proc& p = proc(Service::Redis);
  if (p.pid > 0) return p.url;
  const std::string bin = find_binary("redis-server");
  if (bin.empty()) {
    ADD_FAILURE() << "services: the redis-server binary is missing (not in PATH); install "
                     "redis-server (contrib/install-deps.sh)";
    return "";
  }
  p.port = free_port();
  if (p.port == 0) return "";
  redis_password_ = password;
  fs::create_directories(dir_ + "/redis");
  p.argv = {bin,      "--port",        std::to_string(p.port),
            "--bind", "127.0.0.1",     "--save",
            "",       "--appendonly",  "no",
            "--dir",  dir_ + "/redis", "--daemonize",
            "no"};
  if (!password.empty()) {
    p.argv.push_back("--requirepass");
    p.argv.push_back(password);
  }
  p.url = "redis://127.0.0.1:" + std::to_string(p.port);
  p.log = dir_ + "/redis.log";
  return launch(Service::Redis) ? p.url : "";
}

std::string service_name(Service service) {
  switch (service) {
    case Service::Etcd: return "etcd";
    case Service::Redis: return "redis";
    case Service::MetadataServer: return "http";
  }
  return "?";
}

std::string Services::start(Service service) {
  switch (service) {
    case Service::Etcd: return start_etcd();
    case Service::Redis: return start_redis();
    case Service::MetadataServer: return start_metadata_server();
  }
  return "";
}

std::string Services::start_metadata_server() {
  Proc& p = proc(Service::MetadataServer);
  if (p.pid > 0) return p.url;
  const std::string bin = metadata_server_path();
  if (access(bin.c_str(), X_OK) != 0) {
    ADD_FAILURE() << "services: the mc_metadata_server binary is missing: " << bin
                  << " (build src/tools/metadata)";
    return "";
  }
  p.port = free_port();
  if (p.port == 0) return "";
  p.argv = {bin, "--host", "127.0.0.1", "--port", std::to_string(p.port)};
  p.url = "http://127.0.0.1:" + std::to_string(p.port) + "/metadata";
  p.log = dir_ + "/mc_metadata_server.log";
  return launch(Service::MetadataServer) ? p.url : "";
}

bool Services::launch(Service service) {
  Proc& p = proc(service);
  std::vector<char*> argv;
  for (std::string& a : p.argv) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int log_fd = open(p.log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    ADD_FAILURE() << "services: cannot open " << p.log << ": " << ucs::errno_string(errno);
    return false;
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    close(log_fd);
    ADD_FAILURE() << "services: fork failed: " << ucs::errno_string(errno);
    return false;
  }
  if (pid == 0) {
    // Die with the test process, even when it is killed.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    setpgid(0, 0);
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    const int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(log_fd);
  p.pid = pid;
  return wait_ready(service);
}

bool Services::answers(Service service) const {
  const Proc& p = proc(service);
  if (service == Service::Redis) {
    const int fd = connect_loopback(p.port, 500);
    if (fd < 0) return false;
    std::string in;
    const bool ok = exchange(fd, "PING\r\n", &in, 1000, redis_reply_complete);
    close(fd);
    // -NOAUTH also proves that it serves commands.
    return ok && (in.starts_with("+PONG") || in.starts_with("-NOAUTH"));
  }
  std::string body;
  const int code = http_request(p.port, "GET", "/health", "", &body, 1000);
  if (service == Service::Etcd) return code == 200 && body.find("true") != std::string::npos;
  return code == 200;
}

bool Services::wait_ready(Service service) {
  Proc& p = proc(service);
  const auto deadline = std::chrono::steady_clock::now() + kReadyTimeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int wstatus = 0;
    if (waitpid(p.pid, &wstatus, WNOHANG) == p.pid) {
      p.pid = -1;
      ADD_FAILURE() << "services: " << p.name << " exited during start-up ("
                    << (WIFEXITED(wstatus) ? "status " + std::to_string(WEXITSTATUS(wstatus))
                                           : "signal " + std::to_string(WTERMSIG(wstatus)))
                    << "); its log " << p.log << " ends with:\n"
                    << log_tail(service);
      return false;
    }
    if (answers(service)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ADD_FAILURE() << "services: " << p.name << " did not answer on 127.0.0.1:" << p.port << " within "
                << kReadyTimeout.count() << " s; its log ends with:\n"
                << log_tail(service);
  end(service, false);
  return false;
}

void Services::end(Service service, bool graceful) {
  Proc& p = proc(service);
  if (p.pid <= 0) return;
  ::kill(p.pid, graceful ? SIGTERM : SIGKILL);
  const auto deadline = std::chrono::steady_clock::now() + kStopTimeout;
  for (;;) {
    const pid_t r = waitpid(p.pid, nullptr, graceful ? WNOHANG : 0);
    if (r == p.pid || (r < 0 && errno != EINTR)) break;
    if (r == 0 && std::chrono::steady_clock::now() >= deadline) {
      ::kill(p.pid, SIGKILL);
      graceful = false;
    }
    if (r == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  p.pid = -1;
}

void Services::stop(Service service) {
  end(service, true);
}

void Services::kill(Service service) {
  end(service, false);
}

bool Services::restart(Service service) {
  Proc& p = proc(service);
  if (p.argv.empty()) {
    ADD_FAILURE() << "services: " << p.name << " was never started, so it cannot restart";
    return false;
  }
  if (p.pid > 0) end(service, true);
  return launch(service);
}

bool Services::running(Service service) const {
  return proc(service).pid > 0;
}

uint16_t Services::port(Service service) const {
  return proc(service).port;
}

std::string Services::url(Service service) const {
  return proc(service).url;
}

std::string Services::log_tail(Service service) const {
  std::ifstream in(proc(service).log);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    lines.push_back(line);
    if (lines.size() > 20) lines.erase(lines.begin());
  }
  std::string out;
  for (const std::string& l : lines) out += "  " + l + "\n";
  return out.empty() ? "  (empty)\n" : out;
}

}  // namespace mc::test

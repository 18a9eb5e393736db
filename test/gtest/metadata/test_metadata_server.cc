// SPDX-License-Identifier: Apache-2.0
// mc_metadata_server over raw HTTP: the answers of GET/PUT/DELETE and
// /health, keep-alive, malformed or oversized requests answered with a
// status and the reason, conditional requests (ETag, If-Match,
// If-None-Match), the bearer token, the total bound, and hostile load: out
// of file descriptors, idle and trickling connections, clients that do not
// read.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/services.h"

extern char** environ;

namespace mc::test {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// mc_metadata_server of this build with options of a test, on a port it
// picks (--port 0, read from its first line), its output in a file of
// `dir`; SIGKILLed at the end. `nofile` > 0 sets its RLIMIT_NOFILE.
class ServerProcess {
 public:
  ~ServerProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  // `mark` precedes the port in the line that says it listens.
  bool start(const std::string& dir, std::vector<std::string> args, rlim_t nofile = 0,
             const std::vector<std::string>& env = {},
             const std::string& mark = "listening on 127.0.0.1:") {
    log_ = dir + "/server-" + std::to_string(++count_) + ".log";
    args.insert(args.begin(), {metadata_server_path(), "--host", "127.0.0.1", "--port", "0"});
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_text(env);
    for (char** e = environ; *e != nullptr; ++e) env_text.push_back(*e);
    std::vector<char*> envp;
    for (std::string& e : env_text) envp.push_back(e.data());
    envp.push_back(nullptr);
    const int log_fd = open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (log_fd < 0) return false;
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      dup2(log_fd, STDOUT_FILENO);
      dup2(log_fd, STDERR_FILENO);
      if (nofile > 0) {
        const rlimit limit{nofile, nofile};
        setrlimit(RLIMIT_NOFILE, &limit);
      }
      execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
    close(log_fd);
    if (pid_ < 0) return false;
    const auto deadline = Clock::now() + 30s;
    while (Clock::now() < deadline) {
      const std::string text = log();
      const size_t at = text.find(mark);
      if (at != std::string::npos && text.find('\n', at) != std::string::npos) {
        port_ = static_cast<uint16_t>(std::atoi(text.c_str() + at + mark.size()));
        return port_ != 0;
      }
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }

  uint16_t port() const { return port_; }
  std::string log() const {
    std::ifstream in(log_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  // Lines of the log that contain `word`.
  int lines_with(const std::string& word) const {
    std::stringstream text(log());
    int n = 0;
    for (std::string line; std::getline(text, line);) n += line.find(word) != std::string::npos;
    return n;
  }

 private:
  static inline int count_ = 0;
  std::string log_;
  pid_t pid_ = -1;
  uint16_t port_ = 0;
};

// A blocking socket connected from `source` (a 127.x.y.z address) to
// 127.0.0.1:port, or -1. `rcvbuf` > 0 sets SO_RCVBUF first.
int connect_from(const std::string& source, uint16_t port, int rcvbuf = 0) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (rcvbuf > 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  inet_pton(AF_INET, source.c_str(), &addr.sin_addr);
  const timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  addr.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool send_text(int fd, const std::string& text) {
  size_t sent = 0;
  while (sent < text.size()) {
    const ssize_t n = send(fd, text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

// How a connection ended, seen by the client.
enum class End { Closed, StillOpen };

// Reads until the peer closes (or resets) the connection or `timeout`
// passes; the bytes go to `*in` when not null.
End read_to_end(int fd, std::chrono::milliseconds timeout, std::string* in = nullptr) {
  const auto deadline = Clock::now() + timeout;
  char buf[65536];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0) {
      return End::StillOpen;
    }
    const ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return End::Closed;
    if (n > 0 && in != nullptr) in->append(buf, static_cast<size_t>(n));
  }
}

// True when the peer has closed the connection (nothing else was sent on it).
bool closed_by_server(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, 0) != 1) return false;
  char c;
  const ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN);
}

// One request with Connection: close and a Content-Length.
std::string request_text(const std::string& method, const std::string& target,
                         const std::vector<std::string>& headers = {},
                         const std::string& body = "") {
  std::string text = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  for (const std::string& h : headers) text += h + "\r\n";
  return text + "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
         body;
}

// An answer split up: status 0 when there was none.
struct Answer {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
};

Answer parse_answer(const std::string& in) {
  Answer a;
  const size_t head_end = in.find("\r\n\r\n");
  if (in.compare(0, 9, "HTTP/1.1 ") != 0 || head_end == std::string::npos) return a;
  a.status = std::atoi(in.c_str() + 9);
  std::stringstream head(in.substr(0, head_end));
  std::string line;
  std::getline(head, line);
  while (std::getline(head, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    a.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
  }
  a.body = in.substr(head_end + 4);
  return a;
}

Answer ask(uint16_t port, const std::string& text, int timeout_ms = 20000) {
  return parse_answer(raw_exchange(port, text, timeout_ms));
}

Answer call(uint16_t port, const std::string& method, const std::string& target,
            const std::vector<std::string>& headers = {}, const std::string& body = "") {
  return ask(port, request_text(method, target, headers, body));
}

// Waits up to `timeout` for `done()`.
template <typename Fn>
bool eventually(Fn done, std::chrono::seconds timeout = 30s) {
  const auto deadline = Clock::now() + timeout;
  while (!done()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(50ms);
  }
  return true;
}

// `count` connections that send nothing, from 127.0.0.<first_host> onwards,
// `per_host` of them from each address.
std::vector<int> idle_connections(uint16_t port, int count, int first_host, int per_host) {
  std::vector<int> fds;
  for (int i = 0; i < count; ++i) {
    const int fd = connect_from("127.0.0." + std::to_string(first_host + i / per_host), port);
    if (fd >= 0) fds.push_back(fd);
  }
  return fds;
}

void close_all(std::vector<int>* fds) {
  for (int fd : *fds) close(fd);
  fds->clear();
}

class MetadataServerTest : public testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(services_.start_metadata_server().empty());
    port_ = services_.port(Service::MetadataServer);
  }
  Services services_;
  uint16_t port_ = 0;
};

TEST_F(MetadataServerTest, HealthAndKeys) {
  std::string body;
  EXPECT_EQ(http_request(port_, "GET", "/health", "", &body), 200);
  EXPECT_EQ(http_request(port_, "GET", "/metadata?key=a%20b", "", &body), 404);
  EXPECT_EQ(body, "metadata not found\n");
  EXPECT_EQ(http_request(port_, "PUT", "/metadata?key=a%20b", std::string("v\0\xff", 3), &body),
            200);
  EXPECT_EQ(http_request(port_, "GET", "/metadata?key=a+b", "", &body), 200);  // '+' is a space
  EXPECT_EQ(body, std::string("v\0\xff", 3));
  EXPECT_EQ(http_request(port_, "DELETE", "/metadata?key=a%20b", "", &body), 200);
  EXPECT_EQ(http_request(port_, "DELETE", "/metadata?key=a%20b", "", &body), 404);
  EXPECT_EQ(http_request(port_, "GET", "/metadata?key=a%20b", "", &body), 404);
}

TEST_F(MetadataServerTest, BadRequestsGetAStatusAndAReason) {
  std::string body;
  EXPECT_EQ(http_request(port_, "GET", "/metadata", "", &body), 400);
  EXPECT_EQ(body, "missing key parameter: use /metadata?key=<key>\n");
  EXPECT_EQ(http_request(port_, "GET", "/metadata?key=%zz", "", &body), 400);
  EXPECT_EQ(body, "malformed percent-escape in the query\n");
  EXPECT_EQ(http_request(port_, "PATCH", "/metadata?key=a", "", &body), 405);
  EXPECT_EQ(http_request(port_, "GET", "/other", "", &body), 404);
  EXPECT_EQ(http_request(port_, "POST", "/health", "", &body), 405);
  std::string reply = raw_exchange(port_, "GARBAGE\r\n\r\n");
  EXPECT_EQ(reply.rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u) << reply;
  EXPECT_NE(reply.find("malformed request line"), std::string::npos) << reply;
  reply = raw_exchange(port_, "GET /health HTTP/2.0\r\n\r\n");
  EXPECT_EQ(reply.rfind("HTTP/1.1 505 ", 0), 0u) << reply;
  reply =
      raw_exchange(port_, "PUT /metadata?key=a HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n");
  EXPECT_EQ(reply.rfind("HTTP/1.1 413 ", 0), 0u) << reply;
  EXPECT_NE(reply.find("exceeds the limit of 67108864"), std::string::npos) << reply;
  reply = raw_exchange(port_, "PUT /metadata?key=a HTTP/1.1\r\nContent-Length: 1x\r\n\r\n");
  EXPECT_EQ(reply.rfind("HTTP/1.1 400 ", 0), 0u) << reply;
  reply = raw_exchange(port_, "PUT /metadata?key=a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
  EXPECT_EQ(reply.rfind("HTTP/1.1 501 ", 0), 0u) << reply;
  reply = raw_exchange(port_, "GET /health HTTP/1.1\r\nX: " + std::string(70000, 'a'));
  EXPECT_EQ(reply.rfind("HTTP/1.1 431 ", 0), 0u) << reply.substr(0, 100);
  // The server still serves after all of that.
  EXPECT_EQ(http_request(port_, "GET", "/health", "", &body), 200);
}

TEST_F(MetadataServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  const std::string two =
      "PUT /metadata?key=k HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi"
      "GET /metadata?key=k HTTP/1.1\r\nConnection: close\r\n\r\n";
  const std::string reply = raw_exchange(port_, two);
  EXPECT_EQ(reply.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << reply;
  const size_t second = reply.find("HTTP/1.1 200 OK\r\n", 1);
  ASSERT_NE(second, std::string::npos) << reply;
  EXPECT_EQ(reply.substr(reply.size() - 2), "hi");
}

TEST_F(MetadataServerTest, StrictParsingOfContentLengthLineEndsAndEchoes) {
  // Two Content-Length headers, even equal ones, are refused: another parser
  // on the way could take the other one.
  Answer a = ask(port_,
                 "PUT /metadata?key=cl HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n"
                 "\r\nx");
  EXPECT_EQ(a.status, 400) << a.body;
  EXPECT_EQ(a.body, "duplicate Content-Length header\n");
  for (const char* bad : {"2, 2", "+2", "-2", "0x2", "", "18446744073709551616"}) {
    a = ask(port_,
            std::string("PUT /metadata?key=cl HTTP/1.1\r\nContent-Length: ") + bad + "\r\n\r\nxx");
    EXPECT_EQ(a.status, 400) << "Content-Length: " << bad;
  }
  EXPECT_EQ(call(port_, "GET", "/metadata?key=cl").status, 404);  // nothing was stored
  // Folded lines and blanks before the colon are refused too.
  EXPECT_EQ(ask(port_, "GET /health HTTP/1.1\r\nX: a\r\n b\r\n\r\n").status, 400);
  EXPECT_EQ(ask(port_, "GET /health HTTP/1.1\r\nHost : a\r\n\r\n").status, 400);

  // Lines ending in a bare LF are answered, with a body too, and mixed.
  a = ask(port_, "GET /health HTTP/1.1\nHost: x\n\n");
  EXPECT_EQ(a.status, 200) << a.body;
  a = ask(port_,
          "PUT /metadata?key=lf HTTP/1.1\nContent-Length: 2\r\n\nhiGET "
          "/metadata?key=lf HTTP/1.1\nConnection: close\n\n");
  EXPECT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(a.body.substr(a.body.size() - 2), "hi");

  // Echoed fields are cut short.
  const std::string method(10000, 'A');
  a = call(port_, method, "/metadata?key=k");
  EXPECT_EQ(a.status, 405);
  EXPECT_LT(a.body.size(), 200u) << a.body.substr(0, 200);
  EXPECT_NE(a.body.find(std::string(64, 'A') + "..."), std::string::npos) << a.body;
  a = call(port_, "GET", "/" + std::string(5000, 'p'));
  EXPECT_EQ(a.status, 404);
  EXPECT_LT(a.body.size(), 200u);
  a = ask(port_, "GET /health HTTP/" + std::string(5000, '9') + "\r\n\r\n");
  EXPECT_EQ(a.status, 505);
  EXPECT_LT(a.body.size(), 200u);
  EXPECT_EQ(call(port_, "GET", "/health").status, 200);
}

TEST_F(MetadataServerTest, ConditionalRequestsGiveANameOneOwner) {
  const std::string url = "/metadata?key=owner";
  // Create only while absent.
  Answer a = call(port_, "PUT", url, {"If-None-Match: *"}, "engine-a");
  ASSERT_EQ(a.status, 200) << a.body;
  const std::string first = a.headers["etag"];
  ASSERT_EQ(first.size() > 2 && first.front() == '"' && first.back() == '"', true) << first;
  a = call(port_, "PUT", url, {"If-None-Match: *"}, "engine-b");
  EXPECT_EQ(a.status, 412);
  EXPECT_EQ(a.body, "engine-a");  // who holds it
  EXPECT_EQ(a.headers["etag"], first);
  a = call(port_, "GET", url);
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.body, "engine-a");
  EXPECT_EQ(a.headers["etag"], first);

  // Replace only the version read.
  a = call(port_, "PUT", url, {"If-Match: " + first}, "engine-a2");
  ASSERT_EQ(a.status, 200) << a.body;
  const std::string second = a.headers["etag"];
  EXPECT_NE(second, first);
  a = call(port_, "PUT", url, {"If-Match: " + first}, "engine-c");
  EXPECT_EQ(a.status, 412);
  EXPECT_EQ(a.body, "engine-a2");
  EXPECT_EQ(a.headers["etag"], second);
  EXPECT_EQ(call(port_, "PUT", url, {"If-Match: *"}, "engine-a3").status, 200);
  const std::string third = call(port_, "GET", url).headers["etag"];
  EXPECT_NE(third, second);
  // GET If-None-Match of the current version: 304 without a body.
  a = call(port_, "GET", url, {"If-None-Match: " + third});
  EXPECT_EQ(a.status, 304);
  EXPECT_EQ(a.body, "");

  // Remove only the version read.
  a = call(port_, "DELETE", url, {"If-Match: " + second});
  EXPECT_EQ(a.status, 412);
  EXPECT_EQ(a.body, "engine-a3");
  EXPECT_EQ(call(port_, "GET", url).body, "engine-a3");
  EXPECT_EQ(call(port_, "DELETE", url, {"If-Match: " + third}).status, 200);
  EXPECT_EQ(call(port_, "GET", url).status, 404);

  // An absent key fails If-Match with an empty body and no ETag; a removed
  // and created again key has a new version.
  a = call(port_, "PUT", url, {"If-Match: " + third}, "late");
  EXPECT_EQ(a.status, 412);
  EXPECT_EQ(a.body, "");
  EXPECT_EQ(a.headers.count("etag"), 0u);
  a = call(port_, "PUT", url, {"If-None-Match: *"}, "engine-d");
  EXPECT_EQ(a.status, 200);
  EXPECT_NE(a.headers["etag"], third);
  // A malformed or doubled precondition is refused, nothing done.
  EXPECT_EQ(call(port_, "PUT", url, {"If-Match: 17"}, "x").status, 400);
  EXPECT_EQ(call(port_, "PUT", url, {"If-Match: *", "If-Match: *"}, "x").status, 400);
  EXPECT_EQ(call(port_, "GET", url).body, "engine-d");
}

TEST(MetadataServerLimits, MaxTotalRefusesPutsBeyondItWith507) {
  Services services;
  ServerProcess server;
  ASSERT_TRUE(server.start(services.dir(), {"--max-total", "1000"})) << server.log();
  const uint16_t port = server.port();
  const std::string v400(400, 'a'), w400(400, 'b');
  // Each key is one byte: 401 bytes a PUT.
  EXPECT_EQ(call(port, "PUT", "/metadata?key=1", {}, v400).status, 200);
  EXPECT_EQ(call(port, "PUT", "/metadata?key=2", {}, w400).status, 200);
  Answer a = call(port, "PUT", "/metadata?key=3", {}, v400);
  EXPECT_EQ(a.status, 507);
  EXPECT_LT(a.body.size(), 120u);
  EXPECT_NE(a.body.find("1000 bytes"), std::string::npos) << a.body;
  EXPECT_EQ(call(port, "GET", "/metadata?key=3").status, 404);
  // Replacing a value counts the difference; the bound holds for that too.
  EXPECT_EQ(call(port, "PUT", "/metadata?key=1", {}, std::string(600, 'c')).status, 507);
  EXPECT_EQ(call(port, "PUT", "/metadata?key=1", {}, std::string(500, 'c')).status, 200);
  EXPECT_EQ(call(port, "GET", "/metadata?key=1").body, std::string(500, 'c'));
  EXPECT_EQ(call(port, "GET", "/metadata?key=2").body, w400);
  // Room again after a delete.
  EXPECT_EQ(call(port, "DELETE", "/metadata?key=2").status, 200);
  EXPECT_EQ(call(port, "PUT", "/metadata?key=3", {}, v400).status, 200);
  EXPECT_EQ(call(port, "GET", "/metadata?key=3").body, v400);
}

TEST(MetadataServerLimits, RequestBytesInFlightAreBounded) {
  Services services;
  ServerProcess server;
  ASSERT_TRUE(server.start(services.dir(), {"--max-in-flight", "1m", "--request-timeout", "120s"}))
      << server.log();
  const uint16_t port = server.port();
  // Two uploads of 900 KiB that sent 600 KiB each: together past the bound,
  // so one of them is answered 503 and closed; the other completes.
  const std::string value(900 << 10, 'v');
  int fds[2];
  for (int& fd : fds) {
    fd = connect_from("127.0.0.1", port);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(
        send_text(fd, request_text("PUT", "/metadata?key=up", {}, value).substr(0, 600 << 10)));
  }
  auto answered = [](int fd) {
    pollfd p{fd, POLLIN, 0};
    return poll(&p, 1, 0) == 1;
  };
  ASSERT_TRUE(eventually([&] { return answered(fds[0]) || answered(fds[1]); }));
  const int refused = answered(fds[0]) ? 0 : 1;
  const int going = 1 - refused;
  std::string in;
  EXPECT_EQ(read_to_end(fds[refused], 20s, &in), End::Closed);
  EXPECT_TRUE(in.empty() || in.rfind("HTTP/1.1 503 ", 0) == 0) << in;
  EXPECT_FALSE(answered(fds[going]));
  const std::string whole = request_text("PUT", "/metadata?key=up", {}, value);
  ASSERT_TRUE(send_text(fds[going], whole.substr(600 << 10)));
  in.clear();
  EXPECT_EQ(read_to_end(fds[going], 20s, &in), End::Closed);
  EXPECT_EQ(parse_answer(in).status, 200) << in;
  for (int fd : fds) close(fd);
  // What was received is given back: the bound holds the next ones again.
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(call(port, "PUT", "/metadata?key=up", {}, value).status, 200) << i;
  }
  EXPECT_EQ(call(port, "GET", "/metadata?key=up").body == value, true);
}

TEST(MetadataServerLimits, AuthTokenIsRequiredExceptForHealth) {
  Services services;
  ServerProcess by_option, by_env;
  ASSERT_TRUE(by_option.start(services.dir(), {"--auth-token", "s3cret"})) << by_option.log();
  ASSERT_TRUE(by_env.start(services.dir(), {}, 0, {"MC_METADATA_AUTH_TOKEN=from-env"}))
      << by_env.log();
  for (auto [port, token] : {std::pair{by_option.port(), std::string("s3cret")},
                             std::pair{by_env.port(), std::string("from-env")}}) {
    EXPECT_EQ(call(port, "GET", "/health").status, 200);
    const std::string url = "/metadata?key=k";
    for (const std::vector<std::string>& wrong : {std::vector<std::string>{},
                                                  {"Authorization: Bearer wrong"},
                                                  {"Authorization: Bearer " + token + "x"},
                                                  {"Authorization: Bearer " + token.substr(1)},
                                                  {"Authorization: Basic " + token},
                                                  {"Authorization: " + token}}) {
      const Answer a = call(port, "PUT", url, wrong, "v");
      EXPECT_EQ(a.status, 401) << (wrong.empty() ? "no header" : wrong[0]);
      EXPECT_LT(a.body.size(), 120u);
      EXPECT_EQ(call(port, "GET", url, wrong).status, 401);
      EXPECT_EQ(call(port, "DELETE", url, wrong).status, 401);
      EXPECT_EQ(call(port, "POST", "/health", wrong).status, 401);
    }
    const std::vector<std::string> right = {"Authorization: Bearer " + token};
    EXPECT_EQ(call(port, "GET", url, right).status, 404);  // nothing was stored
    EXPECT_EQ(call(port, "PUT", url, right, "v").status, 200);
    const Answer a = call(port, "GET", url, {"authorization: bearer " + token});
    EXPECT_EQ(a.status, 200);
    EXPECT_EQ(a.body, "v");
  }
}

// The acceptor out of file descriptors keeps listening: it refuses clients
// (closes them at once), logs a few lines, not one per refusal, and serves
// again once descriptors are free.
TEST(MetadataServerHostile, OutOfFileDescriptorsRefusesThenRecovers) {
  Services services;
  ServerProcess server;
  ASSERT_TRUE(server.start(
      services.dir(),
      {"--request-timeout", "120s", "--idle-timeout", "120s", "--max-connections-per-peer", "1000"},
      48))
      << server.log();
  const uint16_t port = server.port();
  ASSERT_EQ(call(port, "PUT", "/metadata?key=kept", {}, "before").status, 200);
  std::vector<int> idle = idle_connections(port, 80, 1, 80);
  ASSERT_TRUE(eventually([&] { return server.lines_with("Too many open files") > 0; }))
      << server.log();
  // While exhausted, clients are refused: their connection ends, no hang.
  const auto exhausted_since = Clock::now();
  for (int i = 0; i < 10; ++i) {
    const int fd = connect_from("127.0.0.1", port);
    ASSERT_GE(fd, 0);
    send_text(fd, request_text("GET", "/health"));
    std::string in;
    EXPECT_EQ(read_to_end(fd, 20s, &in), End::Closed) << "refusal " << i;
    EXPECT_EQ(in, "");
    close(fd);
    std::this_thread::sleep_for(100ms);
  }
  while (Clock::now() < exhausted_since + 2s) std::this_thread::sleep_for(100ms);
  const int lines = server.lines_with("accept");
  EXPECT_GE(lines, 1);
  EXPECT_LE(lines, 4) << server.log();
  // Descriptors back: served again, data intact.
  close_all(&idle);
  ASSERT_TRUE(eventually([&] { return call(port, "GET", "/health").status == 200; }))
      << server.log();
  EXPECT_EQ(call(port, "GET", "/metadata?key=kept").body, "before");
  EXPECT_EQ(call(port, "PUT", "/metadata?key=after", {}, "after").status, 200);
  EXPECT_EQ(call(port, "GET", "/metadata?key=after").body, "after");
  // At least once: a descriptor the server frees while exhausted (the first
  // request's connection, closed late on a loaded machine) makes a short
  // recovery of its own before this one.
  EXPECT_GE(server.lines_with("accepting again"), 1) << server.log();
}

// At the connection caps the connection idle the longest is closed, so a
// good client gets in however many idle ones there are.
TEST(MetadataServerHostile, IdleConnectionsAreEvictedForANewClient) {
  Services services;
  ServerProcess server;
  ASSERT_TRUE(server.start(
      services.dir(), {"--request-timeout", "120s", "--idle-timeout", "120s", "--max-connections",
                       "256", "--max-connections-per-peer", "64"}))
      << server.log();
  const uint16_t port = server.port();
  // 300 from ten addresses: 44 more than the cap, each under the per-peer cap.
  std::vector<int> idle = idle_connections(port, 300, 2, 30);
  ASSERT_EQ(idle.size(), 300u);
  Answer a = call(port, "PUT", "/metadata?key=good", {}, "data");
  EXPECT_EQ(a.status, 200) << a.body;
  a = call(port, "GET", "/metadata?key=good");
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.body, "data");
  auto closed = [](const std::vector<int>& fds) {
    size_t n = 0;
    for (int fd : fds) n += closed_by_server(fd);
    return n;
  };
  EXPECT_TRUE(eventually([&] { return closed(idle) >= 44; })) << closed(idle);
  EXPECT_TRUE(closed_by_server(idle.front()));  // the oldest went first
  EXPECT_FALSE(closed_by_server(idle.back()));
  // 70 from one address: its 6 oldest go at its cap of 64, and one more
  // client from that address is served.
  std::vector<int> one_peer = idle_connections(port, 70, 12, 70);
  ASSERT_EQ(one_peer.size(), 70u);
  EXPECT_TRUE(eventually([&] { return closed(one_peer) >= 6; })) << closed(one_peer);
  EXPECT_TRUE(closed_by_server(one_peer.front()));
  EXPECT_FALSE(closed_by_server(one_peer.back()));
  const int fd = connect_from("127.0.0.12", port);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(send_text(fd, request_text("GET", "/metadata?key=good")));
  std::string in;
  EXPECT_EQ(read_to_end(fd, 20s, &in), End::Closed);
  EXPECT_EQ(parse_answer(in).body, "data");
  close(fd);
  close_all(&idle);
  close_all(&one_peer);
}

// 300 idle connections, a client that trickles its request a byte every
// 200 ms and one that never reads a large answer, all at once: a good client
// is served meanwhile, the trickler is cut at the request deadline and the
// slow reader at the send deadline.
TEST(MetadataServerHostile, IdleTricklingAndSlowReadersDoNotHoldTheServer) {
  Services services;
  ServerProcess server;
  ASSERT_TRUE(server.start(services.dir(), {"--request-timeout", "1s", "--send-timeout", "1s"}))
      << server.log();
  const uint16_t port = server.port();
  const size_t big_size = size_t{32} << 20;
  const std::string big(big_size, 'B');
  // Within the 1 s request timeout; a machine too loaded for that gets 408, and another try.
  int put = 0;
  for (int i = 0; i < 5 && put != 200; ++i)
    put = call(port, "PUT", "/metadata?key=big", {}, big).status;
  ASSERT_EQ(put, 200);

  // The slow reader: a small receive buffer, the GET sent, a first byte
  // received (the server is sending), then nothing read.
  const int slow = connect_from("127.0.0.1", port, 4096);
  ASSERT_GE(slow, 0);
  ASSERT_TRUE(send_text(slow, "GET /metadata?key=big HTTP/1.1\r\n\r\n"));
  const auto slow_since = Clock::now();
  pollfd p{slow, POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 20000), 1);

  std::vector<int> idle = idle_connections(port, 300, 2, 30);
  EXPECT_EQ(idle.size(), 300u);

  std::atomic<bool> trickler_closed{false};
  std::string trickler_got;
  std::thread trickler([&] {
    const int fd = connect_from("127.0.0.1", port);
    if (fd < 0) return;
    const std::string text = "GET /health HTTP/1.1\r\nX-Slow: " + std::string(1000, 'a');
    const auto give_up = Clock::now() + 60s;
    for (size_t i = 0; i < text.size() && Clock::now() < give_up; ++i) {
      if (send(fd, &text[i], 1, MSG_NOSIGNAL) != 1 ||
          read_to_end(fd, 200ms, &trickler_got) == End::Closed) {
        trickler_closed = true;
        break;
      }
    }
    close(fd);
  });

  for (int i = 0; i < 5; ++i) {
    const std::string key = "/metadata?key=good" + std::to_string(i);
    const std::string value = "value " + std::to_string(i);
    EXPECT_EQ(call(port, "PUT", key, {}, value).status, 200) << i;
    const Answer a = call(port, "GET", key);
    EXPECT_EQ(a.status, 200) << i;
    EXPECT_EQ(a.body, value) << i;
  }
  trickler.join();
  EXPECT_TRUE(trickler_closed) << "a request trickled for 60 s was not cut";
  EXPECT_EQ(trickler_got.rfind("HTTP/1.1 408 ", 0), 0u) << trickler_got;

  // Five send timeouts later the server gave up on the slow reader: reading
  // now gets part of the value and the end of the connection, not all of it.
  while (Clock::now() < slow_since + 5s) std::this_thread::sleep_for(100ms);
  std::string got;
  EXPECT_EQ(read_to_end(slow, 30s, &got), End::Closed);
  EXPECT_LT(got.size(), big_size);
  close(slow);
  close_all(&idle);
  // What the good client stored is intact (the large value is not read
  // again: sending it takes more than the 1 s send timeout on a loaded machine).
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(call(port, "GET", "/metadata?key=good" + std::to_string(i)).body,
              "value " + std::to_string(i));
  }
}

TEST(MetadataServerTool, RefusesBadOptionsAndBusyPorts) {
  Services services;
  ASSERT_FALSE(services.start_metadata_server().empty());
  const std::string bin = metadata_server_path();
  const std::string port = std::to_string(services.port(Service::MetadataServer));
  EXPECT_NE(std::system((bin + " --port 70000 2>/dev/null").c_str()), 0);
  EXPECT_NE(std::system((bin + " --bogus 2>/dev/null").c_str()), 0);
  for (const char* bad :
       {"--request-timeout 0", "--send-timeout inf", "--max-total 0",
        "--max-connections-per-peer 0", "--auth-token ''", "--auth-token 'a b'"}) {
    EXPECT_NE(std::system((bin + " " + bad + " 2>/dev/null").c_str()), 0) << bad;
  }
  const std::string out = services.dir() + "/busy.txt";
  EXPECT_NE(std::system((bin + " --port " + port + " 2>" + out).c_str()), 0);
  EXPECT_EQ(std::system(
                ("grep -q 'cannot listen on 127.0.0.1:" + port + ": Address already in use' " + out)
                    .c_str()),
            0);
  EXPECT_EQ(std::system((bin + " --help >/dev/null").c_str()), 0);
}

// --addr=[HOST]:PORT, the seed's http-metadata-server flag: a host and a
// port at once, a bare :PORT for every interface (said in the log), and
// bad forms refused naming --addr. Options take --option=VALUE too.
TEST(MetadataServerTool, AddrTakesHostAndPortAndABarePortMeansEveryInterface) {
  Services services;
  std::string body;
  ServerProcess one;
  ASSERT_TRUE(one.start(services.dir(), {"--addr=127.0.0.1:0"})) << one.log();
  EXPECT_EQ(http_request(one.port(), "GET", "/health", "", &body), 200);
  ServerProcess every;
  ASSERT_TRUE(every.start(services.dir(), {"--addr", ":0"}, 0, {}, "listening on 0.0.0.0:"))
      << every.log();
  EXPECT_EQ(every.lines_with("--addr=:0 names no host: listening on every interface (0.0.0.0)"), 1)
      << every.log();
  EXPECT_EQ(http_request(every.port(), "GET", "/health", "", &body), 200);
  ServerProcess inline_port;
  ASSERT_TRUE(inline_port.start(services.dir(), {"--port=0", "--max-size=1k"}))
      << inline_port.log();
  EXPECT_EQ(
      http_request(inline_port.port(), "PUT", "/metadata?key=k", std::string(2048, 'x'), &body),
      413);

  const std::string bin = metadata_server_path();
  const std::string out = services.dir() + "/addr.txt";
  for (const char* bad :
       {"--addr=8080", "--addr=:70000", "--addr=:", "--addr=::1:80", "--addr=[]:80", "--addr=:x"}) {
    EXPECT_EQ(std::system((bin + " " + bad + " 2>" + out).c_str()), 2 << 8) << bad;
    EXPECT_EQ(std::system(("grep -q 'invalid --addr' " + out).c_str()), 0) << bad;
  }
}

}  // namespace
}  // namespace mc::test

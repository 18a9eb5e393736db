// SPDX-License-Identifier: Apache-2.0
// UCP put/get between two processes over whatever MC_TLS selects: the
// forked child maps a buffer and serves it; the parent puts into its first
// half at several sizes, gets its second half, and both sides check the
// data. Built by plugin_check.sh against an installed mc-ucp only.
#include <poll.h>
#include <sys/wait.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <sstream>

using namespace mc;

namespace {

constexpr size_t kSize = 4 << 20;
constexpr size_t kPutSizes[] = {1, 100, 8192, 65536, kSize / 2};

uint8_t pattern(uint64_t seed, size_t i) {
  return static_cast<uint8_t>(seed * 131 + i * 7 + (i >> 8));
}

bool io(bool out, int fd, void* p, size_t n) {
  auto* b = static_cast<uint8_t*>(p);
  while (n) {
    const ssize_t r = out ? write(fd, b, n) : read(fd, b, n);
    if (r <= 0) return false;
    b += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}
bool send_blob(int fd, std::vector<uint8_t> v) {
  uint64_t n = v.size();
  return io(true, fd, &n, sizeof(n)) && io(true, fd, v.data(), n);
}
bool recv_blob(int fd, std::vector<uint8_t>* v) {
  uint64_t n = 0;
  if (!io(false, fd, &n, sizeof(n)) || n > (1u << 20)) return false;
  v->resize(n);
  return io(false, fd, v->data(), n);
}

struct Side {
  std::unique_ptr<ucp::Context> ctx;
  std::unique_ptr<ucp::Worker> worker;
  bool open() {
    auto c = ucp::Context::create();
    if (!c.ok()) return false;
    ctx = std::move(*c);
    auto w = ucp::Worker::create(*ctx);
    if (!w.ok()) return false;
    worker = std::move(*w);
    return true;
  }
};

[[noreturn]] void server(int up, int down) {
  Side s;
  if (!s.open()) _exit(10);
  std::vector<uint8_t> buf(kSize, 0);
  for (size_t i = kSize / 2; i < kSize; ++i) buf[i] = pattern(2, i);
  auto mh = ucp::MemHandle::map(*s.ctx, buf.data(), kSize);
  if (!mh.ok()) _exit(11);
  auto rkey = (*mh)->rkey_pack();
  std::vector<uint8_t> addr(8);
  const uint64_t base = reinterpret_cast<uintptr_t>(buf.data());
  std::memcpy(addr.data(), &base, 8);
  if (!rkey.ok() || !send_blob(up, s.worker->address()) || !send_blob(up, *rkey) ||
      !send_blob(up, addr)) {
    _exit(12);
  }
  pollfd pfd{down, POLLIN, 0};
  while (poll(&pfd, 1, 0) == 0) s.worker->progress();
  // The last (largest) put overwrote the smaller ones before it.
  for (size_t i = 0; i < kSize / 2; ++i) {
    if (buf[i] != pattern(kSize / 2, i)) _exit(13);
  }
  _exit(0);
}

}  // namespace

int main() {
  int up[2], down[2];
  if (pipe(up) || pipe(down)) return 1;
  const pid_t pid = fork();
  if (pid == 0) {
    close(up[0]);
    close(down[1]);
    server(up[1], down[0]);
  }
  close(up[1]);
  close(down[0]);
  std::vector<uint8_t> peer, packed, addr;
  if (!recv_blob(up[0], &peer) || !recv_blob(up[0], &packed) || !recv_blob(up[0], &addr)) {
    std::fprintf(stderr, "putget: the server did not start\n");
    return 1;
  }
  uint64_t base = 0;
  std::memcpy(&base, addr.data(), 8);
  Side c;
  if (!c.open()) return 1;
  auto ep = c.worker->ep_create(peer);
  if (!ep.ok()) return 1;
  std::ostringstream lanes;
  (*ep)->print(lanes);
  std::printf("%s", lanes.str().c_str());
  auto rkey = (*ep)->rkey_unpack(packed);
  if (!rkey.ok()) return 1;
  int failed = 0;
  for (size_t n : kPutSizes) {
    std::vector<uint8_t> src(n);
    for (size_t i = 0; i < n; ++i) src[i] = pattern(n, i);
    // Each size lands at offset 0 and is read back at once.
    auto r = (*ep)->put_nbx(src.data(), n, base, **rkey);
    ucs::Status s = r.ok() ? (*r)->wait() : r.status();
    if (s == ucs::Status::Ok) {
      auto f = (*ep)->flush();
      s = f.ok() ? (*f)->wait() : f.status();
    }
    std::vector<uint8_t> back(n);
    if (s == ucs::Status::Ok) {
      auto g = (*ep)->get_nbx(back.data(), n, base, **rkey);
      s = g.ok() ? (*g)->wait() : g.status();
    }
    const bool ok = s == ucs::Status::Ok && back == src;
    std::printf("ucp put+get %8zu bytes: %s\n", n, ok ? "pass" : ucs::status_string(s));
    failed += !ok;
  }
  std::vector<uint8_t> half(kSize / 2);
  auto g = (*ep)->get_nbx(half.data(), half.size(), base + kSize / 2, **rkey);
  ucs::Status s = g.ok() ? (*g)->wait() : g.status();
  bool ok = s == ucs::Status::Ok;
  for (size_t i = 0; ok && i < half.size(); ++i) ok = half[i] == pattern(2, kSize / 2 + i);
  std::printf("ucp get %zu bytes of the server's data: %s\n", half.size(), ok ? "pass" : "FAIL");
  failed += !ok;
  ep->reset();
  const char go = 1;
  (void)io(true, down[1], const_cast<char*>(&go), 1);
  int status = 0;
  waitpid(pid, &status, 0);
  const bool server_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  std::printf("server-side check: %s (exit %d)\n", server_ok ? "pass" : "FAIL",
              WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return failed == 0 && server_ok ? 0 : 1;
}

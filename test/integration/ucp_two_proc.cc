// SPDX-License-Identifier: Apache-2.0
// An application of the installed C++ API (<mc/ucp.h>): forks; the child
// serves a registered buffer and an active-message handler, the parent puts
// 4 MiB into it, gets them back, and sends a 2 MiB message (a rendezvous
// when MC_RNDV_THRESH is below it); the child checks every byte. Addresses
// and the rkey travel over a pipe. Exit 0 when every step worked.
#include <mc/ucp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <vector>

namespace {

using mc::ucs::Status;
constexpr size_t kSize = size_t{4} << 20;
constexpr size_t kAmSize = size_t{2} << 20;

uint8_t pattern(size_t i) {
  return static_cast<uint8_t>(i * 31 + (i >> 11) + 1);
}

bool write_blob(int fd, const std::vector<uint8_t>& v) {
  const uint64_t n = v.size();
  return write(fd, &n, 8) == 8 && write(fd, v.data(), n) == static_cast<ssize_t>(n);
}

bool read_all(int fd, void* p, size_t n) {
  for (size_t got = 0; got < n;) {
    const ssize_t r = read(fd, static_cast<char*>(p) + got, n - got);
    if (r <= 0) return false;
    got += static_cast<size_t>(r);
  }
  return true;
}

bool read_blob(int fd, std::vector<uint8_t>* v) {
  uint64_t n = 0;
  if (!read_all(fd, &n, 8) || n > (1u << 20)) return false;
  v->resize(n);
  return read_all(fd, v->data(), n);
}

Status finish(mc::ucs::Result<std::shared_ptr<mc::ucp::Request>> r) {
  return r.ok() ? (*r)->wait() : r.status();
}

int server(int out) {
  auto ctx = mc::ucp::Context::create();
  if (!ctx.ok()) return 2;
  auto w = mc::ucp::Worker::create(**ctx);
  if (!w.ok()) return 3;
  std::vector<uint8_t> buf(kSize, 0);
  auto memh = mc::ucp::MemHandle::map(**ctx, buf.data(), buf.size());
  if (!memh.ok()) return 4;
  int am = 0;
  (*w)->set_am_handler(1, [&am](const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    bool ok = n == kAmSize;
    for (size_t i = 0; ok && i < n; ++i) ok = p[i] == pattern(i + 7);
    am = ok ? 1 : -1;
  });
  const uint64_t addr = reinterpret_cast<uintptr_t>(buf.data());
  auto rkey = (*memh)->rkey_pack();
  if (!rkey.ok() || !write_blob(out, (*w)->address()) || !write_blob(out, *rkey) ||
      write(out, &addr, 8) != 8) {
    return 5;
  }
  while (am == 0) {
    (*w)->progress();
    if (am == 0) (void)(*w)->wait(std::chrono::milliseconds(100));
  }
  for (size_t i = 0; i < kSize; ++i) {
    if (buf[i] != pattern(i)) return 6;
  }
  return am == 1 ? 0 : 7;
}

int client(int in) {
  std::vector<uint8_t> address, packed;
  uint64_t addr = 0;
  if (!read_blob(in, &address) || !read_blob(in, &packed) || !read_all(in, &addr, 8)) return 20;
  auto ctx = mc::ucp::Context::create();
  if (!ctx.ok()) return 21;
  auto w = mc::ucp::Worker::create(**ctx);
  if (!w.ok()) return 22;
  auto ep = (*w)->ep_create(address);
  if (!ep.ok()) return 23;
  auto rkey = (*ep)->rkey_unpack(packed);
  if (!rkey.ok()) return 24;
  std::vector<uint8_t> src(kSize), back(kSize, 0), msg(kAmSize);
  for (size_t i = 0; i < kSize; ++i) src[i] = pattern(i);
  for (size_t i = 0; i < kAmSize; ++i) msg[i] = pattern(i + 7);
  if (finish((*ep)->put_nbx(src.data(), kSize, addr, **rkey)) != Status::Ok) return 25;
  if (finish((*ep)->flush()) != Status::Ok) return 26;
  if (finish((*ep)->get_nbx(back.data(), kSize, addr, **rkey)) != Status::Ok || back != src) {
    return 27;
  }
  if (finish((*ep)->am_send_nbx(1, msg.data(), msg.size())) != Status::Ok) return 28;
  if (finish((*ep)->flush()) != Status::Ok) return 29;
  return 0;
}

}  // namespace

int main() {
  int fds[2];
  if (pipe(fds) != 0) return 1;
  const pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    close(fds[0]);
    _exit(server(fds[1]));
  }
  close(fds[1]);
  const int rc = client(fds[0]);
  if (rc != 0) {
    std::fprintf(stderr, "c++ client failed at step %d\n", rc);
    kill(pid, SIGKILL);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  if (rc == 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
    std::fprintf(stderr, "c++ server failed: status %d\n", st);
    return 1;
  }
  if (rc == 0) std::printf("c++ api: two processes put, get and am over the installed headers\n");
  return rc;
}

// SPDX-License-Identifier: Apache-2.0
// Two-process conformance check: the target is a forked child that
// registers a buffer, sends its addresses and rkey through a pipe, and
// progresses until told to check what the parent did.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "tools/uct_check/checks.h"
#include "ucs/datastruct/wire.h"

namespace mc::uct::check {
namespace {

constexpr uint64_t kChildSeed = 11, kParentSeed = 22;
constexpr uint8_t kAmId = 7;
constexpr size_t kAmLength = 100, kSize = 1 << 20;
// Child exit codes.
constexpr int kChildOk = 0, kChildSetup = 12, kChildPutWrong = 13, kChildNoAm = 14;

bool write_all(int fd, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  while (n) {
    const ssize_t w = write(fd, b, n);
    if (w <= 0) return false;
    b += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool read_all(int fd, void* p, size_t n) {
  auto* b = static_cast<uint8_t*>(p);
  while (n) {
    const ssize_t r = read(fd, b, n);
    if (r <= 0) return false;
    b += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// The child: never returns.
[[noreturn]] void child_main(const Resource& r, int to_parent, int from_parent) {
  std::string why;
  std::unique_ptr<Entity> e = Entity::create(r, &why);
  if (!e) _exit(kChildSetup);
  Buffer buf(*e, kSize);
  buf.fill(kChildSeed);
  size_t am_received = 0;
  (void)e->iface().set_am_handler(kAmId, [&](const void*, size_t len, unsigned) {
    if (len == kAmLength) ++am_received;
    return Status::Ok;
  });
  // Pipe message: blob dev_addr | blob iface_addr | blob rkey | u64 address.
  std::vector<uint8_t> msg;
  ucs::WireWriter w(&msg);
  w.blob(e->iface().device_address());
  w.blob(e->iface().iface_address());
  w.blob(buf.packed_rkey(*e));
  w.u64(buf.address());
  const uint32_t len = static_cast<uint32_t>(msg.size());
  if (!write_all(to_parent, &len, sizeof(len)) || !write_all(to_parent, msg.data(), len)) {
    _exit(kChildSetup);
  }
  pollfd pfd{from_parent, POLLIN, 0};
  while (poll(&pfd, 1, 0) == 0) e->iface().progress();
  for (int i = 0; i < 1000; ++i) e->iface().progress();  // what is still in flight
  Buffer ref(*e, 0);
  ref.data.resize(kSize / 2);
  ref.fill(kParentSeed);
  if (std::memcmp(buf.data.data(), ref.data.data(), kSize / 2) != 0) _exit(kChildPutWrong);
  _exit(am_received == 1 ? kChildOk : kChildNoAm);
}

struct PackArgs {
  const uint8_t* src;
  size_t length;
};
size_t pack_cb(void* dest, void* arg) {
  auto* a = static_cast<PackArgs*>(arg);
  std::memcpy(dest, a->src, a->length);
  return a->length;
}

template <typename F>
auto retry(Entity& e, F post) {
  auto r = post();
  for (int i = 0; i < 1000000 && r == Status::NoResource; ++i) {
    e.iface().progress();
    r = post();
  }
  return r;
}

std::string why(Status s) {
  return s == Status::Ok ? "" : ucs::status_string(s);
}

// The parent's side, with the child's pipe message in `msg`.
void parent_checks(const Resource& r, std::span<const uint8_t> msg, Table& table) {
  ucs::WireReader rd(msg);
  const std::span<const uint8_t> dev = rd.blob(), iface = rd.blob(), packed = rd.blob();
  const uint64_t remote = rd.u64();
  std::string why_not;
  std::unique_ptr<Entity> me = Entity::create(r, &why_not);
  if (!me) return table.add("2proc: open md and iface", 0, false, why_not);
  Result<std::unique_ptr<Endpoint>> ep = me->iface().ep_create(dev, iface);
  table.add("2proc: connect", 0, ep.ok(), why(ep.status()));
  if (!ep.ok()) return;
  Result<std::unique_ptr<Rkey>> rkey = me->md().rkey_unpack(packed);
  table.add("2proc: rkey_unpack", packed.size(), rkey.ok(), why(rkey.status()));
  if (!rkey.ok()) return;
  const Entities all{me.get()};
  const uint64_t caps = me->attr().cap;

  Buffer src(*me, kSize);
  src.fill(kParentSeed);
  if (caps & kCapPutZcopy) {
    Iov iov{src.data.data(), kSize / 2, src.memh.get()};
    WaitCompletion c;
    Status s = wait_op(
        retry(*me, [&] { return (*ep)->put_zcopy(&iov, 1, remote, **rkey, &c.comp); }), c, all);
    if (s == Status::Ok) s = flush_and_wait(**ep, all);
    table.add("2proc: put_zcopy + flush", kSize / 2, s == Status::Ok, why(s));
  }
  if (caps & kCapGetZcopy) {
    Buffer back(*me, kSize / 2), ref(*me, 0);
    ref.data.resize(kSize);
    ref.fill(kChildSeed);
    Iov iov{back.data.data(), kSize / 2, back.memh.get()};
    WaitCompletion c;
    const Status s = wait_op(
        retry(*me, [&] { return (*ep)->get_zcopy(&iov, 1, remote + kSize / 2, **rkey, &c.comp); }),
        c, all);
    const bool ok = s == Status::Ok &&
                    std::equal(back.data.begin(), back.data.end(), ref.data.begin() + kSize / 2);
    table.add("2proc: get_zcopy", kSize / 2, ok,
              ok                ? ""
              : s != Status::Ok ? why(s)
                                : "data differs");
  }
  if (caps & kCapAmBcopy) {
    std::vector<uint8_t> payload(kAmLength, 0x42);
    PackArgs args{payload.data(), payload.size()};
    Result<size_t> res = (*ep)->am_bcopy(kAmId, pack_cb, &args);
    for (int i = 0; i < 1000000 && res.status() == Status::NoResource; ++i) {
      me->iface().progress();
      res = (*ep)->am_bcopy(kAmId, pack_cb, &args);
    }
    Status s = res.status();
    if (s == Status::Ok) s = flush_and_wait(**ep, all);
    table.add("2proc: am_bcopy + flush", kAmLength, s == Status::Ok, why(s));
  }
}

}  // namespace

void run_two_process(const Resource& r, Table& table) {
  if (r.tl.dev_type == DeviceType::Self) {
    return table.skip("2proc", "a self transport reaches only its own process");
  }
  int up[2], down[2];
  if (pipe(up) != 0 || pipe(down) != 0) {
    return table.add("2proc: fork", 0, false, std::string("pipe: ") + strerror(errno));
  }
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid < 0) return table.add("2proc: fork", 0, false, std::string("fork: ") + strerror(errno));
  if (pid == 0) {
    close(up[0]);
    close(down[1]);
    child_main(r, up[1], down[0]);
  }
  close(up[1]);
  close(down[0]);
  uint32_t len = 0;
  std::vector<uint8_t> msg;
  bool started = read_all(up[0], &len, sizeof(len)) && len < (1u << 20);
  if (started) {
    msg.resize(len);
    started = read_all(up[0], msg.data(), len);
  }
  table.add("2proc: child target starts", 0, started, started ? "" : "no addresses from the child");
  if (started) parent_checks(r, msg, table);
  const char go = 1;
  (void)write_all(down[1], &go, 1);
  close(down[1]);
  close(up[0]);
  int status = 0;
  if (!started) kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  if (!started) return;
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  const char* what = code == kChildOk         ? ""
                     : code == kChildPutWrong ? "the child's buffer does not hold the put data"
                     : code == kChildNoAm     ? "the child did not receive the active message"
                                              : "the child failed";
  table.add("2proc: target checks data", kSize / 2, code == kChildOk, what);
}

}  // namespace mc::uct::check

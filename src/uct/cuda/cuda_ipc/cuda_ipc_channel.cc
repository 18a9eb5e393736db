// SPDX-License-Identifier: Apache-2.0
// The cuda_ipc owner/peer channel.
#include "uct/cuda/cuda_ipc/cuda_ipc_channel.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <vector>

#include "ucs/log/log.h"
#include "ucs/sys/sys.h"

namespace mc::uct::cuda {

using ucs::Status;

namespace {

constexpr uint32_t kMagic = 0x7069636d;  // "mcip"
constexpr uint16_t kVersion = 1;
enum Op : uint16_t { kOpen = 1, kAnswer = 2, kInvalidate = 3 };

struct Msg {
  uint32_t magic = kMagic;
  uint16_t version = kVersion;
  uint16_t op = 0;
  uint64_t export_id = 0;
  uint64_t token = 0;
  int32_t status = 0;
  uint32_t zero = 0;
  IpcExportRange range;
};
static_assert(sizeof(Msg) == 64);

std::string errno_text(int e) { return std::strerror(e); }

// The abstract-namespace address of `name`; its length in `*len`.
sockaddr_un address_of(const std::string& name, socklen_t* len) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  const size_t n = std::min(name.size(), sizeof(a.sun_path) - 1);
  std::memcpy(a.sun_path + 1, name.data(), n);  // sun_path[0] == 0: abstract
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
  return a;
}

// Sends `m`, with `fd` attached when >= 0. False on error.
bool send_msg(int conn, const Msg& m, int fd) {
  iovec iov{const_cast<Msg*>(&m), sizeof(m)};
  msghdr h{};
  h.msg_iov = &iov;
  h.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    h.msg_control = control;
    h.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&h);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  return sendmsg(conn, &h, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof(m));
}

// Receives one message and the fd attached to it (or -1). >0: a message,
// 0: the peer closed, <0: -errno.
int recv_msg(int conn, Msg* m, int* fd, int flags) {
  iovec iov{m, sizeof(*m)};
  msghdr h{};
  h.msg_iov = &iov;
  h.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  h.msg_control = control;
  h.msg_controllen = sizeof(control);
  *fd = -1;
  const ssize_t n = recvmsg(conn, &h, flags | MSG_CMSG_CLOEXEC);
  if (n < 0) return -errno;
  if (n == 0) return 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(&h, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      std::memcpy(fd, CMSG_DATA(c), sizeof(int));
    }
  }
  if (n != static_cast<ssize_t>(sizeof(*m)) || m->magic != kMagic || m->version != kVersion) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
    return -EPROTO;
  }
  return 1;
}

uint64_t random_u64() {
  uint64_t v = 0;
  if (getrandom(&v, sizeof(v), 0) != sizeof(v)) {
    v = static_cast<uint64_t>(getpid()) * 0x9e3779b97f4a7c15ULL ^ reinterpret_cast<uintptr_t>(&v);
  }
  return v;
}

}  // namespace

// --- owner ----------------------------------------------------------------------

ucs::Result<std::unique_ptr<IpcServer>> IpcServer::create() {
  std::unique_ptr<IpcServer> s(new IpcServer());
  char name[64];
  std::snprintf(name, sizeof(name), "mc-cuda-ipc-%d-%016llx", static_cast<int>(getpid()),
                static_cast<unsigned long long>(random_u64()));
  s->name_ = name;
  s->listen_fd_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  socklen_t len = 0;
  const sockaddr_un a = address_of(s->name_, &len);
  if (s->listen_fd_ < 0 || bind(s->listen_fd_, reinterpret_cast<const sockaddr*>(&a), len) != 0 ||
      listen(s->listen_fd_, 64) != 0) {
    MC_LOG(error) << "cuda_ipc: cannot listen on the abstract unix socket " << s->name_ << ": "
                  << errno_text(errno);
    return Status::IoError;
  }
  s->stop_fd_ = eventfd(0, EFD_CLOEXEC);
  if (s->stop_fd_ < 0) {
    MC_LOG(error) << "cuda_ipc: eventfd: " << errno_text(errno);
    return Status::IoError;
  }
  s->thread_ = std::thread([p = s.get()] { p->run(); });
  return s;
}

IpcServer::~IpcServer() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    (void)!write(stop_fd_, &one, sizeof(one));
    thread_.join();
  }
  for (int c : conns_) close(c);
  for (auto& [id, e] : exports_) {
    if (e.fd >= 0) close(e.fd);
  }
  if (listen_fd_ >= 0) close(listen_fd_);
  if (stop_fd_ >= 0) close(stop_fd_);
}

uint64_t IpcServer::add(int fd, const IpcExportRange& range, uint64_t* token) {
  std::lock_guard guard(lock_);
  const uint64_t id = next_id_++;
  *token = random_u64();
  exports_[id] = Export{*token, fd, range, {}};
  return id;
}

void IpcServer::remove(uint64_t export_id) {
  std::lock_guard guard(lock_);
  auto it = exports_.find(export_id);
  if (it == exports_.end()) return;
  Msg m;
  m.op = kInvalidate;
  m.export_id = export_id;
  for (int c : it->second.opened_by) {
    if (conns_.count(c) && !send_msg(c, m, -1)) {
      MC_LOG(debug) << "cuda_ipc: telling a peer export " << export_id
                    << " is gone failed: " << errno_text(errno);
    }
  }
  if (it->second.fd >= 0) close(it->second.fd);
  exports_.erase(it);
}

void IpcServer::serve(int conn) {
  Msg m;
  int fd = -1;
  const int rc = recv_msg(conn, &m, &fd, MSG_DONTWAIT);
  if (fd >= 0) close(fd);  // peers send none
  if (rc == -EAGAIN || rc == -EINTR) return;
  std::lock_guard guard(lock_);
  if (rc <= 0 || m.op != kOpen) {
    // Closed, or not a peer of this version: forget the connection.
    for (auto& [id, e] : exports_) e.opened_by.erase(conn);
    conns_.erase(conn);
    close(conn);
    return;
  }
  Msg answer;
  answer.op = kAnswer;
  answer.export_id = m.export_id;
  auto it = exports_.find(m.export_id);
  int pass = -1;
  if (it == exports_.end()) {
    answer.status = static_cast<int32_t>(IpcOpenAnswer::NotRegistered);
  } else if (it->second.token != m.token) {
    answer.status = static_cast<int32_t>(IpcOpenAnswer::BadToken);
  } else if (!(it->second.range == m.range)) {
    answer.status = static_cast<int32_t>(IpcOpenAnswer::BadRange);
  } else {
    answer.status = static_cast<int32_t>(IpcOpenAnswer::Ok);
    it->second.opened_by.insert(conn);
    pass = it->second.fd;
  }
  if (!send_msg(conn, answer, pass)) {
    MC_LOG(debug) << "cuda_ipc: answering a peer failed: " << errno_text(errno);
  }
}

void IpcServer::run() {
  ucs::set_thread_name("mc_cuda_ipc");
  for (;;) {
    std::vector<pollfd> fds{{stop_fd_, POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    {
      std::lock_guard guard(lock_);
      for (int c : conns_) fds.push_back({c, POLLIN, 0});
    }
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      MC_LOG(error) << "cuda_ipc: poll: " << errno_text(errno);
      return;
    }
    if (fds[0].revents) return;
    if (fds[1].revents & POLLIN) {
      const int c = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c >= 0) {
        std::lock_guard guard(lock_);
        conns_.insert(c);
      }
    }
    for (size_t i = 2; i < fds.size(); ++i) {
      if (fds[i].revents) serve(fds[i].fd);
    }
  }
}

// --- peers ------------------------------------------------------------------------

IpcClient::~IpcClient() {
  for (auto& [name, fd] : conns_) close(fd);
}

ucs::Result<int> IpcClient::connection(const std::string& socket_name, std::string* why) {
  auto it = conns_.find(socket_name);
  if (it != conns_.end()) return it->second;
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *why = std::string("socket: ") + errno_text(errno);
    return Status::IoError;
  }
  socklen_t len = 0;
  const sockaddr_un a = address_of(socket_name, &len);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&a), len) != 0) {
    const int e = errno;
    close(fd);
    *why = "the owner process has gone (connect to @" + socket_name + ": " + errno_text(e) + ")";
    return Status::Unreachable;
  }
  // An owner answers at once from its own thread; a bound on the wait
  // keeps a stopped owner (SIGSTOP) from hanging the peer.
  timeval tv{10, 0};
  (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  conns_[socket_name] = fd;
  return fd;
}

bool IpcClient::drop(const std::string& socket_name) {
  auto it = conns_.find(socket_name);
  if (it != conns_.end()) {
    close(it->second);
    conns_.erase(it);
  }
  return false;
}

Status IpcClient::open(const std::string& socket_name, uint64_t export_id, uint64_t token,
                       const IpcExportRange& range, int* fd, std::string* why) {
  std::lock_guard guard(lock_);
  *fd = -1;
  MC_ASSIGN_OR_RETURN(int conn, connection(socket_name, why));
  Msg m;
  m.op = kOpen;
  m.export_id = export_id;
  m.token = token;
  m.range = range;
  if (!send_msg(conn, m, -1)) {
    *why = "the owner process has gone (send: " + errno_text(errno) + ")";
    drop(socket_name);
    pending_.emplace_back(socket_name, 0);
    return Status::Unreachable;
  }
  for (;;) {
    Msg r;
    int passed = -1;
    const int rc = recv_msg(conn, &r, &passed, 0);
    if (rc == -EINTR) continue;
    if (rc <= 0) {
      *why = rc == 0 ? "the owner process has gone (its socket closed)"
                     : "no answer from the owner: " + errno_text(-rc);
      drop(socket_name);
      pending_.emplace_back(socket_name, 0);
      return rc == 0 ? Status::Unreachable : Status::IoError;
    }
    if (r.op == kInvalidate) {
      pending_.emplace_back(socket_name, r.export_id);
      continue;
    }
    if (r.op != kAnswer || r.export_id != export_id) {
      if (passed >= 0) close(passed);
      *why = "unexpected message from the owner (op " + std::to_string(r.op) + ")";
      return Status::IoError;
    }
    switch (static_cast<IpcOpenAnswer>(r.status)) {
      case IpcOpenAnswer::Ok: *fd = passed; return Status::Ok;
      case IpcOpenAnswer::NotRegistered:
        *why = "export " + std::to_string(export_id) +
               " is not registered by its owner (unregistered since the rkey was packed, or a "
               "forged rkey)";
        break;
      case IpcOpenAnswer::BadToken:
        *why = "export " + std::to_string(export_id) + " refused: wrong token (a forged rkey)";
        break;
      case IpcOpenAnswer::BadRange:
        *why = "export " + std::to_string(export_id) +
               " refused: the rkey's range is not the one exported (a forged rkey)";
        break;
      default: *why = "unknown answer " + std::to_string(r.status) + " from the owner"; break;
    }
    if (passed >= 0) close(passed);
    return Status::NoElem;
  }
}

unsigned IpcClient::poll(const Invalidate& invalidate) {
  std::vector<std::pair<std::string, uint64_t>> notices;
  {
    std::lock_guard guard(lock_);
    notices.swap(pending_);
    std::vector<std::string> gone;
    for (auto& [name, conn] : conns_) {
      for (;;) {
        Msg m;
        int fd = -1;
        const int rc = recv_msg(conn, &m, &fd, MSG_DONTWAIT);
        if (fd >= 0) close(fd);
        if (rc == -EAGAIN || rc == -EWOULDBLOCK) break;
        if (rc == -EINTR) continue;
        if (rc <= 0) {
          gone.push_back(name);
          notices.emplace_back(name, 0);
          break;
        }
        if (m.op == kInvalidate) notices.emplace_back(name, m.export_id);
      }
    }
    for (const std::string& g : gone) drop(g);
  }
  for (const auto& [name, id] : notices) invalidate(name, id);
  return static_cast<unsigned>(notices.size());
}

}  // namespace mc::uct::cuda

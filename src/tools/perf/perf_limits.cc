// SPDX-License-Identifier: Apache-2.0
// Machine limits: memcpy, kernel TCP loopback throughput and latency.
#include "tools/perf/perf_limits.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <new>
#include <thread>
#include <utility>
#include <vector>

#include "ucs/log/log.h"
#include "ucs/sys/sys.h"

namespace mc::perf {

using ucs::Result;
using ucs::Status;

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kRunTime = std::chrono::milliseconds(300);

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double measure_memcpy(size_t size) {
  std::vector<uint8_t> src(size, 0x5a), dst(size);
  uint64_t bytes = 0;
  const auto t0 = Clock::now();
  // Check the clock every `batch` copies so small copies are not clock-bound.
  const size_t batch = std::max<size_t>(1, (size_t{1} << 20) / size);
  do {
    for (size_t i = 0; i < batch; ++i) {
      std::memcpy(dst.data(), src.data(), size);
      asm volatile("" : : "r"(dst.data()) : "memory");  // keep every copy
    }
    bytes += batch * size;
  } while (Clock::now() - t0 < kRunTime);
  return static_cast<double>(bytes) / since(t0);
}

// Copies of `size` bytes from slot i of one `footprint`-byte buffer to slot
// i of another, i cycling over footprint / size slots; both buffers are
// written first, so every page is present. 0 when they cannot be had.
double measure_memcpy_cold(size_t size, size_t footprint) {
  const size_t slots = footprint / size;
  std::unique_ptr<uint8_t[]> src(new (std::nothrow) uint8_t[slots * size]);
  std::unique_ptr<uint8_t[]> dst(new (std::nothrow) uint8_t[slots * size]);
  if (!src || !dst) return 0;
  std::memset(src.get(), 0x5a, slots * size);
  std::memset(dst.get(), 0, slots * size);
  uint64_t bytes = 0;
  size_t slot = 0;
  const size_t batch = std::max<size_t>(1, (size_t{1} << 20) / size);
  const auto t0 = Clock::now();
  do {
    for (size_t i = 0; i < batch; ++i) {
      std::memcpy(dst.get() + slot * size, src.get() + slot * size, size);
      asm volatile("" : : "r"(dst.get()) : "memory");
      slot = slot + 1 == slots ? 0 : slot + 1;
    }
    bytes += batch * size;
  } while (Clock::now() - t0 < kRunTime);
  return static_cast<double>(bytes) / since(t0);
}

// A connected TCP pair over 127.0.0.1, each end with 5 s send/receive limits
// so a stuck measurement cannot hang the tool.
Status tcp_pair(int* a, int* b) {
  const int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (lfd < 0 || bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(lfd, 1) != 0 || getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    MC_LOG(error) << "limits: cannot listen on 127.0.0.1: " << ucs::errno_string(errno);
    if (lfd >= 0) close(lfd);
    return Status::IoError;
  }
  *a = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (*a < 0 || connect(*a, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      (*b = accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC)) < 0) {
    MC_LOG(error) << "limits: cannot connect over 127.0.0.1: " << ucs::errno_string(errno);
    if (*a >= 0) close(*a);
    close(lfd);
    return Status::IoError;
  }
  close(lfd);
  const timeval tv{5, 0};
  const int one = 1;
  for (int fd : {*a, *b}) {
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  return Status::Ok;
}

bool write_all(int fd, const uint8_t* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// One stream of `size`-byte messages; throughput as the receiver sees it.
Result<double> measure_tcp_bw(size_t size) {
  int tx = -1, rx = -1;
  MC_RETURN_IF_ERROR(tcp_pair(&tx, &rx));
  std::atomic<uint64_t> received{0};
  std::thread reader([&] {
    std::vector<uint8_t> buf(std::max<size_t>(size, 64 << 10));
    for (;;) {
      const ssize_t r = ::recv(rx, buf.data(), buf.size(), 0);
      if (r <= 0) break;
      received.fetch_add(static_cast<uint64_t>(r), std::memory_order_relaxed);
    }
  });
  std::vector<uint8_t> msg(size, 0xa5);
  bool ok = true;
  const auto t0 = Clock::now();
  while (ok && Clock::now() - t0 < kRunTime) ok = write_all(tx, msg.data(), size);
  shutdown(tx, SHUT_WR);
  reader.join();  // bounded: the reader's receive limit is 5 s
  const double seconds = since(t0);
  close(tx);
  close(rx);
  if (!ok) {
    MC_LOG(error) << "limits: TCP stream over 127.0.0.1 failed: " << ucs::errno_string(errno);
    return Status::IoError;
  }
  return static_cast<double>(received.load()) / seconds;
}

// The sockets of a fan-in measurement, closed on every way out.
struct FanInSockets {
  std::vector<int> tx, rx;
  int ep = -1;
  explicit FanInSockets(unsigned n) : tx(n, -1), rx(n, -1) {}
  ~FanInSockets() {
    for (int fd : tx)
      if (fd >= 0) close(fd);
    for (int fd : rx)
      if (fd >= 0) close(fd);
    if (ep >= 0) close(ep);
  }
};

// `senders` streams into one epoll thread (Limits::tcp_fanin_bw). Each
// sender cycles through its own buffer of footprint / senders bytes (one
// message when no footprint is given); the receiver reads every message
// whole into the next slot of its own footprint-sized buffer. Both are
// written first, so no page is faulted in on the clock. The clock runs
// once every stream has delivered a message, for 3 x kRunTime.
Result<double> measure_tcp_fanin_bw(size_t size, unsigned senders, size_t footprint) {
  FanInSockets fds(senders);
  for (unsigned i = 0; i < senders; ++i) {
    MC_RETURN_IF_ERROR(tcp_pair(&fds.tx[i], &fds.rx[i]));
  }
  fds.ep = epoll_create1(EPOLL_CLOEXEC);
  if (fds.ep < 0) {
    MC_LOG(error) << "limits: epoll_create1 failed: " << ucs::errno_string(errno);
    return Status::IoError;
  }
  for (unsigned i = 0; i < senders; ++i) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = i;
    if (epoll_ctl(fds.ep, EPOLL_CTL_ADD, fds.rx[i], &ev) != 0) {
      MC_LOG(error) << "limits: epoll_ctl failed: " << ucs::errno_string(errno);
      return Status::IoError;
    }
  }
  const size_t slots = std::max<size_t>(1, footprint / size);
  const size_t per_sender = std::max<size_t>(1, slots / senders);
  std::unique_ptr<uint8_t[]> dst(new (std::nothrow) uint8_t[slots * size]);
  std::unique_ptr<uint8_t[]> src(new (std::nothrow) uint8_t[senders * per_sender * size]);
  if (!dst || !src) return Status::NoMemory;
  std::memset(dst.get(), 0, slots * size);
  std::memset(src.get(), 0xa5, senders * per_sender * size);

  std::atomic<bool> stop{false};
  std::atomic<unsigned> failed{0};
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < senders; ++i) {
    threads.emplace_back([&, i] {
      const uint8_t* mine = src.get() + i * per_sender * size;
      for (size_t k = 0; !stop.load(std::memory_order_relaxed); k = (k + 1) % per_sender) {
        if (!write_all(fds.tx[i], mine + k * size, size)) {
          failed.fetch_add(1);
          break;
        }
      }
      shutdown(fds.tx[i], SHUT_WR);
    });
  }
  // Reads until every stream ended; counts the bytes of the timed window,
  // from the moment every stream has delivered a message (t0) to t1.
  struct Stream {
    size_t got = 0;   ///< bytes of the message in progress
    size_t slot = 0;  ///< where that message goes
    bool delivered = false;
  };
  std::vector<Stream> streams(senders);
  size_t next_slot = 0;
  unsigned streams_open = senders, started = 0;
  uint64_t bytes = 0;
  Clock::time_point t0{}, t1{};
  bool ok = true;
  const auto give_up = Clock::now() + std::chrono::seconds(10);
  while (streams_open > 0 && ok) {
    epoll_event evs[64];
    const int n = epoll_wait(fds.ep, evs, 64, 100);
    if (n < 0 && errno != EINTR) ok = false;
    const bool timing = started == senders && t1 == Clock::time_point{};
    for (int e = 0; e < n; ++e) {
      const unsigned i = evs[e].data.u32;
      Stream& st = streams[i];
      if (st.got == 0) st.slot = std::exchange(next_slot, (next_slot + 1) % slots);
      const ssize_t r = ::recv(fds.rx[i], dst.get() + st.slot * size + st.got, size - st.got,
                               MSG_DONTWAIT);
      if (r == 0) {
        epoll_ctl(fds.ep, EPOLL_CTL_DEL, fds.rx[i], nullptr);
        --streams_open;
        continue;
      }
      if (r < 0) {
        if (errno != EAGAIN && errno != EINTR) ok = false;
        continue;
      }
      st.got = (st.got + static_cast<size_t>(r)) % size;
      if (timing) bytes += static_cast<uint64_t>(r);
      if (!st.delivered && st.got == 0) {
        st.delivered = true;
        if (++started == senders) t0 = Clock::now();
      }
    }
    const auto now = Clock::now();
    if (timing && now - t0 >= 3 * kRunTime) {
      t1 = now;
      stop.store(true);
    }
    if (now > give_up) ok = false;  // a stream that never delivers
  }
  stop.store(true);
  for (int fd : fds.rx) shutdown(fd, SHUT_RDWR);  // unblocks a sender when we gave up
  for (std::thread& t : threads) t.join();
  if (!ok || failed.load() > 0 || t1 == Clock::time_point{}) {
    MC_LOG(error) << "limits: " << senders << " TCP streams over 127.0.0.1 into one thread: "
                  << (failed.load() > 0 ? "a sender's write failed"
                      : ok              ? "no stream delivered in time"
                                        : "the receiver failed or waited 10 s");
    return Status::IoError;
  }
  return static_cast<double>(bytes) / std::chrono::duration<double>(t1 - t0).count();
}

// Receives exactly `n` bytes by polling a non-blocking receive, as a
// transport's progress loop does (no sleep and wake-up in the timing).
bool spin_read_all(int fd, uint8_t* p, size_t n) {
  while (n > 0) {
    const ssize_t r = ::recv(fd, p, n, MSG_DONTWAIT);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) return false;
    if (r > 0) {
      p += r;
      n -= static_cast<size_t>(r);
    }
  }
  return true;
}

// Ping-pong of `there` bytes out and `back` bytes back, both ends
// busy-polling: `back` = 8 is the shape of a write and its acknowledgement,
// `back` = `there` that of a latency test's ping-pong. The average round trip.
Result<double> measure_tcp_round_trip(size_t there, size_t back) {
  int a = -1, b = -1;
  MC_RETURN_IF_ERROR(tcp_pair(&a, &b));
  std::thread echo([b, there, back] {
    std::vector<uint8_t> in(there);
    const std::vector<uint8_t> reply(back, 0x5a);
    while (spin_read_all(b, in.data(), there) && write_all(b, reply.data(), back)) {
    }
  });
  std::vector<uint8_t> out(there, 0xa5), reply(back);
  uint64_t rounds = 0;
  bool ok = true;
  auto round = [&] {
    return write_all(a, out.data(), there) && spin_read_all(a, reply.data(), back);
  };
  const auto warm = Clock::now();  // 100 rounds, a tenth of a second at most (large sizes)
  for (int i = 0; i < 100 && ok && Clock::now() - warm < kRunTime / 3; ++i) ok = round();
  const auto t0 = Clock::now();
  while (ok && Clock::now() - t0 < kRunTime) {
    for (int i = 0; i < 64 && ok; ++i, ++rounds) ok = round();
  }
  const double seconds = since(t0);
  shutdown(a, SHUT_RDWR);  // the echo thread sees the end
  echo.join();
  close(a);
  close(b);
  if (!ok || rounds == 0) {
    MC_LOG(error) << "limits: TCP ping-pong of " << there << " bytes out and " << back
                  << " back over 127.0.0.1 failed: " << ucs::errno_string(errno);
    return Status::IoError;
  }
  return seconds / static_cast<double>(rounds);
}

}  // namespace

Result<Limits> measure_limits(size_t size, size_t footprint, unsigned senders) {
  Limits l;
  l.size = std::max<size_t>(size, 1);
  l.memcpy_bw = measure_memcpy(l.size);
  if (footprint > l.size) {
    l.footprint = footprint / l.size * l.size;
    l.memcpy_cold_bw = measure_memcpy_cold(l.size, footprint);
    if (l.memcpy_cold_bw == 0) {
      MC_LOG(error) << "limits: cannot allocate two buffers of " << footprint
                    << " bytes for the cold copy";
      return Status::NoMemory;
    }
  }
  MC_ASSIGN_OR_RETURN(l.tcp_bw, measure_tcp_bw(l.size));
  MC_ASSIGN_OR_RETURN(const double rtt8, measure_tcp_round_trip(8, 8));
  l.tcp_lat = rtt8 / 2;
  if (l.size > 8) {
    MC_ASSIGN_OR_RETURN(l.tcp_rtt, measure_tcp_round_trip(l.size, 8));
    MC_ASSIGN_OR_RETURN(const double rtt, measure_tcp_round_trip(l.size, l.size));
    l.tcp_size_lat = rtt / 2;
  }
  if (senders > 0) {
    l.senders = senders;
    MC_ASSIGN_OR_RETURN(l.tcp_fanin_bw, measure_tcp_fanin_bw(l.size, senders, footprint));
  }
  return l;
}

}  // namespace mc::perf

// SPDX-License-Identifier: Apache-2.0
// White-box tests of the sm transport: the lock-free ring on its own, and the
// module through the UCT API across forked processes: active messages,
// put/get on sm-allocated and on registered memory (CMA and the forced ring
// fallback), refusals, malformed keys and addresses, stale /dev/shm cleanup,
// and a peer killed with SIGKILL.
#include <dirent.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ucs/datastruct/wire.h"
#include "ucs/sys/sys.h"
#include "uct/api/ep.h"
#include "uct/api/iface.h"
#include "uct/base/component_loader.h"
#include "uct/sm/sm_ring.h"

namespace mc::uct::sm {
namespace {

using namespace std::chrono_literals;
using Env = std::map<std::string, std::string>;

constexpr auto kDeadline = 20s;  // bounds every wait for something that must happen
constexpr uint8_t kAmId = 3;

// ---- the ring on plain memory ----------------------------------------------

struct RingMemory {
  explicit RingMemory(uint32_t slots, uint32_t slot_size)
      : size(Ring::bytes_for(slots, slot_size)),
        mem(static_cast<uint8_t*>(std::aligned_alloc(64, (size + 63) / 64 * 64))) {
    std::memset(mem, 0, size);
    consumer = Ring::create(mem, slots, slot_size);
    producer = *Ring::attach(mem, size);
  }
  ~RingMemory() { std::free(mem); }
  size_t size;
  uint8_t* mem;
  Ring consumer, producer;
};

bool push_u64(Ring& ring, uint32_t tag, uint64_t value) {
  Ring::Claim c;
  if (!ring.claim(tag, &c)) return false;
  std::memcpy(c.payload(), &value, sizeof(value));
  ring.publish(c, 1, 0, sizeof(value));
  return true;
}

uint64_t front_u64(const Ring& ring) {
  const SlotHeader* s = ring.front();
  uint64_t v = ~0ull;
  if (s && s->length == sizeof(v)) std::memcpy(&v, s + 1, sizeof(v));
  return v;
}

TEST(SmRing, RejectsBadGeometryAndForeignMemory) {
  EXPECT_FALSE(Ring::valid_geometry(3, 128));
  EXPECT_FALSE(Ring::valid_geometry(4, 100));
  EXPECT_TRUE(Ring::valid_geometry(4, 128));
  RingMemory m(4, 128);
  EXPECT_FALSE(Ring::attach(m.mem, m.size - 1).has_value());
  std::vector<uint64_t> zeros(64);
  EXPECT_FALSE(Ring::attach(zeros.data(), zeros.size() * 8).has_value());
}

TEST(SmRing, WrapsAroundInOrderAndReportsFull) {
  RingMemory m(4, 128);
  EXPECT_EQ(m.producer.capacity(), 128u - sizeof(SlotHeader));
  uint64_t next_in = 0, next_out = 0;
  // Uneven batches move the full/empty boundary across every slot and lap.
  for (int round = 0; round < 50; ++round) {
    const int batch = 1 + round % 4;
    for (int i = 0; i < batch && next_in - next_out < 4; ++i) {
      ASSERT_TRUE(push_u64(m.producer, 7, next_in++));
    }
    while (m.producer.has_space()) ASSERT_TRUE(push_u64(m.producer, 7, next_in++));
    EXPECT_EQ(next_in - next_out, 4u) << "a full ring holds exactly its slots";
    EXPECT_FALSE(push_u64(m.producer, 7, 999)) << "claim on a full ring";
    const int drain = 1 + (round * 3) % 4;
    for (int i = 0; i < drain; ++i) {
      ASSERT_EQ(front_u64(m.consumer), next_out++);
      m.consumer.pop();
    }
  }
  while (m.consumer.front()) {
    ASSERT_EQ(front_u64(m.consumer), next_out++);
    m.consumer.pop();
  }
  EXPECT_EQ(next_out, next_in);
  EXPECT_EQ(m.consumer.tail(), next_in);
  EXPECT_GT(next_in, 8u * 4) << "the test must go round the ring many times";
}

TEST(SmRing, ConcurrentProducersKeepTheirOrder) {
  constexpr int kProducers = 3;
  constexpr uint64_t kEach = 10000;
  RingMemory m(16, 64);
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&m, &stop, p] {
      Ring ring = *Ring::attach(m.mem, m.size);  // each producer its own view
      for (uint64_t i = 0; i < kEach && !stop;) {
        if (push_u64(ring, 100 + p, (uint64_t(p) << 32) | i)) {
          ++i;
        } else {
          std::this_thread::yield();
        }
      }
    });
  }
  std::vector<uint64_t> next(kProducers, 0);
  uint64_t received = 0;
  const auto deadline = std::chrono::steady_clock::now() + kDeadline;
  while (received < kProducers * kEach && std::chrono::steady_clock::now() < deadline) {
    if (!m.consumer.front()) {
      std::this_thread::yield();  // two cores, four threads
      continue;
    }
    const uint64_t v = front_u64(m.consumer);
    m.consumer.pop();
    const auto p = static_cast<size_t>(v >> 32);
    ASSERT_LT(p, next.size());
    ASSERT_EQ(v & 0xffffffffu, next[p]) << "producer " << p << " out of order";
    ++next[p];
    ++received;
  }
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(received, kProducers * kEach);
}

pid_t dead_pid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

TEST(SmRing, ReclaimsTheSlotOfAProducerThatDiedBeforePublishing) {
  RingMemory m(4, 128);
  const auto dead = static_cast<uint32_t>(dead_pid());
  Ring::Claim stuck;
  ASSERT_TRUE(m.producer.claim(dead, &stuck));  // claimed, never published
  ASSERT_TRUE(push_u64(m.producer, 7, 42));
  EXPECT_EQ(m.consumer.front(), nullptr) << "a claimed slot must hold back the ring";
  EXPECT_EQ(m.consumer.stalled_tag(), dead);
  EXPECT_FALSE(m.consumer.reclaim(dead + 1)) << "only the claimant's slot is reclaimed";
  ASSERT_TRUE(m.consumer.reclaim(dead));
  EXPECT_EQ(front_u64(m.consumer), 42u);
  m.consumer.pop();
  EXPECT_EQ(m.consumer.stalled_tag(), 0u);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(push_u64(m.producer, 7, i)) << "slot " << i;
}

// ---- the module through the UCT API ----------------------------------------

Component* sm_component() {
  Component* c = find_component("sm");
  EXPECT_NE(c, nullptr) << "libmc_uct_sm.so was not loaded";
  return c;
}

// One process's sm md and iface, with explicit knobs (not the environment).
struct Side {
  std::unique_ptr<MemoryDomain> md;
  std::unique_ptr<Iface> iface;
  std::vector<std::vector<uint8_t>> ams;  // received active messages

  static std::unique_ptr<Side> open(const Env& env = {}, ErrorHandler on_error = {}) {
    Component* c = sm_component();
    if (!c) return nullptr;
    Result<ucs::config::Sources> sources = ucs::config::Sources::from(env, {});
    if (!sources.ok()) return nullptr;
    Result<std::unique_ptr<MemoryDomain>> md = c->md_open("sm", *sources);
    if (!md.ok()) return nullptr;
    auto s = std::make_unique<Side>();
    s->md = std::move(*md);
    IfaceParams params;
    params.tl_name = "sm";
    params.dev_name = "memory";
    params.err_handler = std::move(on_error);
    Result<std::unique_ptr<Iface>> iface = s->md->iface_open(params);
    if (!iface.ok()) return nullptr;
    s->iface = std::move(*iface);
    Side* raw = s.get();
    (void)s->iface->set_am_handler(kAmId, [raw](const void* data, size_t len, unsigned) {
      const auto* p = static_cast<const uint8_t*>(data);
      raw->ams.emplace_back(p, p + len);
      return Status::Ok;
    });
    return s;
  }
  Result<std::unique_ptr<Endpoint>> connect(const Side& to) {
    return iface->ep_create(to.iface->device_address(), to.iface->iface_address());
  }
};

bool progress_until(const std::function<bool()>& done, std::initializer_list<Side*> sides,
                    std::chrono::nanoseconds timeout = kDeadline) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    unsigned n = 0;
    for (Side* s : sides) n += s->iface->progress();
    if (n == 0) std::this_thread::yield();
  }
  return true;
}

uint8_t pattern(uint64_t seed, size_t i) {
  return static_cast<uint8_t>(seed * 37 + i * 11 + (i >> 9));
}
void fill(uint8_t* p, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n; ++i) p[i] = pattern(seed, i);
}
bool holds(const uint8_t* p, size_t n, uint64_t seed, size_t offset = 0) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != pattern(seed, offset + i)) return false;
  }
  return true;
}

struct Waiter {
  Waiter() {
    comp.func = [](Completion* c) { static_cast<Waiter*>(c->arg)->fired = true; };
    comp.arg = this;
  }
  Completion comp;
  bool fired = false;
};

// Posts until not NoResource, then waits for InProgress; the final status.
Status run_op(const std::function<Status(Completion*)>& post, Side& me) {
  Waiter w;
  Status s = post(&w.comp);
  const auto deadline = std::chrono::steady_clock::now() + kDeadline;
  while (s == Status::NoResource && std::chrono::steady_clock::now() < deadline) {
    me.iface->progress();
    s = post(&w.comp);
  }
  if (s != Status::InProgress) return s;
  if (!progress_until([&] { return w.fired; }, {&me})) return Status::Timeout;
  return w.comp.status;
}

Status flush_wait(Endpoint& ep, Side& me) {
  return run_op([&](Completion* c) { return ep.flush(c); }, me);
}

// ---- a forked peer ---------------------------------------------------------

bool write_all(int fd, const void* data, size_t len) {
  for (auto* p = static_cast<const uint8_t*>(data); len > 0;) {
    const ssize_t n = write(fd, p, len);
    if (n <= 0) return false;
    p += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}
bool read_all(int fd, void* data, size_t len) {
  for (auto* p = static_cast<uint8_t*>(data); len > 0;) {
    const ssize_t n = read(fd, p, len);
    if (n <= 0) return false;
    p += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}
bool send_blob(int fd, const std::vector<uint8_t>& v) {
  const uint64_t n = v.size();
  return write_all(fd, &n, 8) && write_all(fd, v.data(), v.size());
}
bool recv_blob(int fd, std::vector<uint8_t>* v) {
  uint64_t n = 0;
  if (!read_all(fd, &n, 8) || n > (1u << 20)) return false;
  v->resize(n);
  return read_all(fd, v->data(), n);
}

// A child process running `body(to_parent, from_parent)`; its return value
// is the exit code. Never runs gtest code in the child.
class Child {
 public:
  explicit Child(const std::function<int(int, int)>& body) {
    int up[2], down[2];
    if (pipe(up) != 0 || pipe(down) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      close(up[0]);
      close(down[1]);
      _exit(body(up[1], down[0]));  // no destructors: as if it crashed here
    }
    close(up[1]);
    close(down[0]);
    from_ = up[0];
    to_ = down[1];
  }
  ~Child() {
    if (pid_ > 0) kill(SIGKILL);
    if (from_ >= 0) close(from_);
    if (to_ >= 0) close(to_);
  }
  pid_t pid() const { return pid_; }
  int from() const { return from_; }
  int to() const { return to_; }
  void kill(int sig) { ::kill(pid_, sig); }
  /// The exit code, or -1 when it did not exit in time (it is then killed).
  int wait() {
    const auto deadline = std::chrono::steady_clock::now() + kDeadline;
    int status = 0;
    while (waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        pid_ = -1;
        return -1;
      }
      std::this_thread::sleep_for(1ms);
    }
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  pid_t pid_ = -1;
  int from_ = -1, to_ = -1;
};

// Progresses `side` until the parent writes a byte (or closes the pipe).
char serve_until_told(Side& side, int from_parent) {
  pollfd pfd{from_parent, POLLIN, 0};
  while (poll(&pfd, 1, 0) == 0) side.iface->progress();
  for (int i = 0; i < 1000; ++i) side.iface->progress();
  char c = 0;
  return read_all(from_parent, &c, 1) ? c : 0;
}

// The target of the RMA tests. Its regions, filled with pattern kSeedA:
//   shm:  sm-allocated, kLen bytes, all access
//   heap: 2 * kLen bytes of which [0, kLen) is registered, all access
//   ro:   4 KiB registered for remote read only
// It sends addresses, three rkeys and three base addresses, serves until
// told, then checks according to the command byte and exits.
constexpr size_t kLen = 1 << 20;
constexpr uint64_t kSeedA = 5, kSeedB = 9;
enum : char { kCheckWrites = 'w', kCheckUntouched = 'u' };

int rma_target(const Env& env, int up, int down) {
  std::unique_ptr<Side> side = Side::open(env);
  if (!side) return 10;
  Result<std::unique_ptr<MemHandle>> shm = side->md->mem_alloc(kLen, MemType::Host, kAccessAll);
  if (!shm.ok()) return 11;
  auto* shm_p = static_cast<uint8_t*>((*shm)->address());
  std::vector<uint8_t> heap(2 * kLen), ro(4096);
  fill(shm_p, kLen, kSeedA);
  fill(heap.data(), heap.size(), kSeedA);
  fill(ro.data(), ro.size(), kSeedA);
  auto heap_h = side->md->mem_reg(heap.data(), kLen, kAccessAll);
  auto ro_h = side->md->mem_reg(ro.data(), ro.size(), kAccessLocal | kAccessRemoteRead);
  if (!heap_h.ok() || !ro_h.ok()) return 12;
  std::vector<uint8_t> k1, k2, k3;
  if (side->md->mkey_pack(**shm, &k1) != Status::Ok ||
      side->md->mkey_pack(**heap_h, &k2) != Status::Ok ||
      side->md->mkey_pack(**ro_h, &k3) != Status::Ok) {
    return 13;
  }
  const uint64_t addrs[3] = {reinterpret_cast<uintptr_t>(shm_p),
                             reinterpret_cast<uintptr_t>(heap.data()),
                             reinterpret_cast<uintptr_t>(ro.data())};
  if (!send_blob(up, side->iface->device_address()) ||
      !send_blob(up, side->iface->iface_address()) || !send_blob(up, k1) || !send_blob(up, k2) ||
      !send_blob(up, k3) || !write_all(up, addrs, sizeof(addrs))) {
    return 14;
  }
  const char command = serve_until_told(*side, down);
  if (command == kCheckWrites) {
    // The parent wrote kSeedB over the first halves and sent three AMs.
    if (!holds(shm_p, kLen / 2, kSeedB)) return 20;
    if (!holds(heap.data(), kLen / 2, kSeedB)) return 21;
    if (side->ams.size() != 3) return 22;
  }
  // Nothing ever lands outside a registration or in read-only memory.
  if (!holds(heap.data() + kLen, kLen, kSeedA, kLen)) return 23;
  if (!holds(ro.data(), ro.size(), kSeedA)) return 24;
  if (!holds(heap.data() + kLen / 2, kLen / 2, kSeedA, kLen / 2)) return 25;
  return 0;
}

// The parent's view of an rma_target.
struct Remote {
  std::vector<uint8_t> dev, iface, rkeys[3];
  uint64_t addrs[3] = {};
  bool receive(int fd) {
    return recv_blob(fd, &dev) && recv_blob(fd, &iface) && recv_blob(fd, &rkeys[0]) &&
           recv_blob(fd, &rkeys[1]) && recv_blob(fd, &rkeys[2]) &&
           read_all(fd, addrs, sizeof(addrs));
  }
};

struct PackArgs {
  const uint8_t* src;
  size_t len;
};
size_t pack(void* dest, void* arg) {
  auto* a = static_cast<PackArgs*>(arg);
  std::memcpy(dest, a->src, a->len);
  return a->len;
}
void unpack(void* arg, const void* data, size_t len) {
  std::memcpy(arg, data, len);
}

// Writes kSeedB over the first half of region `r` with put short, bcopy
// and zcopy, and reads its second half back with get bcopy and zcopy.
void put_get_region(Side& me, Endpoint& ep, const Rkey& rkey, uint64_t base) {
  const IfaceAttr attr = me.iface->query();
  std::vector<uint8_t> src(kLen / 2);
  fill(src.data(), src.size(), kSeedB);
  const size_t s = std::min<size_t>(attr.put.max_short, 100);
  const size_t b = attr.put.max_bcopy;
  ASSERT_EQ(run_op([&](Completion*) { return ep.put_short(src.data(), s, base, rkey); }, me),
            Status::Ok);
  PackArgs args{src.data() + s, b};
  ASSERT_EQ(
      run_op([&](Completion*) { return ep.put_bcopy(pack, &args, base + s, rkey).status(); }, me),
      Status::Ok);
  // Three pieces gathered into one remote range.
  const size_t rest = src.size() - s - b;
  Iov iov[3] = {{src.data() + s + b, 1000, nullptr},
                {src.data() + s + b + 1000, rest - 2000, nullptr},
                {src.data() + s + b + rest - 1000, 1000, nullptr}};
  ASSERT_EQ(run_op([&](Completion* c) { return ep.put_zcopy(iov, 3, base + s + b, rkey, c); }, me),
            Status::Ok);
  ASSERT_EQ(flush_wait(ep, me), Status::Ok);

  std::vector<uint8_t> back(kLen / 2, 0);
  const uint64_t half = base + kLen / 2;
  const size_t gb = attr.get.max_bcopy;
  ASSERT_EQ(
      run_op([&](Completion* c) { return ep.get_bcopy(unpack, back.data(), gb, half, rkey, c); },
             me),
      Status::Ok);
  Iov in[2] = {{back.data() + gb, 4096, nullptr},
               {back.data() + gb + 4096, back.size() - gb - 4096, nullptr}};
  ASSERT_EQ(run_op([&](Completion* c) { return ep.get_zcopy(in, 2, half + gb, rkey, c); }, me),
            Status::Ok);
  EXPECT_TRUE(holds(back.data(), back.size(), kSeedA, kLen / 2)) << "get returned wrong data";
}

void am_to(Side& me, Endpoint& ep) {
  const uint8_t payload[40] = {1, 2, 3};
  ASSERT_EQ(run_op([&](Completion*) { return ep.am_short(kAmId, 77, payload, 40); }, me),
            Status::Ok);
  PackArgs args{payload, sizeof(payload)};
  ASSERT_EQ(run_op([&](Completion*) { return ep.am_bcopy(kAmId, pack, &args).status(); }, me),
            Status::Ok);
  Iov iov{const_cast<uint8_t*>(payload), sizeof(payload), nullptr};
  ASSERT_EQ(run_op([&](Completion* c) { return ep.am_zcopy(kAmId, "h", 1, &iov, 1, c); }, me),
            Status::Ok);
}

void rma_across_processes(const Env& env) {
  Child child([&](int up, int down) { return rma_target(env, up, down); });
  Remote r;
  ASSERT_TRUE(r.receive(child.from())) << "the child did not start";
  std::unique_ptr<Side> me = Side::open(env);
  ASSERT_TRUE(me);
  Result<std::unique_ptr<Endpoint>> ep = me->iface->ep_create(r.dev, r.iface);
  ASSERT_TRUE(ep.ok()) << ep.status();
  for (int i = 0; i < 2; ++i) {  // shm, then heap (CMA or fallback)
    SCOPED_TRACE(i == 0 ? "sm-allocated memory" : "registered heap memory");
    Result<std::unique_ptr<Rkey>> rkey = me->md->rkey_unpack(r.rkeys[i]);
    ASSERT_TRUE(rkey.ok()) << rkey.status();
    put_get_region(*me, **ep, **rkey, r.addrs[i]);
  }
  am_to(*me, **ep);
  ASSERT_EQ(flush_wait(**ep, *me), Status::Ok);
  ASSERT_TRUE(write_all(child.to(), &"w"[0], 1));
  EXPECT_EQ(child.wait(), 0) << "20/21: put data wrong, 22: AMs missing, 23-25: stray writes";
}

TEST(SmTransport, PutGetAmAcrossProcessesWithCma) {
  rma_across_processes({});
}

TEST(SmTransport, PutGetAmAcrossProcessesThroughTheRingWhenCmaIsOff) {
  // Eight slots: zcopy fragments outrun the ring and are sent from progress().
  rma_across_processes({{"MC_SM_CMA", "n"}, {"MC_SM_RING_SIZE", "8"}});
}

// Overwrites the u64 at `offset` of the payload of a packed sm rkey (see
// RkeyInfo: kind u8, pid u32, start, boot, pid ns, reg id, base, length: u64;
// access u32), behind the 8-byte envelope of md "sm".
void forge(std::vector<uint8_t>* key, size_t offset, uint64_t value, size_t bytes = 8) {
  for (size_t i = 0; i < bytes; ++i)
    (*key)[8 + offset + i] = static_cast<uint8_t>(value >> (8 * i));
}
constexpr size_t kLengthField = 45, kAccessField = 53;

TEST(SmTransport, InitiatorRefusesAccessOutsideTheRkey) {
  Child child([](int up, int down) { return rma_target({}, up, down); });
  Remote r;
  ASSERT_TRUE(r.receive(child.from()));
  std::unique_ptr<Side> me = Side::open();
  ASSERT_TRUE(me);
  auto ep = me->iface->ep_create(r.dev, r.iface);
  ASSERT_TRUE(ep.ok());
  auto heap = me->md->rkey_unpack(r.rkeys[1]);
  auto ro = me->md->rkey_unpack(r.rkeys[2]);
  ASSERT_TRUE(heap.ok() && ro.ok());
  std::vector<uint8_t> data(8192, 0xee);
  // Straddles the end of the registration: refused before any byte moves.
  Iov iov{data.data(), 8192, nullptr};
  Waiter w;
  EXPECT_EQ((*ep)->put_zcopy(&iov, 1, r.addrs[1] + kLen - 4096, **heap, &w.comp),
            Status::InvalidParam);
  EXPECT_EQ((*ep)->put_short(data.data(), 8, r.addrs[2], **ro), Status::InvalidParam);
  EXPECT_EQ((*ep)->put_short(data.data(), 8, r.addrs[1] - 8, **heap), Status::InvalidParam);
  // Reading the read-only region is fine.
  std::vector<uint8_t> back(64);
  EXPECT_EQ(run_op(
                [&](Completion* c) {
                  return (*ep)->get_bcopy(unpack, back.data(), 64, r.addrs[2], **ro, c);
                },
                *me),
            Status::Ok);
  EXPECT_TRUE(holds(back.data(), 64, kSeedA));
  ASSERT_TRUE(write_all(child.to(), &"u"[0], 1));
  EXPECT_EQ(child.wait(), 0) << "a refused put wrote into the target";
}

// Single-piece puts and gets into a mapped segment take the copy without an
// iovec array, and keys are recognised by their exact type: the range and
// access checks, and the refusal of another md's key, still hold there.
TEST(SmTransport, MappedSegmentOpsCheckTheirKeyLikeTheOthers) {
  std::unique_ptr<Side> tx = Side::open();
  std::unique_ptr<Side> rx = Side::open();
  ASSERT_TRUE(tx && rx);
  auto ep = tx->connect(*rx);
  ASSERT_TRUE(ep.ok());
  constexpr size_t kSeg = 65536;
  auto rw = rx->md->mem_alloc(kSeg, MemType::Host, kAccessAll);
  auto ro = rx->md->mem_alloc(kSeg, MemType::Host, kAccessLocal | kAccessRemoteRead);
  ASSERT_TRUE(rw.ok() && ro.ok());
  auto* rw_p = static_cast<uint8_t*>((*rw)->address());
  auto* ro_p = static_cast<uint8_t*>((*ro)->address());
  fill(rw_p, kSeg, kSeedA);
  fill(ro_p, kSeg, kSeedA);
  std::vector<uint8_t> k_rw, k_ro;
  ASSERT_EQ(rx->md->mkey_pack(**rw, &k_rw), Status::Ok);
  ASSERT_EQ(rx->md->mkey_pack(**ro, &k_ro), Status::Ok);
  auto key_rw = tx->md->rkey_unpack(k_rw);
  auto key_ro = tx->md->rkey_unpack(k_ro);
  ASSERT_TRUE(key_rw.ok() && key_ro.ok());
  const auto rw_a = reinterpret_cast<uintptr_t>(rw_p);
  const auto ro_a = reinterpret_cast<uintptr_t>(ro_p);
  std::vector<uint8_t> data(kSeg);
  fill(data.data(), kSeg, kSeedB);

  // At both edges of the range: done in place.
  EXPECT_EQ((*ep)->put_short(data.data(), 8, rw_a, **key_rw), Status::Ok);
  EXPECT_EQ((*ep)->put_short(data.data() + kSeg - 8, 8, rw_a + kSeg - 8, **key_rw), Status::Ok);
  EXPECT_TRUE(holds(rw_p, 8, kSeedB));
  EXPECT_TRUE(holds(rw_p + kSeg - 8, 8, kSeedB, kSeg - 8));
  Waiter w;
  Iov iov{data.data() + 4096, 4096, nullptr};
  EXPECT_EQ((*ep)->put_zcopy(&iov, 1, rw_a + 4096, **key_rw, &w.comp), Status::Ok);
  EXPECT_TRUE(holds(rw_p + 4096, 4096, kSeedB, 4096));
  EXPECT_FALSE(w.fired) << "an operation done in place also ran its completion";
  std::vector<uint8_t> back(4096);
  Iov in{back.data(), 4096, nullptr};
  EXPECT_EQ((*ep)->get_zcopy(&in, 1, ro_a + kSeg - 4096, **key_ro, &w.comp), Status::Ok);
  EXPECT_TRUE(holds(back.data(), 4096, kSeedA, kSeg - 4096));
  struct Got {
    uint8_t* dest;
    size_t length;
  } got{back.data(), 0};
  const UnpackCallback unpack_len = [](void* arg, const void* d, size_t n) {
    auto* g = static_cast<Got*>(arg);
    std::memcpy(g->dest, d, n);
    g->length = n;
  };
  std::fill(back.begin(), back.end(), 0);
  EXPECT_EQ((*ep)->get_bcopy(unpack_len, &got, 64, ro_a, **key_ro, &w.comp), Status::Ok);
  EXPECT_EQ(got.length, 64u) << "unpack did not run";
  EXPECT_TRUE(holds(back.data(), 64, kSeedA));

  // Past either edge, into read-only memory, or with another md's key:
  // refused before a byte moves.
  EXPECT_EQ((*ep)->put_short(data.data(), 8, rw_a + kSeg - 4, **key_rw), Status::InvalidParam);
  EXPECT_EQ((*ep)->put_short(data.data(), 8, rw_a - 8, **key_rw), Status::InvalidParam);
  EXPECT_EQ((*ep)->put_short(data.data(), 8, ro_a, **key_ro), Status::InvalidParam);
  Iov over{data.data(), 8192, nullptr};
  EXPECT_EQ((*ep)->put_zcopy(&over, 1, rw_a + kSeg - 4096, **key_rw, &w.comp),
            Status::InvalidParam);
  struct OtherRkey : Rkey {
  } other;
  EXPECT_EQ((*ep)->put_short(data.data(), 8, rw_a, other), Status::InvalidParam);
  EXPECT_EQ((*ep)->get_zcopy(&in, 1, rw_a, other, &w.comp), Status::InvalidParam);
  EXPECT_TRUE(holds(ro_p, kSeg, kSeedA)) << "a refused put wrote into read-only memory";
  EXPECT_TRUE(holds(rw_p + 8, 4088, kSeedA, 8)) << "a refused put wrote into the segment";
  EXPECT_TRUE(holds(rw_p + 8192, kSeg - 8192 - 8, kSeedA, 8192));
  EXPECT_FALSE(w.fired);
}

TEST(SmTransport, FallbackTargetRefusesWhatItsRegistrationsDoNotAllow) {
  // Forged keys pass the initiator's check; the target checks its own table.
  const Env env{{"MC_SM_CMA", "n"}};
  Child child([&](int up, int down) { return rma_target(env, up, down); });
  Remote r;
  ASSERT_TRUE(r.receive(child.from()));
  std::unique_ptr<Side> me = Side::open(env);
  ASSERT_TRUE(me);
  auto ep = me->iface->ep_create(r.dev, r.iface);
  ASSERT_TRUE(ep.ok());
  std::vector<uint8_t> longer = r.rkeys[1], writable = r.rkeys[2];
  forge(&longer, kLengthField, 2 * kLen);
  forge(&writable, kAccessField, kAccessAll, 4);
  auto heap = me->md->rkey_unpack(longer);
  auto ro = me->md->rkey_unpack(writable);
  ASSERT_TRUE(heap.ok() && ro.ok());
  std::vector<uint8_t> data(kLen, 0xee);
  Iov iov{data.data(), kLen, nullptr};
  const Status outside = run_op(
      [&](Completion* c) { return (*ep)->put_zcopy(&iov, 1, r.addrs[1] + kLen, **heap, c); }, *me);
  EXPECT_EQ(outside, Status::Rejected);
  Iov page{data.data(), 4096, nullptr};
  const Status readonly =
      run_op([&](Completion* c) { return (*ep)->put_zcopy(&page, 1, r.addrs[2], **ro, c); }, *me);
  EXPECT_EQ(readonly, Status::Rejected);
  // A refused short put is reported by the flush after it.
  EXPECT_EQ(
      run_op([&](Completion*) { return (*ep)->put_short(data.data(), 8, r.addrs[2], **ro); }, *me),
      Status::Ok);
  EXPECT_EQ(flush_wait(**ep, *me), Status::Rejected);
  ASSERT_TRUE(write_all(child.to(), &"u"[0], 1));
  EXPECT_EQ(child.wait(), 0) << "the target let a refused put through";
}

TEST(SmTransport, MalformedRkeysAndAddressesAreInvalid) {
  std::unique_ptr<Side> a = Side::open(), b = Side::open();
  ASSERT_TRUE(a && b);
  std::vector<uint8_t> buf(256);
  auto memh = b->md->mem_reg(buf.data(), buf.size(), kAccessAll);
  ASSERT_TRUE(memh.ok());
  std::vector<uint8_t> key;
  ASSERT_EQ(b->md->mkey_pack(**memh, &key), Status::Ok);
  EXPECT_LE(key.size(), b->md->query().rkey_packed_size);
  ASSERT_TRUE(a->md->rkey_unpack(key).ok());
  for (size_t cut = 0; cut < key.size(); ++cut) {
    EXPECT_EQ(a->md->rkey_unpack({key.data(), cut}).status(), Status::InvalidParam) << cut;
  }
  std::vector<uint8_t> k = key;
  k.push_back(0);
  EXPECT_EQ(a->md->rkey_unpack(k).status(), Status::InvalidParam) << "trailing byte";
  k = key;
  k[8] = 9;  // unknown kind
  EXPECT_EQ(a->md->rkey_unpack(k).status(), Status::InvalidParam);
  k = key;
  forge(&k, kLengthField, 0);
  EXPECT_EQ(a->md->rkey_unpack(k).status(), Status::InvalidParam) << "empty range";
  k = key;
  forge(&k, kAccessField, 0x80, 4);
  EXPECT_EQ(a->md->rkey_unpack(k).status(), Status::InvalidParam) << "unknown access bits";
  k = key;
  forge(&k, 1, dead_pid(), 4);
  EXPECT_EQ(a->md->rkey_unpack(k).status(), Status::Unreachable) << "owner is dead";

  const auto dev = b->iface->device_address();
  const auto ifa = b->iface->iface_address();
  std::string reason;
  const std::vector<uint8_t> garbage(ifa.size(), 0x5a);
  EXPECT_FALSE(a->iface->is_reachable(garbage, ifa, &reason));
  EXPECT_FALSE(reason.empty());
  EXPECT_EQ(a->iface->ep_create(garbage, ifa).status(), Status::InvalidParam);
  EXPECT_EQ(a->iface->ep_create(dev, garbage).status(), Status::InvalidParam);
  for (size_t cut = 0; cut < ifa.size(); ++cut) {
    EXPECT_EQ(a->iface->ep_create(dev, {ifa.data(), cut}).status(), Status::InvalidParam) << cut;
  }
  for (size_t cut = 0; cut < dev.size(); ++cut) {
    EXPECT_EQ(a->iface->ep_create({dev.data(), cut}, ifa).status(), Status::InvalidParam) << cut;
  }
  // Well formed, another IPC namespace: unreachable, and said why.
  std::vector<uint8_t> other_ns;
  ucs::WireWriter w(&other_ns);
  w.u8(1);
  w.str(ucs::host_identity().boot_id);
  w.u64(ucs::host_identity().ipc_ns + 1);
  w.u64(ucs::host_identity().mnt_ns);
  other_ns.insert(other_ns.end(), dev.end() - 8, dev.end());  // pid ns
  EXPECT_FALSE(a->iface->is_reachable(other_ns, ifa, &reason));
  EXPECT_NE(reason.find("namespace"), std::string::npos) << reason;
  EXPECT_EQ(a->iface->ep_create(other_ns, ifa).status(), Status::Unreachable);
  // Well formed, no such ring (another random part).
  std::vector<uint8_t> gone = ifa;
  gone[9] ^= 0xff;
  EXPECT_EQ(a->iface->ep_create(dev, gone).status(), Status::Unreachable);
}

TEST(SmTransport, FullRingGivesNoResourceAndPendingRunsWhenItDrains) {
  std::unique_ptr<Side> tx = Side::open({{"MC_SM_RING_SIZE", "4"}});
  std::unique_ptr<Side> rx = Side::open({{"MC_SM_RING_SIZE", "4"}});
  ASSERT_TRUE(tx && rx);
  auto ep = tx->connect(*rx);
  ASSERT_TRUE(ep.ok());
  struct Req {
    PendingReq req;
    Endpoint* ep;
    int calls = 0;
  } pending{{}, ep->get()};
  pending.req.func = [](PendingReq* self) {
    auto* p = reinterpret_cast<Req*>(self);
    ++p->calls;
    return p->ep->am_short(kAmId, 4, nullptr, 0);
  };
  EXPECT_EQ((*ep)->pending_add(&pending.req), Status::Busy) << "the ring has room";
  for (uint64_t i = 0; i < 4; ++i) ASSERT_EQ((*ep)->am_short(kAmId, i, nullptr, 0), Status::Ok);
  EXPECT_EQ((*ep)->am_short(kAmId, 99, nullptr, 0), Status::NoResource);
  ASSERT_EQ((*ep)->pending_add(&pending.req), Status::Ok);
  for (int i = 0; i < 100; ++i) tx->iface->progress();
  EXPECT_EQ(pending.calls, 0) << "dispatched although the ring is still full";
  EXPECT_EQ((*ep)->am_short(kAmId, 99, nullptr, 0), Status::NoResource) << "overtook pending";
  ASSERT_TRUE(progress_until([&] { return rx->ams.size() == 5; }, {tx.get(), rx.get()}));
  EXPECT_EQ(pending.calls, 1);
  for (uint64_t i = 0; i < 5; ++i) {
    uint64_t h = 0;
    std::memcpy(&h, rx->ams[i].data(), 8);
    EXPECT_EQ(h, i) << "messages out of order";
  }
}

TEST(SmTransport, ManyProcessesSendIntoOneRing) {
  constexpr int kChildren = 3;
  constexpr uint64_t kEach = 2000;
  const Env env{{"MC_SM_RING_SIZE", "8"}};
  std::unique_ptr<Side> rx = Side::open(env);
  ASSERT_TRUE(rx);
  const auto dev = rx->iface->device_address();
  const auto ifa = rx->iface->iface_address();
  std::vector<std::unique_ptr<Child>> children;
  for (int c = 0; c < kChildren; ++c) {
    children.push_back(std::make_unique<Child>([&, c](int, int) {
      std::unique_ptr<Side> tx = Side::open(env);
      if (!tx) return 10;
      auto ep = tx->iface->ep_create(dev, ifa);
      if (!ep.ok()) return 11;
      for (uint64_t i = 0; i < kEach;) {
        const uint64_t h = (uint64_t(c) << 32) | i;
        const Status s = (*ep)->am_short(kAmId, h, &h, sizeof(h));
        if (s == Status::Ok) {
          ++i;
        } else if (s == Status::NoResource) {
          tx->iface->progress();
        } else {
          return 12;
        }
      }
      return 0;
    }));
  }
  std::vector<uint64_t> next(kChildren, 0);
  size_t seen = 0;
  const bool all = progress_until(
      [&] {
        for (; seen < rx->ams.size(); ++seen) {
          uint64_t h = 0;
          std::memcpy(&h, rx->ams[seen].data(), 8);
          const auto c = static_cast<size_t>(h >> 32);
          if (c >= next.size() || (h & 0xffffffffu) != next[c]) return true;  // checked below
          ++next[c];
        }
        return seen == kChildren * kEach;
      },
      {rx.get()});
  EXPECT_TRUE(all);
  for (int c = 0; c < kChildren; ++c) {
    EXPECT_EQ(next[c], kEach) << "child " << c << " messages lost or out of order";
    EXPECT_EQ(children[c]->wait(), 0);
  }
}

// Names in /dev/shm of sm segments owned by `pid`.
std::vector<std::string> segments_of(pid_t pid) {
  std::vector<std::string> out;
  const std::string prefix = "mc-sm-" + std::to_string(pid) + "-";
  if (DIR* d = opendir("/dev/shm")) {
    while (const dirent* e = readdir(d)) {
      if (std::string(e->d_name).rfind(prefix, 0) == 0) out.push_back(e->d_name);
    }
    closedir(d);
  }
  return out;
}

TEST(SmTransport, IfaceAndAllocationRemoveTheirSegments) {
  const size_t before = segments_of(getpid()).size();
  std::unique_ptr<Side> s = Side::open();
  ASSERT_TRUE(s);
  auto mem = s->md->mem_alloc(12345, MemType::Host, kAccessAll);
  ASSERT_TRUE(mem.ok());
  EXPECT_EQ(segments_of(getpid()).size(), before + 2) << "one ring, one allocation";
  mem->reset();
  EXPECT_EQ(segments_of(getpid()).size(), before + 1);
  s.reset();
  EXPECT_EQ(segments_of(getpid()).size(), before);
}

TEST(SmTransport, StaleSegmentsOfDeadProcessesAreRemovedAtIfaceOpen) {
  // One child lives on with an iface; another "crashes" with an iface and an
  // allocation (after the first opened its iface, which would have swept).
  Child alive([](int up, int down) {
    std::unique_ptr<Side> s = Side::open();
    const char ok = s ? 1 : 0;
    write_all(up, &ok, 1);
    char c;
    read_all(down, &c, 1);
    return 0;
  });
  char ok = 0;
  ASSERT_TRUE(read_all(alive.from(), &ok, 1) && ok);
  Child crashed([](int up, int) -> int {
    std::unique_ptr<Side> s = Side::open();
    if (!s) return 1;
    auto mem = s->md->mem_alloc(4096, MemType::Host, kAccessAll);
    const char ok = mem.ok() ? 1 : 0;
    write_all(up, &ok, 1);
    _exit(0);  // no destructor runs: nothing is unlinked
  });
  ASSERT_TRUE(read_all(crashed.from(), &ok, 1) && ok);
  const pid_t dead = crashed.pid();
  ASSERT_EQ(crashed.wait(), 0);
  const size_t left = segments_of(dead).size();
  // Another mc process on this host may sweep first; then nothing is left
  // to show that this one sweeps.
  if (left == 0) GTEST_SKIP() << "a concurrent process removed the stale segments first";
  ASSERT_EQ(left, 2u) << "the crashed child left its ring and allocation";
  ASSERT_EQ(segments_of(alive.pid()).size(), 1u);

  std::unique_ptr<Side> s = Side::open();
  ASSERT_TRUE(s);
  EXPECT_TRUE(segments_of(dead).empty()) << "stale segments were not removed";
  EXPECT_EQ(segments_of(alive.pid()).size(), 1u) << "a live process's segment was removed";
  write_all(alive.to(), "x", 1);
  EXPECT_EQ(alive.wait(), 0);
}

// A peer that sends its addresses and the rkey of a registered buffer, then
// sleeps without progressing: requests to it stay unanswered.
int sleeping_peer(const Env& env, int up, int down) {
  std::unique_ptr<Side> s = Side::open(env);
  if (!s) return 10;
  static std::vector<uint8_t> buf(kLen);
  auto memh = s->md->mem_reg(buf.data(), buf.size(), kAccessAll);
  std::vector<uint8_t> key;
  if (!memh.ok() || s->md->mkey_pack(**memh, &key) != Status::Ok) return 11;
  const uint64_t addr = reinterpret_cast<uintptr_t>(buf.data());
  if (!send_blob(up, s->iface->device_address()) || !send_blob(up, s->iface->iface_address()) ||
      !send_blob(up, key) || !write_all(up, &addr, 8)) {
    return 12;
  }
  char c;
  read_all(down, &c, 1);
  return 0;
}

struct Failures {
  int calls = 0;
  Endpoint* ep = nullptr;
  Status status = Status::Ok;
  ErrorHandler handler() {
    return [this](Endpoint* e, Status s) {
      ++calls;
      ep = e;
      status = s;
    };
  }
};

TEST(SmTransport, KilledPeerFailsOutstandingOpsAndCallsTheHandlerOnce) {
  const Env env{{"MC_SM_CMA", "n"}, {"MC_SM_PEER_CHECK_INTERVAL", "10ms"}};
  Child child([&](int up, int down) { return sleeping_peer(env, up, down); });
  std::vector<uint8_t> dev, ifa, key;
  uint64_t addr = 0;
  ASSERT_TRUE(recv_blob(child.from(), &dev) && recv_blob(child.from(), &ifa) &&
              recv_blob(child.from(), &key) && read_all(child.from(), &addr, 8));
  Failures f;
  std::unique_ptr<Side> me = Side::open(env, f.handler());
  ASSERT_TRUE(me);
  auto ep = me->iface->ep_create(dev, ifa);
  auto rkey = me->md->rkey_unpack(key);
  ASSERT_TRUE(ep.ok() && rkey.ok());
  std::vector<uint8_t> local(kLen);
  Iov iov{local.data(), local.size(), nullptr};
  Waiter get;
  ASSERT_EQ((*ep)->get_zcopy(&iov, 1, addr, **rkey, &get.comp), Status::InProgress);
  Waiter flush;
  ASSERT_EQ((*ep)->flush(&flush.comp), Status::InProgress);
  for (int i = 0; i < 100; ++i) me->iface->progress();
  EXPECT_FALSE(get.fired) << "a sleeping peer answered";
  // Killed and not reaped: a zombie is dead too.
  child.kill(SIGKILL);
  ASSERT_TRUE(progress_until([&] { return f.calls > 0 && get.fired && flush.fired; }, {me.get()}))
      << "the dead peer was not detected";
  EXPECT_EQ(get.comp.status, Status::ConnectionReset);
  EXPECT_TRUE(is_error(flush.comp.status));
  EXPECT_EQ(f.ep, ep->get());
  EXPECT_EQ(f.status, Status::ConnectionReset);
  for (int i = 0; i < 20; ++i) {
    me->iface->progress();
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_EQ(f.calls, 1) << "the handler must run once";
  EXPECT_TRUE(is_error((*ep)->am_short(kAmId, 0, nullptr, 0)));
  EXPECT_TRUE(is_error((*ep)->flush(nullptr)));
  EXPECT_EQ(me->iface->flush(nullptr), Status::Ok) << "failed ops still count as outstanding";
  EXPECT_EQ(child.wait(), -1);
}

TEST(SmTransport, CheckReportsADeadPeerWithoutWaitingForTheInterval) {
  const Env env{{"MC_SM_PEER_CHECK_INTERVAL", "1h"}};
  Child child([&](int up, int down) { return sleeping_peer(env, up, down); });
  std::vector<uint8_t> dev, ifa, key;
  uint64_t addr = 0;
  ASSERT_TRUE(recv_blob(child.from(), &dev) && recv_blob(child.from(), &ifa) &&
              recv_blob(child.from(), &key) && read_all(child.from(), &addr, 8));
  const pid_t peer = child.pid();
  Failures f;
  std::unique_ptr<Side> me = Side::open(env, f.handler());
  ASSERT_TRUE(me);
  auto ep = me->iface->ep_create(dev, ifa);
  ASSERT_TRUE(ep.ok());
  EXPECT_EQ((*ep)->check(), Status::Ok);
  me->iface->progress();
  EXPECT_EQ(f.calls, 0) << "a live peer was reported";
  child.kill(SIGKILL);
  EXPECT_EQ(child.wait(), -1);
  for (int i = 0; i < 100; ++i) me->iface->progress();
  EXPECT_EQ(f.calls, 0) << "the interval is an hour";
  EXPECT_EQ((*ep)->check(), Status::Ok);
  me->iface->progress();
  EXPECT_EQ(f.calls, 1);
  EXPECT_TRUE(segments_of(peer).empty()) << "the dead peer's ring was not swept";
}

TEST(SmTransport, BadKnobsAreRefused) {
  Component* c = sm_component();
  ASSERT_TRUE(c);
  for (const Env& env : {Env{{"MC_SM_RING_SIZE", "3"}}, Env{{"MC_SM_RING_SIZE", "1"}},
                         Env{{"MC_SM_SEG_SIZE", "16"}}, Env{{"MC_SM_CMA", "maybe"}}}) {
    auto sources = ucs::config::Sources::from(env, {});
    ASSERT_TRUE(sources.ok());
    EXPECT_EQ(c->md_open("sm", *sources).status(), Status::InvalidParam) << env.begin()->first;
  }
}

}  // namespace
}  // namespace mc::uct::sm

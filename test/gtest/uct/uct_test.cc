// SPDX-License-Identifier: Apache-2.0
// UCT test harness.
#include "uct/uct_test.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "uct/base/component_loader.h"

namespace mc::uct::test {

std::string Resource::name() const { return tl.tl_name + "_" + tl.dev_name; }

std::vector<Resource> available_resources() {
  static const std::vector<Resource> resources = [] {
    std::vector<Resource> out;
    ucs::config::Sources sources = ucs::config::Sources::from_process().value_or({});
    for (Component* c : load_components()) {
      for (const std::string& md_name : c->md_names()) {
        Result<std::unique_ptr<MemoryDomain>> md = c->md_open(md_name, sources);
        if (!md.ok()) continue;
        for (const TlResource& tl : (*md)->query_tl_resources()) {
          if (tl.dev_type == DeviceType::Net && tl.dev_name != "lo") continue;
          out.push_back(Resource{c->name(), md_name, tl});
        }
      }
    }
    return out;
  }();
  return resources;
}

std::string resource_name(const testing::TestParamInfo<Resource>& info) {
  std::string n = info.param.name();
  std::replace_if(n.begin(), n.end(), [](char c) { return !std::isalnum(c); }, '_');
  return n;
}

std::unique_ptr<Entity> Entity::create(const Resource& resource, ErrorHandler on_error) {
  auto e = std::make_unique<Entity>();
  Component* c = find_component(resource.component);
  EXPECT_NE(c, nullptr) << resource.component;
  if (!c) return nullptr;
  ucs::config::Sources sources = ucs::config::Sources::from_process().value_or({});
  Result<std::unique_ptr<MemoryDomain>> md = c->md_open(resource.md_name, sources);
  EXPECT_TRUE(md.ok()) << status_string(md.status());
  if (!md.ok()) return nullptr;
  e->md_ = std::move(*md);
  IfaceParams params;
  params.tl_name = resource.tl.tl_name;
  params.dev_name = resource.tl.dev_name;
  params.err_handler = std::move(on_error);
  Result<std::unique_ptr<Iface>> iface = e->md_->iface_open(params);
  EXPECT_TRUE(iface.ok()) << status_string(iface.status());
  if (!iface.ok()) return nullptr;
  e->iface_ = std::move(*iface);
  e->attr_ = e->iface_->query();
  return e;
}

Result<std::unique_ptr<Endpoint>> Entity::connect(const Entity& peer) {
  return connect(peer.device_address(), peer.iface_address());
}

Result<std::unique_ptr<Endpoint>> Entity::connect(const std::vector<uint8_t>& dev_addr,
                                                  const std::vector<uint8_t>& iface_addr) {
  return iface_->ep_create(dev_addr, iface_addr);
}

Buffer::Buffer(Entity& e, size_t length, unsigned access) : data(std::max<size_t>(length, 1)) {
  data.resize(length);
  if (length == 0) return;
  Result<std::unique_ptr<MemHandle>> h = e.md().mem_reg(data.data(), length, access);
  EXPECT_TRUE(h.ok()) << status_string(h.status());
  if (h.ok()) memh = std::move(*h);
}

namespace {
uint8_t pattern(uint64_t seed, size_t i) {
  return static_cast<uint8_t>((seed * 131 + i * 7 + (i >> 8)) & 0xff);
}
}  // namespace

void Buffer::fill(uint64_t seed) {
  for (size_t i = 0; i < data.size(); ++i) data[i] = pattern(seed, i);
}

ptrdiff_t Buffer::check(uint64_t seed) const {
  for (size_t i = 0; i < data.size(); ++i) {
    if (data[i] != pattern(seed, i)) return static_cast<ptrdiff_t>(i);
  }
  return -1;
}

std::vector<uint8_t> Buffer::packed_rkey(Entity& e) const {
  std::vector<uint8_t> packed;
  EXPECT_EQ(e.md().mkey_pack(*memh, &packed), Status::Ok);
  return packed;
}

bool progress_until(const std::function<bool()>& done, std::initializer_list<Entity*> entities,
                    std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  unsigned idle = 0;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    unsigned events = 0;
    for (Entity* e : entities) events += e->iface().progress();
    // Yield when nothing happens, so background threads (and the peer, on
    // two cores) get the CPU.
    if (events == 0 && ++idle > 64) std::this_thread::yield();
  }
  return true;
}

TestCompletion::TestCompletion() {
  comp.func = [](Completion* c) { static_cast<TestCompletion*>(c->arg)->fired = true; };
  comp.arg = this;
  comp.count = 1;
}

Status wait_op(Status posted, TestCompletion& c, std::initializer_list<Entity*> entities) {
  if (posted != Status::InProgress) return posted;
  if (!progress_until([&] { return c.done(); }, entities)) return Status::Timeout;
  return c.comp.status;
}

Status flush_and_wait(Endpoint& ep, std::initializer_list<Entity*> entities) {
  TestCompletion c;
  Status s = Status::NoResource;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while ((s = ep.flush(&c.comp)) == Status::NoResource) {
    if (std::chrono::steady_clock::now() > deadline) return Status::Timeout;
    for (Entity* e : entities) e->iface().progress();
  }
  return wait_op(s, c, entities);
}

void UctTest::SetUp() {
  sender_ = Entity::create(GetParam());
  receiver_ = Entity::create(GetParam());
  ASSERT_TRUE(sender_ && receiver_);
  std::string reason;
  const auto dev = receiver_->device_address();
  const auto iface = receiver_->iface_address();
  if (GetParam().tl.dev_type == DeviceType::Self) {
    // self reaches only its own iface: both sides are one entity.
    receiver_.reset();
    Result<std::unique_ptr<Endpoint>> ep = sender_->connect(*sender_);
    ASSERT_TRUE(ep.ok());
    ep_ = std::move(*ep);
    return;
  }
  ASSERT_TRUE(sender_->iface().is_reachable(dev, iface, &reason)) << reason;
  Result<std::unique_ptr<Endpoint>> ep = sender_->connect(*receiver_);
  ASSERT_TRUE(ep.ok()) << status_string(ep.status());
  ep_ = std::move(*ep);
}

void UctTest::TearDown() {
  ep_.reset();
  receiver_.reset();
  sender_.reset();
}

std::vector<size_t> test_sizes(const OpLimits& limits, size_t min, size_t max) {
  std::vector<size_t> candidates = {0,
                                    1,
                                    7,
                                    8,
                                    limits.max_short,
                                    limits.max_short + 1,
                                    limits.max_bcopy,
                                    size_t{1} << 20,
                                    size_t{64} << 20};
  std::vector<size_t> out;
  for (size_t s : candidates) {
    if (s >= min && s <= max && std::find(out.begin(), out.end(), s) == out.end()) {
      out.push_back(s);
    }
  }
  return out;
}

}  // namespace mc::uct::test

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace mc::uct::test {

namespace {

bool write_all(int fd, const void* data, size_t len) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (len > 0) {
    const ssize_t n = ::write(fd, p, len);
    if (n <= 0) return false;
    p += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

bool read_all(int fd, void* data, size_t len) {
  auto* p = static_cast<uint8_t*>(data);
  while (len > 0) {
    const ssize_t n = ::read(fd, p, len);
    if (n <= 0) return false;
    p += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

bool write_blob(int fd, const std::vector<uint8_t>& v) {
  const uint64_t n = v.size();
  return write_all(fd, &n, sizeof(n)) && write_all(fd, v.data(), v.size());
}

bool read_blob(int fd, std::vector<uint8_t>* v) {
  uint64_t n = 0;
  if (!read_all(fd, &n, sizeof(n)) || n > (1u << 20)) return false;
  v->resize(n);
  return read_all(fd, v->data(), n);
}

// The child's whole life; returns its exit code.
int child_main(const Resource& resource, size_t size, int to_parent, int from_parent) {
  std::unique_ptr<Entity> e = Entity::create(resource);
  if (!e) return 10;
  // Filled before it is registered: once registered, the transport's own
  // threads may write it on behalf of the parent.
  Buffer buf(*e, 0);
  buf.data.resize(size);
  buf.fill(ChildTarget::kChildSeed);
  Result<std::unique_ptr<MemHandle>> memh = e->md().mem_reg(buf.data.data(), size, kAccessAll);
  if (!memh.ok()) return 15;
  buf.memh = std::move(*memh);
  size_t am_bytes = 0;
  (void)e->iface().set_am_handler(ChildTarget::kAmId, [&](const void*, size_t length, unsigned) {
    am_bytes = length;
    return Status::Ok;
  });
  const uint64_t addr = buf.address();
  if (!write_blob(to_parent, e->device_address()) || !write_blob(to_parent, e->iface_address()) ||
      !write_blob(to_parent, buf.packed_rkey(*e)) || !write_all(to_parent, &addr, sizeof(addr))) {
    return 11;
  }
  pollfd pfd{from_parent, POLLIN, 0};
  while (poll(&pfd, 1, 0) == 0) e->iface().progress();
  for (int i = 0; i < 1000; ++i) e->iface().progress();  // deliver what is in flight
  char done = 0;
  if (!read_all(from_parent, &done, 1)) return 12;
  // The parent wrote its pattern over the first half.
  Buffer ref(*e, 0);
  ref.data.resize(size);
  ref.fill(ChildTarget::kParentSeed);
  if (!std::equal(buf.data.begin(), buf.data.begin() + size / 2, ref.data.begin())) return 13;
  if (am_bytes != ChildTarget::kAmLength) return 14;
  return 0;
}

}  // namespace

bool ChildTarget::start(const Resource& resource, size_t buffer_size) {
  int up[2], down[2];
  if (pipe(up) != 0 || pipe(down) != 0) {
    ADD_FAILURE() << "pipe failed";
    return false;
  }
  length = buffer_size;
  pid_ = fork();
  if (pid_ == 0) {
    close(up[0]);
    close(down[1]);
    _exit(child_main(resource, buffer_size, up[1], down[0]));
  }
  close(up[1]);
  close(down[0]);
  to_child_ = down[1];
  const bool ok = pid_ > 0 && read_blob(up[0], &dev_addr) && read_blob(up[0], &iface_addr) &&
                  read_blob(up[0], &rkey) && read_all(up[0], &remote_address, sizeof(uint64_t));
  close(up[0]);
  if (!ok) ADD_FAILURE() << "child target did not start";
  return ok;
}

int ChildTarget::finish() {
  if (pid_ <= 0) return -1;
  const char done = 1;
  write_all(to_child_, &done, 1);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void ChildTarget::kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

ChildTarget::~ChildTarget() {
  kill();
  if (to_child_ >= 0) close(to_child_);
}

}  // namespace mc::uct::test

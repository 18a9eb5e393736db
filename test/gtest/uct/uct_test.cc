// SPDX-License-Identifier: Apache-2.0
// UCT test harness.
#include "uct/uct_test.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "uct/base/component_loader.h"

namespace mc::uct::test {

std::string Resource::name() const { return tl.tl_name + "_" + tl.dev_name; }

namespace {

// Network transports run on the loopback device; one without a loopback
// device (an RDMA NIC loops back inside itself) runs on its first device.
bool is_test_device(const TlResource& tl, const std::vector<TlResource>& all) {
  if (tl.dev_name == "lo") return true;
  for (const TlResource& other : all) {
    if (other.tl_name == tl.tl_name && other.dev_name == "lo") return false;
  }
  for (const TlResource& other : all) {
    if (other.tl_name == tl.tl_name) return &other == &tl;
  }
  return false;
}

}  // namespace

void use_soft_verbs_unless_told() {
  static const bool done = [] {
    // This machine may have no RDMA NIC: unless told otherwise
    // (MC_IB_PROVIDER=verbs on real hardware), the verbs transports run on
    // the software provider, on a fabric of this run alone. Set here, not in
    // main(): the suites' parameters are computed before main() runs.
    setenv("MC_IB_PROVIDER", "soft", 0);
    setenv("MC_IB_SOFT_FABRIC", ("gtest-" + std::to_string(getpid())).c_str(), 0);
    return true;
  }();
  (void)done;
}

std::vector<Resource> available_resources() {
  static const std::vector<Resource> resources = [] {
    use_soft_verbs_unless_told();
    std::vector<Resource> out;
    ucs::config::Sources sources = ucs::config::Sources::from_process().value_or({});
    for (Component* c : load_components()) {
      for (const std::string& md_name : c->md_names()) {
        Result<std::unique_ptr<MemoryDomain>> md = c->md_open(md_name, sources);
        if (!md.ok()) continue;
        const std::vector<TlResource> tls = (*md)->query_tl_resources();
        for (const TlResource& tl : tls) {
          if (tl.dev_type == DeviceType::Net && !is_test_device(tl, tls)) continue;
          // Copy engines and storage reach only themselves (kCapConnectToSelf)
          // and move data to GPU memory or files: their own suites test them.
          if (tl.dev_type == DeviceType::Acc || tl.dev_type == DeviceType::Storage) continue;
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

std::unique_ptr<Entity> make_entity(const Resource& resource, ErrorHandler on_error) {
  Component* c = find_component(resource.component);
  if (!c) {
    ADD_FAILURE() << "no component " << resource.component;
    return nullptr;
  }
  std::string why;
  std::unique_ptr<Entity> e =
      Entity::create(check::Resource{c, resource.md_name, resource.tl}, &why, std::move(on_error));
  if (!e) ADD_FAILURE() << resource.name() << ": " << why;
  return e;
}

void UctTest::SetUp() {
  sender_ = make_entity(GetParam());
  receiver_ = make_entity(GetParam());
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
  std::unique_ptr<Entity> e = make_entity(resource);
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
  // Deliver what is in flight: the parent's active message may still be
  // on its way (a NIC, or the soft provider's device thread for rc_mlx5,
  // delivers it on its own time), so wait for it, within a bound.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (am_bytes == 0 && std::chrono::steady_clock::now() < deadline) e->iface().progress();
  for (int i = 0; i < 1000; ++i) e->iface().progress();
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

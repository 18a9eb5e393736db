// SPDX-License-Identifier: Apache-2.0
// The UCT conformance suite: every operation of every transport at every size
// class, with data checked end to end. Instantiated over every available
// transport/device pair; a new transport joins by being loadable.
#include <cstring>

#include "uct/uct_test.h"

namespace mc::uct::test {
namespace {

constexpr uint8_t kAmId = 5;

// Pack callback over a Buffer's first `length` bytes.
struct PackArgs {
  const uint8_t* src;
  size_t length;
};
size_t pack_cb(void* dest, void* arg) {
  auto* a = static_cast<PackArgs*>(arg);
  if (a->length) std::memcpy(dest, a->src, a->length);
  return a->length;
}
void unpack_cb(void* arg, const void* data, size_t length) {
  if (length) std::memcpy(arg, data, length);
}

// Received active messages.
struct AmLog {
  std::vector<std::vector<uint8_t>> messages;
};

class UctConformance : public UctTest {
 protected:
  void SetUp() override {
    UctTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_EQ(target().iface().set_am_handler(kAmId,
                                              [this](const void* data, size_t length, unsigned) {
                                                const auto* p = static_cast<const uint8_t*>(data);
                                                log_.messages.emplace_back(p, p + length);
                                                return Status::Ok;
                                              }),
              Status::Ok);
  }

  // Retries `post` while it answers NoResource, progressing both sides.
  template <typename F>
  auto retry(F post) {
    auto r = post();
    for (int i = 0; i < 1000000 && status_of(r) == Status::NoResource; ++i) {
      sender_->iface().progress();
      if (receiver_) receiver_->iface().progress();
      r = post();
    }
    return r;
  }
  static Status status_of(Status s) { return s; }
  static Status status_of(const Result<size_t>& r) { return r.status(); }

  // Puts `size` bytes with `proto` into a fresh remote buffer, flushes, checks.
  void put_and_check(size_t size, const char* proto) {
    SCOPED_TRACE(std::string(proto) + " size " + std::to_string(size));
    Buffer src(*sender_, size), dst(target(), size);
    src.fill(size + 1);
    dst.fill(0);
    std::unique_ptr<Rkey> rkey = *sender_->md().rkey_unpack(dst.packed_rkey(target()));
    TestCompletion c;
    Status s;
    if (std::strcmp(proto, "short") == 0) {
      s = retry([&] { return ep_->put_short(src.data.data(), size, dst.address(), *rkey); });
    } else if (std::strcmp(proto, "bcopy") == 0) {
      PackArgs args{src.data.data(), size};
      Result<size_t> r = retry([&] { return ep_->put_bcopy(pack_cb, &args, dst.address(), *rkey); });
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_EQ(*r, size);
      s = Status::Ok;
    } else {
      Iov iov{src.data.data(), size, src.memh.get()};
      s = retry([&] { return ep_->put_zcopy(&iov, 1, dst.address(), *rkey, &c.comp); });
    }
    ASSERT_EQ(wait_op(s, c), Status::Ok);
    ASSERT_EQ(flush(), Status::Ok);
    EXPECT_EQ(dst.check(size + 1), -1) << "first wrong byte";
  }

  void get_and_check(size_t size, bool zcopy) {
    SCOPED_TRACE(std::string(zcopy ? "zcopy" : "bcopy") + " size " + std::to_string(size));
    Buffer local(*sender_, size), remote(target(), size);
    remote.fill(size + 3);
    local.fill(0);
    std::unique_ptr<Rkey> rkey = *sender_->md().rkey_unpack(remote.packed_rkey(target()));
    TestCompletion c;
    Status s;
    if (zcopy) {
      Iov iov{local.data.data(), size, local.memh.get()};
      s = retry([&] { return ep_->get_zcopy(&iov, 1, remote.address(), *rkey, &c.comp); });
    } else {
      s = retry([&] {
        return ep_->get_bcopy(unpack_cb, local.data.data(), size, remote.address(), *rkey, &c.comp);
      });
    }
    ASSERT_EQ(wait_op(s, c), Status::Ok);
    EXPECT_EQ(local.check(size + 3), -1) << "first wrong byte";
  }

  AmLog log_;
};

TEST_P(UctConformance, AttributesAreConsistent) {
  const IfaceAttr& a = sender_->attr();
  EXPECT_NE(a.cap, 0u);
  EXPECT_TRUE(a.cap & (kCapConnectToIface | kCapConnectToEp));
  for (const OpLimits* l : {&a.put, &a.get, &a.am}) {
    EXPECT_LE(l->max_short, std::max(l->max_bcopy, l->max_short));
    EXPECT_LE(l->min_zcopy, l->max_zcopy);
  }
  EXPECT_GT(a.bandwidth.total(), 0);
  EXPECT_GE(a.latency.c, 0);
  EXPECT_EQ(sender_->device_address().size(), a.device_addr_len);
  EXPECT_EQ(sender_->iface_address().size(), a.iface_addr_len);
  EXPECT_FALSE(cap_string(a.cap).empty());
  const MdAttr md = sender_->md().query();
  EXPECT_TRUE(md.flags & kMdReg);
  EXPECT_TRUE(md.reg_mem_types & mem_type_bit(MemType::Host));
}

TEST_P(UctConformance, GarbageAddressIsUnreachableWithReason) {
  std::string reason;
  const std::vector<uint8_t> garbage = {0xde, 0xad};
  EXPECT_FALSE(sender_->iface().is_reachable(garbage, garbage, &reason));
  EXPECT_FALSE(reason.empty());
  EXPECT_FALSE(sender_->iface().ep_create(garbage, garbage).ok());
}

TEST_P(UctConformance, AmShort) {
  if (!has(kCapAmShort)) GTEST_SKIP() << "no am_short";
  const size_t max_payload = sender_->attr().am.max_short - 8;
  for (size_t size : test_sizes(sender_->attr().am, 0, max_payload)) {
    SCOPED_TRACE(size);
    Buffer payload(*sender_, size);
    payload.fill(size);
    log_.messages.clear();
    const uint64_t header = 0x1122334455667788ull + size;
    ASSERT_EQ(retry([&] { return ep_->am_short(kAmId, header, payload.data.data(), size); }),
              Status::Ok);
    ASSERT_TRUE(wait([&] { return !log_.messages.empty(); }));
    const auto& m = log_.messages[0];
    ASSERT_EQ(m.size(), 8 + size);
    uint64_t got = 0;
    std::memcpy(&got, m.data(), 8);
    EXPECT_EQ(got, header);
    EXPECT_EQ(std::memcmp(m.data() + 8, payload.data.data(), size), 0);
  }
}

TEST_P(UctConformance, AmBcopy) {
  if (!has(kCapAmBcopy)) GTEST_SKIP() << "no am_bcopy";
  for (size_t size : test_sizes(sender_->attr().am, 0, sender_->attr().am.max_bcopy)) {
    SCOPED_TRACE(size);
    Buffer payload(*sender_, size);
    payload.fill(size * 3);
    log_.messages.clear();
    PackArgs args{payload.data.data(), size};
    Result<size_t> r = retry([&] { return ep_->am_bcopy(kAmId, pack_cb, &args); });
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_TRUE(wait([&] { return !log_.messages.empty(); }));
    EXPECT_EQ(log_.messages[0], payload.data);
  }
}

TEST_P(UctConformance, AmZcopy) {
  if (!has(kCapAmZcopy)) GTEST_SKIP() << "no am_zcopy";
  const OpLimits& am = sender_->attr().am;
  const char header[] = "hdr!";
  for (size_t size : test_sizes(am, am.min_zcopy, am.max_zcopy - sizeof(header))) {
    SCOPED_TRACE(size);
    Buffer payload(*sender_, size);
    payload.fill(size * 5);
    log_.messages.clear();
    Iov iov{payload.data.data(), size, payload.memh.get()};
    TestCompletion c;
    Status s = retry([&] { return ep_->am_zcopy(kAmId, header, sizeof(header), &iov, 1, &c.comp); });
    ASSERT_EQ(wait_op(s, c), Status::Ok);
    ASSERT_TRUE(wait([&] { return !log_.messages.empty(); }));
    const auto& m = log_.messages[0];
    ASSERT_EQ(m.size(), sizeof(header) + size);
    EXPECT_EQ(std::memcmp(m.data(), header, sizeof(header)), 0);
    EXPECT_EQ(std::memcmp(m.data() + sizeof(header), payload.data.data(), size), 0);
  }
}

TEST_P(UctConformance, PutShort) {
  if (!has(kCapPutShort)) GTEST_SKIP() << "no put_short";
  for (size_t s : test_sizes(sender_->attr().put, 1, sender_->attr().put.max_short)) {
    put_and_check(s, "short");
  }
}

TEST_P(UctConformance, PutBcopy) {
  if (!has(kCapPutBcopy)) GTEST_SKIP() << "no put_bcopy";
  for (size_t s : test_sizes(sender_->attr().put, 1, sender_->attr().put.max_bcopy)) {
    put_and_check(s, "bcopy");
  }
}

TEST_P(UctConformance, PutZcopy) {
  if (!has(kCapPutZcopy)) GTEST_SKIP() << "no put_zcopy";
  const OpLimits& put = sender_->attr().put;
  for (size_t s : test_sizes(put, std::max<size_t>(put.min_zcopy, 1), put.max_zcopy)) {
    put_and_check(s, "zcopy");
  }
}

TEST_P(UctConformance, GetBcopy) {
  if (!has(kCapGetBcopy)) GTEST_SKIP() << "no get_bcopy";
  for (size_t s : test_sizes(sender_->attr().get, 1, sender_->attr().get.max_bcopy)) {
    get_and_check(s, false);
  }
}

TEST_P(UctConformance, GetZcopy) {
  if (!has(kCapGetZcopy)) GTEST_SKIP() << "no get_zcopy";
  const OpLimits& get = sender_->attr().get;
  for (size_t s : test_sizes(get, std::max<size_t>(get.min_zcopy, 1), get.max_zcopy)) {
    get_and_check(s, true);
  }
}

TEST_P(UctConformance, ZcopyGathersAndScattersIov) {
  if (!has(kCapPutZcopy | kCapGetZcopy)) GTEST_SKIP() << "no put/get zcopy";
  const size_t max_iov = std::min<size_t>(sender_->attr().put.max_iov, 4);
  if (max_iov < 2) GTEST_SKIP() << "max_iov < 2";
  Buffer src(*sender_, 4096), dst(target(), 4096), back(*sender_, 4096);
  src.fill(77);
  dst.fill(0);
  back.fill(0);
  std::unique_ptr<Rkey> rkey = *sender_->md().rkey_unpack(dst.packed_rkey(target()));
  Iov iov[2] = {{src.data.data(), 1000, src.memh.get()},
                {src.data.data() + 1000, 3096, src.memh.get()}};
  TestCompletion c1;
  ASSERT_EQ(wait_op(retry([&] { return ep_->put_zcopy(iov, 2, dst.address(), *rkey, &c1.comp); }),
                    c1),
            Status::Ok);
  ASSERT_EQ(flush(), Status::Ok);
  EXPECT_EQ(dst.check(77), -1);
  Iov in[2] = {{back.data.data(), 3000, back.memh.get()},
               {back.data.data() + 3000, 1096, back.memh.get()}};
  TestCompletion c2;
  ASSERT_EQ(wait_op(retry([&] { return ep_->get_zcopy(in, 2, dst.address(), *rkey, &c2.comp); }),
                    c2),
            Status::Ok);
  EXPECT_EQ(back.check(77), -1);
}

TEST_P(UctConformance, PendingAddDrainsBackPressure) {
  if (!has(kCapPending | kCapAmBcopy)) GTEST_SKIP() << "no pending or am_bcopy";
  // Send without progressing the receiver until the transport pushes back.
  std::vector<uint8_t> payload(64, 0xab);
  PackArgs args{payload.data(), payload.size()};
  int sent = 0;
  Result<size_t> r = ep_->am_bcopy(kAmId, pack_cb, &args);
  for (; r.ok() && sent < 200000; ++sent) r = ep_->am_bcopy(kAmId, pack_cb, &args);
  if (r.ok()) GTEST_SKIP() << "transport accepted " << sent << " messages without back-pressure";
  ASSERT_EQ(r.status(), Status::NoResource);

  struct Req {
    PendingReq req;
    Endpoint* ep;
    PackArgs* args;
    int left;
  } pending{{}, ep_.get(), &args, 10};
  pending.req.func = [](PendingReq* self) {
    auto* p = reinterpret_cast<Req*>(self);
    while (p->left > 0) {
      Result<size_t> s = p->ep->am_bcopy(kAmId, pack_cb, p->args);
      if (!s.ok()) return s.status();
      --p->left;
    }
    return Status::Ok;
  };
  const Status added = ep_->pending_add(&pending.req);
  ASSERT_TRUE(added == Status::Ok || added == Status::Busy) << added;
  if (added == Status::Busy) (void)pending.req.func(&pending.req);
  const size_t expected = static_cast<size_t>(sent) + 10;
  ASSERT_TRUE(wait([&] { return log_.messages.size() >= expected && pending.left == 0; }))
      << log_.messages.size() << " of " << expected << " delivered, " << pending.left << " left";
  EXPECT_EQ(log_.messages.size(), expected);
}

TEST_P(UctConformance, ManyEndpointsOnOneIface) {
  if (!has(kCapAmShort)) GTEST_SKIP() << "no am_short";
  std::vector<std::unique_ptr<Endpoint>> eps;
  for (int i = 0; i < 16; ++i) {
    Result<std::unique_ptr<Endpoint>> ep = sender_->connect(target());
    ASSERT_TRUE(ep.ok()) << ep.status();
    eps.push_back(std::move(*ep));
  }
  for (size_t i = 0; i < eps.size(); ++i) {
    const uint64_t header = i;
    ASSERT_EQ(retry([&] { return eps[i]->am_short(kAmId, header, nullptr, 0); }), Status::Ok);
  }
  ASSERT_TRUE(wait([&] { return log_.messages.size() == eps.size(); }));
  std::vector<bool> seen(eps.size());
  for (const auto& m : log_.messages) {
    uint64_t h = 0;
    std::memcpy(&h, m.data(), 8);
    ASSERT_LT(h, seen.size());
    seen[h] = true;
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), true), 16);
  for (auto& ep : eps) {
    if (receiver_) {
      EXPECT_EQ(flush_and_wait(*ep, {sender_.get(), receiver_.get()}), Status::Ok);
    } else {
      EXPECT_EQ(flush_and_wait(*ep, {sender_.get()}), Status::Ok);
    }
  }
}

TEST_P(UctConformance, FlushCompletesOutstandingPuts) {
  if (!has(kCapPutZcopy)) GTEST_SKIP() << "no put_zcopy";
  constexpr int kOps = 32;
  constexpr size_t kSize = 256 * 1024;
  Buffer src(*sender_, kSize), dst(target(), kSize * kOps);
  src.fill(9);
  std::unique_ptr<Rkey> rkey = *sender_->md().rkey_unpack(dst.packed_rkey(target()));
  std::vector<TestCompletion> comps(kOps);
  int in_progress = 0;
  for (int i = 0; i < kOps; ++i) {
    Iov iov{src.data.data(), kSize, src.memh.get()};
    const Status s = retry(
        [&] { return ep_->put_zcopy(&iov, 1, dst.address() + i * kSize, *rkey, &comps[i].comp); });
    ASSERT_TRUE(s == Status::Ok || s == Status::InProgress) << s;
    if (s == Status::InProgress) ++in_progress;
    if (s == Status::Ok) comps[i].fired = true;
  }
  ASSERT_EQ(flush(), Status::Ok);
  // Flush completes only after every operation before it.
  for (auto& c : comps) EXPECT_TRUE(c.done());
  for (int i = 0; i < kOps; ++i) {
    ASSERT_EQ(std::memcmp(dst.data.data() + i * kSize, src.data.data(), kSize), 0) << i;
  }
}

TEST_P(UctConformance, PutOutsideRegistrationIsRefused) {
  if (!has(kCapPutZcopy)) GTEST_SKIP() << "no put_zcopy";
  Buffer src(*sender_, 8192), dst(target(), 4096);
  src.fill(1);
  dst.fill(2);
  std::unique_ptr<Rkey> rkey = *sender_->md().rkey_unpack(dst.packed_rkey(target()));
  // 4 KiB past a 4 KiB registration: must not land, and must be reported.
  Iov iov{src.data.data(), 8192, src.memh.get()};
  TestCompletion c;
  const Status s = retry([&] { return ep_->put_zcopy(&iov, 1, dst.address(), *rkey, &c.comp); });
  Status final = wait_op(s, c);
  if (final == Status::Ok) final = flush();
  EXPECT_TRUE(is_error(final)) << final;
  EXPECT_EQ(dst.check(2), -1) << "the refused put wrote into the registration";
}

TEST_P(UctConformance, ReadOnlyRegionRefusesPut) {
  if (!has(kCapPutShort)) GTEST_SKIP() << "no put_short";
  Buffer dst(target(), 64, kAccessLocal | kAccessRemoteRead);
  dst.fill(4);
  std::unique_ptr<Rkey> rkey = *sender_->md().rkey_unpack(dst.packed_rkey(target()));
  uint8_t data[8] = {};
  Status s = retry([&] { return ep_->put_short(data, sizeof(data), dst.address(), *rkey); });
  if (s == Status::Ok) s = flush();
  EXPECT_TRUE(is_error(s)) << s;
  EXPECT_EQ(dst.check(4), -1);
}

TEST_P(UctConformance, BadPackedRkeysAreRejected) {
  Buffer dst(target(), 64);
  std::vector<uint8_t> packed = dst.packed_rkey(target());
  EXPECT_LE(packed.size(), target().md().query().rkey_packed_size);
  ASSERT_TRUE(sender_->md().rkey_unpack(packed).ok());
  for (size_t cut = 0; cut < packed.size(); ++cut) {
    std::vector<uint8_t> truncated(packed.begin(), packed.begin() + cut);
    EXPECT_EQ(sender_->md().rkey_unpack(truncated).status(), Status::InvalidParam) << cut;
  }
  std::vector<uint8_t> garbage(packed.size(), 0x5a);
  EXPECT_EQ(sender_->md().rkey_unpack(garbage).status(), Status::InvalidParam);
  std::vector<uint8_t> future = packed;
  future[2] = 99;  // envelope version
  EXPECT_EQ(sender_->md().rkey_unpack(future).status(), Status::InvalidParam);
  std::vector<uint8_t> longer = packed;
  longer.push_back(0);
  EXPECT_EQ(sender_->md().rkey_unpack(longer).ok(), false);
}

INSTANTIATE_TEST_SUITE_P(Uct, UctConformance, testing::ValuesIn(available_resources()),
                         resource_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(UctConformance);

// The same operations across two processes: the target is a forked child.
class UctTwoProcess : public testing::TestWithParam<Resource> {};

TEST_P(UctTwoProcess, PutGetAmAcrossProcesses) {
  if (GetParam().tl.dev_type == DeviceType::Self) GTEST_SKIP() << "self is one process";
  constexpr size_t kSize = 1 << 20;
  ChildTarget child;
  ASSERT_TRUE(child.start(GetParam(), kSize));
  std::unique_ptr<Entity> me = make_entity(GetParam());
  ASSERT_TRUE(me);
  std::string reason;
  ASSERT_TRUE(me->iface().is_reachable(child.dev_addr, child.iface_addr, &reason)) << reason;
  Result<std::unique_ptr<Endpoint>> ep = me->connect(child.dev_addr, child.iface_addr);
  ASSERT_TRUE(ep.ok()) << ep.status();
  Result<std::unique_ptr<Rkey>> rkey = me->md().rkey_unpack(child.rkey);
  ASSERT_TRUE(rkey.ok());
  const uint64_t caps = me->attr().cap;

  // Put the parent's pattern over the first half.
  Buffer src(*me, kSize);
  src.fill(ChildTarget::kParentSeed);
  if (caps & kCapPutZcopy) {
    Iov iov{src.data.data(), kSize / 2, src.memh.get()};
    TestCompletion c;
    Status s = (*ep)->put_zcopy(&iov, 1, child.remote_address, **rkey, &c.comp);
    while (s == Status::NoResource) {
      me->iface().progress();
      s = (*ep)->put_zcopy(&iov, 1, child.remote_address, **rkey, &c.comp);
    }
    ASSERT_EQ(wait_op(s, c, {me.get()}), Status::Ok);
  } else {
    GTEST_SKIP() << "no put_zcopy";
  }
  ASSERT_EQ(flush_and_wait(**ep, {me.get()}), Status::Ok);

  // Get the child's pattern from the second half.
  if (caps & kCapGetZcopy) {
    Buffer back(*me, kSize / 2);
    Iov iov{back.data.data(), kSize / 2, back.memh.get()};
    TestCompletion c;
    Status s = (*ep)->get_zcopy(&iov, 1, child.remote_address + kSize / 2, **rkey, &c.comp);
    while (s == Status::NoResource) {
      me->iface().progress();
      s = (*ep)->get_zcopy(&iov, 1, child.remote_address + kSize / 2, **rkey, &c.comp);
    }
    ASSERT_EQ(wait_op(s, c, {me.get()}), Status::Ok);
    Buffer ref(*me, 0);
    ref.data.resize(kSize);
    ref.fill(ChildTarget::kChildSeed);
    EXPECT_TRUE(std::equal(back.data.begin(), back.data.end(), ref.data.begin() + kSize / 2));
  }

  // An active message the child counts.
  std::vector<uint8_t> payload(ChildTarget::kAmLength, 0x42);
  PackArgs args{payload.data(), payload.size()};
  Result<size_t> r = (*ep)->am_bcopy(ChildTarget::kAmId, pack_cb, &args);
  while (r.status() == Status::NoResource) {
    me->iface().progress();
    r = (*ep)->am_bcopy(ChildTarget::kAmId, pack_cb, &args);
  }
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(flush_and_wait(**ep, {me.get()}), Status::Ok);
  EXPECT_EQ(child.finish(), 0) << "13: put data wrong in the child, 14: am not received";
}

INSTANTIATE_TEST_SUITE_P(Uct, UctTwoProcess, testing::ValuesIn(available_resources()),
                         resource_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(UctTwoProcess);

}  // namespace
}  // namespace mc::uct::test

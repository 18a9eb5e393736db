// SPDX-License-Identifier: Apache-2.0
// One-process conformance checks: every operation at every size class.
#include <cstring>

#include "tools/uct_check/checks.h"

namespace mc::uct::check {
namespace {

constexpr uint8_t kAmId = 5;

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

Status status_of(Status s) {
  return s;
}
Status status_of(const Result<size_t>& r) {
  return r.status();
}

std::string why(Status s) {
  return s == Status::Ok ? "" : ucs::status_string(s);
}

class OneProcess {
 public:
  OneProcess(Entity* sender, Entity* receiver, Table& table)
      : sender_(sender), receiver_(receiver), table_(table) {
    all_ = receiver ? Entities{sender, receiver} : Entities{sender};
  }

  Status setup() {
    MC_ASSIGN_OR_RETURN(ep_, sender_->connect(target()));
    return target().iface().set_am_handler(kAmId, [this](const void* data, size_t len, unsigned) {
      const auto* p = static_cast<const uint8_t*>(data);
      messages_.emplace_back(p, p + len);
      return Status::Ok;
    });
  }

  void run() {
    const IfaceAttr& a = sender_->attr();
    attributes();
    garbage_address();
    if (has(kCapAmShort)) am_short();
    if (has(kCapAmBcopy)) am_bcopy();
    if (has(kCapAmZcopy)) am_zcopy();
    for (size_t s : test_sizes(a.put, 1, a.put.max_short)) put(s, "put_short", has(kCapPutShort));
    for (size_t s : test_sizes(a.put, 1, a.put.max_bcopy)) put(s, "put_bcopy", has(kCapPutBcopy));
    for (size_t s : test_sizes(a.put, std::max<size_t>(a.put.min_zcopy, 1), a.put.max_zcopy)) {
      put(s, "put_zcopy", has(kCapPutZcopy));
    }
    for (size_t s : test_sizes(a.get, 1, a.get.max_bcopy)) get(s, false, has(kCapGetBcopy));
    for (size_t s : test_sizes(a.get, std::max<size_t>(a.get.min_zcopy, 1), a.get.max_zcopy)) {
      get(s, true, has(kCapGetZcopy));
    }
    if (has(kCapPutZcopy)) flush_completes_puts();
    if (has(kCapPutZcopy)) put_outside_registration();
    if (!reconnect_if_failed()) return;
    if (has(kCapPutShort)) read_only_refuses_put();
    if (!reconnect_if_failed()) return;
    bad_rkeys();
    if (has(kCapAmShort)) many_endpoints();
    if (has(kCapPending | kCapAmBcopy)) pending_back_pressure();
  }

 private:
  Entity& target() { return receiver_ ? *receiver_ : *sender_; }
  bool has(uint64_t cap) const { return (sender_->attr().cap & cap) == cap; }

  template <typename F>
  auto retry(F post) {
    auto r = post();
    for (int i = 0; i < 1000000 && status_of(r) == Status::NoResource; ++i) {
      for (Entity* e : all_) e->iface().progress();
      r = post();
    }
    return r;
  }

  bool wait_am(size_t n) {
    return progress_until([&] { return messages_.size() >= n; }, all_);
  }

  void attributes() {
    const IfaceAttr& a = sender_->attr();
    bool ok = a.cap != 0 && (a.cap & (kCapConnectToIface | kCapConnectToEp));
    for (const OpLimits* l : {&a.put, &a.get, &a.am}) ok = ok && l->min_zcopy <= l->max_zcopy;
    ok = ok && a.bandwidth.total() > 0 && a.latency.c >= 0;
    ok = ok && sender_->iface().device_address().size() == a.device_addr_len;
    ok = ok && sender_->iface().iface_address().size() == a.iface_addr_len;
    const MdAttr md = sender_->md().query();
    ok = ok && (md.flags & kMdReg) && (md.reg_mem_types & mem_type_bit(MemType::Host));
    table_.add("attributes", 0, ok, ok ? "" : "inconsistent iface or md attributes");
  }

  void garbage_address() {
    std::string reason;
    const std::vector<uint8_t> garbage = {0xde, 0xad};
    const bool ok = !sender_->iface().is_reachable(garbage, garbage, &reason) && !reason.empty() &&
                    !sender_->iface().ep_create(garbage, garbage).ok();
    table_.add("garbage address refused", 2, ok, ok ? "" : "accepted, or no reason given");
  }

  void am_short() {
    const size_t max_payload = sender_->attr().am.max_short - 8;
    for (size_t size : test_sizes(sender_->attr().am, 0, max_payload)) {
      Buffer payload(*sender_, size);
      payload.fill(size);
      messages_.clear();
      const uint64_t header = 0x1122334455667788ull + size;
      const Status s =
          retry([&] { return ep_->am_short(kAmId, header, payload.data.data(), size); });
      bool ok = s == Status::Ok && wait_am(1) && messages_[0].size() == 8 + size;
      uint64_t got = 0;
      if (ok) std::memcpy(&got, messages_[0].data(), 8);
      ok = ok && got == header &&
           std::memcmp(messages_[0].data() + 8, payload.data.data(), size) == 0;
      table_.add("am_short", size, ok, ok ? "" : s != Status::Ok ? why(s) : "data differs");
    }
  }

  void am_bcopy() {
    for (size_t size : test_sizes(sender_->attr().am, 0, sender_->attr().am.max_bcopy)) {
      Buffer payload(*sender_, size);
      payload.fill(size * 3);
      messages_.clear();
      PackArgs args{payload.data.data(), size};
      Result<size_t> r = retry([&] { return ep_->am_bcopy(kAmId, pack_cb, &args); });
      const bool ok = r.ok() && wait_am(1) && messages_[0] == payload.data;
      table_.add("am_bcopy", size, ok, ok ? "" : !r.ok() ? why(r.status()) : "data differs");
    }
  }

  void am_zcopy() {
    const OpLimits& am = sender_->attr().am;
    const char header[] = "hdr!";
    for (size_t size : test_sizes(am, am.min_zcopy, am.max_zcopy - sizeof(header))) {
      Buffer payload(*sender_, size);
      payload.fill(size * 5);
      messages_.clear();
      Iov iov{payload.data.data(), size, payload.memh.get()};
      WaitCompletion c;
      const Status s = wait_op(
          retry([&] { return ep_->am_zcopy(kAmId, header, sizeof(header), &iov, 1, &c.comp); }), c,
          all_);
      const bool ok =
          s == Status::Ok && wait_am(1) && messages_[0].size() == sizeof(header) + size &&
          std::memcmp(messages_[0].data(), header, sizeof(header)) == 0 &&
          std::memcmp(messages_[0].data() + sizeof(header), payload.data.data(), size) == 0;
      table_.add("am_zcopy", size, ok, ok ? "" : s != Status::Ok ? why(s) : "data differs");
    }
  }

  void put(size_t size, const char* op, bool offered) {
    if (!offered) return;
    Buffer src(*sender_, size), dst(target(), size);
    src.fill(size + 1);
    dst.fill(0);
    Result<std::unique_ptr<Rkey>> rkey = sender_->md().rkey_unpack(dst.packed_rkey(target()));
    if (!rkey.ok()) return table_.add(op, size, false, "rkey_unpack: " + why(rkey.status()));
    WaitCompletion c;
    Status s;
    if (std::strcmp(op, "put_short") == 0) {
      s = retry([&] { return ep_->put_short(src.data.data(), size, dst.address(), **rkey); });
    } else if (std::strcmp(op, "put_bcopy") == 0) {
      PackArgs args{src.data.data(), size};
      Result<size_t> r =
          retry([&] { return ep_->put_bcopy(pack_cb, &args, dst.address(), **rkey); });
      s = r.ok() ? (*r == size ? Status::Ok : Status::MessageTruncated) : r.status();
    } else {
      Iov iov{src.data.data(), size, src.memh.get()};
      s = retry([&] { return ep_->put_zcopy(&iov, 1, dst.address(), **rkey, &c.comp); });
    }
    s = wait_op(s, c, all_);
    if (s == Status::Ok) s = flush_and_wait(*ep_, all_);
    const bool ok = s == Status::Ok && dst.check(size + 1) == -1;
    table_.add(op, size, ok, ok ? "" : s != Status::Ok ? why(s) : "data differs");
  }

  void get(size_t size, bool zcopy, bool offered) {
    if (!offered) return;
    const char* op = zcopy ? "get_zcopy" : "get_bcopy";
    Buffer local(*sender_, size), remote(target(), size);
    remote.fill(size + 3);
    local.fill(0);
    Result<std::unique_ptr<Rkey>> rkey = sender_->md().rkey_unpack(remote.packed_rkey(target()));
    if (!rkey.ok()) return table_.add(op, size, false, "rkey_unpack: " + why(rkey.status()));
    WaitCompletion c;
    Status s;
    if (zcopy) {
      Iov iov{local.data.data(), size, local.memh.get()};
      s = retry([&] { return ep_->get_zcopy(&iov, 1, remote.address(), **rkey, &c.comp); });
    } else {
      s = retry([&] {
        return ep_->get_bcopy(unpack_cb, local.data.data(), size, remote.address(), **rkey,
                              &c.comp);
      });
    }
    s = wait_op(s, c, all_);
    const bool ok = s == Status::Ok && local.check(size + 3) == -1;
    table_.add(op, size, ok, ok ? "" : s != Status::Ok ? why(s) : "data differs");
  }

  void flush_completes_puts() {
    constexpr int kOps = 32;
    constexpr size_t kSize = 256 * 1024;
    Buffer src(*sender_, kSize), dst(target(), kSize * kOps);
    src.fill(9);
    std::unique_ptr<Rkey> rkey = *sender_->md().rkey_unpack(dst.packed_rkey(target()));
    std::vector<WaitCompletion> comps(kOps);
    Status s = Status::Ok;
    for (int i = 0; i < kOps && !is_error(s); ++i) {
      Iov iov{src.data.data(), kSize, src.memh.get()};
      s = retry([&] {
        return ep_->put_zcopy(&iov, 1, dst.address() + i * kSize, *rkey, &comps[i].comp);
      });
      if (s == Status::Ok) comps[i].fired = true;
    }
    if (!is_error(s)) s = flush_and_wait(*ep_, all_);
    bool ok = s == Status::Ok;
    for (int i = 0; ok && i < kOps; ++i) {
      ok = comps[i].fired && std::memcmp(dst.data.data() + i * kSize, src.data.data(), kSize) == 0;
    }
    table_.add("flush after 32 put_zcopy", kSize, ok, ok ? "" : "flush completed too early");
  }

  void put_outside_registration() {
    Buffer src(*sender_, 8192), dst(target(), 4096);
    src.fill(1);
    dst.fill(2);
    std::unique_ptr<Rkey> rkey = *sender_->md().rkey_unpack(dst.packed_rkey(target()));
    Iov iov{src.data.data(), 8192, src.memh.get()};
    WaitCompletion c;
    Status s = wait_op(
        retry([&] { return ep_->put_zcopy(&iov, 1, dst.address(), *rkey, &c.comp); }), c, all_);
    if (s == Status::Ok) s = flush_and_wait(*ep_, all_);
    const bool ok = is_error(s) && dst.check(2) == -1;
    table_.add("put outside region refused", 8192, ok, ok ? "" : "the put was not refused");
  }

  void read_only_refuses_put() {
    Buffer dst(target(), 64, kAccessLocal | kAccessRemoteRead);
    dst.fill(4);
    std::unique_ptr<Rkey> rkey = *sender_->md().rkey_unpack(dst.packed_rkey(target()));
    uint8_t data[8] = {};
    Status s = retry([&] { return ep_->put_short(data, sizeof(data), dst.address(), *rkey); });
    if (s == Status::Ok) s = flush_and_wait(*ep_, all_);
    const bool ok = is_error(s) && dst.check(4) == -1;
    table_.add("read-only region refuses put", 8, ok, ok ? "" : "the put was not refused");
  }

  void bad_rkeys() {
    Buffer dst(target(), 64);
    const std::vector<uint8_t> packed = dst.packed_rkey(target());
    bool ok = packed.size() <= target().md().query().rkey_packed_size &&
              sender_->md().rkey_unpack(packed).ok();
    for (size_t cut = 0; ok && cut < packed.size(); ++cut) {
      std::vector<uint8_t> truncated(packed.begin(), packed.begin() + cut);
      ok = sender_->md().rkey_unpack(truncated).status() == Status::InvalidParam;
    }
    std::vector<uint8_t> garbage(packed.size(), 0x5a), future = packed, longer = packed;
    if (future.size() > 2) future[2] = 99;  // envelope version
    longer.push_back(0);
    ok = ok && sender_->md().rkey_unpack(garbage).status() == Status::InvalidParam &&
         sender_->md().rkey_unpack(future).status() == Status::InvalidParam &&
         !sender_->md().rkey_unpack(longer).ok();
    table_.add("bad packed rkeys rejected", packed.size(), ok, ok ? "" : "a bad rkey unpacked");
  }

  void many_endpoints() {
    std::vector<std::unique_ptr<Endpoint>> eps;
    Status s = Status::Ok;
    for (int i = 0; i < 16 && s == Status::Ok; ++i) {
      Result<std::unique_ptr<Endpoint>> ep = sender_->connect(target());
      s = ep.status();
      if (ep.ok()) eps.push_back(std::move(*ep));
    }
    messages_.clear();
    for (size_t i = 0; i < eps.size() && s == Status::Ok; ++i) {
      s = retry([&] { return eps[i]->am_short(kAmId, i, nullptr, 0); });
    }
    bool ok = s == Status::Ok && wait_am(eps.size()) && messages_.size() == eps.size();
    for (auto& ep : eps) ok = ok && flush_and_wait(*ep, all_) == Status::Ok;
    table_.add("16 endpoints on one iface", 8, ok, ok ? "" : why(s));
  }

  void pending_back_pressure() {
    std::vector<uint8_t> payload(64, 0xab);
    PackArgs args{payload.data(), payload.size()};
    messages_.clear();
    int sent = 0;
    Result<size_t> r = ep_->am_bcopy(kAmId, pack_cb, &args);
    for (; r.ok() && sent < 200000; ++sent) r = ep_->am_bcopy(kAmId, pack_cb, &args);
    if (r.ok()) return table_.skip("pending_add", "no back-pressure after 200000 messages");
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
    if (added == Status::Busy) (void)pending.req.func(&pending.req);
    const size_t expected = static_cast<size_t>(sent) + 10;
    const bool ok =
        r.status() == Status::NoResource && (added == Status::Ok || added == Status::Busy) &&
        progress_until([&] { return messages_.size() >= expected && !pending.left; }, all_) &&
        messages_.size() == expected;
    table_.add("pending_add drains", 64, ok, ok ? "" : "lost or stuck messages");
  }

  Entity* sender_;
  Entity* receiver_;
  Table& table_;
  Entities all_;
  std::unique_ptr<Endpoint> ep_;
  // A refused access may fail the endpoint (an RC queue pair enters the
  // error state, as with a NIC): the checks after it run on a new one.
  bool reconnect_if_failed() {
    if (!is_error(ep_->check())) return true;
    ep_.reset();
    Result<std::unique_ptr<Endpoint>> ep = sender_->connect(target());
    table_.add("reconnect after a failed endpoint", 0, ep.ok(), why(ep.status()));
    if (ep.ok()) ep_ = std::move(*ep);
    return ep.ok();
  }

  std::vector<std::vector<uint8_t>> messages_;
};

}  // namespace

void run_one_process(const Resource& r, Table& table) {
  std::string why_not;
  std::unique_ptr<Entity> sender = Entity::create(r, &why_not);
  std::unique_ptr<Entity> receiver;
  if (sender && r.tl.dev_type != DeviceType::Self) receiver = Entity::create(r, &why_not);
  if (!sender || (r.tl.dev_type != DeviceType::Self && !receiver)) {
    return table.add("open md and iface", 0, false, why_not);
  }
  OneProcess checks(sender.get(), receiver.get(), table);
  const Status s = checks.setup();
  table.add("connect", 0, s == Status::Ok, why(s));
  if (s == Status::Ok) checks.run();
}

}  // namespace mc::uct::check

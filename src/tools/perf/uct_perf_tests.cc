// SPDX-License-Identifier: Apache-2.0
// UCT tests: registration, the run, setup and connection, capabilities,
// the description of the run, and the active-message handlers.
#include "tools/perf/uct_perf_tests.h"

#include <cstring>

#include "ucs/config/parser.h"
#include "ucs/datastruct/wire.h"
#include "ucs/log/log.h"

namespace mc::perf {

namespace {

// What one side tells the other after opening its resources.
// Wire: u8 single | str tl | str dev | str dev_type | blob dev_addr |
//       blob iface_addr | u64 recv_addr | blob recv_rkey | u64 send_addr | blob send_rkey
struct PeerSetup {
  bool single = false;
  std::string tl, dev, dev_type;
  std::vector<uint8_t> dev_addr, iface_addr, recv_rkey, send_rkey;
  uint64_t recv_addr = 0, send_addr = 0;
};

std::vector<uint8_t> to_vector(std::span<const uint8_t> s) {
  return {s.begin(), s.end()};
}

Result<PeerSetup> decode_setup(std::span<const uint8_t> wire) {
  ucs::WireReader r(wire);
  PeerSetup s;
  s.single = r.u8() != 0;
  s.tl = r.str();
  s.dev = r.str();
  s.dev_type = r.str();
  s.dev_addr = to_vector(r.blob());
  s.iface_addr = to_vector(r.blob());
  s.recv_addr = r.u64();
  s.recv_rkey = to_vector(r.blob());
  s.send_addr = r.u64();
  s.send_rkey = to_vector(r.blob());
  if (!r.at_end()) {
    MC_LOG(error) << "malformed setup message from the peer (" << wire.size() << " bytes)";
    return Status::BadData;
  }
  return s;
}

std::string limits_string(const char* name, const uct::OpLimits& l) {
  const auto size = ucs::config::size_parser();
  std::string label = std::string(name) + " limits";
  label.resize(13, ' ');
  return label + "short " + size.format(l.max_short) + ", bcopy " + size.format(l.max_bcopy) +
         ", zcopy [" + size.format(l.min_zcopy) + ", " + size.format(l.max_zcopy) + "], iov " +
         std::to_string(l.max_iov) + ", header " + std::to_string(l.max_hdr);
}

}  // namespace

void register_uct_tests(Registry& registry) {
  auto add = [&](const char* name, TestType type, UctCmd cmd, const char* desc,
                 const char* lat_label, Layout layout) {
    registry.add(
        TestInfo{name, Api::Uct, type, desc, lat_label, layout},
        [cmd](const TestInfo& test, RunContext& ctx) { return UctTest(test, ctx, cmd).run(); });
  };
  add("am_lat", TestType::PingPong, UctCmd::Am, "active message latency", "latency", Layout::Short);
  add("put_lat", TestType::PingPong, UctCmd::Put, "put latency", "latency", Layout::Short);
  add("get", TestType::Stream, UctCmd::Get, "get latency / bandwidth / message rate", "latency",
      Layout::Bcopy);
  add("am_bw", TestType::Stream, UctCmd::Am, "active message bandwidth / message rate", "overhead",
      Layout::Short);
  add("put_bw", TestType::Stream, UctCmd::Put, "put bandwidth / message rate", "overhead",
      Layout::Short);
  registry.add_alias("get_bw", "get");
}

UctTest::UctTest(const TestInfo& test, RunContext& ctx, UctCmd cmd)
    : test_(test),
      ctx_(ctx),
      p_(ctx.params),
      cmd_(cmd),
      client_(ctx.role == Role::Client),
      layout_(ctx.params.layout.value_or(test.default_layout)),
      len_(ctx.params.message_size()),
      total_(ctx.params.total_iters()),
      own_seed_(client_ ? p_.seed : p_.seed ^ kServerSeedMix),
      peer_seed_(client_ ? p_.seed ^ kServerSeedMix : p_.seed),
      window_(test.type == TestType::PingPong ? 1 : ctx.params.window),
      slots_(test.type == TestType::Stream && cmd != UctCmd::Am ? ctx.params.slots() : 1),
      wd_(*ctx.watchdog) {
  flush_comp_.func = [](uct::Completion* c) { *static_cast<bool*>(c->arg) = true; };
  flush_comp_.arg = &flushed_;
  own_final_seed_ = pattern_final_seed(own_seed_);
}

UctTest::~UctTest() = default;

Status UctTest::run() {
  Rte& rte = *ctx_.rte;
  Status s = setup();
  if (!is_error(s)) s = rte.barrier(ctx_.timeout);
  if (!is_error(s) && single_ && !client_) {
    // Loopback over one iface: the client does it all; wait for its end.
    s = rte.recv(MsgType::Done, Duration(-1)).status();
    std::vector<uint8_t> verdict;
    ucs::WireWriter(&verdict).u8(1);
    ucs::WireWriter(&verdict).str("");
    return is_error(s) ? s : rte.send(MsgType::Verdict, verdict);
  }
  if (!is_error(s)) {
    if (client_ && ctx_.on_start) ctx_.on_start();
    wd_.rearm();
    if (test_.type == TestType::PingPong) {
      s = run_pingpong();
    } else if (client_) {
      s = run_stream_client();
    } else if (cmd_ == UctCmd::Am) {
      s = serve_acks();
    }
  }
  if (!is_error(s)) s = finish();
  if (side_) side_->disconnect();
  // Tell a peer that is still there why this side gives up.
  if (is_error(s) && s != Status::Rejected && s != Status::ConnectionReset) {
    rte.send_error(std::string(client_ ? "the client" : "the server") +
                   " failed: " + (why_.empty() ? ucs::status_string(s) : why_));
  }
  return s;
}

Status UctTest::open_side(const std::string& dev, const std::string& preferred_dev) {
  MC_ASSIGN_OR_RETURN(UctResource res, find_uct_resource(p_.tl, dev, preferred_dev, &why_));
  Watchdog* wd = &wd_;
  auto on_error = [wd](uct::Endpoint*, Status status) {
    wd->fail(status, "the transport lost the connection to the peer");
  };
  // With a footprint, the buffer a stream's messages come from (put: the
  // client's send buffer; get: the server's) and the one they land in are
  // that large; both over one iface (self).
  BufLengths lengths{len_, len_, len_};
  if (slots_ > 1) {
    const bool self = res.tl.dev_type == uct::DeviceType::Self;
    const bool source = (cmd_ == UctCmd::Put) == client_;
    if (self || source) lengths[static_cast<int>(Buf::Send)] = len_ * slots_;
    if (self || !source) lengths[static_cast<int>(Buf::Recv)] = len_ * slots_;
  }
  MC_ASSIGN_OR_RETURN(side_, UctSide::open(res, lengths, p_.alloc, ctx_.async, on_error, &why_));
  MC_RETURN_IF_ERROR(check_capability());
  iface_ = &side_->iface();
  for (Buf b : {Buf::Send, Buf::Final, Buf::Recv}) {
    const int i = static_cast<int>(b);
    buf_[i] = side_->buf(b);
    size_t offset = 0;
    for (size_t size : p_.sizes) {
      iov_[i].push_back(uct::Iov{buf_[i] + offset, size, side_->memh(b)});
      offset += size;
    }
  }
  pattern_fill(buf(Buf::Send), len_, own_seed_);
  // The last get lands in the final buffer, which stays zero until then.
  if (cmd_ != UctCmd::Get) pattern_fill(buf(Buf::Final), len_, own_final_seed_);
  // put_lat polls the last byte for sequence number 0 first: start elsewhere.
  buf(Buf::Recv)[len_ - 1] = 0xff;
  src_ = buf(Buf::Send);
  src_iov_ = &iov_[static_cast<int>(Buf::Send)];
  dst_ = buf(Buf::Recv);
  dst_iov_ = &iov_[static_cast<int>(Buf::Recv)];
  install_handlers();
  return Status::Ok;
}

// The operation, protocol and size must be within what the iface offers.
Status UctTest::check_capability() {
  const uct::IfaceAttr& a = side_->attr();
  const uct::OpLimits& lim = cmd_ == UctCmd::Am ? a.am : cmd_ == UctCmd::Put ? a.put : a.get;
  static constexpr uint64_t kCaps[3][3] = {
      {uct::kCapAmShort, uct::kCapAmBcopy, uct::kCapAmZcopy},
      {uct::kCapPutShort, uct::kCapPutBcopy, uct::kCapPutZcopy},
      {uct::kCapGetShort, uct::kCapGetBcopy, uct::kCapGetZcopy}};
  const std::string tl = side_->resource().tl.tl_name;
  const std::string proto = protocol_name();
  const std::string size = std::to_string(len_) + "-byte ";
  std::string why;
  if (cmd_ == UctCmd::Get && layout_ == Layout::Short) {
    why = "get cannot use -D short: use -D bcopy or -D zcopy";
  } else if (!(a.cap & kCaps[static_cast<int>(cmd_)][static_cast<int>(layout_)])) {
    why = tl + " does not offer " + proto + " (it offers " + uct::cap_string(a.cap) + ")";
  } else if (layout_ == Layout::Short && cmd_ == UctCmd::Am && len_ < 8) {
    why = "am_short messages carry an 8-byte header: -s must be at least 8";
  } else if (layout_ == Layout::Short && len_ > lim.max_short) {
    why = tl + " cannot send " + size + proto + " messages (its limit is " +
          std::to_string(lim.max_short) + " B): use a smaller -s or -D bcopy/zcopy";
  } else if (layout_ == Layout::Bcopy && len_ > lim.max_bcopy) {
    why = tl + " cannot send " + size + proto + " messages (its limit is " +
          std::to_string(lim.max_bcopy) + " B): use a smaller -s or -D zcopy";
  } else if (layout_ == Layout::Zcopy && (len_ < lim.min_zcopy || len_ > lim.max_zcopy)) {
    why = tl + " sends " + proto + " messages of " + std::to_string(lim.min_zcopy) + " to " +
          std::to_string(lim.max_zcopy) + " B, not " + std::to_string(len_);
  } else if (layout_ == Layout::Zcopy && p_.sizes.size() > lim.max_iov) {
    why = tl + " takes at most " + std::to_string(lim.max_iov) + " iov entries, -s gives " +
          std::to_string(p_.sizes.size());
  } else if (cmd_ == UctCmd::Am && !(a.cap & uct::kCapAmShort && a.am.max_short >= 8) &&
             !(a.cap & uct::kCapAmBcopy && a.am.max_bcopy >= 8)) {
    why = tl + " cannot send the 8-byte acknowledgements of active-message tests";
  }
  if (why.empty()) return Status::Ok;
  why_ = why;
  MC_LOG(error) << why;
  return Status::Unsupported;
}

std::string UctTest::protocol_name() const {
  static constexpr const char* kCmd[] = {"am", "put", "get"};
  return std::string(kCmd[static_cast<int>(cmd_)]) + "_" + layout_name(layout_);
}

std::vector<uint8_t> UctTest::pack_setup(bool single) const {
  std::vector<uint8_t> out;
  ucs::WireWriter w(&out);
  w.u8(single ? 1 : 0);
  if (!side_) {  // a loopback server with nothing to open
    for (int i = 0; i < 3; ++i) w.str("");
    for (int i = 0; i < 2; ++i) w.blob({});
    for (int i = 0; i < 2; ++i) {
      w.u64(0);
      w.blob({});
    }
    return out;
  }
  const uct::TlResource& tl = side_->resource().tl;
  w.str(tl.tl_name);
  w.str(tl.dev_name);
  w.str(uct::device_type_name(tl.dev_type));
  w.blob(iface_->device_address());
  w.blob(iface_->iface_address());
  // Packing cannot fail for handles this md registered with remote access.
  w.u64(reinterpret_cast<uintptr_t>(buf(Buf::Recv)));
  w.blob(side_->pack_rkey(Buf::Recv).value_or({}));
  w.u64(reinterpret_cast<uintptr_t>(buf(Buf::Send)));
  w.blob(side_->pack_rkey(Buf::Send).value_or({}));
  return out;
}

Status UctTest::setup() {
  Rte& rte = *ctx_.rte;
  std::vector<uint8_t> peer_wire;
  if (client_) {
    MC_RETURN_IF_ERROR(open_side(p_.dev, ctx_.loopback ? "lo" : ""));
    const bool self = side_->resource().tl.dev_type == uct::DeviceType::Self;
    if (self && !ctx_.loopback) {
      why_ = side_->resource().tl.tl_name + " reaches only its own process: run it with -l";
      MC_LOG(error) << why_;
      return Status::Unsupported;
    }
    single_ = self;
    MC_RETURN_IF_ERROR(rte.send(MsgType::Setup, pack_setup(single_)));
    MC_ASSIGN_OR_RETURN(peer_wire, rte.recv(MsgType::Setup, ctx_.timeout));
    if (single_) peer_wire = pack_setup(true);  // the peer is this iface
  } else {
    // The client opened first: its setup names the device when ours is not
    // set, and says whether there is anything for us to open at all.
    MC_ASSIGN_OR_RETURN(peer_wire, rte.recv(MsgType::Setup, ctx_.timeout));
    MC_ASSIGN_OR_RETURN(const PeerSetup client, decode_setup(peer_wire));
    if (client.single) {
      single_ = true;
      return rte.send(MsgType::Setup, pack_setup(true));
    }
    MC_RETURN_IF_ERROR(open_side(p_.dev.empty() ? client.dev : p_.dev, ""));
    MC_RETURN_IF_ERROR(rte.send(MsgType::Setup, pack_setup(false)));
  }
  MC_ASSIGN_OR_RETURN(const PeerSetup peer, decode_setup(peer_wire));
  if (peer.tl != side_->resource().tl.tl_name) {
    why_ = "the client runs transport '" + (client_ ? side_->resource().tl.tl_name : peer.tl) +
           "', the server '" + (client_ ? peer.tl : side_->resource().tl.tl_name) + "'";
    MC_LOG(error) << why_;
    return Status::Unreachable;
  }
  if (single_) peer_seed_ = own_seed_;
  peer_final_seed_ = pattern_final_seed(peer_seed_);
  am_.expect(len_, peer_final_seed_);
  MC_RETURN_IF_ERROR(
      side_->connect(peer.dev_addr, peer.iface_addr, peer.recv_rkey, peer.send_rkey, &why_));
  ep_ = &side_->ep();
  remote_addr_ = cmd_ == UctCmd::Get ? peer.send_addr : peer.recv_addr;
  rkey_ = cmd_ == UctCmd::Get ? &side_->peer_send_rkey() : &side_->peer_recv_rkey();
  peer_desc_ = peer.tl + "/" + peer.dev + " (" + peer.dev_type + ")";
  if (client_) fill_info();
  return Status::Ok;
}

void UctTest::fill_info() {
  RunInfo& info = *ctx_.info;
  const uct::TlResource& tl = side_->resource().tl;
  const uct::IfaceAttr& a = side_->attr();
  const uct::MdAttr md = side_->md().query();
  info.transport = tl.tl_name;
  info.device = tl.dev_name;
  info.device_type = uct::device_type_name(tl.dev_type);
  info.protocol = protocol_name();
  info.layout = layout_;
  info.window = window_;
  info.net = tl.dev_type == uct::DeviceType::Net;
  auto& d = info.details;
  d.push_back("peer         " + (single_ ? std::string("this iface (loopback over one iface)")
                                         : peer_desc_ + " via " + ctx_.rte->peer_name()));
  d.push_back("md           " + side_->md().name() + ", rkey up to " +
              std::to_string(md.rkey_packed_size) + " B, numa node " +
              std::to_string(tl.numa_node));
  d.push_back(std::string("buffers      ") + (side_->md_allocated()
                                                  ? "from the md's mem_alloc"
                                                  : "heap memory registered with the md"));
  d.push_back("iface caps   " + uct::cap_string(a.cap));
  d.push_back(limits_string("am", a.am));
  d.push_back(limits_string("put", a.put));
  d.push_back(limits_string("get", a.get));
  char model[256];
  std::snprintf(model, sizeof(model),
                "model        latency %.3f usec + %.3f ns/B, bandwidth %.1f MB/s dedicated + "
                "%.1f MB/s shared, overhead %.1f ns, priority %d",
                a.latency.c * 1e6, a.latency.m * 1e9, a.bandwidth.dedicated / (1 << 20),
                a.bandwidth.shared / (1 << 20), a.overhead * 1e9, a.priority);
  d.push_back(model);
}

void UctTest::install_handlers() {
  (void)iface_->set_am_handler(kDataAm, [this](const void* data, size_t length, unsigned) {
    am_.arrive(data, length);
    return Status::Ok;
  });
  (void)iface_->set_am_handler(kAckAm, [this](const void* data, size_t length, unsigned) {
    if (length >= sizeof(uint64_t)) std::memcpy(&am_acked_, data, sizeof(uint64_t));
    return Status::Ok;
  });
}

}  // namespace mc::perf

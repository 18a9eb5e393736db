// SPDX-License-Identifier: Apache-2.0
// UCP tests: registration, setup (context, worker, buffers), connection,
// the description of the run, and the active-message handlers.
#include "tools/perf/ucp_perf_tests.h"

#include <cstring>
#include <set>
#include <sstream>

#include "ucs/config/parser.h"
#include "ucs/config/registry.h"
#include "ucs/config/table.h"
#include "ucs/datastruct/wire.h"
#include "ucs/log/log.h"

namespace mc::perf {

namespace proto = ucp::proto;
namespace wireup = ucp::wireup;

namespace {

// What one side tells the other after opening its resources.
// Wire: blob worker_address | u64 recv_addr | blob recv_rkey |
//       u64 send_addr | blob send_rkey
struct UcpPeerSetup {
  std::vector<uint8_t> address, recv_rkey, send_rkey;
  uint64_t recv_addr = 0, send_addr = 0;
};

Result<UcpPeerSetup> decode_setup(std::span<const uint8_t> wire) {
  ucs::WireReader r(wire);
  UcpPeerSetup s;
  auto blob = [&r] {
    const std::span<const uint8_t> b = r.blob();
    return std::vector<uint8_t>(b.begin(), b.end());
  };
  s.address = blob();
  s.recv_addr = r.u64();
  s.recv_rkey = blob();
  s.send_addr = r.u64();
  s.send_rkey = blob();
  if (!r.at_end()) {
    MC_LOG(error) << "malformed UCP setup message from the peer (" << wire.size() << " bytes)";
    return Status::BadData;
  }
  return s;
}

// The process's configuration, with MC_TLS replaced by -x when given.
Result<std::unique_ptr<ucp::Context>> make_context(const std::string& tls, std::string* why) {
  std::string error;
  Result<ucs::config::Sources> sources = ucs::config::Sources::from_process(&error);
  if (!sources.ok()) {
    *why = "cannot read the configuration: " + error;
    MC_LOG(error) << *why;
    return sources.status();
  }
  ucp::register_ucp_config_tables(ucs::config::Registry::instance());
  Result<ucp::ContextConfig> config =
      ucs::config::read_table<ucp::ContextConfig>(ucp::context_config_table(), *sources, &error);
  if (!config.ok()) {
    *why = "invalid UCP configuration: " + error;
    MC_LOG(error) << *why;
    return config.status();
  }
  if (!tls.empty() && ucs::config::allow_list_parser().parse(tls, &config->tls) != Status::Ok) {
    *why = "invalid transport list '" + tls + "' for -x: e.g. tcp, sm, shm, net or ^tcp";
    MC_LOG(error) << *why;
    return Status::InvalidParam;
  }
  ucp::ContextParams params;
  params.sources = &*sources;
  params.config = *config;
  Result<std::unique_ptr<ucp::Context>> ctx = ucp::Context::create(params);
  if (!ctx.ok())
    *why = std::string("cannot create the UCP context: ") + ucs::status_string(ctx.status());
  return ctx;
}

proto::Op proto_op(UcpCmd cmd) {
  return cmd == UcpCmd::Put ? proto::Op::Put : cmd == UcpCmd::Get ? proto::Op::Get : proto::Op::Am;
}

}  // namespace

void register_ucp_tests(Registry& registry) {
  auto add = [&](const char* name, TestType type, UcpCmd cmd, const char* desc,
                 const char* lat_label) {
    registry.add(
        TestInfo{name, Api::Ucp, type, desc, lat_label, Layout::Zcopy},
        [cmd](const TestInfo& test, RunContext& ctx) { return UcpTest(test, ctx, cmd).run(); });
  };
  add("ucp_put_lat", TestType::PingPong, UcpCmd::Put, "put latency", "latency");
  add("ucp_put_bw", TestType::Stream, UcpCmd::Put, "put bandwidth / message rate", "overhead");
  add("ucp_get", TestType::Stream, UcpCmd::Get, "get latency / bandwidth / message rate",
      "latency");
  add("ucp_am_lat", TestType::PingPong, UcpCmd::Am, "active message latency", "latency");
  add("ucp_am_bw", TestType::Stream, UcpCmd::Am, "active message bandwidth / message rate",
      "overhead");
}

UcpTest::UcpTest(const TestInfo& test, RunContext& ctx, UcpCmd cmd)
    : test_(test),
      ctx_(ctx),
      p_(ctx.params),
      cmd_(cmd),
      client_(ctx.role == Role::Client),
      len_(ctx.params.message_size()),
      total_(ctx.params.total_iters()),
      own_seed_(client_ ? p_.seed : p_.seed ^ kServerSeedMix),
      peer_seed_(client_ ? p_.seed ^ kServerSeedMix : p_.seed),
      window_(test.type == TestType::PingPong ? 1 : std::max(1u, ctx.params.window)),
      slots_(test.type == TestType::Stream && cmd != UcpCmd::Am ? ctx.params.slots() : 1),
      wd_(*ctx.watchdog) {
  own_final_seed_ = pattern_final_seed(own_seed_);
  peer_final_seed_ = pattern_final_seed(peer_seed_);
  am_.expect(len_, peer_final_seed_);
  // The callback runs inside progress() or inside the call that posts.
  auto done = [this](Status s) {
    --outstanding_;
    if (is_error(s) && request_status_ == Status::Ok) request_status_ = s;
  };
  src_params_.callback = done;
  dst_params_.callback = done;
}

UcpTest::~UcpTest() {
  // Endpoint first (it cancels what is left), then the worker's view of keys.
  peer_recv_rkey_.reset();
  peer_send_rkey_.reset();
  ep_.reset();
}

Status UcpTest::run() {
  Rte& rte = *ctx_.rte;
  Status s = setup();
  if (!is_error(s)) s = rte.barrier(ctx_.timeout);
  if (!is_error(s)) {
    if (client_ && ctx_.on_start) ctx_.on_start();
    wd_.rearm();
    if (test_.type == TestType::PingPong) {
      s = run_pingpong();
    } else if (client_) {
      s = run_stream_client();
    }
  }
  if (!is_error(s)) s = finish();
  if (is_error(s) && s != Status::Rejected && s != Status::ConnectionReset) {
    rte.send_error(std::string(client_ ? "the client" : "the server") +
                   " failed: " + (why_.empty() ? ucs::status_string(s) : why_));
  }
  return s;
}

Status UcpTest::open_side() {
  MC_ASSIGN_OR_RETURN(context_, make_context(p_.tl, &why_));
  // As the UCT tests: the tool's --async says where tcp's sockets are served
  // (the loopback mode starts the loop for both sides' threads).
  ucp::WorkerParams wp;
  wp.async_mode = ctx_.async != nullptr && ctx_.async->is_running() ? ucp::AsyncMode::Thread
                                                                    : ucp::AsyncMode::Progress;
  Result<std::unique_ptr<ucp::Worker>> worker = ucp::Worker::create(*context_, wp);
  if (!worker.ok()) {
    why_ = std::string("cannot create the UCP worker: ") + ucs::status_string(worker.status());
    return worker.status();
  }
  worker_ = std::move(*worker);
  // --alloc md: UCP allocates (as ucx_perftest's ucp_mem_map ALLOCATE), so
  // sm gives shared memory the peer maps; heap: registered heap memory.
  // With a footprint, the buffer a stream's messages come from (put: the
  // client's send buffer; get: the server's) and the one they land in are
  // that large, every page written before the run.
  const bool source = (cmd_ == UcpCmd::Put) == client_;
  const int large = static_cast<int>(source ? Buf::Send : Buf::Recv);
  for (int i = 0; i < kBufs; ++i) {
    const size_t length = i == large ? len_ * slots_ : len_;
    Result<std::unique_ptr<ucp::MemHandle>> memh = Status::NoMemory;
    if (p_.alloc == Alloc::Md) {
      memh = ucp::MemHandle::alloc(*context_, length);
      if (memh.ok() && slots_ > 1 && i == large) std::memset((*memh)->address(), 0, length);
    } else {
      bufs_[i] = std::make_unique<AlignedBuffer>(length, p_.alloc, uint8_t{0});
      if (!bufs_[i]->data()) {
        why_ = "cannot allocate a buffer of " + std::to_string(length) + " bytes";
        MC_LOG(error) << why_;
        return Status::NoMemory;
      }
      memh = ucp::MemHandle::map(*context_, bufs_[i]->data(), bufs_[i]->length());
    }
    if (!memh.ok()) {
      why_ = std::string(p_.alloc == Alloc::Md ? "cannot allocate " : "cannot register ") +
             std::to_string(length) + " bytes: " + ucs::status_string(memh.status());
      MC_LOG(error) << why_;
      return memh.status();
    }
    memh_[i] = std::move(*memh);
  }
  pattern_fill(buf(Buf::Send), len_, own_seed_);
  // The last get lands in the final buffer, which stays zero until then.
  if (cmd_ != UcpCmd::Get) pattern_fill(buf(Buf::Final), len_, own_final_seed_);
  // ucp_put_lat polls the last byte for sequence number 0 first: start elsewhere.
  buf(Buf::Recv)[len_ - 1] = 0xff;
  src_ = buf(Buf::Send);
  dst_ = buf(Buf::Recv);
  src_params_.memh = memh(Buf::Send);
  dst_params_.memh = memh(Buf::Recv);
  install_handlers();
  return Status::Ok;
}

std::vector<uint8_t> UcpTest::pack_setup() const {
  std::vector<uint8_t> out;
  ucs::WireWriter w(&out);
  w.blob(worker_->address());
  // Packing cannot fail for handles registered with remote access.
  w.u64(reinterpret_cast<uintptr_t>(buf(Buf::Recv)));
  w.blob(memh(Buf::Recv)->rkey_pack().value_or({}));
  w.u64(reinterpret_cast<uintptr_t>(buf(Buf::Send)));
  w.blob(memh(Buf::Send)->rkey_pack().value_or({}));
  return out;
}

// The client opens first, so that in loopback the two sides never load
// and open transports at the same time.
Status UcpTest::setup() {
  Rte& rte = *ctx_.rte;
  std::vector<uint8_t> peer_wire;
  if (client_) {
    MC_RETURN_IF_ERROR(open_side());
    MC_RETURN_IF_ERROR(rte.send(MsgType::Setup, pack_setup()));
    MC_ASSIGN_OR_RETURN(peer_wire, rte.recv(MsgType::Setup, ctx_.timeout));
  } else {
    MC_ASSIGN_OR_RETURN(peer_wire, rte.recv(MsgType::Setup, ctx_.timeout));
    MC_RETURN_IF_ERROR(open_side());
    MC_RETURN_IF_ERROR(rte.send(MsgType::Setup, pack_setup()));
  }
  MC_RETURN_IF_ERROR(connect(peer_wire));
  if (client_) fill_info();
  return Status::Ok;
}

Status UcpTest::connect(std::span<const uint8_t> peer_wire) {
  MC_ASSIGN_OR_RETURN(const UcpPeerSetup peer, decode_setup(peer_wire));
  Result<std::unique_ptr<ucp::Endpoint>> ep = worker_->ep_create(peer.address);
  if (!ep.ok()) {
    why_ = std::string("cannot create an endpoint to the peer: ") +
           ucs::status_string(ep.status()) + " (mc_info -e shows the lanes and rejections)";
    return ep.status();
  }
  ep_ = std::move(*ep);
  Result<std::unique_ptr<ucp::Rkey>> recv_rkey = ep_->rkey_unpack(peer.recv_rkey);
  Result<std::unique_ptr<ucp::Rkey>> send_rkey = ep_->rkey_unpack(peer.send_rkey);
  if (!recv_rkey.ok() || !send_rkey.ok()) {
    const Status s = recv_rkey.ok() ? send_rkey.status() : recv_rkey.status();
    why_ = std::string("cannot unpack the peer's remote keys: ") + ucs::status_string(s);
    return s;
  }
  peer_recv_rkey_ = std::move(*recv_rkey);
  peer_send_rkey_ = std::move(*send_rkey);
  remote_addr_ = cmd_ == UcpCmd::Get ? peer.send_addr : peer.recv_addr;
  rkey_ = cmd_ == UcpCmd::Get ? peer_send_rkey_.get() : peer_recv_rkey_.get();
  peer_desc_ = "worker on " + ucp::impl(*ep_).peer().hostname + " via " + ctx_.rte->peer_name();
  return Status::Ok;
}

// Which lanes and protocol carry messages of the test's size, from the
// endpoint's own tables (what UCP explains with Endpoint::print).
void UcpTest::fill_info() {
  RunInfo& info = *ctx_.info;
  const proto::ProtoRange* range =
      ucp::impl(*ep_).protocols().table(proto_op(cmd_), true).lookup(len_);
  const wireup::LaneSelection& sel = ucp::impl(*ep_).lanes();
  const auto& local = ucp::impl(*worker_).local_resources();
  std::set<std::string> tls, devs;
  std::string lanes;
  bool net = false;
  for (size_t lane : range ? range->lanes : std::vector<size_t>{}) {
    const wireup::LocalResource& r = local[sel.lanes[lane].local];
    tls.insert(r.tl_name);
    devs.insert(r.dev_name);
    net = net || r.dev_type == uct::DeviceType::Net;
    if (info.device_type.empty()) info.device_type = uct::device_type_name(r.dev_type);
    lanes += (lanes.empty() ? " " : ", ") + std::to_string(lane) + " (" +
             sel.candidate_of(lane).name + ")";
  }
  auto join = [](const std::set<std::string>& s) {
    std::string out;
    for (const std::string& x : s) out += (out.empty() ? "" : "+") + x;
    return out.empty() ? std::string("?") : out;
  };
  info.transport = join(tls);
  info.device = join(devs);
  info.protocol = std::string(proto::op_name(proto_op(cmd_))) + " " +
                  (range ? proto::proto_kind_name(range->kind) : "none") + " on lane" +
                  (range && range->lanes.size() > 1 ? "s" : "") + lanes;
  info.layout = Layout::Zcopy;
  info.window = window_;
  info.net = net;
  auto& d = info.details;
  d.push_back("peer         " + peer_desc_);
  std::ostringstream os;
  ep_->print(os);
  std::istringstream lines(os.str());
  for (std::string line; std::getline(lines, line);) d.push_back("ucp          " + line);
}

void UcpTest::install_handlers() {
  worker_->set_am_handler(kUcpDataAm,
                          [this](const void* data, size_t length) { am_.arrive(data, length); });
  worker_->set_am_handler(kUcpAckAm, [this](const void*, size_t) { am_acked_ = true; });
}

}  // namespace mc::perf

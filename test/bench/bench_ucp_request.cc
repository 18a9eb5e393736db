// SPDX-License-Identifier: Apache-2.0
// UCP request cost on the data path: a put_nbx of 8 B over self (protocol
// lookup, request alloc/free, the UCT call, the callback), a 64 KiB put that
// goes by the sliced path, a request alone (WorkerImpl::submit of an op that
// completes at once), and active-message dispatch of a received message.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "ucp/api/ucp.h"
#include "ucp/core/worker.h"
#include "ucp/proto/am_wire.h"
#include "ucp/proto/request_op.h"
#include "uct/base/component_loader.h"

namespace {

using namespace mc;
using ucs::Result;
using ucs::Status;

// One worker talking to itself over the self transport, and a registered
// 1 MiB target.
struct SelfLoop {
  ucs::config::Sources sources;
  std::unique_ptr<ucp::Context> ctx;
  std::unique_ptr<ucp::Worker> worker;
  std::unique_ptr<ucp::Endpoint> ep;
  std::vector<uint8_t> target = std::vector<uint8_t>(size_t{1} << 20);
  std::vector<uint8_t> src = std::vector<uint8_t>(size_t{1} << 20, 0x5a);
  std::unique_ptr<ucp::MemHandle> tmh;
  std::unique_ptr<ucp::MemHandle> smh;
  std::unique_ptr<ucp::Rkey> rkey;

  // Empty on success, else why not.
  std::string init() {
    if (!uct::find_component("self")) return "self transport is not available";
    Result<ucs::config::Sources> s = ucs::config::Sources::from({{"MC_TLS", "self"}}, {});
    if (!s.ok()) return "config";
    sources = std::move(*s);
    ucp::ContextParams params;
    params.sources = &sources;
    Result<std::unique_ptr<ucp::Context>> c = ucp::Context::create(params);
    if (!c.ok()) return "context";
    ctx = std::move(*c);
    Result<std::unique_ptr<ucp::Worker>> w = ucp::Worker::create(*ctx);
    if (!w.ok()) return "worker";
    worker = std::move(*w);
    Result<std::unique_ptr<ucp::Endpoint>> e = worker->ep_create(worker->address());
    if (!e.ok()) return "endpoint";
    ep = std::move(*e);
    Result<std::unique_ptr<ucp::MemHandle>> t =
        ucp::MemHandle::map(*ctx, target.data(), target.size());
    Result<std::unique_ptr<ucp::MemHandle>> m = ucp::MemHandle::map(*ctx, src.data(), src.size());
    if (!t.ok() || !m.ok()) return "mem map";
    tmh = std::move(*t);
    smh = std::move(*m);
    Result<std::vector<uint8_t>> packed = tmh->rkey_pack();
    if (!packed.ok()) return "rkey pack";
    Result<std::unique_ptr<ucp::Rkey>> r = ep->rkey_unpack(*packed);
    if (!r.ok()) return "rkey unpack";
    rkey = std::move(*r);
    return "";
  }

  ~SelfLoop() {
    rkey.reset();
    ep.reset();
    smh.reset();
    tmh.reset();
    worker.reset();
    ctx.reset();
  }
};

void put_loop(benchmark::State& state, size_t length) {
  SelfLoop loop;
  if (const std::string why = loop.init(); !why.empty()) {
    state.SkipWithError(why.c_str());
    return;
  }
  uint64_t done = 0;
  ucp::RequestParams params;
  params.callback = [&done](Status) { ++done; };
  params.memh = loop.smh.get();
  const uint64_t raddr = reinterpret_cast<uintptr_t>(loop.target.data());
  size_t n = 0;
  for (auto _ : state) {
    Result<std::shared_ptr<ucp::Request>> r =
        loop.ep->put_nbx(loop.src.data(), length, raddr, *loop.rkey, params);
    if (!r.ok()) {
      state.SkipWithError("put_nbx failed");
      break;
    }
    while (!(*r)->completed()) loop.worker->progress();
    if (++n % 64 == 0) loop.worker->progress();  // retires completed requests in batches
  }
  loop.worker->progress();
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * length));
  state.counters["callbacks"] = static_cast<double>(done);
}

// The common small put: one slice, one lane, completed in the call.
void BM_UcpPutNbx8(benchmark::State& state) {
  put_loop(state, 8);
}
BENCHMARK(BM_UcpPutNbx8);

// A put that takes the sliced path (zero-copy, executor, completion).
void BM_UcpPutNbx64K(benchmark::State& state) {
  put_loop(state, 65536);
}
BENCHMARK(BM_UcpPutNbx64K);

// An op that is done at once: what WorkerImpl::submit and the request cost alone.
class DoneOp : public ucp::proto::RequestOp {
 public:
  Status progress() override { return Status::Ok; }
  void abort() override {}
  size_t in_flight() const override { return 0; }
  void orphan() override {}
};

void BM_UcpRequestSubmit(benchmark::State& state) {
  SelfLoop loop;
  if (const std::string why = loop.init(); !why.empty()) {
    state.SkipWithError(why.c_str());
    return;
  }
  const ucp::RequestParams params;
  size_t n = 0;
  for (auto _ : state) {
    std::shared_ptr<ucp::Request> r =
        ucp::impl(*loop.worker).submit(std::make_unique<DoneOp>(), params);
    benchmark::DoNotOptimize(r.get());
    r.reset();
    if (++n % 64 == 0) loop.worker->progress();  // retires them in batches
  }
  loop.worker->progress();
}
BENCHMARK(BM_UcpRequestSubmit);

// A single active message of 8 B from the worker to itself: the UCT AM
// handler, UCP's header decode and the user handler lookup and call.
void BM_UcpAmDispatch(benchmark::State& state) {
  SelfLoop loop;
  if (const std::string why = loop.init(); !why.empty()) {
    state.SkipWithError(why.c_str());
    return;
  }
  uint64_t received = 0;
  loop.worker->set_am_handler(7, [&received](const void*, size_t) { ++received; });
  uint64_t payload = 42;
  for (auto _ : state) {
    Result<std::shared_ptr<ucp::Request>> r = loop.ep->am_send_nbx(7, &payload, sizeof(payload));
    if (!r.ok()) {
      state.SkipWithError("am_send_nbx failed");
      break;
    }
    while (!(*r)->completed()) loop.worker->progress();
  }
  loop.worker->progress();
  state.counters["received"] = static_cast<double>(received);
}
BENCHMARK(BM_UcpAmDispatch);

}  // namespace

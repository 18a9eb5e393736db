// SPDX-License-Identifier: Apache-2.0
// Helpers of the UCP tests.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/pipe_util.h"
#include "ucp/api/ucp.h"
#include "ucp/core/endpoint.h"
#include "ucp/core/worker.h"

namespace mc::ucp::test {

/// The test pattern's byte at offset i for `seed`.
inline uint8_t pattern(uint64_t seed, size_t i) {
  return static_cast<uint8_t>((seed * 131 + i * 7 + (i >> 8)) & 0xff);
}
/// n bytes of the pattern.
inline std::vector<uint8_t> filled(size_t n, uint64_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = pattern(seed, i);
  return v;
}
/// Writes n bytes of the pattern at p.
inline void fill(uint8_t* p, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n; ++i) p[i] = pattern(seed, i);
}
/// Whether the n bytes at p are the pattern.
inline bool matches(const uint8_t* p, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != pattern(seed, i)) return false;
  }
  return true;
}

/// A context configured by `env` alone (full names, e.g. "MC_TLS"), read
/// into `*sources`, which must outlive it, with `components` linked into the
/// test besides the modules; null when either fails.
inline std::unique_ptr<Context> make_context(const std::map<std::string, std::string>& env,
                                             ucs::config::Sources* sources,
                                             std::vector<uct::Component*> components = {}) {
  ucs::Result<ucs::config::Sources> s = ucs::config::Sources::from(env, {});
  if (!s.ok()) return nullptr;
  *sources = std::move(*s);
  ContextParams params;
  params.sources = sources;
  params.components = std::move(components);
  ucs::Result<std::unique_ptr<Context>> ctx = Context::create(params);
  return ctx.ok() ? std::move(*ctx) : nullptr;
}

/// Calls `step` until `done()` holds or `limit` has passed; whether it
/// holds. A bound in time, not in calls: how many calls a delivery takes
/// depends on how fast progress() returns.
template <class Done, class Step>
bool spin_until(Done done, Step step, std::chrono::seconds limit = std::chrono::seconds(30)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    step();
  }
  return true;
}

/// For fixtures of one process: a context, two of its workers and an
/// endpoint from the first to the second (mixed into a gtest fixture).
class UcpPair {
 protected:
  /// Opens the workers and the endpoint on ctx_ (made by the fixture); a
  /// fatal test failure when one cannot be made (ASSERT_NO_FATAL_FAILURE).
  void open_workers(const WorkerParams& wp = {}) {
    ASSERT_TRUE(ctx_) << "no context";
    for (int i = 0; i < 2; ++i) {
      ucs::Result<std::unique_ptr<Worker>> w = Worker::create(*ctx_, wp);
      ASSERT_TRUE(w.ok()) << ucs::status_string(w.status());
      workers_.push_back(std::move(*w));
    }
    ucs::Result<std::unique_ptr<Endpoint>> ep = workers_[0]->ep_create(workers_[1]->address());
    ASSERT_TRUE(ep.ok()) << ucs::status_string(ep.status());
    ep_ = std::move(*ep);
  }

  /// Registers `bytes` with ctx_ and unpacks its rkey for ep_, as a peer
  /// would.
  void map_remote(std::vector<uint8_t>& bytes, std::unique_ptr<MemHandle>* memh,
                  std::unique_ptr<Rkey>* rkey) {
    ucs::Result<std::unique_ptr<MemHandle>> mh = MemHandle::map(*ctx_, bytes.data(), bytes.size());
    ASSERT_TRUE(mh.ok()) << ucs::status_string(mh.status());
    *memh = std::move(*mh);
    ucs::Result<std::vector<uint8_t>> packed = (*memh)->rkey_pack();
    ASSERT_TRUE(packed.ok());
    ucs::Result<std::unique_ptr<Rkey>> rk = ep_->rkey_unpack(*packed);
    ASSERT_TRUE(rk.ok()) << ucs::status_string(rk.status());
    *rkey = std::move(*rk);
  }

  /// Progresses both workers until `r` completes; its status.
  ucs::Status wait(const std::shared_ptr<Request>& r) {
    while (!r->completed()) {
      for (auto& w : workers_) w->progress();
    }
    return r->status();
  }
  ucs::Status wait(ucs::Result<std::shared_ptr<Request>> r) {
    return r.ok() ? wait(*r) : r.status();
  }

  /// The endpoint, the workers, then the context.
  void close_pair() {
    ep_.reset();
    workers_.clear();
    ctx_.reset();
  }

  ucs::config::Sources sources_;
  std::unique_ptr<Context> ctx_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::unique_ptr<Endpoint> ep_;
};

/// The target process of a two-process test: a context, a worker and a
/// registered buffer, whose address it publishes to the parent.
struct TargetSide {
  /// Makes them from `env` (and `components`), with a zeroed buffer of `n`
  /// bytes; 0, or the child's exit code naming what failed (2 context,
  /// 3 worker, 4 registration, 5 rkey).
  int open(const std::map<std::string, std::string>& env, size_t n,
           std::vector<uct::Component*> components = {}) {
    ctx = make_context(env, &sources, std::move(components));
    if (!ctx) return 2;
    ucs::Result<std::unique_ptr<Worker>> w = Worker::create(*ctx);
    if (!w.ok()) return 3;
    worker = std::move(*w);
    buffer.assign(n, 0);
    ucs::Result<std::unique_ptr<MemHandle>> mh = MemHandle::map(*ctx, buffer.data(), n);
    if (!mh.ok()) return 4;
    memh = std::move(*mh);
    ucs::Result<std::vector<uint8_t>> packed = memh->rkey_pack();
    if (!packed.ok()) return 5;
    rkey = std::move(*packed);
    return 0;
  }

  /// Sends the worker's address, the packed rkey (blobs) and the buffer's
  /// address (8 bytes) on `fd`; 0, or 6 when the parent is gone.
  int publish(int fd) const {
    const uint64_t base = reinterpret_cast<uintptr_t>(buffer.data());
    const bool ok = mc::test::write_blob(fd, worker->address()) && mc::test::write_blob(fd, rkey) &&
                    mc::test::write_all(fd, &base, 8);
    return ok ? 0 : 6;
  }

  ucs::config::Sources sources;
  std::unique_ptr<Context> ctx;
  std::unique_ptr<Worker> worker;
  std::vector<uint8_t> buffer;
  std::unique_ptr<MemHandle> memh;
  std::vector<uint8_t> rkey;
};

}  // namespace mc::ucp::test

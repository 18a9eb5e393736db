// SPDX-License-Identifier: Apache-2.0
// Helpers of the UCP tests.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "ucp/api/ucp.h"

namespace mc::ucp::test {

/// A context configured by `env` alone (full names, e.g. "MC_TLS"), read
/// into `*sources`, which must outlive it; null when either fails.
inline std::unique_ptr<Context> make_context(const std::map<std::string, std::string>& env,
                                             ucs::config::Sources* sources) {
  ucs::Result<ucs::config::Sources> s = ucs::config::Sources::from(env, {});
  if (!s.ok()) return nullptr;
  *sources = std::move(*s);
  ContextParams params;
  params.sources = sources;
  ucs::Result<std::unique_ptr<Context>> ctx = Context::create(params);
  return ctx.ok() ? std::move(*ctx) : nullptr;
}

}  // namespace mc::ucp::test

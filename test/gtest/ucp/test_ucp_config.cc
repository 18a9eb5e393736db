// SPDX-License-Identifier: Apache-2.0
// UCP knobs: defaults, MC_TLS aliases and negation, resource filtering with
// the reason kept.
#include <gtest/gtest.h>

#include <map>

#include "ucp/api/context.h"

namespace mc::ucp::test {
namespace {

namespace cfg = ucs::config;
using ucs::Result;

cfg::AllowList parse_list(const std::string& text) {
  cfg::AllowList list;
  EXPECT_EQ(cfg::allow_list_parser().parse(text, &list), ucs::Status::Ok) << text;
  return list;
}

TEST(UcpConfig, Defaults) {
  Result<cfg::Sources> sources = cfg::Sources::from({}, {});
  ASSERT_TRUE(sources.ok());
  Result<ContextConfig> c = cfg::read_table<ContextConfig>(context_config_table(), *sources);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->slice_size, 65536u);
  EXPECT_EQ(c->fragment_ratio, 4u);
  EXPECT_EQ(c->max_rma_rails, 2u);
  EXPECT_FALSE(c->proto_info);
  EXPECT_FALSE(c->bcopy_thresh.has_value());
  EXPECT_FALSE(c->zcopy_thresh.has_value());
  EXPECT_EQ(c->transfer_timeout, std::chrono::seconds(60));
  for (const cfg::Field& f : context_config_table().fields()) {
    EXPECT_FALSE(f.doc.empty()) << f.name;
  }
}

TEST(UcpConfig, ValuesFromTheEnvironment) {
  Result<cfg::Sources> sources = cfg::Sources::from({{"MC_SLICE_SIZE", "1m"},
                                                     {"MC_ZCOPY_THRESH", "16k"},
                                                     {"MC_TRANSFER_TIMEOUT", "inf"},
                                                     {"MC_PROTO_INFO", "y"}},
                                                    {});
  ASSERT_TRUE(sources.ok());
  Result<ContextConfig> c = cfg::read_table<ContextConfig>(context_config_table(), *sources);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->slice_size, size_t{1} << 20);
  EXPECT_EQ(c->zcopy_thresh, std::optional<size_t>(16384));
  EXPECT_EQ(c->transfer_timeout, cfg::Duration::max());
  EXPECT_TRUE(c->proto_info);
}

TEST(UcpConfig, BadValueIsInvalidParam) {
  Result<cfg::Sources> sources = cfg::Sources::from({{"MC_SLICE_SIZE", "lots"}}, {});
  ASSERT_TRUE(sources.ok());
  ContextParams params;
  params.sources = &*sources;
  EXPECT_EQ(Context::create(params).status(), ucs::Status::InvalidParam);
}

TEST(UcpConfig, TlsAliases) {
  EXPECT_TRUE(tl_allowed(parse_list("all"), "tcp"));
  EXPECT_TRUE(tl_allowed(parse_list("shm"), "sm"));
  EXPECT_FALSE(tl_allowed(parse_list("shm"), "tcp"));
  EXPECT_TRUE(tl_allowed(parse_list("net"), "tcp"));
  EXPECT_TRUE(tl_allowed(parse_list("net"), "rc_mlx5"));
  EXPECT_FALSE(tl_allowed(parse_list("net"), "self"));
  EXPECT_FALSE(tl_allowed(parse_list("^net"), "tcp"));
  EXPECT_TRUE(tl_allowed(parse_list("^net"), "sm"));
  EXPECT_FALSE(tl_allowed(parse_list("^shm,self"), "sm"));
  EXPECT_TRUE(tl_allowed(parse_list("^shm,self"), "tcp"));
  EXPECT_TRUE(tl_allowed(parse_list("SM"), "sm"));
}

TEST(UcpConfig, ContextFiltersWithReason) {
  Result<cfg::Sources> sources = cfg::Sources::from({{"MC_TLS", "self"}}, {});
  ASSERT_TRUE(sources.ok());
  ContextParams params;
  params.sources = &*sources;
  Result<std::unique_ptr<Context>> ctx = Context::create(params);
  ASSERT_TRUE(ctx.ok());
  bool saw_self = false;
  for (const ResourceInfo& r : (*ctx)->resources()) {
    if (r.tl.tl_name == "self") {
      saw_self = true;
      EXPECT_TRUE(r.enabled);
    } else {
      EXPECT_FALSE(r.enabled) << r.name();
      EXPECT_NE(r.reason.find("MC_TLS"), std::string::npos) << r.reason;
    }
  }
  EXPECT_TRUE(saw_self);
}

TEST(UcpConfig, NetDevicesFilter) {
  Result<cfg::Sources> sources = cfg::Sources::from({{"MC_NET_DEVICES", "^lo"}}, {});
  ASSERT_TRUE(sources.ok());
  ContextParams params;
  params.sources = &*sources;
  Result<std::unique_ptr<Context>> ctx = Context::create(params);
  ASSERT_TRUE(ctx.ok());
  for (const ResourceInfo& r : (*ctx)->resources()) {
    if (r.tl.dev_type == uct::DeviceType::Net && r.tl.dev_name == "lo") {
      EXPECT_FALSE(r.enabled);
      EXPECT_NE(r.reason.find("MC_NET_DEVICES"), std::string::npos) << r.reason;
    }
  }
}

// A name in MC_TLS, MC_NET_DEVICES or MC_SHM_DEVICES that this process
// has no transport or device of is named, with the names there are; the
// others are not.
TEST(UcpConfig, UnknownTransportsAndDevicesAreNamed) {
  auto problems = [](const std::map<std::string, std::string>& vars) {
    Result<cfg::Sources> sources = cfg::Sources::from(vars, {});
    EXPECT_TRUE(sources.ok());
    ContextParams params;
    params.sources = &*sources;
    Result<std::unique_ptr<Context>> ctx = Context::create(params);
    EXPECT_TRUE(ctx.ok());
    return ctx.ok() ? (*ctx)->filter_problems() : std::string("no context");
  };
  const std::string bogus = problems({{"MC_TLS", "tcp,bogus"}});
  EXPECT_NE(bogus.find("MC_TLS names 'bogus', which this process has not (it has: "),
            std::string::npos)
      << bogus;
  EXPECT_NE(bogus.find("tcp"), std::string::npos) << "the names there are: " << bogus;
  EXPECT_EQ(bogus.find("'tcp'"), std::string::npos) << bogus;
  const std::string dev = problems({{"MC_NET_DEVICES", "lo,nosuchdev"}});
  EXPECT_NE(dev.find("MC_NET_DEVICES names 'nosuchdev'"), std::string::npos) << dev;
  EXPECT_NE(dev.find("lo"), std::string::npos) << dev;
  EXPECT_NE(problems({{"MC_SHM_DEVICES", "nosuchshm"}}).find("MC_SHM_DEVICES names 'nosuchshm'"),
            std::string::npos);
  EXPECT_EQ(problems({{"MC_TLS", "^not_here,tcp"}}), "") << "leaving out what is absent is fine";
  EXPECT_EQ(problems({{"MC_TLS", "shm,net,self"}}), "");
  EXPECT_EQ(problems({}), "");

  // Nothing usable: the worker's error says why.
  Result<cfg::Sources> sources = cfg::Sources::from({{"MC_TLS", "nonexistent"}}, {});
  ASSERT_TRUE(sources.ok());
  ContextParams params;
  params.sources = &*sources;
  Result<std::unique_ptr<Context>> ctx = Context::create(params);
  ASSERT_TRUE(ctx.ok());
  EXPECT_NE((*ctx)->filter_problems().find("MC_TLS names 'nonexistent'"), std::string::npos);
}

ContextConfig config_of(const std::map<std::string, std::string>& vars) {
  Result<cfg::Sources> sources = cfg::Sources::from(vars, {});
  EXPECT_TRUE(sources.ok());
  Result<ContextConfig> c = cfg::read_table<ContextConfig>(context_config_table(), *sources);
  EXPECT_TRUE(c.ok());
  return c.ok() ? *c : ContextConfig{};
}

// MC_FORCE_TCP and MC_FORCE_HCA, Mooncake's knobs, are MC_TLS=tcp and
// MC_TLS=rc_verbs,rc_mlx5, decided in choose_tls alone: either wins over
// MC_TLS (with a note), both are an error naming both.
TEST(UcpConfig, ForcedTransportsAreMcTlsAndWinOverIt) {
  std::string error;
  Result<TlsChoice> plain = choose_tls(config_of({{"MC_TLS", "sm,tcp"}}), &error);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->origin, "MC_TLS=sm,tcp");
  EXPECT_TRUE(plain->note.empty());
  EXPECT_TRUE(tl_allowed(plain->tls, "sm"));

  Result<TlsChoice> tcp = choose_tls(config_of({{"MC_FORCE_TCP", "y"}}), &error);
  ASSERT_TRUE(tcp.ok());
  EXPECT_EQ(tcp->origin, "MC_FORCE_TCP=y (as MC_TLS=tcp)");
  EXPECT_TRUE(tcp->note.empty()) << "MC_TLS was not set";
  EXPECT_TRUE(tl_allowed(tcp->tls, "tcp"));
  for (const char* tl : {"sm", "self", "rc_verbs", "rc_mlx5", "cuda_copy"}) {
    EXPECT_FALSE(tl_allowed(tcp->tls, tl)) << tl;
  }
  EXPECT_FALSE(tcp->rdma_required);

  Result<TlsChoice> wins = choose_tls(config_of({{"MC_FORCE_TCP", "1"}, {"MC_TLS", "sm"}}), &error);
  ASSERT_TRUE(wins.ok());
  EXPECT_EQ(wins->note, "MC_FORCE_TCP=y wins over MC_TLS=sm: transports tcp");
  EXPECT_FALSE(tl_allowed(wins->tls, "sm"));

  Result<TlsChoice> hca =
      choose_tls(config_of({{"MC_FORCE_HCA", "yes"}, {"MC_TLS", "tcp"}}), &error);
  ASSERT_TRUE(hca.ok());
  EXPECT_TRUE(hca->rdma_required);
  EXPECT_TRUE(tl_allowed(hca->tls, "rc_verbs"));
  EXPECT_TRUE(tl_allowed(hca->tls, "rc_mlx5"));
  EXPECT_FALSE(tl_allowed(hca->tls, "tcp"));
  EXPECT_NE(hca->note.find("MC_FORCE_HCA=y wins over MC_TLS=tcp"), std::string::npos) << hca->note;

  EXPECT_EQ(choose_tls(config_of({{"MC_FORCE_TCP", "y"}, {"MC_FORCE_HCA", "y"}}), &error).status(),
            ucs::Status::InvalidParam);
  EXPECT_NE(error.find("MC_FORCE_TCP and MC_FORCE_HCA cannot both be set"), std::string::npos)
      << error;
}

// In a context: MC_FORCE_TCP leaves only tcp resources enabled, each other
// one filtered naming the knob; MC_FORCE_HCA without a usable RDMA device
// fails the context with NoDevice.
TEST(UcpConfig, ForcedTransportsFilterTheContext) {
  Result<cfg::Sources> sources =
      cfg::Sources::from({{"MC_FORCE_TCP", "y"}, {"MC_TLS", "sm,self"}}, {});
  ASSERT_TRUE(sources.ok());
  ContextParams params;
  params.sources = &*sources;
  Result<std::unique_ptr<Context>> ctx = Context::create(params);
  ASSERT_TRUE(ctx.ok());
  bool saw_tcp = false;
  for (const ResourceInfo& r : (*ctx)->resources()) {
    if (r.tl.tl_name == "tcp") {
      saw_tcp = saw_tcp || r.enabled;
    } else {
      EXPECT_FALSE(r.enabled) << r.name();
      EXPECT_EQ(r.reason, "filtered by MC_FORCE_TCP=y (as MC_TLS=tcp)") << r.name();
    }
  }
  EXPECT_TRUE(saw_tcp);

  // No RDMA device of that name anywhere: the context cannot be made.
  sources = cfg::Sources::from({{"MC_FORCE_HCA", "y"}, {"MC_IB_DEVICES", "mc_no_such_hca"}}, {});
  ASSERT_TRUE(sources.ok());
  params.sources = &*sources;
  EXPECT_EQ(Context::create(params).status(), ucs::Status::NoDevice);
  sources = cfg::Sources::from({{"MC_FORCE_HCA", "y"}, {"MC_FORCE_TCP", "y"}}, {});
  ASSERT_TRUE(sources.ok());
  params.sources = &*sources;
  EXPECT_EQ(Context::create(params).status(), ucs::Status::InvalidParam);
}

}  // namespace
}  // namespace mc::ucp::test

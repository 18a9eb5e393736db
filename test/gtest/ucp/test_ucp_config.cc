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

}  // namespace
}  // namespace mc::ucp::test

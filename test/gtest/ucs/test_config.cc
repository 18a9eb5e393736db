// SPDX-License-Identifier: Apache-2.0
// Configuration: every parser, source precedence, errors, unknown variables,
// listings.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <sstream>

#include "ucs/config/registry.h"

namespace mc::ucs::config {
namespace {

enum class Mode { Fast, Safe };

struct TestConfig {
  bool flag;
  int64_t count;
  size_t seg_size;
  Duration timeout;
  double bandwidth;
  Mode mode;
  std::string name;
  AllowList tls;
  std::map<std::string, size_t> frag;
  std::optional<size_t> rails;
};

const Table& test_table() {
  static const Table table(
      "test table", "TEST_",
      {field("FLAG", "n", "A flag.", &TestConfig::flag, bool_parser()),
       field("COUNT", "3", "A count.", &TestConfig::count, int_parser(-5, 100)),
       field("SEG_SIZE", "8k", "A size.", &TestConfig::seg_size, size_parser()),
       field("TIMEOUT", "10ms", "A time.", &TestConfig::timeout, time_parser()),
       field("BW", "auto", "A bandwidth.", &TestConfig::bandwidth,
             [] {
               auto p = bandwidth_parser();
               auto inner = p.parse;
               p.parse = [inner](std::string_view t, double* out) {
                 if (to_lower(t) == "auto") {
                   *out = 0;
                   return Status::Ok;
                 }
                 return inner(t, out);
               };
               return p;
             }()),
       field("MODE", "fast", "A mode.", &TestConfig::mode,
             enum_parser<Mode>({{"fast", Mode::Fast}, {"safe", Mode::Safe}})),
       field("NAME", "", "A name.", &TestConfig::name, string_parser()),
       field("TLS", "all", "Transports.", &TestConfig::tls, allow_list_parser()),
       field("FRAG", "host:512k,cuda:4m", "Fragments.", &TestConfig::frag,
             key_value_parser(size_parser())),
       field("RAILS", "auto", "Rails.", &TestConfig::rails, auto_parser(size_parser(1, 16)))});
  return table;
}

Sources make_sources(const std::map<std::string, std::string>& env,
                     const std::vector<std::pair<std::string, std::string>>& files = {}) {
  std::string error;
  Result<Sources> s = Sources::from(env, files, &error);
  EXPECT_TRUE(s.ok()) << error;
  return s.ok() ? *s : Sources{};
}

TEST(Config, SetOverridesEnvironmentAndFiles) {
  Sources s = make_sources({{"MC_TEST_COUNT", "5"}}, {{"a.conf", "MC_TEST_SEG_SIZE=4k\n"}});
  s.set("MC_TEST_COUNT", "7", "this engine");
  s.set("MC_TEST_SEG_SIZE", "16k", "this engine");
  s.set("TEST_COUNT", "9", "ignored: not MC_");
  Result<TestConfig> cfg = read_table<TestConfig>(test_table(), s);
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->count, 7);
  EXPECT_EQ(cfg->seg_size, 16384u);
  ASSERT_TRUE(s.lookup("MC_TEST_COUNT").has_value());
  EXPECT_EQ(s.lookup("MC_TEST_COUNT")->origin, "this engine");
  EXPECT_FALSE(s.lookup("TEST_COUNT").has_value());
}

TEST(Config, DefaultsAreParsed) {
  Result<TestConfig> cfg = read_table<TestConfig>(test_table(), make_sources({}));
  ASSERT_TRUE(cfg.ok());
  EXPECT_FALSE(cfg->flag);
  EXPECT_EQ(cfg->count, 3);
  EXPECT_EQ(cfg->seg_size, 8192u);
  EXPECT_EQ(cfg->timeout, std::chrono::milliseconds(10));
  EXPECT_EQ(cfg->mode, Mode::Fast);
  EXPECT_TRUE(cfg->tls.allows("anything"));
  EXPECT_EQ(cfg->frag.at("host"), 512u * 1024);
  EXPECT_EQ(cfg->frag.at("cuda"), 4u << 20);
  EXPECT_FALSE(cfg->rails.has_value());
}

TEST(Config, EnvironmentOverridesFilesOverrideDefaults) {
  Sources s = make_sources({{"MC_TEST_COUNT", "9"}},
                           {{"/etc/mc.conf", "MC_TEST_COUNT = 5\nMC_TEST_NAME=one\n"},
                            {"home.conf", "# mine\nTEST_NAME = \"two\"\n\nMC_TEST_MODE=safe\n"}});
  Origins origins;
  std::string error;
  Result<TestConfig> cfg = read_table<TestConfig>(test_table(), s, &error, &origins);
  ASSERT_TRUE(cfg.ok()) << error;
  EXPECT_EQ(cfg->count, 9);
  EXPECT_EQ(cfg->name, "two");
  EXPECT_EQ(cfg->mode, Mode::Safe);
  EXPECT_EQ(origins["COUNT"], "environment");
  EXPECT_EQ(origins["NAME"], "home.conf:2");
  EXPECT_EQ(origins["MODE"], "home.conf:4");
  EXPECT_EQ(origins["FLAG"], "default");
}

TEST(Config, InvalidValueNamesVariableValueOriginAndSyntax) {
  std::string error;
  Result<TestConfig> cfg =
      read_table<TestConfig>(test_table(), make_sources({{"MC_TEST_SEG_SIZE", "12q"}}), &error);
  EXPECT_EQ(cfg.status(), Status::InvalidParam);
  EXPECT_NE(error.find("MC_TEST_SEG_SIZE"), std::string::npos) << error;
  EXPECT_NE(error.find("'12q'"), std::string::npos) << error;
  EXPECT_NE(error.find("environment"), std::string::npos) << error;
  EXPECT_NE(error.find("64k"), std::string::npos) << error;

  cfg = read_table<TestConfig>(test_table(), make_sources({}, {{"f.conf", "MC_TEST_MODE=slow"}}),
                               &error);
  EXPECT_EQ(cfg.status(), Status::InvalidParam);
  EXPECT_NE(error.find("f.conf:1"), std::string::npos) << error;
  EXPECT_NE(error.find("[fast|safe]"), std::string::npos) << error;
}

TEST(Config, MalformedFileLineIsAnError) {
  std::string error;
  EXPECT_EQ(Sources::from({}, {{"bad.conf", "MC_A=1\nthis is not a setting\n"}}, &error).status(),
            Status::InvalidParam);
  EXPECT_NE(error.find("bad.conf:2"), std::string::npos) << error;
  EXPECT_EQ(Sources::from({}, {{"bad.conf", "mc lower = 1\n"}}, &error).status(),
            Status::InvalidParam);
  EXPECT_NE(error.find("not a variable name"), std::string::npos) << error;
}

TEST(Config, BoolParser) {
  auto p = bool_parser();
  bool v = false;
  for (const char* t : {"y", "YES", "on", "1", "true"}) {
    ASSERT_EQ(p.parse(t, &v), Status::Ok) << t;
    EXPECT_TRUE(v);
  }
  for (const char* t : {"n", "No", "off", "0", "false"}) {
    ASSERT_EQ(p.parse(t, &v), Status::Ok) << t;
    EXPECT_FALSE(v);
  }
  EXPECT_EQ(p.parse("maybe", &v), Status::InvalidParam);
  EXPECT_EQ(p.parse("", &v), Status::InvalidParam);
}

TEST(Config, IntParserBounds) {
  auto p = int_parser(-5, 100);
  int64_t v = 0;
  EXPECT_EQ(p.parse("-5", &v), Status::Ok);
  EXPECT_EQ(v, -5);
  EXPECT_EQ(p.parse("101", &v), Status::InvalidParam);
  EXPECT_EQ(p.parse("12abc", &v), Status::InvalidParam);
  EXPECT_EQ(p.parse("99999999999999999999999", &v), Status::InvalidParam);
  EXPECT_EQ(v, -5);  // untouched on error
  auto u = uint_parser(1, UINT64_MAX);
  uint64_t uv = 0;
  EXPECT_EQ(u.parse("inf", &uv), Status::Ok);
  EXPECT_EQ(uv, UINT64_MAX);
  EXPECT_EQ(u.parse("0", &uv), Status::InvalidParam);
  EXPECT_EQ(u.parse("-1", &uv), Status::InvalidParam);
}

TEST(Config, SizeParserUnits) {
  auto p = size_parser();
  size_t v = 0;
  const std::pair<const char*, size_t> good[] = {
      {"4096", 4096},     {"64k", 65536},     {"64KB", 65536}, {"1m", 1u << 20},
      {"2g", 2ull << 30}, {"1t", 1ull << 40}, {"0.5k", 512},   {"inf", SIZE_MAX}};
  for (const auto& [text, bytes] : good) {
    ASSERT_EQ(p.parse(text, &v), Status::Ok) << text;
    EXPECT_EQ(v, bytes) << text;
  }
  for (const char* bad : {"", "k", "12q", "-4k", "0.3", "1e3"}) {
    EXPECT_EQ(p.parse(bad, &v), Status::InvalidParam) << bad;
  }
  EXPECT_EQ(p.format(65536), "64k");
  EXPECT_EQ(p.format(1000), "1000");
  EXPECT_EQ(p.format(SIZE_MAX), "inf");
  EXPECT_EQ(size_parser(1, 100).parse("1k", &v), Status::InvalidParam);
}

TEST(Config, TimeParserUnits) {
  auto p = time_parser();
  Duration v{};
  ASSERT_EQ(p.parse("10ms", &v), Status::Ok);
  EXPECT_EQ(v, std::chrono::milliseconds(10));
  ASSERT_EQ(p.parse("5s", &v), Status::Ok);
  EXPECT_EQ(v, std::chrono::seconds(5));
  ASSERT_EQ(p.parse("1.5", &v), Status::Ok);
  EXPECT_EQ(v, std::chrono::milliseconds(1500));
  ASSERT_EQ(p.parse("250us", &v), Status::Ok);
  EXPECT_EQ(v, std::chrono::microseconds(250));
  ASSERT_EQ(p.parse("2m", &v), Status::Ok);
  EXPECT_EQ(v, std::chrono::minutes(2));
  ASSERT_EQ(p.parse("inf", &v), Status::Ok);
  EXPECT_EQ(v, Duration::max());
  EXPECT_EQ(p.parse("10 parsecs", &v), Status::InvalidParam);
  EXPECT_EQ(p.parse("10000000h", &v), Status::InvalidParam);  // overflows int64 ns
  EXPECT_EQ(p.format(std::chrono::milliseconds(10)), "10ms");
}

TEST(Config, BandwidthParserUnits) {
  auto p = bandwidth_parser();
  double v = 0;
  ASSERT_EQ(p.parse("1000", &v), Status::Ok);
  EXPECT_DOUBLE_EQ(v, 1000);
  ASSERT_EQ(p.parse("100MBs", &v), Status::Ok);
  EXPECT_DOUBLE_EQ(v, 100.0 * 1024 * 1024);
  ASSERT_EQ(p.parse("1.5GB/s", &v), Status::Ok);
  EXPECT_DOUBLE_EQ(v, 1.5 * 1024 * 1024 * 1024);
  ASSERT_EQ(p.parse("100Gbps", &v), Status::Ok);
  EXPECT_DOUBLE_EQ(v, 100e9 / 8);
  EXPECT_EQ(p.parse("100Gfoo", &v), Status::InvalidParam);
  EXPECT_EQ(p.parse("fastest", &v), Status::InvalidParam);
}

// Found by fuzz_config: a bandwidth too large for "%g" without an exponent
// was printed as "7.24391e+07GBs", which the parser refused.
TEST(Config, BandwidthFormatReadsBack) {
  auto p = bandwidth_parser();
  for (double bw : {77777777775777757.0, 1e-5, 3.0, 12.5 * 1024 * 1024 * 1024}) {
    double again = 0;
    const std::string text = p.format(bw);
    ASSERT_EQ(p.parse(text, &again), Status::Ok) << text;
    EXPECT_EQ(p.format(again), text);
  }
  double v = 0;
  ASSERT_EQ(p.parse("1e3Bs", &v), Status::Ok);
  EXPECT_DOUBLE_EQ(v, 1000);
  EXPECT_EQ(p.parse("1e", &v), Status::InvalidParam);
}

TEST(Config, ListsAndKeyValues) {
  auto l = allow_list_parser();
  AllowList a;
  ASSERT_EQ(l.parse("tcp,sm", &a), Status::Ok);
  EXPECT_TRUE(a.allows("tcp"));
  EXPECT_FALSE(a.allows("rc_verbs"));
  ASSERT_EQ(l.parse("^cuda_copy", &a), Status::Ok);
  EXPECT_FALSE(a.allows("cuda_copy"));
  EXPECT_TRUE(a.allows("tcp"));
  EXPECT_EQ(l.format(a), "^cuda_copy");
  for (const char* bad : {"", "^", "tcp,,sm", "tcp,^sm"}) {
    EXPECT_EQ(l.parse(bad, &a), Status::InvalidParam) << bad;
  }
  auto kv = key_value_parser(size_parser());
  std::map<std::string, size_t> m;
  ASSERT_EQ(kv.parse("host:512k, cuda:4m", &m), Status::Ok);
  EXPECT_EQ(m.size(), 2u);
  EXPECT_EQ(kv.format(m), "cuda:4m,host:512k");
  for (const char* bad : {"host", ":4k", "host:4q", "host:1k,host:2k"}) {
    EXPECT_EQ(kv.parse(bad, &m), Status::InvalidParam) << bad;
  }
  auto au = auto_parser(size_parser(1, 16));
  std::optional<size_t> o;
  ASSERT_EQ(au.parse("AUTO", &o), Status::Ok);
  EXPECT_FALSE(o);
  ASSERT_EQ(au.parse("4", &o), Status::Ok);
  EXPECT_EQ(o, 4u);
  EXPECT_EQ(au.parse("32", &o), Status::InvalidParam);
}

TEST(Config, UnknownVariablesAreFoundWithSuggestion) {
  Registry& registry = Registry::instance();
  registry.add<TestConfig>(test_table());
  registry.add<TestConfig>(test_table());  // twice is once
  size_t count = 0;
  for (const Table* t : registry.tables()) count += (t == &test_table());
  EXPECT_EQ(count, 1u);

  Sources s = make_sources(
      {{"MC_TEST_TIMEOUTT", "1s"}, {"MC_LOG_LEVEL", "warn"}, {"MC_ZZZZZZZZZZZZZZZZ", "1"}},
      {{"x.conf", "MC_TEST_CONT=4\n"}});
  std::vector<UnknownVar> unknown = registry.find_unknown(s);
  ASSERT_EQ(unknown.size(), 3u);
  std::map<std::string, UnknownVar> by_name;
  for (auto& u : unknown) by_name[u.name] = u;
  EXPECT_EQ(by_name["MC_TEST_TIMEOUTT"].suggestion, "MC_TEST_TIMEOUT");
  EXPECT_EQ(by_name["MC_TEST_CONT"].suggestion, "MC_TEST_COUNT");
  EXPECT_EQ(by_name["MC_TEST_CONT"].origin, "x.conf:1");
  EXPECT_EQ(by_name["MC_ZZZZZZZZZZZZZZZZ"].suggestion, "");
  registry.warn_unknown(s);  // logs; a second call stays quiet
  registry.warn_unknown(s);
}

TEST(Config, CheckReadsTheTableDeclaringTheName) {
  Registry& registry = Registry::instance();
  registry.add<TestConfig>(test_table());
  std::string error;
  Sources s = make_sources({{"MC_TEST_COUNT", "42"}});
  EXPECT_EQ(registry.check("MC_TEST_COUNT", s, &error), Status::Ok) << error;
  s.set("MC_TEST_COUNT", "101", "mc.config.set");
  EXPECT_EQ(registry.check("MC_TEST_COUNT", s, &error), Status::InvalidParam);
  EXPECT_NE(error.find("MC_TEST_COUNT"), std::string::npos) << error;
  EXPECT_NE(error.find("'101'"), std::string::npos) << error;
  EXPECT_NE(error.find("mc.config.set"), std::string::npos) << error;
  // A bad value of another table's knob is not this name's concern.
  s.set("MC_TEST_COUNT", "4", "mc.config.set");
  s.set("MC_LOG_LEVEL", "loud", "environment");
  EXPECT_EQ(registry.check("MC_TEST_COUNT", s, &error), Status::Ok) << error;
  EXPECT_EQ(registry.check("MC_LOG_LEVEL", s, &error), Status::InvalidParam);
  EXPECT_EQ(registry.check("MC_TEST_COUNTT", s, &error), Status::NoElem);
}

TEST(Config, ListingShowsValuesDocsAndOrigins) {
  Registry& registry = Registry::instance();
  registry.add<TestConfig>(test_table());
  Sources s = make_sources({{"MC_TEST_COUNT", "42"}});
  std::ostringstream brief, full, md;
  registry.print(brief, s, false);
  registry.print(full, s, true);
  test_table().print_markdown(md, "A note.");
  EXPECT_NE(brief.str().find("MC_TEST_COUNT=42\n"), std::string::npos);
  EXPECT_NE(brief.str().find("MC_LOG_LEVEL=warn\n"), std::string::npos);
  EXPECT_EQ(brief.str().find("A count."), std::string::npos);
  EXPECT_NE(full.str().find("# A count."), std::string::npos);
  EXPECT_NE(full.str().find("(set in environment)"), std::string::npos);
  EXPECT_NE(md.str().find("| `MC_TEST_MODE` | `fast` | A mode. Accepts one of [fast\\|safe]. |"),
            std::string::npos)
      << md.str();
  EXPECT_EQ(md.str().find("\n**" + test_table().name() + "**\n\nA note.\n\n| Variable |"), 0u)
      << md.str();
}

TEST(Config, ProcessSourcesReadConfigFile) {
  const std::string path = testing::TempDir() + "mc_test_config.conf";
  {
    std::ofstream out(path);
    out << "MC_TEST_NAME = from-file\nMC_TEST_COUNT=7\n";
  }
  setenv("MC_CONFIG_FILE", path.c_str(), 1);
  setenv("MC_TEST_COUNT", "8", 1);
  std::string error;
  Result<Sources> s = Sources::from_process(&error);
  ASSERT_TRUE(s.ok()) << error;
  Result<TestConfig> cfg = read_table<TestConfig>(test_table(), *s);
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->name, "from-file");
  EXPECT_EQ(cfg->count, 8);
  EXPECT_EQ(s->files().back(), path);

  setenv("MC_CONFIG_FILE", "/nonexistent/mc.conf", 1);
  EXPECT_EQ(Sources::from_process(&error).status(), Status::IoError);
  EXPECT_NE(error.find("/nonexistent/mc.conf"), std::string::npos) << error;
  unsetenv("MC_CONFIG_FILE");
  unsetenv("MC_TEST_COUNT");
}

TEST(Config, UcsTablesAreRegistered) {
  std::vector<std::string> names;
  for (const Table* t : Registry::instance().tables()) {
    for (const Field& f : t->fields()) names.push_back(t->env_name(f));
  }
  for (const char* n : {"MC_LOG_LEVEL", "MC_LOG_DIR", "MC_CONFIG_FILE", "MC_MODULE_DIR",
                        "MC_MODULES", "MC_TOPO_SYSFS_ROOT"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  }
}

}  // namespace
}  // namespace mc::ucs::config

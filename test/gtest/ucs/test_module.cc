// SPDX-License-Identifier: Apache-2.0
// The module loader against small test modules (kind "test"): one that loads,
// and one for each way a module can fail.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "ucs/module/module_loader.h"

namespace mc::ucs {
namespace {

namespace fs = std::filesystem;

config::AllowList all() { return config::AllowList{}; }

std::map<std::string, ModuleInfo> by_name(const std::vector<ModuleInfo>& infos) {
  std::map<std::string, ModuleInfo> m;
  for (const ModuleInfo& i : infos) m[i.name] = i;
  return m;
}

class ModuleTest : public testing::Test {
 protected:
  void SetUp() override {
    tmp_ = fs::path(testing::TempDir()) / ("mc_module_test_" + std::to_string(getpid()));
    fs::remove_all(tmp_);
    fs::create_directories(tmp_);
  }
  void TearDown() override { fs::remove_all(tmp_); }

  fs::path tmp_;
};

TEST_F(ModuleTest, GoodModuleLoadsAndEachFailureHasItsReason) {
  ModuleLoader loader({MC_TEST_MODULE_DIR}, all());
  auto m = by_name(loader.load("test"));

  ASSERT_TRUE(m.count("good"));
  EXPECT_EQ(m["good"].state, ModuleState::Loaded) << m["good"].reason;
  EXPECT_EQ(m["good"].version, "1.2.3");
  EXPECT_EQ(m["good"].kind_version, 7u);
  EXPECT_EQ(m["good"].abi_version, MC_MODULE_ABI_VERSION);
  EXPECT_EQ(m["good"].build_tag, MC_MODULE_BUILD_TAG);
  ASSERT_NE(m["good"].object, nullptr);
  EXPECT_EQ(*static_cast<int*>(m["good"].object), 0x600d);

  EXPECT_EQ(m["badabi"].state, ModuleState::AbiMismatch);
  EXPECT_NE(m["badabi"].reason.find("built for module ABI " +
                                    std::to_string(MC_MODULE_ABI_VERSION + 41)),
            std::string::npos)
      << m["badabi"].reason;
  EXPECT_NE(m["badabi"].reason.find("this mc runs module ABI " +
                                    std::to_string(MC_MODULE_ABI_VERSION)),
            std::string::npos);

  EXPECT_EQ(m["badtag"].state, ModuleState::AbiMismatch);
  EXPECT_NE(m["badtag"].reason.find("some-other-runtime"), std::string::npos);

  EXPECT_EQ(m["noentry"].state, ModuleState::NoEntry);
  EXPECT_NE(m["noentry"].reason.find("mc_module_entry"), std::string::npos);

  EXPECT_EQ(m["failcreate"].state, ModuleState::CreateFailed);
  EXPECT_EQ(m["failcreate"].reason, "no test device: simulated failure");

  EXPECT_EQ(m["needsdep"].state, ModuleState::OpenFailed);
  EXPECT_NE(m["needsdep"].reason.find("libmc_testdep.so"), std::string::npos)
      << m["needsdep"].reason;
}

TEST_F(ModuleTest, SecondLoadReturnsTheSameOutcomes) {
  ModuleLoader loader({MC_TEST_MODULE_DIR}, all());
  auto first = by_name(loader.load("test"));
  auto second = by_name(loader.load("test"));
  ASSERT_EQ(first.size(), second.size());
  EXPECT_EQ(first["good"].object, second["good"].object);
  EXPECT_EQ(loader.modules().size(), first.size());
  EXPECT_TRUE(loader.load("nosuchkind").empty());
}

TEST_F(ModuleTest, GarbageFileFailsToOpenWithDlerror) {
  std::ofstream(tmp_ / "libmc_test_garbage.so") << "this is not an ELF file\n";
  ModuleLoader loader({tmp_.string()}, all());
  auto m = by_name(loader.load("test"));
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m["garbage"].state, ModuleState::OpenFailed);
  EXPECT_NE(m["garbage"].reason.find("libmc_test_garbage.so"), std::string::npos)
      << m["garbage"].reason;
}

TEST_F(ModuleTest, FilterAndShadowing) {
  fs::copy_file(fs::path(MC_TEST_MODULE_DIR) / "libmc_test_good.so", tmp_ / "libmc_test_good.so");
  config::AllowList only_good{false, {"good"}};
  ModuleLoader loader({tmp_.string(), MC_TEST_MODULE_DIR}, only_good);
  std::vector<ModuleInfo> infos = loader.load("test");
  int loaded = 0;
  for (const ModuleInfo& i : infos) {
    if (i.name == "good" && i.path == (tmp_ / "libmc_test_good.so").string()) {
      EXPECT_EQ(i.state, ModuleState::Loaded);
      ++loaded;
    } else if (i.name == "good") {
      EXPECT_EQ(i.state, ModuleState::Shadowed);
      EXPECT_NE(i.reason.find(tmp_.string()), std::string::npos);
    } else {
      EXPECT_EQ(i.state, ModuleState::Filtered) << i.name;
    }
  }
  EXPECT_EQ(loaded, 1);

  config::AllowList not_good{true, {"test_good", "failcreate"}};
  ModuleLoader loader2({MC_TEST_MODULE_DIR}, not_good);
  auto m = by_name(loader2.load("test"));
  EXPECT_EQ(m["good"].state, ModuleState::Filtered);
  EXPECT_EQ(m["failcreate"].state, ModuleState::Filtered);
  EXPECT_EQ(m["noentry"].state, ModuleState::NoEntry);
}

TEST_F(ModuleTest, LoadAllFindsKindsFromFileNames) {
  ModuleLoader loader({MC_TEST_MODULE_DIR, tmp_.string()}, all());
  std::ofstream(tmp_ / "libmc_other_thing.so") << "x";
  std::vector<ModuleInfo> infos = loader.load_all();
  bool saw_test = false, saw_other = false;
  for (const ModuleInfo& i : infos) {
    saw_test |= i.kind == "test";
    saw_other |= i.kind == "other" && i.name == "thing";
  }
  EXPECT_TRUE(saw_test);
  EXPECT_TRUE(saw_other);
}

TEST_F(ModuleTest, DefaultSearchPathIncludesBuildTreeAndLibdir) {
  const std::vector<std::string>& dirs = ModuleLoader::instance().search_path();
  const std::string lib = ucs_library_path();
  ASSERT_FALSE(lib.empty());
  EXPECT_NE(std::find(dirs.begin(), dirs.end(), fs::path(lib).parent_path().string() + "/mc"),
            dirs.end());
  EXPECT_NE(std::find(dirs.begin(), dirs.end(),
                      fs::canonical(MC_TOP_BUILDDIR).string() + "/modules"),
            dirs.end());
}

TEST_F(ModuleTest, SecondCopyOfUcsIsDetected) {
  std::vector<std::string> before = loaded_ucs_copies();
  ASSERT_EQ(before.size(), 1u);
  EXPECT_EQ(before[0], ucs_library_path());
  const fs::path copy = tmp_ / "libmc_ucs.so.0";
  fs::copy_file(ucs_library_path(), copy);
  void* handle = dlopen(copy.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  std::vector<std::string> after = loaded_ucs_copies();
  EXPECT_EQ(after.size(), 2u);
  EXPECT_NE(std::find(after.begin(), after.end(), copy.string()), after.end());
  dlclose(handle);
}

TEST(ModuleState, NamesAreDistinct) {
  EXPECT_STREQ(module_state_name(ModuleState::Loaded), "loaded");
  EXPECT_STREQ(module_state_name(ModuleState::AbiMismatch), "ABI mismatch");
  EXPECT_STRNE(module_state_name(ModuleState::NoEntry), module_state_name(ModuleState::OpenFailed));
}

}  // namespace
}  // namespace mc::ucs

// SPDX-License-Identifier: Apache-2.0
// Entry point of mc_gtest: logging from MC_LOG_LEVEL (warn by default), then
// every test (or a shard of them).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "ucs/log/log.h"

namespace {

// Under gtest's sharding (GTEST_TOTAL_SHARDS and GTEST_SHARD_INDEX:
// contrib/run-tests.sh runs the tests as shards at once), this process's
// share is chosen before the program starts. The variables then go, so that
// a process a test starts from this program to run one test
// (--gtest_filter) runs it instead of a shard of it, which may be nothing.
class ShardVariablesDropped : public testing::EmptyTestEventListener {
  void OnTestProgramStart(const testing::UnitTest&) override {
    unsetenv("GTEST_TOTAL_SHARDS");
    unsetenv("GTEST_SHARD_INDEX");
  }
};

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  testing::UnitTest::GetInstance()->listeners().Append(new ShardVariablesDropped);
#ifdef MC_TEST_SOFT_LIBRARY
  // The soft verbs provider of this build, for the ib modules here and in
  // every process the tests start (MC_IB_PROVIDER=soft).
  setenv("MC_IB_SOFT_LIBRARY", MC_TEST_SOFT_LIBRARY, 0);
#endif
  if (mc::ucs::is_error(mc::ucs::log_init(argv[0]))) return 1;
  const int rc = RUN_ALL_TESTS();
  // The soft verbs fabric of this run (see uct/uct_test.cc).
  const char* fabric = std::getenv("MC_IB_SOFT_FABRIC");
  if (fabric && std::string(fabric).starts_with("gtest-")) {
    std::remove((std::string("/dev/shm/mc-ibsoft-") + fabric).c_str());
  }
  return rc;
}

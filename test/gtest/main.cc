// SPDX-License-Identifier: Apache-2.0
// Entry point of mc_gtest: logging from MC_LOG_LEVEL (warn by default), then
// every test.
#include <gtest/gtest.h>

#include "ucs/log/log.h"

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  if (mc::ucs::is_error(mc::ucs::log_init(argv[0]))) return 1;
  return RUN_ALL_TESTS();
}

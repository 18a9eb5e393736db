# SPDX-License-Identifier: Apache-2.0
# GoogleTest and GoogleMock: the unit test binary test/gtest/mc_gtest.
AC_DEFUN([MC_CHECK_GTEST], [
  MC_CHECK_DEP([gtest], [GoogleTest],
    [#include <gtest/gtest.h>
     #include <gmock/gmock.h>],
    [testing::InitGoogleTest();], [-lgmock -lgtest -lpthread])
])

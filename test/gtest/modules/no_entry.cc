// SPDX-License-Identifier: Apache-2.0
// Test module without the entry symbol: a shared object that is not an mc module.
extern "C" __attribute__((visibility("default"))) int mc_test_not_an_entry(void) { return 42; }

// SPDX-License-Identifier: Apache-2.0
// A library the needsdep test module links against; its run path is
// /nowhere, so dlopen of that module fails naming this library.
extern "C" int mc_testdep_value(void) { return 7; }

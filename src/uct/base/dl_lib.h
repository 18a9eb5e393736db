// SPDX-License-Identifier: Apache-2.0
// A vendor library reached through dlopen/dlsym instead of linking it (the
// CUDA driver of the ib modules, cuFile of nvmeof): the module loads, and
// says why, on a machine without it.
#pragma once

#include <dlfcn.h>

#include <string>

namespace mc::uct {

/// dlopen(`library`, RTLD_NOW | RTLD_LOCAL): a name searched as usual, or a
/// path. Null when it cannot be loaded, with `*why` set to dlerror()'s text
/// ("libcufile.so.0: cannot open shared object file: No such file or directory").
inline void* dl_open(const std::string& library, std::string* why) {
  void* lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    *why = e ? e : library + ": dlopen failed";
  }
  return lib;
}

/// Sets `*out` to `symbol` of `lib`; false, with `*why` = "<library> lacks
/// symbol <symbol>", when it has none.
template <typename Fn>
bool dl_bind(void* lib, const std::string& library, const char* symbol, Fn* out, std::string* why) {
  void* p = dlsym(lib, symbol);
  if (!p) {
    *why = library + " lacks symbol " + symbol;
    return false;
  }
  *out = reinterpret_cast<Fn>(p);
  return true;
}

/// `symbol` of `lib` or null: for entry points only newer libraries have.
template <typename Fn>
Fn dl_find(void* lib, const char* symbol) {
  return reinterpret_cast<Fn>(dlsym(lib, symbol));
}

}  // namespace mc::uct

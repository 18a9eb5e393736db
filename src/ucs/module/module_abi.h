/* SPDX-License-Identifier: Apache-2.0 */
/* The module ABI: the one C symbol every loadable mc module exports, and the
 * versioned struct it returns. C-compatible so any toolchain can build one. */
#ifndef MC_UCS_MODULE_ABI_H
#define MC_UCS_MODULE_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Version of mc_module_desc_t and of the loader's contract with it. A module
 *  built for another version is refused with both versions named. */
#define MC_MODULE_ABI_VERSION_NUM 1
#define MC_MODULE_ABI_VERSION ((uint32_t)MC_MODULE_ABI_VERSION_NUM)

/** Name of the entry symbol each module exports. */
#define MC_MODULE_ENTRY_SYMBOL "mc_module_entry"

/** The C++ runtime a module is built with must match the one of mc: the kind
 *  interfaces (UCT components, metadata backends) are C++ classes. */
#if defined(_LIBCPP_VERSION)
#define MC_MODULE_CXX_RUNTIME "libc++"
#elif defined(__GLIBCXX__) && defined(_GLIBCXX_USE_CXX11_ABI) && _GLIBCXX_USE_CXX11_ABI
#define MC_MODULE_CXX_RUNTIME "libstdc++-cxx11"
#elif defined(__GLIBCXX__)
#define MC_MODULE_CXX_RUNTIME "libstdc++-old"
#else
#define MC_MODULE_CXX_RUNTIME "unknown"
#endif

#define MC_MODULE_STR2_(x) #x
#define MC_MODULE_STR_(x) MC_MODULE_STR2_(x)

/** Build tag: "abi<N>;<c++ runtime>". The loader requires an exact match. */
#define MC_MODULE_BUILD_TAG \
  "abi" MC_MODULE_STR_(MC_MODULE_ABI_VERSION_NUM) ";" MC_MODULE_CXX_RUNTIME

/** What a module's entry symbol returns. Fields are only ever appended;
 *  struct_size tells the loader which of them a module knows. */
typedef struct mc_module_desc {
  uint32_t abi_version;   /**< MC_MODULE_ABI_VERSION the module was built with */
  uint32_t struct_size;   /**< sizeof(mc_module_desc_t) at build time */
  const char *build_tag;  /**< MC_MODULE_BUILD_TAG at build time */
  const char *kind;       /**< "uct", "metadata", ... (the file's libmc_<kind>_) */
  const char *name;       /**< "tcp", ... (the file's _<name>.so) */
  const char *version;    /**< the module's own version, free text */
  uint32_t kind_version;  /**< version of the kind's interface that create() returns */
  /** Creates the kind's object (for "uct", a component). Returns 0 and sets
   *  *object, or non-zero with a reason in err. Never throws. */
  int (*create)(void **object, char *err, size_t err_len);
  /** Destroys what create() made. Never throws. */
  void (*destroy)(void *object);
} mc_module_desc_t;

typedef const mc_module_desc_t *(*mc_module_entry_fn_t)(void);

#ifdef __cplusplus
}
#endif

/** Defines the entry symbol of a module. Use once per module, at file scope:
 *  MC_MODULE_DEFINE("uct", "tcp", "1.0", 1, tcp_create, tcp_destroy) */
#ifdef __cplusplus
#define MC_MODULE_EXTERN_C_ extern "C"
#else
#define MC_MODULE_EXTERN_C_
#endif
#define MC_MODULE_DEFINE(kind_, name_, version_, kind_version_, create_, destroy_) \
  MC_MODULE_EXTERN_C_ __attribute__((visibility("default")))                    \
  const mc_module_desc_t *mc_module_entry(void) {                                \
    static const mc_module_desc_t desc = {MC_MODULE_ABI_VERSION,                 \
                                          (uint32_t)sizeof(mc_module_desc_t),    \
                                          MC_MODULE_BUILD_TAG,                   \
                                          kind_,                                 \
                                          name_,                                 \
                                          version_,                              \
                                          kind_version_,                         \
                                          create_,                               \
                                          destroy_};                             \
    return &desc;                                                                \
  }

#endif /* MC_UCS_MODULE_ABI_H */

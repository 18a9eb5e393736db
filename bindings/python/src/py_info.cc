// SPDX-License-Identifier: Apache-2.0
// info_json (mc_info -m / -d / -b --json), config_json (mc_info -c / -f
// --json) and config_check: every table registered first, as mc_info does.
#include "py_info.h"

#include <sstream>

#include "py_error.h"
#include "tools/info/info_build.h"
#include "ucp/api/config.h"
#include "ucp/metadata/config.h"
#include "ucp/metadata/store.h"
#include "ucp/te/te_config.h"
#include "ucs/config/registry.h"
#include "uct/base/component_loader.h"

namespace mc::py {

namespace pyb = pybind11;
using namespace pybind11::literals;

namespace {

// Every table: the layers', the loaded transports' and metadata backends'.
ucs::config::Registry& registry() {
  (void)uct::load_components();
  (void)metadata::load_store_factories();
  ucs::config::Registry& r = ucs::config::Registry::instance();
  ucp::register_ucp_config_tables(r);
  metadata::register_metadata_config_tables(r);
  te::register_te_config_tables(r);
  return r;
}

ucs::config::Sources process_sources() {
  std::string error;
  ucs::Result<ucs::config::Sources> s = ucs::config::Sources::from_process(&error);
  if (!s.ok()) throw StatusError{static_cast<int>(s.status()), error};
  return *s;
}

std::string info_json(const std::string& what) {
  std::ostringstream os;
  if (what == "modules") {
    info::print_modules_json(os);
  } else if (what == "devices") {
    info::print_devices_json(os);
  } else if (what == "build") {
    info::print_build(true, os);
  } else {
    throw StatusError{kInvalidParam, "info: '" + what + "' is not one of modules, devices, build"};
  }
  return os.str();
}

std::string config_json(bool full) {
  ucs::config::Registry& r = registry();
  std::ostringstream os;
  info::print_config_json(r, process_sources(), full, os);
  return os.str();
}

}  // namespace

void check_knob(const std::string& name, const std::string& value) {
  if (name.rfind("MC_", 0) != 0) {
    throw StatusError{kInvalidParam, "'" + name + "' is not an mc knob (they start with MC_)"};
  }
  ucs::config::Registry& r = registry();
  ucs::config::Sources s = process_sources();
  s.set(name, value, "mc.config");
  std::string error;
  const ucs::Status st = r.check(name, s, &error);
  if (st == ucs::Status::NoElem) {
    std::string msg = "unknown configuration variable " + name;
    ucs::Result<ucs::config::Sources> one = ucs::config::Sources::from({{name, value}}, {});
    for (const ucs::config::UnknownVar& u : r.find_unknown(one.value_or({}))) {
      if (u.name == name && !u.suggestion.empty()) msg += ", did you mean " + u.suggestion + "?";
    }
    throw StatusError{kNoElem, msg};
  }
  if (ucs::is_error(st)) throw StatusError{static_cast<int>(st), error};
}

void bind_info(pyb::module_& m) {
  m.def("info_json", &info_json, "what"_a,
        "mc_info's JSON of 'modules' (-m), 'devices' (-d) or 'build' (-b), as text.");
  m.def("config_json", &config_json, "full"_a = false,
        "mc_info -c --json (-f with full): every knob's value in force, origin and default.");
  m.def("config_check", &check_knob, "name"_a, "value"_a,
        "Checks a value for an MC_* knob as mc reads it: NoElemError, InvalidParamError.");
}

}  // namespace mc::py

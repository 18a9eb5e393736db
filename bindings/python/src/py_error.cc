// SPDX-License-Identifier: Apache-2.0
// StatusError -> the mc.errors class of its status, built by mc.errors itself
// so that the class hierarchy lives in one place (mc/errors.py).
#include "py_error.h"

namespace mc::py {

namespace pyb = pybind11;

int check(int rc, const std::string& what) {
  if (rc < 0) throw StatusError{rc, what};
  return rc;
}

void bind_errors(pyb::module_& m) {
  (void)m;
  pyb::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      pyb::object err = pyb::module_::import("mc.errors").attr("from_status")(e.status, e.message);
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(err.ptr())), err.ptr());
    }
  });
}

}  // namespace mc::py

// SPDX-License-Identifier: Apache-2.0
// memory_of: the four ways a Python object offers its memory, tried in the
// order that gives the most precise answer (a CUDA tensor also has
// data_ptr(); a numpy array has no data_ptr()).
#include "py_memory.h"

#include <cstdio>
#include <string>

#include "py_error.h"

namespace mc::py {

namespace pyb = pybind11;

namespace {

std::string type_name(pyb::handle obj) {
  return pyb::str(pyb::type::handle_of(obj).attr("__name__")).cast<std::string>();
}

// Cuts the object's own length to `length` when given.
void apply_length(Memory& m, std::optional<size_t> length, const std::string& name) {
  if (length) {
    if (*length > m.length) {
      throw StatusError{kInvalidParam, "length " + std::to_string(*length) +
                                           " is past the end of the " + name + " (" +
                                           std::to_string(m.length) + " B)"};
    }
    m.length = *length;
  }
  if (m.length == 0) throw StatusError{kInvalidParam, "the " + name + " has no bytes (length 0)"};
}

// The itemsize of an array-interface typestr ("<f4", "|u1").
size_t typestr_itemsize(const std::string& t) {
  if (t.size() < 3)
    throw StatusError{kInvalidParam, "__cuda_array_interface__: bad typestr '" + t + "'"};
  try {
    return std::stoul(t.substr(2));
  } catch (const std::exception&) {
    throw StatusError{kInvalidParam, "__cuda_array_interface__: bad typestr '" + t + "'"};
  }
}

Memory from_cuda_array_interface(pyb::handle obj) {
  const std::string name = type_name(obj) + " (__cuda_array_interface__)";
  pyb::dict cai = obj.attr("__cuda_array_interface__");
  Memory m;
  m.kind = "cuda_array_interface";
  m.type = "cuda";
  pyb::tuple data = cai["data"];
  m.addr = data[0].cast<uintptr_t>();
  m.readonly = data[1].cast<bool>();
  const size_t itemsize = typestr_itemsize(cai["typestr"].cast<std::string>());
  pyb::tuple shape = cai["shape"];
  size_t count = 1;
  for (pyb::handle d : shape) count *= d.cast<size_t>();
  if (cai.contains("strides") && !cai["strides"].is_none()) {
    // C order: each stride is the product of the later dimensions.
    pyb::tuple strides = cai["strides"];
    size_t expect = itemsize;
    for (size_t i = shape.size(); i-- > 0;) {
      const size_t dim = shape[i].cast<size_t>();
      if (dim > 1 && strides[i].cast<size_t>() != expect) {
        throw StatusError{kInvalidParam, "the " + name + " is not contiguous (strides)"};
      }
      expect *= dim;
    }
  }
  m.length = count * itemsize;
  if (pyb::hasattr(obj, "device") && pyb::hasattr(obj.attr("device"), "index") &&
      !obj.attr("device").attr("index").is_none()) {
    m.device = obj.attr("device").attr("index").cast<int>();
  }
  return m;
}

Memory from_data_ptr(pyb::handle obj) {
  const std::string name = type_name(obj) + " (data_ptr())";
  Memory m;
  m.kind = "data_ptr";
  if (pyb::hasattr(obj, "is_contiguous") && !obj.attr("is_contiguous")().cast<bool>()) {
    throw StatusError{kInvalidParam, "the " + name + " is not contiguous"};
  }
  m.addr = obj.attr("data_ptr")().cast<uintptr_t>();
  if (pyb::hasattr(obj, "nbytes")) {
    m.length = obj.attr("nbytes").cast<size_t>();
  } else if (pyb::hasattr(obj, "numel") && pyb::hasattr(obj, "element_size")) {
    m.length = obj.attr("numel")().cast<size_t>() * obj.attr("element_size")().cast<size_t>();
  } else {
    throw StatusError{kInvalidParam,
                      "the " + name + " has neither nbytes nor numel() and element_size()"};
  }
  if (pyb::hasattr(obj, "device")) {
    pyb::object dev = obj.attr("device");
    const std::string t =
        pyb::hasattr(dev, "type") ? pyb::str(dev.attr("type")).cast<std::string>() : "cpu";
    if (t == "cuda")
      m.type = "cuda";
    else if (t != "cpu")
      throw StatusError{kUnsupported,
                        "the " + name + " is on a '" + t + "' device (mc knows cpu and cuda)"};
    if (pyb::hasattr(dev, "index") && !dev.attr("index").is_none())
      m.device = dev.attr("index").cast<int>();
  }
  return m;
}

Memory from_buffer(pyb::handle obj) {
  const std::string name = type_name(obj);
  auto* raw = new Py_buffer{};
  if (PyObject_GetBuffer(obj.ptr(), raw, PyBUF_RECORDS_RO) != 0) {
    delete raw;
    PyErr_Clear();
    throw StatusError{kInvalidParam, "a " + name + " offers no buffer"};
  }
  std::shared_ptr<Py_buffer> view(raw, [](Py_buffer* v) {
    PyBuffer_Release(v);
    delete v;
  });
  if (!PyBuffer_IsContiguous(view.get(), 'C')) {
    throw StatusError{kInvalidParam, "the " + name + " is not contiguous (strides)"};
  }
  Memory m;
  m.kind = "buffer";
  m.addr = reinterpret_cast<uintptr_t>(view->buf);
  m.length = static_cast<size_t>(view->len);
  m.readonly = view->readonly != 0;
  m.view = std::move(view);
  return m;
}

}  // namespace

std::string hex(uintptr_t addr) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(addr));
  return buf;
}

std::string Memory::location() const {
  return type == "cuda" ? "cuda:" + std::to_string(device < 0 ? 0 : device) : "*";
}

Memory memory_of(pyb::handle obj, std::optional<size_t> length) {
  if (PyLong_Check(obj.ptr()) && !PyBool_Check(obj.ptr())) {
    Memory m;
    m.kind = "address";
    m.addr = obj.cast<uintptr_t>();
    if (m.addr == 0) throw StatusError{kInvalidParam, "address 0"};
    if (!length) throw StatusError{kInvalidParam, "a raw address needs a length"};
    m.length = *length;
    apply_length(m, length, "raw address");
    return m;
  }
  Memory m;
  std::string name = type_name(obj);
  if (pyb::hasattr(obj, "__cuda_array_interface__")) {
    m = from_cuda_array_interface(obj);
  } else if (pyb::hasattr(obj, "data_ptr")) {
    m = from_data_ptr(obj);
  } else if (PyObject_CheckBuffer(obj.ptr())) {
    m = from_buffer(obj);
  } else {
    throw StatusError{kInvalidParam,
                      "a " + name +
                          " has no memory mc can take (buffer protocol, "
                          "__cuda_array_interface__, data_ptr(), or an int address)"};
  }
  m.owner = pyb::reinterpret_borrow<pyb::object>(obj);
  apply_length(m, length, name);
  return m;
}

}  // namespace mc::py

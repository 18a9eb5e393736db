// SPDX-License-Identifier: Apache-2.0
// Memory from Python objects, without copies: anything with the buffer
// protocol (bytes, bytearray, memoryview, numpy arrays), raw addresses with
// lengths, and objects with __cuda_array_interface__ or data_ptr() (torch-
// style tensors), each with its memory type and device.
#pragma once

#include <pybind11/pybind11.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace mc::py {

/// A contiguous range of memory and what it is. `view` holds a buffer
/// export (a bytearray cannot be resized while it is held); `owner` keeps
/// the object alive. Destroy only with the GIL held.
struct Memory {
  uintptr_t addr = 0;
  size_t length = 0;
  bool readonly = false;
  std::string type = "cpu";  ///< "cpu" or "cuda"
  int device = -1;           ///< the GPU of "cuda" memory; -1 when not known
  std::string kind;  ///< how it was taken: "buffer", "address", "cuda_array_interface", "data_ptr"
  pybind11::object owner;
  std::shared_ptr<Py_buffer> view;

  /// mc's location for it: "cuda:N" (N = 0 when the device is not known)
  /// or "*" (host memory: the engine detects the NUMA node).
  std::string location() const;
};

/// "0x7f..." for messages.
std::string hex(uintptr_t addr);

/// The memory of `obj`: an int is an address and needs `length`; any other
/// object gives its own length, cut to `length` when given (never past its
/// end). Raises InvalidParamError for a non-contiguous array, a length past
/// the object, a zero length, or an object offering none of the four ways.
Memory memory_of(pybind11::handle obj, std::optional<size_t> length);

}  // namespace mc::py

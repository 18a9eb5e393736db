// SPDX-License-Identifier: Apache-2.0
// mc._mc: the extension module of the mc package (bindings/python/mc).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "protocol.h"
#include "py_engine.h"
#include "py_error.h"
#include "py_info.h"

namespace pyb = pybind11;

PYBIND11_MODULE(_mc, m) {
  m.doc() = "mc's Transfer Engine (the mc package's native half)";
  mc::py::bind_errors(m);
  mc::py::bind_engine(m);
  mc::py::bind_batch(m);
  mc::py::bind_info(m);
  m.def(
      "mooncake_protocol_tls",
      [](const std::string& protocol) -> std::optional<std::string> {
        const mooncake::ProtocolTls* p = mooncake::find_protocol_tls(protocol);
        if (p == nullptr) return std::nullopt;
        return mooncake::protocols_tls({protocol});
      },
      pyb::arg("protocol"),
      "MC_TLS for Mooncake's protocol (tcp, rdma, nvmeof: '' for none), as installTransport maps "
      "it; None for a protocol mc does not offer.");
}

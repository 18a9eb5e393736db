// SPDX-License-Identifier: Apache-2.0
// Text of each status code.
#include "ucs/status/status.h"

namespace mc::ucs {

const char* status_string(Status status) {
  switch (status) {
    case Status::Ok: return "success";
    case Status::InProgress: return "operation in progress";
    case Status::NoResource: return "no resource";
    case Status::Unreachable: return "destination is unreachable";
    case Status::InvalidParam: return "invalid parameter";
    case Status::IoError: return "input/output error";
    case Status::Timeout: return "timed out";
    case Status::Canceled: return "canceled";
    case Status::Unsupported: return "unsupported operation";
    case Status::NoMemory: return "out of memory";
    case Status::NoDevice: return "no such device";
    case Status::NoElem: return "no such element";
    case Status::Busy: return "device or resource busy";
    case Status::ConnectionReset: return "connection reset by remote peer";
    case Status::Exists: return "element already exists";
    case Status::MessageTruncated: return "message truncated";
    case Status::VersionMismatch: return "version mismatch";
    case Status::BadData: return "malformed data";
    case Status::Rejected: return "rejected by the peer";
  }
  return "unknown status";
}

}  // namespace mc::ucs

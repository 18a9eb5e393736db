// SPDX-License-Identifier: Apache-2.0
// Memory location parsing and NUMA detection (see location.h).
#include "ucp/te/location.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdint>

#include "ucs/sys/sys.h"

namespace mc::te {

bool location_valid(const std::string& location) {
  if (location == "*") return true;
  std::string_view rest;
  if (location.starts_with("cpu:"))
    rest = std::string_view(location).substr(4);
  else if (location.starts_with("cuda:"))
    rest = std::string_view(location).substr(5);
  else
    return false;
  unsigned n = 0;
  const auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), n);
  return !rest.empty() && ec == std::errc() && ptr == rest.data() + rest.size() && n < 4096;
}

bool location_is_gpu(const std::string& location) { return location.starts_with("cuda:"); }

ucs::Result<std::string> detect_location(const void* addr, size_t len, std::string* error) {
  (void)len;
  const uintptr_t page = ucs::page_size();
  void* pages[1] = {reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(addr) & ~(page - 1))};
  int status[1] = {-1};
  // move_pages with nodes == NULL only reports where each page is.
  const long rc = ::syscall(SYS_move_pages, 0, 1UL, pages, nullptr, status, 0);
  if (rc != 0) {
    *error = "move_pages: " + ucs::errno_string(errno);
    return ucs::Status::NoElem;
  }
  if (status[0] < 0) {
    *error = "move_pages reports " + ucs::errno_string(-status[0]) + " for the first page";
    return ucs::Status::NoElem;
  }
  return "cpu:" + std::to_string(status[0]);
}

}  // namespace mc::te

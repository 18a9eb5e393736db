// SPDX-License-Identifier: Apache-2.0
// Cross-memory attach copies.
#include "uct/sm/sm_cma.h"

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <iterator>
#include <vector>

#include "ucs/log/log.h"
#include "ucs/sys/sys.h"

namespace mc::uct::sm {

namespace {

constexpr size_t kMaxIov = 1024;  // IOV_MAX: the kernel refuses more

}  // namespace

std::string ptrace_scope() {
  std::ifstream in("/proc/sys/kernel/yama/ptrace_scope");
  std::string value;
  if (!(in >> value)) return "absent (no Yama LSM)";
  return value;
}

ucs::Status cma_copy(pid_t pid, bool write, const iovec* iov, size_t count, uint64_t remote_addr,
                     size_t total) {
  if (count > kMaxIov) return ucs::Status::InvalidParam;
  // A copy to advance over partial transfers; on the stack for the usual
  // few entries.
  iovec small[16];
  std::vector<iovec> large;
  iovec* local = small;
  if (count > std::size(small)) {
    large.assign(iov, iov + count);
    local = large.data();
  } else {
    std::copy(iov, iov + count, small);
  }
  size_t first = 0;
  size_t done = 0;
  while (done < total) {
    iovec remote{reinterpret_cast<void*>(remote_addr + done), total - done};
    const ssize_t n = write ? process_vm_writev(pid, local + first, count - first, &remote, 1, 0)
                            : process_vm_readv(pid, local + first, count - first, &remote, 1, 0);
    if (n < 0) {
      const int err = errno;
      if (err == EPERM || err == ENOSYS) {
        MC_LOG_ONCE(error)
            << "sm: cross-memory attach (" << (write ? "process_vm_writev" : "process_vm_readv")
            << " to pid " << pid << ") is not permitted: " << ucs::errno_string(err)
            << "; /proc/sys/kernel/yama/ptrace_scope is " << ptrace_scope()
            << " (0 lets processes of one user attach to each other; 1 only to "
               "descendants). Put/get of registered memory now go through the shared-memory "
               "ring instead (slower); set MC_SM_CMA=n to skip the attempt";
        return ucs::Status::Unsupported;
      }
      if (err == ESRCH) return ucs::Status::ConnectionReset;
      MC_LOG(error) << "sm: " << (write ? "process_vm_writev" : "process_vm_readv") << " of "
                    << total - done << " bytes at 0x" << std::hex << remote_addr + done << std::dec
                    << " in pid " << pid << " failed: " << ucs::errno_string(err);
      return ucs::Status::IoError;
    }
    if (n == 0) {
      MC_LOG(error) << "sm: cross-memory attach to pid " << pid << " made no progress at 0x"
                    << std::hex << remote_addr + done << std::dec;
      return ucs::Status::IoError;
    }
    done += static_cast<size_t>(n);
    // A partial transfer stops at a page the kernel could not reach or at
    // its own chunk limit: skip what was copied and go on.
    size_t skip = static_cast<size_t>(n);
    while (first < count && skip >= local[first].iov_len) {
      skip -= local[first].iov_len;
      ++first;
    }
    if (first < count) {
      local[first].iov_base = static_cast<uint8_t*>(local[first].iov_base) + skip;
      local[first].iov_len -= skip;
    }
  }
  return ucs::Status::Ok;
}

}  // namespace mc::uct::sm

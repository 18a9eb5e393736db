// SPDX-License-Identifier: Apache-2.0
// A fake cuFile library (libmc_test_fakecufile.so) for the nvmeof GPU tests,
// where there is no GPU and no GPUDirect Storage: the entry points nvmeof
// dlsyms, with cufile.h's ABI (uct/nvmeof/cufile_abi.h), over the tests'
// fake GPU memory (ucp/fake_gpu.h: host memory that the fake md reports as
// CUDA, so the CPU reaches it), moved with pread/pwrite. It counts its calls
// and bytes, so a test can tell cuFile carried the data, and can be told to
// fail (a negative return) or to refuse its driver. The test reaches the
// counters by dlsym on the same library.
#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <map>
#include <mutex>

#include "uct/nvmeof/cufile_abi.h"

namespace cf = mc::uct::nvmeof::cufile;

/// What the test reads (mc_fake_cufile_stats) and sets (mc_fake_cufile_fail).
struct FakeCufileStats {
  long driver_open, driver_close, handle_register, handle_deregister, reads, writes;
  long read_bytes, write_bytes;
  long handles;  ///< registered now
};

namespace {

std::mutex lock;
FakeCufileStats stats{};
long fail_at = 0;      // the transfer (counted from 1) that fails; 0: none
ssize_t fail_ret = 0;  // what it returns (-1 sets errno EIO)
int driver_error = 0;  // what cuFileDriverOpen returns
// Registered handles: a descriptor of the same file without O_DIRECT (real
// cuFile moves unaligned pieces through its own buffers; pread on an
// O_DIRECT descriptor would refuse them).
std::map<int*, int> handles;

ssize_t transfer(cf::Handle fh, bool write, char* buf, size_t size, off_t offset) {
  int fd = -1;
  {
    std::lock_guard guard(lock);
    auto it = handles.find(static_cast<int*>(fh));
    if (it == handles.end()) return -5027;  // CU_FILE_HANDLE_NOT_REGISTERED
    fd = it->second;
    ++(write ? stats.writes : stats.reads);
    if (fail_at != 0 && stats.reads + stats.writes == fail_at) {
      if (fail_ret == -1) errno = EIO;
      return fail_ret;
    }
  }
  const ssize_t n = write ? pwrite(fd, buf, size, offset) : pread(fd, buf, size, offset);
  if (n > 0) {
    std::lock_guard guard(lock);
    (write ? stats.write_bytes : stats.read_bytes) += n;
  }
  return n;
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) cf::Error cuFileDriverOpen() {
  std::lock_guard guard(lock);
  if (driver_error != 0) return {driver_error, 0};
  ++stats.driver_open;
  return {cf::kSuccess, 0};
}

__attribute__((visibility("default"))) cf::Error cuFileDriverClose_v2() {
  std::lock_guard guard(lock);
  ++stats.driver_close;
  return {cf::kSuccess, 0};
}

__attribute__((visibility("default"))) cf::Error cuFileHandleRegister(cf::Handle* fh,
                                                                      cf::Descr* descr) {
  if (descr->type != cf::kHandleTypeOpaqueFd || descr->fs_ops != nullptr) return {5022, 0};
  char proc[64];
  std::snprintf(proc, sizeof(proc), "/proc/self/fd/%d", descr->handle.fd);
  const int flags = fcntl(descr->handle.fd, F_GETFL);
  if (flags < 0) return {5022, 0};  // CU_FILE_INVALID_VALUE
  const int fd = open(proc, (flags & O_ACCMODE) | O_CLOEXEC);
  if (fd < 0) return {5018, 0};  // CU_FILE_INVALID_FILE_TYPE
  std::lock_guard guard(lock);
  ++stats.handle_register;
  ++stats.handles;
  int* h = new int(fd);
  handles[h] = fd;
  *fh = h;
  return {cf::kSuccess, 0};
}

__attribute__((visibility("default"))) void cuFileHandleDeregister(cf::Handle fh) {
  std::lock_guard guard(lock);
  auto it = handles.find(static_cast<int*>(fh));
  if (it == handles.end()) return;
  close(it->second);
  delete it->first;
  handles.erase(it);
  ++stats.handle_deregister;
  --stats.handles;
}

__attribute__((visibility("default"))) ssize_t cuFileRead(cf::Handle fh, void* base, size_t size,
                                                          off_t file_offset, off_t buf_offset) {
  return transfer(fh, false, static_cast<char*>(base) + buf_offset, size, file_offset);
}

__attribute__((visibility("default"))) ssize_t cuFileWrite(cf::Handle fh, const void* base,
                                                           size_t size, off_t file_offset,
                                                           off_t buf_offset) {
  return transfer(fh, true, const_cast<char*>(static_cast<const char*>(base)) + buf_offset, size,
                  file_offset);
}

/// The counters since the last reset.
__attribute__((visibility("default"))) FakeCufileStats mc_fake_cufile_stats() {
  std::lock_guard guard(lock);
  return stats;
}

/// Zeroes the counters and clears the faults.
__attribute__((visibility("default"))) void mc_fake_cufile_reset() {
  std::lock_guard guard(lock);
  const long open_handles = stats.handles;
  stats = FakeCufileStats{};
  stats.handles = open_handles;
  fail_at = 0;
  fail_ret = 0;
  driver_error = 0;
}

/// Makes the `at`-th transfer from now (1: the next) return `ret` without
/// moving data (-1: with errno EIO; -5xxx: a CUfileOpError).
__attribute__((visibility("default"))) void mc_fake_cufile_fail(long at, long ret) {
  std::lock_guard guard(lock);
  fail_at = at == 0 ? 0 : stats.reads + stats.writes + at;
  fail_ret = ret;
}

/// Makes cuFileDriverOpen return the CUfileOpError `err` (0: succeed).
__attribute__((visibility("default"))) void mc_fake_cufile_fail_driver(int err) {
  std::lock_guard guard(lock);
  driver_error = err;
}

}  // extern "C"

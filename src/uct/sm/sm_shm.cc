// SPDX-License-Identifier: Apache-2.0
// POSIX shm segments: create, attach, unlink, and the stale-segment scan.
#include "uct/sm/sm_shm.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cinttypes>
#include <cstdio>

#include "ucs/log/log.h"
#include "ucs/sys/sys.h"
#include "uct/sm/sm_proc.h"

namespace mc::uct::sm {

namespace {

constexpr const char* kShmDir = "/dev/shm";

uint64_t random_u64() {
  uint64_t v = 0;
  if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v)) {
    // Uniqueness still holds (pid + counter); only unguessability suffers.
    v = ucs::monotonic_ns() * 0x9e3779b97f4a7c15ull;
  }
  return v;
}

// A segment counter shared by rings and memory, unique in the process.
uint32_t next_counter() {
  static std::atomic<uint32_t> counter{0};
  return ++counter;
}

}  // namespace

std::string SegmentName::str() const {
  char buf[80];
  std::snprintf(buf, sizeof(buf), "mc-sm-%" PRIu32 "-%c%" PRIu32 "-%016" PRIx64, pid,
                static_cast<char>(kind), counter, random);
  return buf;
}

std::optional<uint32_t> SegmentName::owner_of(std::string_view name) {
  if (!name.starts_with(kSegPrefix)) return std::nullopt;
  name.remove_prefix(kSegPrefix.size());
  uint32_t pid = 0;
  auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), pid);
  if (ec != std::errc() || end == name.data() || end == name.data() + name.size() || *end != '-') {
    return std::nullopt;
  }
  return pid;
}

size_t ShmSegment::header_size() {
  return ucs::page_size();
}

Result<std::unique_ptr<ShmSegment>> ShmSegment::create(SegKind kind, size_t data_size) {
  const size_t page = header_size();
  if (data_size > SIZE_MAX / 2) return Status::InvalidParam;
  data_size = (data_size + page - 1) / page * page;
  SegmentName name{static_cast<uint32_t>(getpid()), kind, next_counter(), random_u64()};
  const std::string path = "/" + name.str();
  const int fd = shm_open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    MC_LOG(error) << "sm: shm_open(" << path << ") failed: " << ucs::errno_string(errno);
    return Status::IoError;
  }
  const size_t map_size = page + data_size;
  void* base = MAP_FAILED;
  if (ftruncate(fd, static_cast<off_t>(map_size)) != 0) {
    MC_LOG(error) << "sm: cannot size " << path << " to " << map_size
                  << " bytes: " << ucs::errno_string(errno);
  } else {
    base = mmap(nullptr, map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
      MC_LOG(error) << "sm: cannot map " << path << " (" << map_size
                    << " bytes): " << ucs::errno_string(errno);
    }
  }
  close(fd);
  if (base == MAP_FAILED) {
    shm_unlink(path.c_str());
    return Status::NoMemory;
  }
  // The magic goes last: a concurrent stale-segment scan in another process
  // must never see a header that names its owner but not yet its start time
  // (it would take a live owner for a dead one and unlink the segment).
  auto* h = static_cast<SegmentHeader*>(base);
  h->version = kSegVersion;
  h->kind = static_cast<uint32_t>(kind);
  h->owner_pid = name.pid;
  h->owner_start = own_start_time();
  h->boot_hash = ucs::boot_id_hash();
  h->pid_ns = pid_ns_inode();
  h->data_size = data_size;
  std::atomic_thread_fence(std::memory_order_release);
  reinterpret_cast<std::atomic<decltype(h->magic)>*>(&h->magic)->store(kSegMagic,
                                                                       std::memory_order_release);
  return std::unique_ptr<ShmSegment>(
      new ShmSegment(name, static_cast<uint8_t*>(base), map_size, data_size, true));
}

Result<std::unique_ptr<ShmSegment>> ShmSegment::attach(const SegmentName& name,
                                                       uint64_t owner_start) {
  const std::string path = "/" + name.str();
  const int fd = shm_open(path.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) {
    MC_LOG(error) << "sm: cannot open peer segment " << path << ": " << ucs::errno_string(errno);
    return Status::Unreachable;
  }
  const size_t page = header_size();
  struct stat st {};
  SegmentHeader h{};
  const bool sized = fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) >= page &&
                     pread(fd, &h, sizeof(h), 0) == static_cast<ssize_t>(sizeof(h));
  const bool valid = sized && h.magic == kSegMagic && h.version == kSegVersion &&
                     h.kind == static_cast<uint32_t>(name.kind) && h.owner_pid == name.pid &&
                     (owner_start == 0 || h.owner_start == owner_start) &&
                     h.boot_hash == ucs::boot_id_hash() && h.pid_ns == pid_ns_inode() &&
                     h.data_size <= static_cast<size_t>(st.st_size) - page;
  if (!valid) {
    close(fd);
    MC_LOG(error) << "sm: segment " << path << " has a header that does not match its name, "
                  << "owner, boot or version";
    return Status::BadData;
  }
  const size_t map_size = page + h.data_size;
  void* base = mmap(nullptr, map_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED) {
    MC_LOG(error) << "sm: cannot map peer segment " << path << " (" << map_size
                  << " bytes): " << ucs::errno_string(errno);
    return Status::NoMemory;
  }
  return std::unique_ptr<ShmSegment>(
      new ShmSegment(name, static_cast<uint8_t*>(base), map_size, h.data_size, false));
}

ShmSegment::~ShmSegment() {
  munmap(base_, map_size_);
  if (owner_) {
    const std::string path = "/" + name_.str();
    if (shm_unlink(path.c_str()) != 0 && errno != ENOENT) {
      MC_LOG(warn) << "sm: cannot remove " << path << ": " << ucs::errno_string(errno);
    }
  }
}

size_t remove_stale_segments() {
  DIR* dir = opendir(kShmDir);
  if (!dir) {
    MC_LOG(debug) << "sm: cannot scan " << kShmDir << ": " << ucs::errno_string(errno);
    return 0;
  }
  const uint32_t self = static_cast<uint32_t>(getpid());
  const uint64_t boot = ucs::boot_id_hash();
  const uint64_t ns = pid_ns_inode();
  size_t removed = 0;
  while (const dirent* e = readdir(dir)) {
    const std::string_view name(e->d_name);
    const std::optional<uint32_t> pid = SegmentName::owner_of(name);
    if (!pid || *pid == self) continue;
    const int fd = openat(dirfd(dir), e->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) continue;  // another user's segment, or already gone
    SegmentHeader h{};
    const bool read_ok = pread(fd, &h, sizeof(h), 0) == static_cast<ssize_t>(sizeof(h));
    close(fd);
    // A segment without a valid header may be one being created right now:
    // its header is written before its name is handed to anyone, but after
    // the file appears. Leave it.
    if (!read_ok || h.magic != kSegMagic || h.owner_pid != *pid || h.owner_start == 0) continue;
    const bool other_boot = h.boot_hash != boot;
    if (!other_boot && h.pid_ns != ns) continue;  // its pid means another process here
    if (!other_boot && process_alive(static_cast<pid_t>(*pid), h.owner_start)) continue;
    const std::string path = "/" + std::string(name);
    if (shm_unlink(path.c_str()) == 0) {
      MC_LOG(info) << "sm: removed stale segment " << kShmDir << path << " of dead process "
                   << *pid;
      ++removed;
    } else if (errno != ENOENT) {
      MC_LOG(debug) << "sm: cannot remove stale " << path << ": " << ucs::errno_string(errno);
    }
  }
  closedir(dir);
  return removed;
}

}  // namespace mc::uct::sm

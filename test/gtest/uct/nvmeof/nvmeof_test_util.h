// SPDX-License-Identifier: Apache-2.0
// Helpers of the nvmeof tests: a temporary directory, pattern files, and
// reading a file back.
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

namespace mc::uct::nvmeof::test {

/// Byte `i` of the pattern of `seed`.
inline uint8_t pattern(uint64_t seed, uint64_t i) {
  return static_cast<uint8_t>((i * 131 + seed * 7 + (i >> 8)) & 0xff);
}

inline std::vector<uint8_t> pattern_bytes(uint64_t seed, uint64_t from, size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = pattern(seed, from + i);
  return v;
}

/// A directory under $TMPDIR (or /var/tmp, which is rarely tmpfs, so that
/// O_DIRECT is exercised), removed with its files.
class TempDir {
 public:
  TempDir() {
    const char* base = getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/var/tmp") + "/mc_nvmeof_XXXXXX";
    if (mkdtemp(tmpl.data())) path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  bool ok() const { return !path_.empty(); }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

/// Writes `size` bytes of the pattern of `seed` to `path`; false on error.
inline bool write_pattern_file(const std::string& path, size_t size, uint64_t seed) {
  FILE* f = fopen(path.c_str(), "wb");
  if (!f) return false;
  const std::vector<uint8_t> v = pattern_bytes(seed, 0, size);
  const bool ok = v.empty() || fwrite(v.data(), 1, v.size(), f) == v.size();  // data() may be null
  return fclose(f) == 0 && ok;
}

/// The whole file, read back with plain read().
inline std::vector<uint8_t> read_file(const std::string& path) {
  std::vector<uint8_t> out;
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return out;
  uint8_t buf[65536];
  for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) > 0;) out.insert(out.end(), buf, buf + n);
  ::close(fd);
  return out;
}

inline uint64_t file_size(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

/// Memory aligned to 4 KiB (for O_DIRECT), freed with free().
struct AlignedBuffer {
  explicit AlignedBuffer(size_t n) : size(n) {
    if (posix_memalign(reinterpret_cast<void**>(&data), 4096, n + 4096) != 0) data = nullptr;
  }
  ~AlignedBuffer() { free(data); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  uint8_t* data = nullptr;
  size_t size;
};

}  // namespace mc::uct::nvmeof::test

// SPDX-License-Identifier: Apache-2.0
// POSIX shared-memory segments of sm (/dev/shm/mc-sm-*): receive rings and
// sm-allocated memory. Each starts with a header page naming its owner, so
// the segments of crashed processes can be found and removed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "ucs/status/status.h"

namespace mc::uct::sm {

using ucs::Result;
using ucs::Status;

enum class SegKind : char { Ring = 'r', Memory = 'm' };

/// Every sm segment name starts with this.
inline constexpr std::string_view kSegPrefix = "mc-sm-";

/// A segment's name, "mc-sm-<pid>-<kind><counter>-<random, 16 hex digits>":
/// unique per process (counter) and not guessable (random). Peers rebuild it
/// from addresses and rkeys, so a peer never opens a name it was handed.
struct SegmentName {
  uint32_t pid = 0;
  SegKind kind = SegKind::Ring;
  uint32_t counter = 0;
  uint64_t random = 0;

  std::string str() const;
  /// The owner pid of "mc-sm-<pid>-...", or nullopt for other names.
  static std::optional<uint32_t> owner_of(std::string_view name);
};

/// The first page of every segment. Written once by the creator before any
/// peer learns the name; read-only afterwards.
struct SegmentHeader {
  uint64_t magic;    ///< kSegMagic
  uint32_t version;  ///< kSegVersion
  uint32_t kind;     ///< SegKind
  uint64_t owner_pid;
  uint64_t owner_start;  ///< process_start_time() of the owner
  uint64_t boot_hash;    ///< ucs::boot_id_hash()
  uint64_t pid_ns;       ///< pid_ns_inode() of the owner
  uint64_t data_size;    ///< bytes after the header page
};

inline constexpr uint64_t kSegMagic = 0x31474553534d434dull;  // "MCMSSEG1"
inline constexpr uint32_t kSegVersion = 1;

/// A mapped segment. The creator's object unlinks the name when destroyed;
/// every object unmaps.
class ShmSegment {
 public:
  /// Creates (O_EXCL, mode 0600), sizes and maps a segment with `data_size`
  /// bytes after the header page. NoMemory / IoError, logged, on failure.
  static Result<std::unique_ptr<ShmSegment>> create(SegKind kind, size_t data_size);

  /// Maps a segment another process (or this one) created, after checking
  /// its header: magic, version, kind, owner pid, `owner_start` when not 0,
  /// boot and pid namespace, and that the file holds data_size bytes.
  /// Unreachable when it does not exist; BadData when it does not match.
  static Result<std::unique_ptr<ShmSegment>> attach(const SegmentName& name, uint64_t owner_start);

  ~ShmSegment();
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  const SegmentName& name() const { return name_; }
  uint8_t* data() const { return base_ + header_size(); }
  size_t data_size() const { return data_size_; }
  const SegmentHeader& header() const { return *reinterpret_cast<SegmentHeader*>(base_); }

  /// Bytes before the data: one page.
  static size_t header_size();

 private:
  ShmSegment(SegmentName name, uint8_t* base, size_t map_size, size_t data_size, bool owner)
      : name_(name), base_(base), map_size_(map_size), data_size_(data_size), owner_(owner) {}

  SegmentName name_;
  uint8_t* base_;
  size_t map_size_;
  size_t data_size_;
  bool owner_;
};

/// Unlinks the /dev/shm/mc-sm-* segments whose owner is dead (or whose
/// header says another boot), in this boot and pid namespace; segments of
/// live processes, of other namespaces, or without a valid header are left
/// alone. Returns how many were removed.
size_t remove_stale_segments();

}  // namespace mc::uct::sm

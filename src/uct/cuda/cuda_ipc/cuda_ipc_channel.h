// SPDX-License-Identifier: Apache-2.0
// The owner-to-peer channel of cuda_ipc, over an abstract unix socket
// (SOCK_SEQPACKET) per owner process:
//   - a peer asks to open an export (its id and secret token); the owner
//     answers yes (with the POSIX fd of a VMM allocation, by SCM_RIGHTS) or
//     no (not registered: stale or forged; wrong token: forged);
//   - when the owner unregisters an export, it tells every peer that opened
//     it; when the owner process ends, its peers see the socket close.
// Messages are one fixed 64-byte record, little-endian on one host:
//   u32 magic "mcip" | u16 version | u16 op | u64 export id | u64 token |
//   i32 status | u32 zero | u64 alloc base | u64 alloc length | u64 reg base |
//   u64 reg length
// An open request carries the ranges of the peer's rkey; the owner refuses
// one that is not what it exported, so a peer never maps more than that.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "ucs/status/status.h"

namespace mc::uct::cuda {

/// The answer to an open request.
enum class IpcOpenAnswer : int32_t {
  Ok = 0,
  NotRegistered = 1,  ///< no such export now: unregistered (stale) or never made (forged)
  BadToken = 2,       ///< the export exists, the token is wrong (forged)
  BadRange = 3,       ///< the ranges are not those exported (forged or corrupted)
};

/// The ranges of an export, owner's addresses.
struct IpcExportRange {
  uint64_t alloc_base = 0;
  uint64_t alloc_length = 0;
  uint64_t reg_base = 0;
  uint64_t reg_length = 0;
  bool operator==(const IpcExportRange&) const = default;
};

/// The owner's side: one per memory domain, with a thread that answers.
class IpcServer {
 public:
  /// Binds "mc-cuda-ipc-<pid>-<random>" in the abstract namespace and starts
  /// the answering thread. IoError (logged) when the socket cannot be made.
  static ucs::Result<std::unique_ptr<IpcServer>> create();
  ~IpcServer();

  const std::string& name() const { return name_; }

  /// Makes an export: its id and a random token; `fd` (or -1) is given to
  /// each peer that opens it, and closed by remove().
  uint64_t add(int fd, const IpcExportRange& range, uint64_t* token);
  /// Forgets an export and tells the peers that opened it.
  void remove(uint64_t export_id);

 private:
  struct Export {
    uint64_t token;
    int fd;
    IpcExportRange range;
    std::set<int> opened_by;  // connections
  };
  IpcServer() = default;
  void run();
  void serve(int conn);

  std::string name_;
  int listen_fd_ = -1;
  int stop_fd_ = -1;  // eventfd
  std::thread thread_;
  std::mutex lock_;  // guards exports_, conns_, next_id_ and every write to a connection
  std::map<uint64_t, Export> exports_;
  std::set<int> conns_;
  uint64_t next_id_ = 1;
};

/// The peers' side: one connection per owner socket, made on first use.
class IpcClient {
 public:
  IpcClient() = default;
  ~IpcClient();
  IpcClient(const IpcClient&) = delete;
  IpcClient& operator=(const IpcClient&) = delete;

  /// Asks the owner at `socket` to open `export_id`; the fd it passes (or
  /// -1) in `*fd`. Ok; NoElem with `*why` when the owner refuses (stale or
  /// forged); Unreachable with `*why` when the owner has gone ("connect:
  /// Connection refused"); IoError on a protocol error.
  ucs::Status open(const std::string& socket, uint64_t export_id, uint64_t token,
                   const IpcExportRange& range, int* fd, std::string* why);

  /// An owner's notice: export `id` of `socket` is gone (id 0: the whole
  /// owner process has gone).
  using Invalidate = std::function<void(const std::string& socket, uint64_t id)>;
  /// Reads what owners sent since the last call, without blocking; calls
  /// `invalidate` for each notice. The number of notices.
  unsigned poll(const Invalidate& invalidate);

 private:
  ucs::Result<int> connection(const std::string& socket, std::string* why);
  // Reads one message from `fd`; notices are queued. False on EOF / error.
  bool drop(const std::string& socket);

  std::mutex lock_;  // guards everything below
  std::map<std::string, int> conns_;
  std::vector<std::pair<std::string, uint64_t>> pending_;  // notices read during open()
};

}  // namespace mc::uct::cuda

// SPDX-License-Identifier: Apache-2.0
// Helpers of the Transfer Engine tests: target processes (the example's
// target role, fork/exec'd with their own environment), scoped environment
// variables for the in-process engine, and waiting for tasks to end.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mc/transfer_engine.h"
#include "ucs/status/status.h"

namespace mc::te::test {

/// An engine's environment over transport `tls` on loopback (lo) with a 30 s
/// transfer deadline: what most tests give their engines. `extra` adds keys
/// and overrides these.
inline std::map<std::string, std::string> loopback_env(
    const std::string& tls, const std::map<std::string, std::string>& extra = {}) {
  std::map<std::string, std::string> env = {
      {"MC_TLS", tls}, {"MC_NET_DEVICES", "lo"}, {"MC_TRANSFER_TIMEOUT", "30s"}};
  for (const auto& [key, value] : extra) env[key] = value;
  return env;
}

/// The byte the example's target writes at offset i with `seed`.
inline uint8_t pattern(unsigned seed, size_t i) {
  return static_cast<uint8_t>((seed * 131u + i * 7u + (i >> 8)) & 0xffu);
}

/// Path of examples/transfer_engine_example (or the C one) in this build tree.
std::string example_path(bool c_api = false);

/// A target process: `transfer_engine_example --mode target`.
class TargetProcess {
 public:
  TargetProcess() = default;
  ~TargetProcess();  ///< SIGKILL and reap when still running
  TargetProcess(const TargetProcess&) = delete;
  TargetProcess& operator=(const TargetProcess&) = delete;

  /// Starts it with `env` added to the environment and waits for its READY
  /// line; false (with a test failure naming the cause) when it exits or
  /// prints nothing within a minute.
  /// `extra_args` go to the C++ example's command line (e.g. --location).
  bool start(const std::string& metadata, const std::string& local, size_t buffer_size,
             unsigned seed, const std::map<std::string, std::string>& env, bool c_api = false,
             const std::vector<std::string>& extra_args = {});
  /// Sends `sig`.
  void signal(int sig);
  /// SIGSTOP, and waits until every thread of it has stopped (the group
  /// stop is complete when waitpid reports it), so it serves nothing more.
  void freeze();
  /// SIGTERM, then waits: the exit status (-1 when killed by a signal).
  int stop();
  /// SIGKILL and reap.
  void kill();

  pid_t pid() const { return pid_; }
  const std::string& segment() const { return segment_; }
  uint64_t addr() const { return addr_; }
  size_t length() const { return length_; }
  /// Its standard error so far (failure messages).
  std::string log() const;
  /// The next line of its standard output after READY (without the
  /// newline); nullopt when it ended or printed none within `limit_s`.
  std::optional<std::string> read_line(int limit_s = 120);

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::string out_;  ///< read from out_fd_, not yet returned by read_line
  std::string err_path_;
  std::string segment_;
  uint64_t addr_ = 0;
  size_t length_ = 0;
};

/// Runs `args` (args[0] the program) with `env` added to the environment and
/// waits at most `limit_s` seconds (then SIGKILL). Returns its exit status,
/// -1 when it died by a signal or ran too long; `*output` gets its stdout
/// and stderr.
int run_process(const std::vector<std::string>& args,
                const std::map<std::string, std::string>& env, int limit_s, std::string* output);

/// Registers file segment `segment` of `files` (whole files) on server
/// `server` in the metadata store at `url` with mc_nvmeof_register. No
/// local_path_map: an engine whose local_server_name has host `server` opens
/// the files at their own paths. False, with a test failure carrying the
/// tool's output, when it fails.
bool register_file_segment(const std::string& url, const std::string& segment,
                           const std::string& server, const std::vector<std::string>& files);

/// An engine of this process over P2PHANDSHAKE on 127.0.0.1, made with the
/// knobs of `env`, then `extra` over them, set (a test failure when its
/// init fails).
std::unique_ptr<TransferEngine> make_p2p_engine(const std::map<std::string, std::string>& env,
                                                const std::map<std::string, std::string>& extra = {});

/// "127.0.0.1:<a free port>": a segment name no other test engine has.
std::string free_segment_name();

/// The value of `key` in the store at `url`, opened with the knobs `env`
/// set; the status when it cannot be read.
ucs::Result<std::string> store_get(const std::string& url,
                                   const std::map<std::string, std::string>& env,
                                   const std::string& key);

/// Sets environment variables for its lifetime, restoring the old values.
class ScopedEnv {
 public:
  explicit ScopedEnv(const std::map<std::string, std::string>& vars);
  ~ScopedEnv();

 private:
  std::map<std::string, std::optional<std::string>> saved_;
};

/// Waits until task `task` of `batch` has ended (not WAITING / PENDING) and
/// returns its status; a status of INVALID with transferred = SIZE_MAX when
/// getTransferStatus fails, or after `limit_s` seconds (a hang, reported by
/// the caller).
TransferStatus wait_task(TransferEngine& engine, BatchID batch, size_t task, int limit_s = 120);

/// Runs one batch of `reqs` to the end; the final status of each.
std::vector<TransferStatus> run_batch(TransferEngine& engine,
                                      const std::vector<TransferRequest>& reqs);

}  // namespace mc::te::test

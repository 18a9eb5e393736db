// SPDX-License-Identifier: Apache-2.0
// Helpers of the Transfer Engine tests (see te_test_util.h).
#include "te/te_test_util.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "ucp/metadata/store.h"
#include "ucs/sys/sys.h"

namespace mc::te::test {

std::string example_path(bool c_api) {
  return std::string(MC_TOP_BUILDDIR) +
         (c_api ? "/examples/transfer_engine_c_example" : "/examples/transfer_engine_example");
}

TargetProcess::~TargetProcess() {
  kill();
  if (!err_path_.empty()) ::unlink(err_path_.c_str());
}

bool TargetProcess::start(const std::string& metadata, const std::string& local, size_t buffer_size,
                          unsigned seed, const std::map<std::string, std::string>& env,
                          bool c_api, const std::vector<std::string>& extra_args) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ADD_FAILURE() << "pipe: " << strerror(errno);
    return false;
  }
  char tmpl[] = "/tmp/mc_te_target_XXXXXX";
  const int err_fd = ::mkstemp(tmpl);
  err_path_ = tmpl;
  const std::string prog = example_path(c_api);
  std::vector<std::string> args;
  if (c_api) {
    args = {prog, "target", metadata, local, std::to_string(buffer_size), std::to_string(seed)};
  } else {
    args = {prog,
            "--mode",
            "target",
            "--metadata",
            metadata,
            "--local",
            local,
            "--buffer-size",
            std::to_string(buffer_size),
            "--seed",
            std::to_string(seed)};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
  }
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(out[1], 1);
    ::dup2(err_fd, 2);
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    std::fprintf(stderr, "execv %s: %s\n", argv[0], strerror(errno));
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err_fd);
  out_fd_ = out[0];
  std::string text;
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < limit) {
    pollfd p{out_fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) > 0) {
      char buf[512];
      const ssize_t n = ::read(out_fd_, buf, sizeof(buf));
      if (n <= 0) break;  // exited
      text.append(buf, static_cast<size_t>(n));
      const size_t nl = text.find('\n');
      if (nl != std::string::npos && text.starts_with("READY ")) {
        char seg[256] = {};
        unsigned long long addr = 0;
        size_t len = 0;
        if (std::sscanf(text.c_str(), "READY segment=%255s addr=0x%llx length=%zu", seg, &addr,
                        &len) == 3) {
          segment_ = seg;
          addr_ = addr;
          length_ = len;
          out_ = text.substr(nl + 1);
          return true;
        }
        break;
      }
    }
  }
  ADD_FAILURE() << "target " << prog << " did not become ready; stdout: " << text
                << "\nstderr: " << log();
  kill();
  return false;
}

std::optional<std::string> TargetProcess::read_line(int limit_s) {
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(limit_s);
  for (;;) {
    const size_t nl = out_.find('\n');
    if (nl != std::string::npos) {
      std::string line = out_.substr(0, nl);
      out_.erase(0, nl + 1);
      return line;
    }
    if (out_fd_ < 0 || std::chrono::steady_clock::now() >= limit) return std::nullopt;
    pollfd p{out_fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) > 0) {
      char buf[512];
      const ssize_t n = ::read(out_fd_, buf, sizeof(buf));
      if (n <= 0) return std::nullopt;  // exited
      out_.append(buf, static_cast<size_t>(n));
    }
  }
}

void TargetProcess::signal(int sig) {
  if (pid_ > 0) ::kill(pid_, sig);
}

void TargetProcess::freeze() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGSTOP);
  int status = 0;
  while (::waitpid(pid_, &status, WUNTRACED) < 0 && errno == EINTR) {
  }
}

int TargetProcess::stop() {
  if (pid_ <= 0) return -1;
  ::kill(pid_, SIGCONT);
  ::kill(pid_, SIGTERM);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  if (out_fd_ >= 0) ::close(out_fd_);
  out_fd_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void TargetProcess::kill() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  if (out_fd_ >= 0) ::close(out_fd_);
  out_fd_ = -1;
}

std::string TargetProcess::log() const {
  std::ifstream in(err_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  return s.size() > 4000 ? s.substr(s.size() - 4000) : s;
}

int run_process(const std::vector<std::string>& args,
                const std::map<std::string, std::string>& env, int limit_s, std::string* output) {
  char tmpl[] = "/tmp/mc_te_process_XXXXXX";
  const int out_fd = ::mkstemp(tmpl);
  if (out_fd < 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out_fd, 1);
    ::dup2(out_fd, 2);
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    std::fprintf(stderr, "execv %s: %s\n", argv[0], strerror(errno));
    ::_exit(127);
  }
  ::close(out_fd);
  int status = 0;
  bool exited = false;
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(limit_s);
  while (pid > 0 && !exited) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    exited = r == pid || (r < 0 && errno != EINTR);
    if (!exited && std::chrono::steady_clock::now() > limit) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      status = -1;
      break;
    }
    if (!exited) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::ifstream in(tmpl);
  std::stringstream ss;
  ss << in.rdbuf();
  *output = ss.str();
  ::unlink(tmpl);
  return pid > 0 && status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

ScopedEnv::ScopedEnv(const std::map<std::string, std::string>& vars) {
  for (const auto& [k, v] : vars) {
    const char* old = std::getenv(k.c_str());
    saved_[k] = old ? std::optional<std::string>(old) : std::nullopt;
    ::setenv(k.c_str(), v.c_str(), 1);
  }
}

ScopedEnv::~ScopedEnv() {
  for (const auto& [k, v] : saved_) {
    if (v)
      ::setenv(k.c_str(), v->c_str(), 1);
    else
      ::unsetenv(k.c_str());
  }
}

bool register_file_segment(const std::string& url, const std::string& segment,
                           const std::string& server, const std::vector<std::string>& files) {
  std::vector<std::string> args = {
      std::string(MC_TOP_BUILDDIR) + "/src/tools/metadata/mc_nvmeof_register",
      "register",
      "--metadata",
      url,
      "--segment",
      segment,
      "--server",
      server};
  args.insert(args.end(), files.begin(), files.end());
  std::string out;
  const int rc =
      run_process(args, {{"MC_METADATA_TIMEOUT", "3s"}, {"MC_LOG_LEVEL", "warn"}}, 60, &out);
  if (rc != 0) ADD_FAILURE() << "mc_nvmeof_register exited with " << rc << ": " << out;
  return rc == 0;
}

TransferStatus wait_task(TransferEngine& engine, BatchID batch, size_t task, int limit_s) {
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(limit_s);
  TransferStatus st{INVALID, SIZE_MAX};
  while (std::chrono::steady_clock::now() < limit) {
    if (engine.getTransferStatus(batch, task, st) != 0) return {INVALID, SIZE_MAX};
    if (st.s != WAITING && st.s != PENDING) return st;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return {INVALID, SIZE_MAX};
}

std::vector<TransferStatus> run_batch(TransferEngine& engine,
                                      const std::vector<TransferRequest>& reqs) {
  std::vector<TransferStatus> out;
  const BatchID batch = engine.allocateBatchID(reqs.size());
  if (batch == kInvalidBatchID || engine.submitTransfer(batch, reqs) != 0) {
    ADD_FAILURE() << "cannot allocate or submit a batch of " << reqs.size();
    return out;
  }
  for (size_t i = 0; i < reqs.size(); ++i) out.push_back(wait_task(engine, batch, i));
  EXPECT_EQ(engine.freeBatchID(batch), 0);
  return out;
}

std::unique_ptr<TransferEngine> make_p2p_engine(const std::map<std::string, std::string>& env,
                                                const std::map<std::string, std::string>& extra) {
  auto vars = env;
  for (const auto& [k, v] : extra) vars[k] = v;
  ScopedEnv scoped(vars);
  auto engine = std::make_unique<TransferEngine>();
  EXPECT_EQ(engine->init("P2PHANDSHAKE", "127.0.0.1"), 0);
  return engine;
}

std::string free_segment_name() {
  auto port = ucs::find_free_tcp_port();
  EXPECT_TRUE(port.ok()) << "no free port for a segment name";
  return "127.0.0.1:" + std::to_string(port.value_or(1));
}

ucs::Result<std::string> store_get(const std::string& url,
                                   const std::map<std::string, std::string>& env,
                                   const std::string& key) {
  ScopedEnv scoped(env);
  std::string error;
  auto store = metadata::open_store(url, metadata::StoreOptions{}, &error);
  if (!store.ok()) return store.status();
  return (*store)->get(key);
}

}  // namespace mc::te::test

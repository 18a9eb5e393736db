// SPDX-License-Identifier: Apache-2.0
// Host identity, page sizes, free ports, thread names.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>

#include "ucs/sys/sys.h"

namespace mc::ucs {
namespace {

TEST(Sys, HostIdentityIsFilledAndStable) {
  const HostIdentity& id = host_identity();
  EXPECT_FALSE(id.hostname.empty());
  EXPECT_EQ(id.boot_id.size(), 32u) << id.boot_id;  // a UUID without dashes
  EXPECT_NE(id.net_ns, 0u);
  EXPECT_NE(id.ipc_ns, 0u);
  EXPECT_TRUE(id.shares_memory_with(id));
  EXPECT_TRUE(id.shares_network_with(id));
  EXPECT_EQ(boot_id_hash(), boot_id_hash());
}

TEST(Sys, OtherNamespaceOrBootIsNotLocal) {
  HostIdentity other = host_identity();
  other.net_ns += 1;
  EXPECT_FALSE(host_identity().shares_network_with(other));
  EXPECT_TRUE(host_identity().shares_memory_with(other));
  other = host_identity();
  other.boot_id = "0123";
  EXPECT_FALSE(host_identity().shares_memory_with(other));
  EXPECT_FALSE(host_identity().shares_network_with(other));
}

TEST(Sys, PagesAndCpus) {
  EXPECT_EQ(page_size(), static_cast<size_t>(sysconf(_SC_PAGESIZE)));
  EXPECT_EQ(page_size() & (page_size() - 1), 0u);
  EXPECT_GE(cpu_count(), 1u);
  const size_t huge = huge_page_size();
  EXPECT_TRUE(huge == 0 || huge >= page_size());
}

TEST(Sys, FreePortCanBeBound) {
  Result<uint16_t> port = find_free_tcp_port();
  ASSERT_TRUE(port.ok());
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(*port);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  close(fd);
}

TEST(Sys, ErrnoTextAndClock) {
  EXPECT_EQ(errno_string(ENOENT), "No such file or directory");
  const uint64_t a = monotonic_ns();
  const uint64_t b = monotonic_ns();
  EXPECT_LE(a, b);
}

// The name shows in /proc (what top -H and ps -L read); a longer one is
// cut to the kernel's 15 characters instead of being refused.
TEST(Sys, ThreadNameIsWhatProcShows) {
  std::string name, cut;
  std::thread([&] {
    const auto comm = [] {
      std::ifstream f("/proc/thread-self/comm");
      std::string line;
      std::getline(f, line);
      return line;
    };
    set_thread_name("mc_test");
    name = comm();
    set_thread_name("mc_a_name_longer_than_fifteen");
    cut = comm();
  }).join();
  EXPECT_EQ(name, "mc_test");
  EXPECT_EQ(cut, "mc_a_name_longe");
}

}  // namespace
}  // namespace mc::ucs

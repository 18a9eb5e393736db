// SPDX-License-Identifier: Apache-2.0
// Worker address and packed rkey codecs: round trips, every truncation,
// garbage, bit flips and future versions.
#include <gtest/gtest.h>

#include <random>

#include "ucp/core/rkey_container.h"
#include "ucp/wireup/address.h"

namespace mc::ucp::test {
namespace {

using ucs::Result;
using ucs::Status;
using wireup::AddressEntry;
using wireup::WorkerAddress;

WorkerAddress sample_address() {
  WorkerAddress a;
  a.uuid = 0x0123456789abcdefull;
  a.net_identity = 0xfedcba9876543210ull;
  a.hostname = "node-a";
  AddressEntry tcp{"tcp",
                   "tcp",
                   "tcp",
                   "eth0",
                   uct::DeviceType::Net,
                   {1, 2, 3, 4, 5, 6},
                   {7, 8},
                   {uct::kCapAmShort | uct::kCapPutZcopy, 5e-6, 1.25e9, 2e-6, 1, 1}};
  AddressEntry sm{"sm",
                  "sm",
                  "sm",
                  "memory",
                  uct::DeviceType::Shm,
                  {9},
                  {10, 11, 12},
                  {uct::kCapAmBcopy, 0.5e-6, 10e9, 0.1e-6, 0, 1}};
  a.ifaces = {tcp, sm};
  return a;
}

TEST(UcpAddress, RoundTrip) {
  const WorkerAddress a = sample_address();
  const std::vector<uint8_t> packed = wireup::address_pack(a);
  Result<WorkerAddress> b = wireup::address_unpack(packed);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, a);
}

TEST(UcpAddress, EmptyAddressRoundTrips) {
  WorkerAddress a;
  a.uuid = 7;
  Result<WorkerAddress> b = wireup::address_unpack(wireup::address_pack(a));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, a);
}

TEST(UcpAddress, EveryTruncationIsInvalidParam) {
  const std::vector<uint8_t> packed = wireup::address_pack(sample_address());
  for (size_t n = 0; n < packed.size(); ++n) {
    std::string why;
    Result<WorkerAddress> r =
        wireup::address_unpack(std::span<const uint8_t>(packed.data(), n), &why);
    ASSERT_EQ(r.status(), Status::InvalidParam) << "prefix of " << n << " bytes";
    EXPECT_FALSE(why.empty());
  }
}

TEST(UcpAddress, TrailingBytesAreInvalidParam) {
  std::vector<uint8_t> packed = wireup::address_pack(sample_address());
  packed.push_back(0);
  EXPECT_EQ(wireup::address_unpack(packed).status(), Status::InvalidParam);
}

TEST(UcpAddress, FutureVersionIsInvalidParamWithReason) {
  std::vector<uint8_t> packed = wireup::address_pack(sample_address());
  packed[4] = wireup::kAddressVersion + 1;
  std::string why;
  EXPECT_EQ(wireup::address_unpack(packed, &why).status(), Status::InvalidParam);
  EXPECT_NE(why.find("version"), std::string::npos) << why;
}

TEST(UcpAddress, BadMagicIsInvalidParam) {
  std::vector<uint8_t> packed = wireup::address_pack(sample_address());
  packed[0] ^= 0xff;
  std::string why;
  EXPECT_EQ(wireup::address_unpack(packed, &why).status(), Status::InvalidParam);
  EXPECT_NE(why.find("magic"), std::string::npos) << why;
}

TEST(UcpAddress, NonFiniteFigureIsInvalidParam) {
  WorkerAddress a = sample_address();
  a.ifaces[0].summary.bandwidth = std::numeric_limits<double>::infinity();
  EXPECT_EQ(wireup::address_unpack(wireup::address_pack(a)).status(), Status::InvalidParam);
}

TEST(UcpAddress, RandomGarbageNeverUnpacks) {
  std::mt19937_64 rng(42);
  for (int i = 0; i < 2000; ++i) {
    std::vector<uint8_t> junk(rng() % 300);
    for (uint8_t& b : junk) b = static_cast<uint8_t>(rng());
    EXPECT_EQ(wireup::address_unpack(junk).status(), Status::InvalidParam);
  }
}

TEST(UcpAddress, BitFlipsEitherUnpackOrFailCleanly) {
  const std::vector<uint8_t> packed = wireup::address_pack(sample_address());
  std::mt19937_64 rng(7);
  for (int i = 0; i < 5000; ++i) {
    std::vector<uint8_t> bad = packed;
    for (int k = 0; k < 1 + static_cast<int>(rng() % 3); ++k) {
      bad[rng() % bad.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
    }
    Result<WorkerAddress> r = wireup::address_unpack(bad);
    EXPECT_TRUE(r.ok() || r.status() == Status::InvalidParam);
  }
}

TEST(UcpRkeyContainer, RoundTripTruncationsAndVersion) {
  RkeyContainer c;
  c.address = 0x1000;
  c.length = 4096;
  c.entries = {{"self", {1, 2, 3}}, {"tcp", {4, 5}}};
  const std::vector<uint8_t> packed = rkey_container_pack(c);
  std::string why;
  Result<RkeyContainer> d = rkey_container_unpack(packed, &why);
  ASSERT_TRUE(d.ok()) << why;
  EXPECT_EQ(d->address, c.address);
  EXPECT_EQ(d->length, c.length);
  EXPECT_EQ(d->entries, c.entries);
  for (size_t n = 0; n < packed.size(); ++n) {
    EXPECT_EQ(rkey_container_unpack(std::span<const uint8_t>(packed.data(), n), &why).status(),
              Status::InvalidParam);
  }
  std::vector<uint8_t> future = packed;
  future[4] = kRkeyContainerVersion + 1;
  EXPECT_EQ(rkey_container_unpack(future, &why).status(), Status::InvalidParam);
}

// Found by fuzz_rkey: a key with reserved bits set unpacked, and so two
// different byte strings meant the same key.
TEST(UcpRkeyContainer, ReservedBitsAreInvalidParam) {
  RkeyContainer c;
  c.address = 0x1000;
  c.length = 64;
  c.entries = {{"self", {1}}};
  std::vector<uint8_t> packed = rkey_container_pack(c);
  packed[6] = 'u';
  std::string why;
  EXPECT_EQ(rkey_container_unpack(packed, &why).status(), Status::InvalidParam);
  EXPECT_NE(why.find("reserved"), std::string::npos) << why;
}

}  // namespace
}  // namespace mc::ucp::test

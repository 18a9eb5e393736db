// SPDX-License-Identifier: Apache-2.0
// Notifications of the Transfer Engine: the frame codec against malformed
// input.
#include <gtest/gtest.h>

#include <string>

#include "ucp/te/notify_wire.h"

namespace mc::te::test {
namespace {

using namespace std::string_literals;

TEST(TeNotifyWire, RoundTripIsBinarySafe) {
  NotifyFrame f;
  f.sender = "127.0.0.1:15001";
  f.generation = 0x1122334455667788ULL;
  f.seq = 42;
  f.nonce = random_notify_key();
  f.key = random_notify_key();
  f.name = "na\0me"s;
  f.msg = "\0\xff\0msg\0"s;
  NotifyFrame g;
  std::string why;
  ASSERT_EQ(decode_notify(encode_notify(f), &g, &why), Status::Ok) << why;
  EXPECT_EQ(g.sender, f.sender);
  EXPECT_EQ(g.generation, f.generation);
  EXPECT_EQ(g.seq, f.seq);
  EXPECT_TRUE(notify_key_equal(g.nonce, f.nonce));
  EXPECT_TRUE(notify_key_equal(g.key, f.key));
  EXPECT_EQ(g.name, f.name);
  EXPECT_EQ(g.msg, f.msg);
  NotifyKeyFrame k{random_notify_key(), random_notify_key()}, k2;
  ASSERT_EQ(decode_notify_key(encode_notify_key(k), &k2, &why), Status::Ok) << why;
  EXPECT_TRUE(notify_key_equal(k.nonce, k2.nonce));
  EXPECT_TRUE(notify_key_equal(k.key, k2.key));
}

TEST(TeNotifyWire, EveryTruncationTrailerVersionAndLengthIsRefused) {
  NotifyFrame f;
  f.sender = "s";
  f.name = "n";
  f.msg = "m";
  const std::string good = encode_notify(f);
  std::string why;
  for (size_t n = 0; n < good.size(); ++n) {
    NotifyFrame g;
    EXPECT_EQ(decode_notify(good.substr(0, n), &g, &why), Status::BadData) << n;
  }
  NotifyFrame g;
  EXPECT_EQ(decode_notify(good + "x", &g, &why), Status::BadData);
  std::string v2 = good;
  v2[0] = 2;
  EXPECT_EQ(decode_notify(v2, &g, &why), Status::VersionMismatch);
  // The last length (notify_msg's) claims far more than is there.
  std::string big = good;
  const size_t msg_len_at = good.size() - 1 - 4;
  big[msg_len_at + 3] = '\x7f';
  EXPECT_EQ(decode_notify(big, &g, &why), Status::BadData);
  const std::string key = encode_notify_key({});
  NotifyKeyFrame k;
  for (size_t n = 0; n < key.size(); ++n) {
    EXPECT_EQ(decode_notify_key(key.substr(0, n), &k, &why), Status::BadData) << n;
  }
  EXPECT_EQ(decode_notify_key(key + "x", &k, &why), Status::BadData);
}

}  // namespace
}  // namespace mc::te::test

// SPDX-License-Identifier: Apache-2.0
// Encoding and bounded decoding of the notification frames (notify_wire.h).
#include "ucp/te/notify_wire.h"

#include <cstring>
#include <random>
#include <span>
#include <vector>

#include "ucs/datastruct/wire.h"

namespace mc::te {

namespace {

void put_string(ucs::WireWriter& w, std::string_view s) {
  w.u32(static_cast<uint32_t>(s.size()));
  w.bytes(s.data(), s.size());
}

void put_key(ucs::WireWriter& w, const NotifyKey& k) {
  w.bytes(k.data(), k.size());
}

// False once the reader ran past the end (the reader then stays failed).
bool get_string(ucs::WireReader& r, std::string* out) {
  const uint32_t n = r.u32();
  if (!r.ok() || n > r.remaining()) return false;
  std::span<const uint8_t> b = r.bytes(n);
  out->assign(reinterpret_cast<const char*>(b.data()), b.size());
  return r.ok();
}

bool get_key(ucs::WireReader& r, NotifyKey* out) {
  std::span<const uint8_t> b = r.bytes(out->size());
  if (!r.ok()) return false;
  std::memcpy(out->data(), b.data(), out->size());
  return true;
}

ucs::WireReader reader(std::string_view payload) {
  return ucs::WireReader({reinterpret_cast<const uint8_t*>(payload.data()), payload.size()});
}

Status check_version(ucs::WireReader& r, std::string* error) {
  const uint16_t version = r.u16();
  if (!r.ok()) {
    *error = "notification frame truncated before its version";
    return Status::BadData;
  }
  if (version != kNotifyVersion) {
    *error = "notification version " + std::to_string(version) + ", expected " +
             std::to_string(kNotifyVersion);
    return Status::VersionMismatch;
  }
  return Status::Ok;
}

Status fail(const char* field, std::string* error) {
  *error = std::string("notification frame: bad ") + field;
  return Status::BadData;
}

std::string text(const std::vector<uint8_t>& out) {
  return std::string(out.begin(), out.end());
}

}  // namespace

std::string encode_notify(const NotifyFrame& f) {
  std::vector<uint8_t> out;
  out.reserve(64 + f.sender.size() + f.name.size() + f.msg.size());
  ucs::WireWriter w(&out);
  w.u16(kNotifyVersion);
  put_string(w, f.sender);
  w.u64(f.generation);
  w.u64(f.seq);
  put_key(w, f.nonce);
  put_key(w, f.key);
  put_string(w, f.name);
  put_string(w, f.msg);
  return text(out);
}

std::string encode_notify_key(const NotifyKeyFrame& f) {
  std::vector<uint8_t> out;
  ucs::WireWriter w(&out);
  w.u16(kNotifyVersion);
  put_key(w, f.nonce);
  put_key(w, f.key);
  return text(out);
}

Status decode_notify(std::string_view payload, NotifyFrame* f, std::string* error) {
  ucs::WireReader r = reader(payload);
  MC_RETURN_IF_ERROR(check_version(r, error));
  if (!get_string(r, &f->sender)) return fail("sender length", error);
  f->generation = r.u64();
  f->seq = r.u64();
  if (!r.ok()) return fail("generation or seq", error);
  if (!get_key(r, &f->nonce) || !get_key(r, &f->key)) return fail("nonce or key", error);
  if (!get_string(r, &f->name)) return fail("name length", error);
  if (!get_string(r, &f->msg)) return fail("notify_msg length", error);
  if (!r.at_end()) return fail("length: bytes after notify_msg", error);
  return Status::Ok;
}

Status decode_notify_key(std::string_view payload, NotifyKeyFrame* f, std::string* error) {
  ucs::WireReader r = reader(payload);
  MC_RETURN_IF_ERROR(check_version(r, error));
  if (!get_key(r, &f->nonce) || !get_key(r, &f->key)) return fail("nonce or key", error);
  if (!r.at_end()) return fail("length: bytes after the key", error);
  return Status::Ok;
}

NotifyKey random_notify_key() {
  static thread_local std::random_device rd;
  NotifyKey k;
  for (size_t i = 0; i < k.size(); i += 4) {
    const uint32_t v = rd();
    std::memcpy(k.data() + i, &v, 4);
  }
  return k;
}

bool notify_key_equal(const NotifyKey& a, const NotifyKey& b) {
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= a[i] ^ b[i];
  return diff == 0;
}

}  // namespace mc::te
